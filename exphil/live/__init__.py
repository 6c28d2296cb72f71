"""Live play through libmelee: the training path's features from a game stream, and an agent."""

"""Expert iteration: record a search player's self-play decisions and distil them into an agent's net."""

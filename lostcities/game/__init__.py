"""The game of Lost Cities: the ``Game`` interface, the batched engine, variants, scoring, symmetry,
a card-by-card reference, rendering and the conformance suite every game passes. Imports no agent or
algorithm."""

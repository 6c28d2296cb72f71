"""Lost Cities in pure JAX, with Kuhn and Leduc poker, and the learners that play them.

Layers (lower never imports higher; tests/test_code_shape.py enforces it): ``game`` (rules, engine,
variants, scoring) and ``poker``; ``agents`` (bots, search, evaluation, players by name, shipped agents);
the algorithms ``exact``, ``deep_cfr``, ``expert_iteration`` and ``rl``. See docs/architecture.md.
"""

"""Command-line launchers and benchmarks, run as ``python -m experiments.NAME``.

Nothing in the libraries imports this package.
"""

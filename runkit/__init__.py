"""Shared run machinery: config trees as JSON, run folders, metrics, checkpoints and exact resume."""

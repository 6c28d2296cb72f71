"""Readers of other projects' Melee data formats: slippi-frame-extractor Parquet and MIMIC shards.

Each turns a file (or a shard's games) into our frame table (``exphil.data.parse`` columns), so
the same manifest, stored inputs, windows and training run on them:
``build_dataset(..., fmt="frame_extractor" | "mimic")``.
"""

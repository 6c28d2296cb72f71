"""Imitation learning for Super Smash Bros. Melee from Slippi replays."""

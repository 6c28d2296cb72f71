"""Tests of lostcities.deep_cfr."""

"""Colour permutations of Lost Cities as index maps of the observation and the action ids.

Every colour follows the same rules, so renaming the colours maps a game to an equally likely game
with the same scores: an information set's regrets and strategy are those of its renamed set,
renamed. ``colour_permutations(variant)`` gives, for each of the ``C!`` renamings, gather indices
``obs_index [P, obs]`` and ``action_index [P, A]`` with ``renamed_obs = obs[obs_index[p]]`` and
``renamed[a] = values[action_index[p, a]]`` for any per-action array (mask, regrets, strategy),
so training can show a net each sample under a random renaming (``deep_cfr.fit``).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from lostcities.game.variants import Variant

__all__ = ["colour_permutations"]


@functools.cache
def colour_permutations(variant: Variant) -> tuple[np.ndarray, np.ndarray]:
    """``(obs_index int32[P, obs], action_index int32[P, A])`` for all ``P = C!`` colour renamings;
    renaming 0 is the identity. Layouts: ``engine.observation`` and ``engine``'s action ids."""
    n, c, k = variant.num_cards, variant.num_colours, variant.cards_per_colour
    obs_rows, action_rows = [], []
    for perm in itertools.permutations(range(c)):  # new colour j holds old colour perm[j]
        cards = (np.asarray(perm)[:, None] * k + np.arange(k)).reshape(-1)  # new card id -> old card id
        planes = np.concatenate([plane * n + cards for plane in range(6)])
        scalars = 6 * n + np.arange(c + 6)
        scalars[4: 4 + c] = 6 * n + 4 + np.asarray(perm)  # the discarded-colour one-hot
        obs_rows.append(np.concatenate([planes, scalars]))
        action_rows.append(np.concatenate([cards, n + cards, [2 * n], 2 * n + 1 + np.asarray(perm)]))
    return np.asarray(obs_rows, np.int32), np.asarray(action_rows, np.int32)

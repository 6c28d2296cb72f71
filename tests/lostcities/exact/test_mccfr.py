"""External-sampling MCCFR: converges on Kuhn, is seeded, and learns on Leduc."""

from __future__ import annotations

import numpy as np
import pytest

from lostcities.exact import build_tree, expected_returns, nash_conv, uniform_policy
from lostcities.exact.mccfr import solve_mccfr
from lostcities.poker import KuhnPoker, LeducPoker


def test_kuhn_converges_and_is_seeded():
    tree = build_tree(KuhnPoker())
    result = solve_mccfr(tree, 2000, seed=0)
    policy = result.average[tree.infoset]
    assert nash_conv(tree, policy) < 0.08
    assert expected_returns(tree, policy)[0] == pytest.approx(-1 / 18, abs=0.02)
    first, again, other = (solve_mccfr(tree, 200, seed=s).average for s in (5, 5, 6))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.slow
def test_leduc_learns():
    """2,000 iterations: OpenSpiel's external-sampling MCCFR reaches NashConv ~1.7 (uniform: 4.75)."""
    tree = build_tree(LeducPoker())
    result = solve_mccfr(tree, 2000, seed=0, eval_every=1000)
    (_, at1000), (_, at2000) = result.curve
    assert at2000 < at1000 < nash_conv(tree, uniform_policy(tree))
    assert at2000 < 2.5

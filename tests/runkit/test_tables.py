"""Markdown tables against hand-written ones."""

import pytest

from runkit.tables import markdown_table


def test_header_rule_and_rows():
    got = markdown_table(["name", "count"], [["a", 1], ["b", "2,000"]], right=[1])
    assert got == "| name | count |\n| --- | ---: |\n| a | 1 |\n| b | 2,000 |"


def test_short_rows_are_padded_and_long_ones_refused():
    want = "| x | y | z |\n| --- | --- | --- |\n| ... 3 more |  |  |"
    assert markdown_table(["x", "y", "z"], [["... 3 more"]]) == want
    with pytest.raises(ValueError, match="2 columns, but a row has 3"):
        markdown_table(["x", "y"], [[1, 2, 3]])

"""CheckboxGroup: SelectMultiple's interface as one checkbox per option."""

from __future__ import annotations

import pytest
import traitlets

from gpuwork.ui.choices import CheckboxGroup


def test_boxes_and_value_follow_each_other_in_option_order() -> None:
    group = CheckboxGroup(options=[("a", 1), ("b", 2), ("c", 3)], value=(3, 1), description="pick")
    assert group.value == (1, 3) and [b.value for b in group.boxes] == [True, False, True]
    seen = []
    group.observe(lambda change: seen.append(change["new"]), names="value")
    group.boxes[1].value = True
    assert group.value == (1, 2, 3) and seen == [(1, 2, 3)]  # one event per change
    group.value = (2,)
    assert [b.value for b in group.boxes] == [False, True, False]
    with pytest.raises(traitlets.TraitError, match="not among the options"):
        group.value = (4,)


def test_new_options_keep_the_chosen_values_that_remain() -> None:
    group = CheckboxGroup(options=["x", "y"], value=("y",))
    group.options = [("y", "y"), ("z", "z")]
    assert [b.description for b in group.boxes] == ["y", "z"] and group.value == ("y",)


def test_every_box_of_a_group_shares_one_layout_and_one_style() -> None:
    """A page receives two models per group for them, not two per box (26 GPUs: 2 instead of 52)."""
    group = CheckboxGroup(options=[str(i) for i in range(26)])
    assert len({id(b.layout) for b in group.boxes}) == 1 and len({id(b.style) for b in group.boxes}) == 1
    assert group.boxes[0].layout.width == "auto"

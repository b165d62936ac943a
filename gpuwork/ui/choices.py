"""A multiple choice as a row of checkboxes: what a person can use without knowing Ctrl+click.

``CheckboxGroup`` replaces ``ipywidgets.SelectMultiple`` (a list box where picking several needs Ctrl or
Shift) with one labelled checkbox per option. It keeps SelectMultiple's Python interface, so panels and
tests need not change: ``options`` as ``(label, value)`` pairs, ``value`` a tuple of the chosen values (in
option order), ``description``, and ``observe(..., names="value")`` firing once per change.

Example:
    >>> group = CheckboxGroup(options=[("on-demand", "on-demand"), ("reserved", "reserved")], value=("reserved",))
    >>> group.boxes[1].value, group.boxes[0].value
    (True, False)
    >>> group.boxes[0].value = True
    >>> group.value
    ('on-demand', 'reserved')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import ipywidgets as widgets
import traitlets
from ipywidgets.widgets.widget_bool import CheckboxStyle


def _pairs(options: Iterable[Any]) -> list[tuple[str, Any]]:
    return [(str(o[0]), o[1]) if isinstance(o, tuple | list) else (str(o), o) for o in options]


class CheckboxGroup(widgets.HBox):
    """Checkboxes for a multiple choice; ``value`` is the tuple of checked option values, in option order."""

    value = traitlets.Tuple(help="the checked option values")
    options: traitlets.List[tuple[str, Any]] = traitlets.List(help="(label, value) pairs")
    description = traitlets.Unicode("")

    def __init__(self, options: Sequence[Any] = (), value: Sequence[Any] = (), description: str = "",
                 **kwargs: Any):
        kwargs.pop("rows", None)  # SelectMultiple's height: not needed here
        kwargs.pop("style", None)
        self._label = widgets.HTML(layout={"width": "170px"})
        self._label.add_class("gpuwork-choice-label")
        self._syncing = False
        self.boxes: list[widgets.Checkbox] = []
        self._row = widgets.HBox(layout={"flex_flow": "row wrap"})
        # one layout and one style for every box: a page receives two models per group instead of two per box
        self._box_layout = widgets.Layout(width="auto", margin="0 12px 0 0")
        self._box_style = CheckboxStyle()
        super().__init__(children=(self._label, self._row), **kwargs)
        self.add_class("gpuwork-choices")
        self.options = _pairs(options)
        self.value = tuple(value)
        self.description = description

    @traitlets.observe("description")
    def _on_description(self, change: Any) -> None:
        self._label.value = f'<span style="line-height:28px">{change["new"]}</span>'

    @traitlets.observe("options")
    def _on_options(self, change: Any) -> None:
        chosen = set(self.value)
        self.boxes = []
        for label, option in change["new"]:
            box = widgets.Checkbox(value=option in chosen, description=label, indent=False,
                                   layout=self._box_layout, style=self._box_style)
            box.observe(self._on_box, names="value")
            self.boxes.append(box)
        self._row.children = tuple(self.boxes)
        self._set_value(self._checked())

    @traitlets.validate("value")
    def _valid(self, proposal: Any) -> tuple:
        allowed = [v for _label, v in self.options]
        wanted = set(proposal["value"])
        unknown = wanted - set(allowed)
        if unknown:
            raise traitlets.TraitError(f"{sorted(map(str, unknown))} not among the options {allowed}")
        return tuple(v for v in allowed if v in wanted)

    @traitlets.observe("value")
    def _on_value(self, change: Any) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            for (_label, option), box in zip(self.options, self.boxes, strict=True):
                box.value = option in change["new"]
        finally:
            self._syncing = False

    def _on_box(self, _change: Any) -> None:
        if not self._syncing:
            self._set_value(self._checked())

    def _checked(self) -> tuple:
        return tuple(option for (_label, option), box in zip(self.options, self.boxes, strict=True) if box.value)

    def _set_value(self, value: tuple) -> None:
        self._syncing = True
        try:
            self.value = value
        finally:
            self._syncing = False


__all__ = ["CheckboxGroup"]

"""The advisor and fit-matrix panels without a browser: what they show is what gpuwork.sizing computes, in both
languages; Apply hands the changed plan on; an invalid plan leaves no numbers behind."""

from __future__ import annotations

import html
import re

import pytest

from gpuwork import sizing
from gpuwork.estimate.memory import GIB
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.ui.advice import AdvicePanel, FitMatrixPanel
from gpuwork.units import fmt_duration, fmt_number, fmt_usd

QLORA_7B = {"model": "mistral-7b", "method": "qlora", "precision": "bf16", "seq_len": 2048}  # figures: pure bf16
ON_DEMAND = {"mode": ["on-demand"]}


def _rows(table_html: str) -> list[list[str]]:
    """The body rows of the first table in ``table_html``, each cell as plain text."""
    body = table_html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_the_advice_is_the_advisors_and_apply_hands_on_the_changed_plan() -> None:
    panel = AdvicePanel(QLORA_7B, filters=lambda: ON_DEMAND)
    expected = sizing.advise(TrainPlan.from_dict(QLORA_7B), mode=["on-demand"])
    assert panel.error is None and panel.advice.suggestions == expected.suggestions
    best = panel.advice.suggestions[0]
    assert best.key == "grad_checkpointing" and best.gpu_id == "rtx4090"  # a 24 GB card
    assert best.outcome.offer.offer.gpu.memory_gb == 24
    base = expected.baseline.offer  # the plan as written fits no 24 GB card alone: the cheapest fit is several
    assert base is not None and base.fit.plan.gpus > 1 and base.offer.gpu.memory_gb == 24
    shown = html.unescape(re.sub(r"<[^>]+>", " ", panel.status.value))
    assert (f"{fmt_number(expected.baseline.memory_per_gpu_bytes / 2**30, 'en', 1)} GiB per GPU, cheapest on "
            f"{base.fit.plan.gpus} x GeForce RTX 4090") in shown
    assert render(expected.status, "en") in shown
    assert len(panel.buttons) == len(panel.rows.children) == len(expected.suggestions)
    first = panel.rows.children[0].children[1].value
    assert "with gradient checkpointing: 7.7 GiB per GPU, fits 1 x GeForce RTX 4090" in first and "cost" in first
    applied: list[TrainPlan] = []
    panel.on_apply(applied.append)
    panel.buttons[0].click()
    assert applied == [best.plan] and applied[0].grad_checkpointing and applied[0].seq_len == 2048


def test_the_advice_speaks_russian_and_says_when_nothing_helps() -> None:
    panel = AdvicePanel({**QLORA_7B, "grad_checkpointing": True}, lang="ru", filters=lambda: ON_DEMAND)
    assert panel.buttons == [] or all(b.description == "Применить" for b in panel.buttons)
    assert "План в текущем виде" in panel.status.value and "Что изменить" in panel.heading.value
    if not panel.advice.suggestions:
        assert "Ни одно стандартное изменение" in panel.status.value
    panel.set_lang("en")
    assert "The plan as it is" in panel.status.value


def test_an_invalid_plan_leaves_no_advice_and_the_panel_recovers() -> None:
    panel = AdvicePanel(QLORA_7B, filters=lambda: ON_DEMAND)
    assert panel.rows.children
    panel.invalidate("seq_len=0 is too small")
    assert panel.advice is None and panel.rows.children == () and panel.status.value == ""
    assert "seq_len=0" in panel.message.value and "GiB" not in panel.message.value
    panel.set_plan(TrainPlan.from_dict(QLORA_7B), lazy=True)
    assert panel.advice is None  # lazy: evaluated when shown
    panel.refresh_if_stale()
    assert panel.error is None and panel.rows.children


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_fit_matrix_table_shows_fit_matrix_numbers(lang: str) -> None:
    plan = TrainPlan.from_dict(QLORA_7B)
    panel = FitMatrixPanel(plan, lang=lang)
    matrix = sizing.fit_matrix(plan)
    rows = _rows(panel.table.value)
    assert len(rows) == len(matrix.cells) == len(matrix.gpu_ids) * 4  # every catalog GPU x 1/2/4/8
    for row, c in zip(rows, matrix.cells, strict=True):
        assert row[:4] == [c.gpu_name, str(c.gpus), c.plan.sharding.value,
                           f"{fmt_number(c.device_total_bytes / GIB, lang, 1)} / "
                           f"{fmt_number(c.usable_bytes / GIB, lang, 1)}"]
        if not c.fits:
            assert row[4] == ("does not fit" if lang == "en" else "не помещается") and not any(row[5:])
            continue
        assert row[4] == fmt_number(c.headroom_bytes / GIB, lang, 1)
        assert row[5] == f"{c.max_batch_size}{'+' if c.max_batch_capped else ''}"
        assert row[6] == f"{c.max_seq_len}{'+' if c.max_seq_capped else ''}"
        assert row[7] == fmt_duration(c.total_s, lang)
        if c.cost_usd is not None:
            assert row[8].startswith(fmt_usd(c.cost_usd, lang))
        assert (c.offer_id or "") in row[9]
    cell = matrix.cell("rtx4090", 1)
    assert not cell.fits  # 23.9 GiB needed, 22.8 usable: the QLoRA 7B task as set does not fit one RTX 4090
    header = panel.table.value.split("<thead>", 1)[1]
    assert ("headroom" if lang == "en" else "запас") in header
    assert "overflow:auto" in panel.table.value  # 96 rows scroll inside their own box
    best = matrix.cheapest()
    assert best.gpu_name in panel.table.value.split("gpuwork-fit-cheapest", 1)[1].split("</p>", 1)[0]


def test_the_fit_matrix_follows_the_plan_and_drops_an_invalid_one() -> None:
    panel = FitMatrixPanel(QLORA_7B)
    panel.set_plan(TrainPlan.from_dict({**QLORA_7B, "grad_checkpointing": True}))
    assert panel.matrix.cell("rtx4090", 1).fits
    panel.invalidate("method='qloraa' is not a method")
    assert panel.matrix is None and panel.table.value == "" and "qloraa" in panel.message.value

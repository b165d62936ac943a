"""The plan's on/off switches that change only how a run executes (deterministic, launch_blocking, tf32): each is
refused when not a bool, set by its CLI flag and the form's checkbox (with a Russian tooltip), and stated in the
rental request in both languages only when on."""

import dataclasses

import pytest

from gpuwork import TrainPlan
from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.present.messages import render
from gpuwork.ui.sizing import SizingForm

# field, CLI flag, a word of its Russian tooltip, the request's words (en, ru)
SWITCHES = [
    ("deterministic", "--deterministic", "нечисл",
     ("PyTorch deterministic mode", "детерминированный режим PyTorch")),
    ("launch_blocking", "--launch-blocking", "CUDA_LAUNCH_BLOCKING",
     ("every kernel launch waits", "каждый запуск ядра ждёт")),
    ("tf32", "--tf32", "тензорных ядрах",
     ("TF32 on for fp32 matmuls", "TF32 включён для умножений матриц fp32")),
]


@pytest.mark.parametrize(("field", "flag", "tooltip", "words"), SWITCHES, ids=[s[0] for s in SWITCHES])
def test_a_switch_is_checked_set_and_stated(field: str, flag: str, tooltip: str, words: tuple[str, str]) -> None:
    from gpuwork.present.request import rental_request

    with pytest.raises(PlanError) as info:
        TrainPlan(**{field: "yes"})
    assert info.value.field == field
    for lang in ("en", "ru"):
        assert field in render(info.value.msg, lang)

    on = plan_from_args(build_parser().parse_args(["estimate", flag]))
    assert getattr(on, field) is True
    assert getattr(plan_from_args(build_parser().parse_args(["estimate"])), field) is False
    form = SizingForm({"model": "llama-3.2-1b"})
    form.controls[field].value = True
    assert form.error is None and getattr(form.plan, field) is True
    assert tooltip in SizingForm({"model": "llama-3.2-1b"}, lang="ru").controls[field].tooltip
    for lang, text in zip(("en", "ru"), words, strict=True):
        request = rental_request(on, lang=lang)
        assert request.fields["suggested"][field] is True
        assert text in request.text
        assert text not in rental_request(dataclasses.replace(on, **{field: False}), lang=lang).text

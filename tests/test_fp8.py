"""FP8 linear layers (TrainPlan.fp8_linear, docs/fp8.md): the plan refuses what the libraries refuse, the blocks'
linears become FP8 GEMMs with their cast-transpose kernels, the GEMMs are priced at the FP8 rate, memory keeps FP8
inputs and FP8 weight copies, a GPU without FP8 says so, and every surface (CLI, form, request, share link,
Accelerate config) carries the switch."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork import TrainPlan
from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.gemm import gemm_choice
from gpuwork.estimate.linear_ops import FP8_CAST_WRITES
from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.op import Kind, Phase
from gpuwork.estimate.steptime import _device_gemm_kernels, fp8_rates
from gpuwork.estimate.timing import _plan_ops, estimate_time
from gpuwork.facts.catalog import load_gpus
from gpuwork.facts.resolve import resolve
from gpuwork.present.messages import render

FULL = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", seq_len=1024, batch_size=4)
GPUS = load_gpus()


def _ops(plan: TrainPlan) -> dict[tuple[str, Phase], object]:
    inputs = resolve(plan)
    return {(o.name, o.phase): o for o in _plan_ops(plan, inputs, inputs.rates.stacks[plan.stack])}


# -- the plan ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "word"), [({"method": "lora"}, "lora"), ({"method": "qlora"}, "qlora"),
                                               ({"precision": "fp32"}, "fp32")])
def test_the_plan_refuses_fp8_with_adapters_or_fp32_in_both_languages(changes: dict, word: str) -> None:
    with pytest.raises(PlanError) as info:
        TrainPlan(**{**dataclasses.asdict(FULL), "lora_targets": FULL.lora_targets, **changes, "fp8_linear": True})
    assert info.value.field == "fp8_linear"
    for lang in ("en", "ru"):
        text = render(info.value.msg, lang)
        assert "fp8_linear" in text and word in text


def test_a_sweep_into_adapters_or_fp32_drops_fp8_and_a_bad_value_is_named() -> None:
    plan = FULL.replace(fp8_linear=True)
    assert plan.replace(method="lora").fp8_linear is False
    assert plan.replace(precision="fp32").fp8_linear is False
    assert plan.replace(precision="bf16").fp8_linear is True
    with pytest.raises(PlanError) as info:
        FULL.replace(fp8_linear="yes")
    assert info.value.field == "fp8_linear"


# -- the step's operations --------------------------------------------------------------------------------------


def test_each_block_linear_is_an_fp8_gemm_with_its_casts_and_the_head_stays_16_bit() -> None:
    ops = _ops(FULL.replace(fp8_linear=True))
    plain = _ops(FULL)
    spec = resolve(FULL).spec
    t = FULL.batch_size * FULL.seq_len
    for lin in (lin for lin in spec.linears if lin.in_block):
        gemm = ops[(lin.name, Phase.FORWARD)]
        assert gemm.kind is Kind.MATMUL and gemm.dtype == "fp8"
        assert gemm.flops == plain[(lin.name, Phase.FORWARD)].flops  # the same FLOPs, on other tensor cores
        assert ops[(f"{lin.name} backward", Phase.BACKWARD)].dtype == "fp8"  # input and weight gradients
        weight = ops[(f"{lin.name} FP8 cast (weight)", Phase.FORWARD)]
        # mixed precision: the fp32 master weight is read and the FP8 copy and its transpose written
        assert weight.bytes == pytest.approx(lin.in_features * lin.out_features * (4 + FP8_CAST_WRITES))
        cast = ops[(f"{lin.name} FP8 cast (input; output gradient)", Phase.FORWARD)]
        grad = ops[(f"{lin.name} FP8 cast (input; output gradient) backward", Phase.BACKWARD)]
        assert grad.bytes == pytest.approx(t * lin.out_features * (2 + FP8_CAST_WRITES))  # bf16 gradient in
        assert cast.launches == grad.launches == 1
        assert (f"{lin.name} weight cast (autocast)", Phase.FORWARD) not in ops  # no 16-bit copy under FP8
        assert (f"{lin.name} weight cast (autocast)", Phase.FORWARD) in plain
    heads = [o for (name, _), o in ops.items() if o.kind is Kind.MATMUL and name.startswith("output layer")]
    assert heads and all(o.dtype != "fp8" for o in heads)


# -- pricing ----------------------------------------------------------------------------------------------------


def test_a_large_fp8_gemm_on_an_h100_runs_at_its_measured_sustained_rate() -> None:
    gpu = GPUS["h100_sxm"]
    inputs = resolve(FULL)
    device = inputs.rates.device(gpu.gpu_id)
    peak, rate = fp8_rates(gpu, device)
    assert peak == pytest.approx(1979e12)
    assert rate == device.sustained_flops["fp8"] == pytest.approx(1333.8e12)  # cuBLASLt after warm-up [G16]
    m = n = k = 8192
    fp8 = gemm_choice(m, n, k, _device_gemm_kernels(gpu, device, inputs.rates, "fp8"))
    bf16 = gemm_choice(m, n, k, _device_gemm_kernels(gpu, device, inputs.rates, "bf16"))
    assert 2 * m * n * k / fp8.time_s == pytest.approx(rate, rel=0.05)
    assert bf16.time_s / fp8.time_s == pytest.approx(1333.8 / 701.8, rel=0.05)  # 1.9 x, not the peaks' 2 x


def test_a_card_without_a_measured_fp8_rate_runs_fp8_at_the_16_bit_rate_share_of_the_fp8_peak() -> None:
    gpu = GPUS["rtx4090"]
    device = resolve(FULL).rates.device(gpu.gpu_id)
    assert "fp8" not in device.gemm_flops
    assert fp8_rates(gpu, device)[1] == pytest.approx(device.gemm_flops["bf16"] * gpu.fp8_dense_flops
                                                      / gpu.bf16_dense_flops)


def test_a_gemm_bound_full_fine_tune_on_an_h100_is_faster_but_less_than_twice() -> None:
    plan = FULL.replace(model="llama-3.1-8b", seq_len=4096, batch_size=2, grad_checkpointing=True, gpus=8,
                        sharding="fsdp")
    gpu = GPUS["h100_sxm"]
    bf16 = estimate_time(plan, gpu, resolve(plan))
    fp8 = estimate_time(plan.replace(fp8_linear=True), gpu, resolve(plan))
    assert fp8.breakdown["matmul"] < 0.6 * bf16.breakdown["matmul"]  # the linears' GEMMs at twice the rate
    assert fp8.breakdown["memory"] > bf16.breakdown["memory"]  # plus the casts
    assert 1.1 < bf16.step_time_s / fp8.step_time_s < 2.0
    assert fp8.breakdown["attention"] == pytest.approx(bf16.breakdown["attention"])  # attention stays 16-bit
    assert fp8.peak_flops_per_gpu == pytest.approx(1979e12) and 0 < fp8.mfu.value < 1
    assert render(fp8.peak, "ru").startswith("FP8")


def test_a_gpu_without_fp8_warns_in_both_languages_and_prices_16_bit_linears() -> None:
    gpu = GPUS["a100_80_sxm"]
    plan = FULL.replace(fp8_linear=True)
    est = estimate_time(plan, gpu, resolve(plan))
    plain = estimate_time(FULL, gpu, resolve(FULL))
    assert est.step_time_s == pytest.approx(plain.step_time_s)
    (warning,) = [w for w in est.warnings if w.code == "time.no_fp8"]
    assert "A100" in render(warning, "en") and "FP8" in render(warning, "ru")
    assert "нет тензорных ядер FP8" in render(warning, "ru")


def test_offers_the_advisor_and_the_fit_matrix_list_cards_without_fp8_but_never_choose_them() -> None:
    from gpuwork.sizing import advise, evaluate_offers, fit_matrix

    plan = FULL.replace(fp8_linear=True)
    results = evaluate_offers(plan)
    refused = [r for r in results if r.offer.gpu.fp8_dense_flops is None]
    priced = [r for r in results if r.time is not None]
    assert refused and priced and all(r.offer.gpu.fp8_dense_flops is not None for r in priced)
    assert all(r.time is None and r.fit.reason.code == "error.plan.fp8_gpu" for r in refused)
    reason = refused[0].fit.reason
    assert "fp8_linear" in render(reason, "en") and "выключите fp8_linear" in render(reason, "ru")
    matrix = fit_matrix(plan)
    assert not matrix.cell("a100_80_sxm", 1).fits and matrix.cell("h100_sxm", 1).fits
    assert fit_matrix(FULL).cell("a100_80_sxm", 1).fits  # the card itself fits: FP8 is what it cannot run
    advice = advise(plan)
    outcomes = [advice.baseline] + [s.outcome for s in advice.suggestions if s.plan.fp8_linear]
    assert advice.baseline.offer is not None and len(outcomes) > 1
    assert all(o.offer.offer.gpu.fp8_dense_flops is not None for o in outcomes if o.offer is not None)


# -- memory -----------------------------------------------------------------------------------------------------


def test_memory_keeps_fp8_inputs_and_fp8_weight_copies() -> None:
    spec = resolve(FULL).spec
    block = sum(lin.count * lin.params for lin in spec.linears if lin.in_block)
    head = sum(lin.count * lin.params for lin in spec.linears if not lin.in_block)
    pure = FULL.replace(precision="bf16")
    plain, fp8 = estimate_memory(pure, spec), estimate_memory(pure.replace(fp8_linear=True), spec)
    # a pure 16-bit step had no weight copies; FP8 keeps each block linear's FP8 weight and its transpose
    assert plain.breakdown["autocast_weight_copies"] == 0
    assert fp8.breakdown["autocast_weight_copies"] == 2 * block
    mixed = estimate_memory(FULL.replace(fp8_linear=True), spec)
    assert mixed.breakdown["autocast_weight_copies"] == 2 * block + 2 * head  # and autocast's copy of the head
    # each linear saves its own 1-byte input instead of the shared 16-bit one, per token of a block: q, k and v three
    # 1-byte copies of the norm's output (3 h against 2 h), o_proj one of the attention output (SDPA saved it
    # anyway: + q_dim), gate and up two (2 h, as before), down_proj one of its input (inter against 2 inter)
    h, q_dim, inter = spec.hidden_size, spec.num_heads * spec.head_dim, spec.intermediate_size
    tokens = pure.batch_size * pure.seq_len
    assert fp8.breakdown["activations"] - plain.breakdown["activations"] == (h + q_dim - inter) * spec.num_layers * tokens


def test_a_traced_block_and_the_whole_step_replay_never_stand_for_an_fp8_plan() -> None:
    from gpuwork.estimate.allocator_step import whole_step_known
    from gpuwork.facts.block_profiles import BlockProfile

    plan = TrainPlan(model="gpt2", method="full", precision="bf16-mixed", seq_len=128, batch_size=2)
    spec = resolve(plan).spec
    assert whole_step_known(spec, plan) and not whole_step_known(spec, plan.replace(fp8_linear=True))
    profile = BlockProfile.__new__(BlockProfile)
    object.__setattr__(profile, "method", "full")
    object.__setattr__(profile, "precision", plan.precision.value)
    object.__setattr__(profile, "attention", plan.attention.value)
    assert profile.matches(plan) and not profile.matches(plan.replace(fp8_linear=True))


# -- surfaces ---------------------------------------------------------------------------------------------------


def test_the_cli_flag_the_form_the_request_and_the_share_link_carry_it() -> None:
    from gpuwork.present.request import rental_request
    from gpuwork.ui.share import plan_from_query, plan_query
    from gpuwork.ui.sizing import SizingForm

    on = plan_from_args(build_parser().parse_args(["estimate", "--method", "full", "--fp8-linear"]))
    assert on.fp8_linear is True
    assert plan_from_args(build_parser().parse_args(["estimate", "--method", "full"])).fp8_linear is False
    assert plan_from_query(plan_query(on)) == on

    form = SizingForm({"model": "llama-3.2-1b", "method": "full"})
    assert form.controls["fp8_linear"].layout.display is None  # shown for a full fine-tune
    form.controls["fp8_linear"].value = True
    assert form.error is None and form.plan.fp8_linear is True
    form.controls["method"].value = "lora"  # hidden for adapters, and not read
    assert form.controls["fp8_linear"].layout.display == "none"
    assert form.error is None and form.plan.fp8_linear is False
    assert "FP8" in SizingForm({"model": "llama-3.2-1b"}, lang="ru").controls["fp8_linear"].tooltip

    for lang, words in (("en", "linear layers in FP8"), ("ru", "линейные слои блоков в FP8")):
        request = rental_request(on, lang=lang)
        assert request.fields["suggested"]["fp8_linear"] is True
        assert words in request.text
        assert words not in rental_request(dataclasses.replace(on, fp8_linear=False), lang=lang).text


def test_an_accelerate_config_with_mixed_precision_fp8_turns_it_on(tmp_path) -> None:
    from gpuwork.facts.configs import import_configs

    path = tmp_path / "accelerate.yaml"
    path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: fp8\n"
                    "num_processes: 8\n", encoding="utf-8")
    claims = {c.field: c for c in import_configs([path]).claims}
    assert claims["fp8_linear"].value is True
    assert claims["precision"].value == "bf16-mixed"
    for lang in ("en", "ru"):
        assert "fp8_linear" in render(claims["fp8_linear"].rule, lang)


def test_a_trial_refuses_an_fp8_plan_with_the_reason_and_the_way_out_in_both_languages() -> None:
    from gpuwork.measure.errors import TrialError
    from gpuwork.measure.options import TrialOptions
    from gpuwork.measure.runtime import prepare

    plan = TrainPlan(model="tiny-llama", method="full", precision="bf16-mixed", seq_len=16, batch_size=1,
                     fp8_linear=True)
    with pytest.raises(TrialError) as info:
        prepare(plan, TrialOptions())
    for lang, words in (("en", "fp8_linear off"), ("ru", "выключенным")):
        assert words in render(info.value.msg, lang)


def test_an_fp8_gemm_asked_of_a_gpu_without_fp8_is_the_16_bit_gemm_on_both_pricing_paths() -> None:
    from gpuwork.estimate.op import Op
    from gpuwork.estimate.steptime import gemm_seconds, price_ops

    gpu = GPUS["a100_80_sxm"]
    inputs = resolve(FULL)
    device = inputs.rates.device(gpu.gpu_id)
    assert _device_gemm_kernels(gpu, device, inputs.rates, "fp8") == _device_gemm_kernels(gpu, device,
                                                                                           inputs.rates, "bf16")
    fp8, bf16 = (Op("q_proj", Kind.MATMUL, Phase.FORWARD, 2.0 * 4096 * 2048 * 2048, 0.0, 1, 1, dtype, 4096, 2048)
                 for dtype in ("fp8", "bf16"))
    assert gemm_seconds(fp8, gpu, device, inputs.rates) == gemm_seconds(bf16, gpu, device, inputs.rates)
    profile = inputs.rates.stacks[FULL.stack]
    assert price_ops((fp8,), gpu, device, inputs.rates, profile).total_s == pytest.approx(
        price_ops((bf16,), gpu, device, inputs.rates, profile).total_s)

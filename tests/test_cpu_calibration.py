"""The CPU's kernel rates and the op model priced with them (gpuwork.measure.cpu_rates): the benchmark API
(structure only, no timing assertions) and the pricing with hand-made rates (worked by hand). How well a real trial
calibrates another shape is measured by benchmarks/cpu_calibration.py (timings, so not a test)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from gpuwork.estimate.ops import Kind, Op, Phase  # noqa: E402
from gpuwork.estimate.steptime import price_ops  # noqa: E402
from gpuwork.facts.inputs import Inputs  # noqa: E402
from gpuwork.facts.model import get_spec  # noqa: E402
from gpuwork.facts.rates import load_rates  # noqa: E402
from gpuwork.facts.spec import count_params  # noqa: E402
from gpuwork.measure.cpu_rates import (  # noqa: E402
    DispatchCost,
    GemmRate,
    calibrate_then_predict,
    copy_rate,
    cpu_inputs_rates,
    cpu_plan,
    cpu_rates_from,
    cpu_step_ops,
    dispatch_cost,
    gemm_rate,
    measure_cpu_rates,
    predict_cpu_step,
    sdpa_flops,
    sdpa_rate,
    time_call,
)
from gpuwork.plan import TrainPlan  # noqa: E402

TINY = "tiny-llama"


def _finite_positive(*values: float) -> bool:
    return all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in values)


def hand_rates(threads: int = 1):
    """100 GFLOP/s GEMMs, 10 GB/s copies, 5 us of host per kernel: (forward 4 + backward 11) / 3 kernels."""
    dispatch = DispatchCost(eager_us=1.0, autograd_forward_us=1.5, autograd_backward_us=3.0, module_forward_us=4.0,
                            module_backward_us=11.0)
    gemm = (GemmRate(256, 256, 256, "fp32", 2 * 256**3 / 100e9, 100e9),)
    return cpu_rates_from(threads=threads, gemm=gemm, matmul_flops_s=100e9, copy_bytes_s=10e9, dispatch=dispatch)


# -- the benchmark API (fast: tiny sizes, structure only) ---------------------------------------------------------


def test_the_benchmarks_return_finite_positive_rates(one_thread) -> None:
    g = gemm_rate(16, 8, 4, repeats=2)
    assert (g.m, g.n, g.k, g.dtype) == (16, 8, 4, "fp32")
    assert _finite_positive(g.seconds, g.flops_s)
    assert g.flops_s == pytest.approx(2 * 16 * 8 * 4 / g.seconds)
    assert _finite_positive(copy_rate(4096, repeats=2))
    d = dispatch_cost(chain=8, repeats=2)
    assert _finite_positive(d.eager_us, d.autograd_forward_us, d.module_forward_us, d.per_kernel_us)
    assert d.per_kernel_us == pytest.approx((d.module_forward_us + d.module_backward_us) / 3)
    fwd, bwd = sdpa_rate((1, 2, 16, 8), repeats=2)
    assert _finite_positive(fwd, bwd)
    calls = []
    assert _finite_positive(time_call(lambda: calls.append(1), repeats=3, warmup=1, min_repeat_s=0.0))
    assert len(calls) == 1 + 1 + 3  # warm-up, the sizing call, three repeats of one call each


def test_measure_cpu_rates_builds_the_op_models_inputs(one_thread) -> None:
    r = measure_cpu_rates(shapes=((32, 16, 8), (64, 16, 8)), copy_bytes=1 << 16, sdpa_shape=(1, 2, 16, 8), repeats=2)
    dev, gpu = r.device, r.gpu
    assert dev.gpu_id == gpu.gpu_id == "cpu"
    assert dev.synchronous is True
    assert dev.sm_count == r.threads == torch.get_num_threads() == 1
    assert dev.host_us_per_kernel == r.dispatch.per_kernel_us
    assert len(r.gemm) == 2 and r.matmul_flops_s == pytest.approx(sorted(g.flops_s for g in r.gemm)[0] / 2
                                                                  + sorted(g.flops_s for g in r.gemm)[1] / 2)
    assert dev.matmul_flops == {"fp32": r.matmul_flops_s, "bf16": r.matmul_flops_s, "fp16": r.matmul_flops_s}
    assert dev.mem_bw_bytes_s == r.copy_bytes_s == gpu.mem_bw_bytes_s
    assert gpu.fp32_flops == gpu.bf16_dense_flops == r.matmul_flops_s and "measured" in gpu.notes
    assert {"matmul_fp32", "matmul_bf16", "mem_bw", "sm", "host"} <= set(dev.basis)
    assert _finite_positive(r.matmul_flops_s, r.copy_bytes_s, r.cached_copy_bytes_s, r.seconds, *r.sdpa_flops_s)
    assert set(r.as_dict()) >= {"gemm", "matmul_flops_s", "copy_bytes_s", "dispatch", "host_us_per_kernel"}


def test_bad_measured_figures_are_refused() -> None:
    with pytest.raises(ValueError, match="copy_bytes_s"):
        cpu_rates_from(threads=1, gemm=(), matmul_flops_s=1e9, copy_bytes_s=0.0, dispatch=hand_rates().dispatch)


# -- pricing with hand-made rates ---------------------------------------------------------------------------------


def test_a_cpu_op_costs_its_roofline_plus_its_dispatch() -> None:
    """On a CPU the dispatch adds to the kernel (synchronous).
    GEMM 256^3: 2 x 256^3 = 33,554,432 FLOPs / 100e9 = 335.54 us; bytes 3 x 256^2 x 4 = 786,432 / 10e9 = 78.6 us:
    compute-bound, + 1 x 5 us = 340.54 us. Element-wise op: 1e6 B / 10e9 = 100 us + 8 x 5 us = 140 us. Twice each."""
    r = hand_rates()
    assert r.device.host_us_per_kernel == pytest.approx(5.0)
    ops = (Op("gemm", Kind.MATMUL, Phase.FORWARD, 2.0 * 256**3, 3 * 256 * 256 * 4.0, 1, 2, "fp32", 256, 256),
           Op("norm", Kind.MEMORY, Phase.FORWARD, 0.0, 1e6, 8, 2))
    rates = load_rates()
    price = price_ops(ops, r.gpu, r.device, rates, rates.stacks["hf-trainer"])
    assert price.total_s == pytest.approx(2 * (335.54432e-6 + 5e-6) + 2 * (100e-6 + 40e-6))
    assert price.by_kind["matmul"] == pytest.approx(2 * 335.54432e-6)
    assert price.by_kind["memory"] == pytest.approx(2 * 100e-6)
    assert price.by_kind["launch overhead"] == pytest.approx(2 * 9 * 5e-6)
    # the factor divides every time, host included
    assert price_ops(ops, r.gpu, r.device, rates, rates.stacks["hf-trainer"], efficiency=0.5).total_s == \
        pytest.approx(2 * price.total_s)


def test_the_cpu_trial_runs_fp32_sdpa_on_the_eager_stack() -> None:
    plan = TrainPlan(model=TINY, method="lora", precision="bf16", attention="flash", stack="hf-liger", gpus=2)
    run = cpu_plan(plan)
    assert (run.precision.value, run.attention.value, run.stack.value, run.gpus) == ("fp32", "sdpa", "hf-trainer", 1)
    fp32 = TrainPlan(model=TINY, method="lora", precision="fp32")
    assert cpu_plan(fp32) is fp32


def test_gpuworks_loop_adds_the_logged_loss_to_the_op_list() -> None:
    """tiny-llama LoRA on q, v: 4 blocks x 2 linears x (A, B) = 16 tensors, one foreach list: AdamW at
    weight_decay 0 (the Trainer's default, which the trial keeps for this plan) runs 7 passes over 18 tensors' bytes, and each of
    the 3 micro-batches divides its loss by 3; gpuwork's loop adds the logged loss (2 kernels per step)."""
    plan = TrainPlan(model=TINY, method="lora", precision="fp32", seq_len=64, batch_size=2, grad_accum=3)
    plain = cpu_step_ops(plan, gpuwork_loop=False)
    loop = cpu_step_ops(plan)
    update = next(o for o in plain if o.name == "AdamW update")
    adapter = count_params(get_spec(TINY), plan).adapter
    assert (update.launches, update.bytes) == (7, 18 * 4 * adapter)
    assert next(o for o in plain if o.name == "loss / grad_accum").count == 3
    added = {o.name: (o.launches, o.count) for o in loop[len(plain):]}
    assert added == {"logged loss (stack, sum)": (2, 1)}
    assert cpu_step_ops(plan) is loop  # cached: price_ops' cache sees the same tuple


def test_calibration_divides_every_operation_by_the_fitted_factor() -> None:
    """Measured twice as slow as priced -> factor 0.5 -> the other shape is predicted twice its price; the
    measured shape comes back exactly; and estimate_time with the same factor prices the same operations."""
    r = hand_rates()
    a = TrainPlan(model=TINY, method="full", precision="fp32", seq_len=64, batch_size=4)
    b = a.replace(seq_len=256, batch_size=2)
    priced_a = predict_cpu_step(a, r).total_s
    cal = calibrate_then_predict(a, 2 * priced_a, b, r)
    assert cal.factor == pytest.approx(0.5)
    assert cal.priced_measured_s == pytest.approx(priced_a)
    assert cal.step_s == pytest.approx(2 * predict_cpu_step(b, r).total_s) == pytest.approx(2 * cal.uncalibrated.total_s)
    assert calibrate_then_predict(a, 2 * priced_a, a, r).step_s == pytest.approx(2 * priced_a)
    # the estimator's own calibration path, with the CPU as its GPU (gpuwork_loop off: step_ops as is)
    rates = cpu_inputs_rates(load_rates(), r)
    inputs = Inputs(spec=get_spec(TINY), gpus={"cpu": r.gpu}, rates=rates)
    from gpuwork.estimate.timing import estimate_time

    raw = calibrate_then_predict(a, 2 * predict_cpu_step(a, r, gpuwork_loop=False).total_s, b, r, gpuwork_loop=False)
    est = estimate_time(b, r.gpu, inputs, calibration={"scale": raw.factor})
    assert est.step_time_s == pytest.approx(raw.step_s)


def test_a_factor_transfers_only_within_one_run() -> None:
    r = hand_rates()
    a = TrainPlan(model=TINY, method="full", precision="fp32")
    with pytest.raises(ValueError, match="method"):
        calibrate_then_predict(a, 0.1, a.replace(method="lora"), r)
    with pytest.raises(ValueError, match="positive number"):
        calibrate_then_predict(a, 0.0, a, r)


def test_sdpa_flops_follow_the_op_models_count() -> None:
    # 4 x 2 x 256^2 x 8 x 32 = 134,217,728 full; causal x 0.5 x (1 + 128/256) = 0.75 -> 100,663,296; bwd x 2.5
    assert sdpa_flops(2, 8, 256, 32) == (100_663_296.0, 251_658_240.0)
    assert sdpa_flops(2, 8, 128, 32, causal=True)[0] == 4 * 2 * 128**2 * 8 * 32  # one block: no saving

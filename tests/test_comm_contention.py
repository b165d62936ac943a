"""Contention of hidden communication (docs/communication.md 'Contention'): each NCCL channel holds one SM for the
whole collective, so compute overlapped with a collective runs on the other SMs. The step gains the hidden
communication's seconds x channels / SMs. The published co-run figures are rates_sources.md [K17a]-[K17d]."""

from __future__ import annotations

import pytest

from gpuwork.estimate.comm import contention_share, nccl_channels
from gpuwork.facts.catalog import Link, load_gpus
from gpuwork.facts.rates import load_rates
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_time

RATES = load_rates()
GPUS = load_gpus()
# SMs per GPU as their datasheets count them: A100 108, H100 SXM 132 (NVIDIA A100 / H100 architecture whitepapers)
A100_SMS, H100_SMS = 108, 132
TOLERANCE = 0.25  # relative, against a published average that mixes GPUs and kernels (docs/communication.md)


def _slowdown(share: float) -> float:
    """How much a compute kernel lying wholly inside a collective slows: its work on (1 - share) of the SMs."""
    return share / (1 - share)


def _plan(gpus: int, sharding: str = "fsdp", model: str = "llama-3.1-8b") -> TrainPlan:
    return TrainPlan(model=model, method="full", precision="bf16-mixed", seq_len=4096, batch_size=2,
                     grad_checkpointing=True, gpus=gpus, sharding=sharding)


def test_the_channel_counts_are_the_sources_and_unsourced_links_are_not_priced():
    assert nccl_channels(RATES, GPUS["a100_80_pcie"], Link.PCIE) == 2  # [K17a] one NIC of 12-24 GB/s
    assert nccl_channels(RATES, GPUS["a100_80_sxm"], Link.NVLINK_SWITCH) == 16  # [K17a] DGX
    assert nccl_channels(RATES, GPUS["h100_sxm"], Link.NVLINK_SWITCH) == 24  # [K17c] measured
    assert nccl_channels(RATES, GPUS["rtx3090"], Link.NVLINK_BRIDGE) == 0
    assert nccl_channels(RATES, GPUS["mi300x"], Link.XGMI) == 0
    assert contention_share(24, 0) == 0.0 and contention_share(0, 132) == 0.0


def test_no_contention_on_one_gpu():
    est = estimate_time(_plan(1, "ddp"), "h100_sxm")
    assert est.comm.contention_s == 0.0
    assert "communication contention" not in est.breakdown


def test_no_contention_without_overlap():
    """DeepSpeed ZeRO-2 with its default overlap_comm off: everything is exposed, nothing hides, nothing contends."""
    est = estimate_time(_plan(8, "zero2"), "h100_sxm")
    assert est.comm.comm_s > 0
    assert est.comm.exposed_s == pytest.approx(est.comm.comm_s)
    assert est.comm.contention_s == 0.0


@pytest.mark.parametrize("gpu,sms,channels", [("h100_sxm", H100_SMS, 24), ("a100_80_sxm", A100_SMS, 16)])
def test_the_cost_is_the_hidden_seconds_times_the_channels_share(gpu, sms, channels):
    est = estimate_time(_plan(8), gpu)
    hidden = est.comm.comm_s - est.comm.exposed_s
    assert hidden > 0
    assert est.comm.contention_s == pytest.approx(hidden * channels / sms)
    assert est.breakdown["communication contention"] == pytest.approx(est.comm.contention_s)
    assert est.step_time_s == pytest.approx(est.compute_s + est.optimizer_s + est.offload_s + est.comm.exposed_s
                                            + est.comm.contention_s  # no loader given: no data wait
                                            + est.breakdown["FSDP copies"])  # FSDP2's default-stream copies


def test_the_cost_grows_with_the_hidden_communication():
    """More gathered bytes per unit of compute (a larger model's block, same tokens): more hides, more contends."""
    small, large = (estimate_time(_plan(8, model=m), "h100_sxm").comm for m in ("llama-3.2-1b", "llama-3.1-8b"))
    assert large.comm_s - large.exposed_s > small.comm_s - small.exposed_s
    assert large.contention_s > small.contention_s


# -- the published co-run measurements (docs/communication.md 'Contention', the table) ------------------------

def test_nccl_1432_the_sm_share_one_nccl_kernel_holds():
    """[K17b]: a lone NCCL kernel kept 15 % of the SMs busy and left an overlapped compute kernel 85 %. The A100
    NVSwitch count over its SMs is that share within 2 points (GPU not named; 20 of an H100's 132 would be 15 %)."""
    share = contention_share(nccl_channels(RATES, GPUS["a100_80_sxm"], Link.NVLINK_SWITCH), A100_SMS)
    assert share == pytest.approx(0.15, abs=0.02)


@pytest.mark.parametrize("gpu,sms", [("a100_80_sxm", A100_SMS), ("h100_sxm", H100_SMS)])
def test_characterizing_overlap_average_compute_slowdown(gpu, sms):
    """[K17d]: compute overlapped with communication on 4 A100s / 4 H100s (and two AMD GPUs) ran 18.9 % slower on
    average. A kernel wholly inside a collective, on (1 - share) of the SMs: A100 17.4 %, H100 22.2 %."""
    share = contention_share(nccl_channels(RATES, GPUS[gpu], Link.NVLINK_SWITCH), sms)
    assert _slowdown(share) == pytest.approx(0.189, rel=TOLERANCE)


def test_forum_one_wave_gemm_beside_an_all_gather_is_a_known_miss():
    """[K17c]: a one-wave GEMM (132 CTAs on 132 SMs) beside a 24-CTA all-gather ran about 1.7 x as long (MFU 80 ->
    47 %): the CTAs that no longer fit form a second, nearly empty wave. The share rule gives 22 %; wave
    quantisation under co-run is not modelled, so this case stays priced too fast."""
    share = contention_share(nccl_channels(RATES, GPUS["h100_sxm"], Link.NVLINK_SWITCH), H100_SMS)
    measured = 80 / 47 - 1
    assert _slowdown(share) == pytest.approx(0.222, abs=0.005)
    assert _slowdown(share) < measured / 2

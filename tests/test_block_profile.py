"""Traced block profiles: the real block's ops under fake tensors, held against the hand-written block of ops.py."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from gpuwork.estimate.ops import Kind, Phase, step_ops
from gpuwork.estimate.steptime import price_ops, stack_kernels
from gpuwork.estimate.traced_ops import (
    block_totals,
    is_block_op,
    traced_activation_bytes_per_token,
    traced_block_ops,
    with_traced_blocks,
)
from gpuwork.facts.block_profiles import Affine, BlockProfile, BlockProfileCache, bundled_profiles_dir
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.rates import load_rates
from gpuwork.measure.block_profile import block_profile_for, block_profile_key, trace_block_profile
from gpuwork.plan import TrainPlan

DATA = Path(__file__).parent / "data" / "models"
PHI = str(DATA / "phi-1_5.json")
PYTHIA = str(DATA / "pythia-1b.json")
TARGETS = {"tiny-llama": ("q_proj", "v_proj"), "tiny-qwen2": ("q_proj", "v_proj"), "tiny-gpt2": ("c_attn",)}
FLOPS_TOLERANCE = 0.02
BYTES_TOLERANCE = 0.10

# (model, seq_len, batch) x method x precision; the first two run in the fast suite
_SHAPES = (("tiny-llama", 128, 1), ("tiny-llama", 512, 2), ("tiny-qwen2", 256, 1), ("tiny-qwen2", 1024, 1),
           ("tiny-gpt2", 128, 2), ("tiny-gpt2", 512, 1))
_CASES = [(m, s, b, method, p) for m, s, b in _SHAPES for method in ("full", "lora") for p in ("bf16", "fp32")]
_FAST = {("tiny-llama", 128, 1, "full", "bf16"), ("tiny-llama", 128, 1, "lora", "fp32")}


def _case_params(with_cells: bool):
    out = []
    for case in _CASES:
        slow = [] if case in _FAST else [pytest.mark.slow]
        if not with_cells:
            out.append(pytest.param(*case, marks=slow, id="-".join(map(str, case))))
            continue
        for phase in ("forward", "backward"):
            for kind in ("matmul", "attention", "memory"):
                out.append(pytest.param(*case, phase, kind, marks=slow, id="-".join(map(str, (*case, phase, kind)))))
    return out


def _plan(model: str, seq: int, batch: int, method: str, precision: str) -> TrainPlan:
    return TrainPlan(model=model, method=method, precision=precision, seq_len=seq, batch_size=batch,
                     lora_targets=TARGETS[model])


@functools.cache
def _profile(model: str, method: str, precision: str, attention: str = "sdpa",
             seq_lens: tuple[int, int] = (64, 128)) -> BlockProfile:
    return trace_block_profile(TrainPlan(model=model, method=method, precision=precision, attention=attention,
                                         lora_targets=TARGETS.get(model, ("q_proj", "v_proj"))), seq_lens=seq_lens)


@functools.cache
def _totals(model: str, seq: int, batch: int, method: str, precision: str):
    plan = _plan(model, seq, batch, method, precision)
    spec = spec_for_plan(plan)
    hand = block_totals(step_ops(plan, spec), plan, spec)
    traced = block_totals(traced_block_ops(plan, spec, _profile(model, method, precision)), plan, spec)
    return hand, traced


# -- (a) the hand-written block held to the traced one -------------------------------------------------------


@pytest.mark.parametrize(("model", "seq", "batch", "method", "precision"), _case_params(with_cells=False))
def test_hand_block_flops_match_the_traced_block(model, seq, batch, method, precision) -> None:
    hand, traced = _totals(model, seq, batch, method, precision)
    for phase in ("forward", "backward"):
        for kind in ("matmul", "attention", "memory"):
            h, t = hand[phase][kind]["flops"], traced[phase][kind]["flops"]
            assert h == pytest.approx(t, rel=FLOPS_TOLERANCE, abs=1.0), (phase, kind, h, t)
    assert traced["forward"]["matmul"]["flops"] > 0 and traced["backward"]["attention"]["flops"] > 0


@pytest.mark.parametrize(("model", "seq", "batch", "method", "precision", "phase", "kind"),
                         _case_params(with_cells=True))
def test_hand_block_bytes_match_the_traced_block(model, seq, batch, method, precision, phase, kind) -> None:
    hand, traced = _totals(model, seq, batch, method, precision)
    h, t = hand[phase][kind]["bytes"], traced[phase][kind]["bytes"]
    assert t > 0
    assert h == pytest.approx(t, rel=BYTES_TOLERANCE), f"hand {h:.4g} vs traced {t:.4g} ({h / t - 1:+.1%})"


def test_the_profile_counts_what_flop_counter_mode_counts() -> None:
    """Per-op FLOPs summed equal FlopCounterMode's own total over the same forward + backward."""
    from gpuwork.measure import block_profile as bp

    plan = bp.profile_plan(TrainPlan(model="tiny-llama", method="lora", precision="fp32"))
    model, spec, autocast, fake_mode = bp._model_for(plan)
    with fake_mode:
        once = bp._trace_once(model, bp._first_block(model, spec), autocast, 1, 64)
    assert sum(r["flops"] for r in once["records"]) == once["flop_total"] > 0


def test_matmul_flops_are_two_per_weight_per_token_and_weights_are_read_once() -> None:
    """Forward GEMMs of a trained block: 2 FLOPs per weight per token (biases are adds); the weights' bytes
    come once per call, not per token."""
    profile = _profile("tiny-llama", "full", "fp32")
    spec = spec_for_plan(TrainPlan(model="tiny-llama"))
    weights = sum(lin.in_features * lin.out_features for lin in spec.block_linears)
    assert profile.flops_per_token("forward", "matmul", 512) == 2 * weights
    assert profile.flops_per_token("backward", "matmul", 512) == 4 * weights  # input and weight gradients
    fixed = sum(op.bytes_fixed * op.count for op in profile.ops if op.phase == "forward" and op.kind == "matmul")
    assert fixed == 4 * weights


# -- (b) a family without a hand-written block --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("config", [PHI, PYTHIA])
def test_a_family_without_a_hand_written_block_gets_traced_ops_that_price(config) -> None:
    plan = TrainPlan(model=config, method="lora", precision="bf16", seq_len=1024, lora_targets=("all-linear",))
    spec = spec_for_plan(plan)
    assert spec.model_type in ("phi", "gpt_neox")
    profile = block_profile_for(plan, BlockProfileCache())
    weights = sum(lin.in_features * lin.out_features for lin in spec.block_linears)
    adapters = sum(plan.lora_r * (lin.in_features + lin.out_features) for lin in spec.block_linears)
    assert profile.flops_per_token("forward", "matmul", 1024) == 2 * (weights + adapters)
    rates = load_rates()
    stack = rates.stacks[plan.stack]
    ops = with_traced_blocks(step_ops(plan, spec, stack_kernels(stack)), plan, spec, profile)
    gpu = get_gpu("h100_sxm")
    price = price_ops(ops, gpu, rates.device(gpu.gpu_id), rates, stack)
    assert price.total_s > 0
    assert price.by_kind["matmul"] > price.by_kind["attention"] > 0
    # every block op is traced; embedding, head and optimizer stay hand-written
    assert all("traced" in o.name for o in ops if is_block_op(o))
    assert any(o.kind is Kind.OPTIMIZER for o in ops)
    # and the activation bytes per token a block keeps, for memory
    kept = traced_activation_bytes_per_token(profile, 1024)
    assert spec.hidden_size * 2 < kept < 200 * spec.hidden_size
    assert traced_activation_bytes_per_token(profile, 1024, checkpointed=True) == 2 * spec.hidden_size


def test_phi_profile_is_bundled_and_found_without_tracing(monkeypatch) -> None:
    plan = TrainPlan(model=PHI, method="lora", precision="bf16", lora_targets=("all-linear",))
    cache = BlockProfileCache()
    key = block_profile_key(plan)
    assert key in cache.bundled_keys(), key

    def no_trace(*_a, **_k):
        raise AssertionError("traced although bundled")

    monkeypatch.setattr("gpuwork.measure.block_profile.trace_block_profile", no_trace)
    profile = block_profile_for(plan, cache)
    assert profile.model_type == "phi" and profile.architecture == "PhiDecoderLayer" and profile.causal


def test_mixture_of_experts_is_refused_with_the_reason() -> None:
    from gpuwork.errors import TraceError

    with pytest.raises(TraceError, match="data-dependent"):
        trace_block_profile(TrainPlan(model="tiny-mixtral", method="full", precision="fp32"))


# -- (c) JSON and the cache ---------------------------------------------------------------------------------


def test_json_round_trip_and_the_user_cache(tmp_path) -> None:
    profile = _profile("tiny-llama", "lora", "fp32")
    again = BlockProfile.from_json(profile.to_json())
    assert again == profile
    assert json.loads(again.to_json()) == json.loads(profile.to_json())
    memory_only = BlockProfileCache(bundled_dir=tmp_path / "none")
    assert memory_only.put(profile) is None and memory_only.get(profile.key) is profile
    user = BlockProfileCache(tmp_path / "profiles", bundled_dir=tmp_path / "none")
    written = user.put(profile)
    assert written == tmp_path / "profiles" / f"{profile.key}.json"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [written.name]
    assert BlockProfileCache(tmp_path / "profiles", bundled_dir=tmp_path / "none").get(profile.key) == profile


def test_bundled_profiles_load_and_cover_two_families_without_a_hand_written_block() -> None:
    files = sorted(bundled_profiles_dir().glob("*.json"))
    profiles = [BlockProfile.from_json(f.read_text(encoding="utf-8")) for f in files]
    assert {p.model_type for p in profiles} >= {"llama", "qwen2", "gpt2", "bert", "phi", "gpt_neox"}
    for f, p in zip(files, profiles, strict=True):
        assert f.stem == p.key
        assert p.flops_per_token("forward", "matmul", 2048) > 0
        assert p.saved_bytes.a > 0


# -- (d) sequence-length rescaling ---------------------------------------------------------------------------


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_the_profile_rescales_to_other_sequence_lengths(attention) -> None:
    near = _profile("tiny-llama", "full", "fp32", attention, (64, 128))
    far = _profile("tiny-llama", "full", "fp32", attention, (96, 320))
    for s in (512, 4096):
        for phase in ("forward", "backward"):
            for kind in ("matmul", "attention", "memory"):
                assert near.flops_per_token(phase, kind, s) == pytest.approx(far.flops_per_token(phase, kind, s))
                assert near.bytes_per_token(phase, kind, s) == pytest.approx(far.bytes_per_token(phase, kind, s))
        assert near.saved_bytes_per_token(s) == pytest.approx(far.saved_bytes_per_token(s))
    # attention FLOPs per token grow with the context, projections do not: 4 s d heads forward
    spec = spec_for_plan(TrainPlan(model="tiny-llama"))
    per_context_token = 4 * spec.num_heads * spec.head_dim
    assert near.flops_per_token("forward", "attention", 1000) == pytest.approx(1000 * per_context_token)
    assert all(op.flops.b == 0 for op in near.ops if op.kind == "matmul")
    if attention == "eager":  # the s x s scores and probabilities are saved: bytes per context token
        assert near.saved_bytes.b > 0
    else:
        assert near.saved_bytes.b == 0


def test_traced_ops_scale_with_layers_micro_batches_and_checkpointing() -> None:
    profile = _profile("tiny-llama", "full", "bf16")
    base = TrainPlan(model="tiny-llama", method="full", precision="bf16", seq_len=256)
    spec = spec_for_plan(base)
    ops = traced_block_ops(base, spec, profile)
    twice = traced_block_ops(TrainPlan(**{**base.as_dict(), "grad_accum": 2}), spec, profile)
    assert sum(o.flops * o.count for o in twice) == 2 * sum(o.flops * o.count for o in ops)
    ckpt = traced_block_ops(TrainPlan(**{**base.as_dict(), "grad_checkpointing": True}), spec, profile)
    recompute = sum(o.flops * o.count for o in ckpt if o.phase is Phase.RECOMPUTE)
    forward = sum(o.flops * o.count for o in ops if o.phase is Phase.FORWARD)
    assert recompute == forward > 0
    assert Affine(1, 2).at(3) == 7


# -- the estimates follow a traced block for a family without a hand-written one --------------------------------


def test_estimates_use_the_bundled_profile_of_a_family_without_a_hand_written_block() -> None:
    from gpuwork.estimate.memory import estimate_memory as pure_memory
    from gpuwork.facts.block_profiles import matching_profile
    from gpuwork.facts.resolve import resolve
    from gpuwork.sizing import estimate_memory, estimate_time

    plan = TrainPlan(model=PHI, method="lora", lora_targets=("all-linear",), precision="bf16", seq_len=2048)
    spec = resolve(plan).spec
    profile = matching_profile(spec, plan)
    assert profile is not None and profile.model_type == "phi"  # bundled: lora, all-linear, r16, bf16, sdpa
    traced = estimate_memory(plan)
    hand = pure_memory(plan, spec_for_plan(plan))  # the spec without profiles: the nearest family's block
    per_token = plan.tokens_per_micro_batch * spec.num_layers
    assert traced.breakdown["activations"] != hand.breakdown["activations"]
    assert traced.breakdown["activations"] >= profile.saved_bytes.at(plan.seq_len) * per_token
    time = estimate_time(plan, "a100_80_sxm")
    assert any("traced" in name for name in _op_names(plan, spec))
    assert time.tokens_per_s > 0 and time.breakdown["matmul"] > 0
    # a plan the profile was not traced for falls back to the hand-written block
    assert matching_profile(spec, plan.replace(lora_targets=("q_proj", "v_proj"))) is None


def _op_names(plan, spec):
    from gpuwork.estimate.timing import _plan_ops
    from gpuwork.facts.resolve import resolve

    inputs = resolve(plan)
    return [o.name for o in _plan_ops(plan, inputs, inputs.rates.stacks[plan.stack])]


@pytest.mark.slow
def test_the_cli_traces_the_block_of_an_unknown_family_once(capsys) -> None:
    from gpuwork.cli import main

    argv = ["estimate", "--model", PYTHIA, "--method", "lora", "--lora-targets", "query_key_value",
            "--seq-len", "1024", "--lora-r", "8"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "traced one block" in x)
    assert "no hand-written block model for 'gpt_neox': traced one block of the real class" in line
    assert main(argv) == 0  # the profile is kept for the process: the same note, its seconds too, no second trace
    assert line in capsys.readouterr().err.splitlines()

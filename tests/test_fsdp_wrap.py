"""TrainPlan.fsdp_wrap: torch FSDP with one unit per block (default) or the whole model as its root unit
(docs/communication.md 'One unit for the whole model'). Numbers are rebuilt from the stated rule with the
comm module's own collective times and the model's shapes."""

from __future__ import annotations

import json

import pytest

from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.comm import ALL_GATHER, REDUCE_SCATTER, CommTraffic, Fabric, collective_s, step_comm
from gpuwork.estimate.fsdp_costs import fsdp_kernels
from gpuwork.estimate.timing import _traffic
from gpuwork.facts.configs import import_configs
from gpuwork.facts.model import get_spec
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.spec import count_params
from gpuwork.plan import FsdpWrap, TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory, estimate_time
from gpuwork.ui.sizing import SizingForm

FACTS = load_comm_facts()
FAB = Fabric(intra_bytes_s=450e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=None)
PLAN = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", gpus=4, batch_size=4, seq_len=1024,
                 sharding="fsdp")
WHOLE = PLAN.replace(fsdp_wrap="whole")


def test_whole_is_one_unit_holding_every_parameter():
    spec = get_spec(PLAN.model)
    counts = count_params(spec, PLAN)
    blocks, whole = _traffic(PLAN, spec, counts), _traffic(WHOLE, spec, counts)
    assert blocks.units == spec.num_layers == 16 and whole.units == 0
    root = spec.params_embedding + spec.params_head + spec.params_other
    assert blocks.root_gathered_bytes == 2 * root  # bf16 gather of embeddings, head, final norm
    assert whole.root_gathered_bytes == whole.gathered_bytes == 2 * counts.total
    assert whole.root_grad_bytes == whole.grad_bytes == 4 * counts.trainable  # fp32 master gradients
    assert (whole.gathered_bytes, whole.grad_bytes) == (blocks.gathered_bytes, blocks.grad_bytes)


@pytest.mark.parametrize("ga", [1, 4])
def test_one_unit_exposes_its_gather_and_reduce_scatter(ga):
    gathered, grads = 2.5e9, 5e9
    t = CommTraffic(gpus=8, sharding=WHOLE.sharding, grad_accum=ga, units=0, grad_bytes=grads,
                    gathered_bytes=gathered, params16_bytes=gathered, root_gathered_bytes=gathered,
                    root_grad_bytes=grads)
    got = step_comm(FACTS, FAB, t, forward_s=10.0, backward_s=20.0)  # long passes: nothing hides anyway
    ag = collective_s(FACTS, FAB, ALL_GATHER, gathered, 8)
    rs = collective_s(FACTS, FAB, REDUCE_SCATTER, grads, 8)
    assert got.total_s == pytest.approx(ga * ag + rs)  # one gather a micro-batch, one reduce-scatter a step
    assert got.exposed_s == pytest.approx(got.total_s)
    assert got.message_bytes == gathered


def test_the_step_grows_by_what_the_blocks_hid():
    blocks, whole = estimate_time(PLAN, "h100_sxm"), estimate_time(WHOLE, "h100_sxm")
    assert whole.comm.exposed_s == pytest.approx(whole.comm.comm_s) and whole.comm.contention_s == 0.0
    assert whole.comm.exposed_s > blocks.comm.exposed_s
    for kind in ("matmul", "attention", "memory"):
        assert whole.breakdown[kind] == pytest.approx(blocks.breakdown[kind])
    # everything else equal: the step differs by the communication and FSDP copy terms only
    moved = [k for k in blocks.breakdown if blocks.breakdown[k] != pytest.approx(whole.breakdown.get(k, 0.0))]
    assert set(moved) <= {"communication (exposed)", "communication contention", "FSDP copies"}
    delta = sum(whole.breakdown.get(k, 0.0) - blocks.breakdown.get(k, 0.0) for k in
                ("communication (exposed)", "communication contention", "FSDP copies"))
    assert whole.step_time_s - blocks.step_time_s == pytest.approx(delta, rel=1e-6)


def test_fsdp_copies_are_one_units():
    spec = get_spec(PLAN.model)
    counts = count_params(spec, PLAN)
    kernels = {k.name: k for k in fsdp_kernels(WHOLE, spec, counts)}
    assert kernels["all-gather copy-out"].launches_per_step == 1  # one unit, gathered once
    assert kernels["all-gather copy-out"].bytes_per_step == 2 * 2 * counts.total
    assert kernels["reduce-scatter copy-in"].launches_per_step == 1
    blocks = {k.name: k for k in fsdp_kernels(PLAN, spec, counts)}
    assert blocks["all-gather copy-out"].launches_per_step == 1 + 2 * spec.num_layers


def test_memory_holds_the_whole_model_and_its_gradients():
    spec = get_spec(PLAN.model)
    counts = count_params(spec, PLAN)
    blocks, whole = estimate_memory(PLAN), estimate_memory(WHOLE)
    c = 2  # the bf16 gather (a mixed-precision policy); full training's unit gradients come in bf16 too
    root = spec.params_embedding + spec.params_head + spec.params_other
    block = c * spec.params_block
    params = c * (root + spec.num_layers * spec.params_block)
    grads = c * counts.trainable
    assert params == c * counts.total
    diff = {k: whole.phase_peaks[k] - blocks.phase_peaks[k] for k in blocks.phase_peaks}
    assert diff["forward"] == params - (c * root + block)
    assert diff["block backward"] == params + grads - (c * root + 2 * block + block)
    assert diff["backward end"] == params + grads - (c * root + c * root)
    assert diff["optimizer step"] == 0
    assert whole.peak_allocated_bytes >= blocks.phase_peaks[blocks.peak_phase] + params - (c * root + 3 * block)


def test_default_keeps_every_figure():
    assert PLAN.fsdp_wrap is FsdpWrap.BLOCKS
    same = PLAN.replace(fsdp_wrap="blocks")
    assert estimate_time(same, "h100_sxm").step_time_s == estimate_time(PLAN, "h100_sxm").step_time_s
    assert estimate_memory(same).peak_reserved_bytes == estimate_memory(PLAN).peak_reserved_bytes


@pytest.mark.parametrize("sharding", ["ddp", "zero2", "zero3"])
def test_other_shardings_refuse_it_in_both_languages(sharding):
    with pytest.raises(PlanError) as err:
        TrainPlan(gpus=4, sharding=sharding, fsdp_wrap="whole")
    assert err.value.field == "fsdp_wrap" and err.value.msg.code == "error.plan.fsdp_wrap_sharding"
    for lang, words in (("en", "is not torch FSDP"), ("ru", "не PyTorch FSDP")):
        text = err.value.text(lang)
        assert "fsdp_wrap='whole'" in text and f"sharding='{sharding}'" in text and words in text


def test_hybrid_shardings_take_it_and_a_sweep_out_drops_it():
    for sharding in ("hsdp", "hsdp-zero2"):
        assert TrainPlan(gpus=16, sharding=sharding, fsdp_wrap="whole").whole_fsdp_unit
    assert WHOLE.replace(sharding="zero3").fsdp_wrap is FsdpWrap.BLOCKS
    assert WHOLE.replace(sharding="hsdp").fsdp_wrap is FsdpWrap.WHOLE
    assert WHOLE.single_gpu().fsdp_wrap is FsdpWrap.BLOCKS
    assert TrainPlan.from_dict(json.loads(json.dumps(WHOLE.as_dict()))) == WHOLE


def test_the_cli_flag_sets_it():
    args = build_parser().parse_args(["estimate", "--gpus", "4", "--sharding", "fsdp", "--fsdp-wrap", "whole"])
    assert plan_from_args(args).fsdp_wrap is FsdpWrap.WHOLE
    assert plan_from_args(build_parser().parse_args(["estimate"])).fsdp_wrap is FsdpWrap.BLOCKS


def test_the_form_shows_it_for_torch_fsdp_only():
    form = SizingForm({"model": "llama-3.2-1b", "method": "full", "gpus": 4, "sharding": "fsdp"})
    field = form.controls["fsdp_wrap"]
    assert field.layout.display is None and [v for _, v in field.options] == ["blocks", "whole"]
    field.value = "whole"
    assert form.error is None and form.plan.fsdp_wrap is FsdpWrap.WHOLE
    form.controls["sharding"].value = "zero3"  # hidden: not read
    assert form.error is None and form.plan.fsdp_wrap is FsdpWrap.BLOCKS and field.layout.display == "none"
    ru = SizingForm({"model": "llama-3.2-1b", "gpus": 4, "sharding": "fsdp"}, lang="ru")
    assert [label for label, _ in ru.controls["fsdp_wrap"].options] == ["по слоям", "вся модель"]


def test_the_rental_request_says_how_fsdp_was_priced():
    from gpuwork.present.request import rental_request

    suggested = rental_request(WHOLE, lang="en").fields["suggested"]
    assert (suggested["sharding"], suggested["fsdp_wrap"]) == ("fsdp", "whole")
    assert rental_request(PLAN, lang="en").fields["suggested"]["fsdp_wrap"] == "blocks"


def _read(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return import_configs([str(path)])


def test_accelerate_policy_is_read(tmp_path):
    yaml = ("distributed_type: FSDP\nnum_processes: 4\nmixed_precision: bf16\nfsdp_config:\n"
            "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_auto_wrap_policy: {}\n")
    got = _read(tmp_path, "whole.yaml", yaml.format("NO_WRAP"))
    assert got.fields["fsdp_wrap"] == "whole"
    for lang, words in (("en", "the whole model is one FSDP unit"), ("ru", "вся модель — один блок FSDP")):
        assert any(words in render(line, lang) for line in got.report())
    assert _read(tmp_path, "blocks.yaml", yaml.format("TRANSFORMER_BASED_WRAP")).fields["fsdp_wrap"] == "blocks"
    assert "fsdp_wrap" not in _read(tmp_path, "size.yaml", yaml.format("SIZE_BASED_WRAP")).fields
    grad_op = yaml.format("NO_WRAP").replace("FULL_SHARD", "SHARD_GRAD_OP")  # zero2 in the plan: not torch FSDP
    assert "fsdp_wrap" not in _read(tmp_path, "op.yaml", grad_op).fields


def test_trainer_fsdp_config_policy_is_read(tmp_path):
    args = '{{"per_device_train_batch_size": 2, "fsdp": "full_shard", "fsdp_config": {{"auto_wrap_policy": "{}"}}}}'
    got = _read(tmp_path, "args.json", args.format("NO_WRAP"))
    assert got.fields["fsdp_wrap"] == "whole" and got.fields["sharding"] == "fsdp"
    assert _read(tmp_path, "b.json", args.format("TRANSFORMER_BASED_WRAP")).fields["fsdp_wrap"] == "blocks"
    unset = _read(tmp_path, "u.json", '{"per_device_train_batch_size": 2, "fsdp": "full_shard auto_wrap"}')
    assert "fsdp_wrap" not in unset.fields  # transformers 5.24.0's default wraps per block: the plan's default

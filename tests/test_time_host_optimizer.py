"""An offloaded optimizer's CPU-Adam runs on the host: the ranks of one node step at once and share its memory
bandwidth (data/kernels.csv cpu_adam_params_per_s is one host's roofline), so the host time follows the
parameters updated on the node, not one rank's shard (held-out 14, stas00's ZeRO-3 offload rows)."""

from __future__ import annotations

import pytest

from gpuwork.estimate.timing import LINK_EFFICIENCY, estimate_time
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import count_params
from gpuwork.plan import TrainPlan

ZERO3 = TrainPlan(model="llama-3.1-8b", method="full", gpus=8, sharding="zero3", offload_optimizer=True,
                  grad_checkpointing=True, seq_len=8192, batch_size=1)


def _parts(plan: TrainPlan, nodes: int = 1) -> tuple[float, float, float]:
    """(seconds of 'optimizer on CPU', CPU-Adam seconds for the node's parameters, PCIe seconds of one shard)."""
    inputs = resolve(plan)
    gpu = inputs.gpu("h200_sxm")
    est = estimate_time(plan, gpu, inputs, nodes=nodes, network="ib-ndr-400g" if nodes > 1 else None)
    shard = count_params(inputs.spec, plan).trainable / plan.shard_ranks
    node = shard * plan.gpus / nodes
    pcie = 2 * plan.precision.param_bytes * shard / (gpu.pcie_bw_bytes_s * LINK_EFFICIENCY)
    return est.breakdown["optimizer on CPU"], node / inputs.rates.kernel("cpu_adam_params_per_s"), pcie


def test_one_node_updates_every_parameter_on_its_host():
    host_s, adam_s, pcie_s = _parts(ZERO3)
    assert host_s == pytest.approx(adam_s + pcie_s, rel=1e-9)
    # all 8.03 B parameters on the one host: ~2 s at 4.1e9 params/s, not one shard's ~0.25 s
    assert adam_s == pytest.approx(1.96, abs=0.05)


def test_two_nodes_each_update_half_the_model():
    one_s, one_adam, _ = _parts(ZERO3)
    two_s, two_adam, two_pcie = _parts(ZERO3.replace(gpus=16), nodes=2)
    assert two_s == pytest.approx(two_adam + two_pcie, rel=1e-9)
    assert two_adam == pytest.approx(one_adam / 2, rel=1e-9)

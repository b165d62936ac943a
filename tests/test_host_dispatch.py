"""kernels.csv's host cost per eager kernel is what scripts/derive_host_dispatch.py derives from the measured
dispatch chains (docs/measurements), and the derivation follows its rule on hand-made leases."""

import json

import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def derive():
    return load_benchmark("derive_host_dispatch", "scripts")


def test_kernels_csv_holds_the_derived_values(derive):
    derived = derive.derive(derive.MEASUREMENTS / "h200-2026-12-04")
    table = derive.kernels_csv()
    for key in derive.KEYS.values():
        assert table[key] == derived[key], key
    assert derive.main(["--check"]) == 0


def _dispatch(bare, forward, backward_two_kernels, op_forward=None, op_backward=None):
    return {"host": [{"what": "dispatch", "eager_us": bare, "module_forward_us": forward,
                      "module_backward_us": backward_two_kernels, "autograd_forward_us": op_forward or bare,
                      "autograd_backward_us": op_backward or 2 * bare}]}


def test_the_rule_on_hand_made_leases(derive, tmp_path):
    # lease 1: gpu_check's bare op only; lease 2: one chain; lease 3: two samples, averaged
    (tmp_path / "check.json").write_text(json.dumps(
        {"kernels": [{"kernel": "eager dispatch per op", "measured": 8e-6}]}))
    # lease 2: x3 forward, x4 backward, an op on its own x1.5, its node x2; lease 3: x2, x5, x1.1, x1.6
    (tmp_path / "sweep2.json").write_text(json.dumps(_dispatch(4.0, 12.0, 32.0, 6.0, 8.0)))
    (tmp_path / "sweep3.json").write_text(json.dumps(_dispatch(10.0, 20.0, 100.0, 11.0, 16.0)))
    (tmp_path / "sweep3_again.json").write_text(json.dumps(_dispatch(10.0, 20.0, 100.0, 11.0, 16.0)))
    d = derive.derive(tmp_path)
    assert d["bare_us"] == pytest.approx(8.0)  # median of 8, 4, 10
    assert d["forward_ratio"] == pytest.approx(2.5) and d["backward_ratio"] == pytest.approx(4.5)
    assert d["launch_overhead_eager_us"] == 20.0 and d["launch_overhead_eager_backward_us"] == 36.0
    assert d["launch_overhead_eager_nograd_us"] == 8.0
    assert d["launch_overhead_isolated_op_us"] == 10.4 and d["launch_overhead_isolated_op_backward_us"] == 14.4


def test_a_folder_without_a_module_chain_is_refused(derive, tmp_path):
    (tmp_path / "check.json").write_text(json.dumps({"kernels": [{"kernel": "eager dispatch per op",
                                                                  "measured": 8e-6}]}))
    with pytest.raises(SystemExit, match="no nn.Linear dispatch chain"):
        derive.derive(tmp_path)

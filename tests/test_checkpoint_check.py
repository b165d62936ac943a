"""The honest checkpoint check (gpuwork.measure.checkpoint): the restore is compared with the state hashed in
memory before the save, so a damaged file is caught.

Each case runs a real tiny-llama trial on the CPU (seq 32, batch 2, one step) and damages the saved checkpoint
between the save and the restore (``after_checkpoint_save``, the round-trip's fault-injection seam): a flipped
bit, a truncated file, a missing file, a wrong optimizer state, a swapped RNG state, a file that would run code.
"""

from __future__ import annotations

import contextlib
import functools
import io
import pickle
from pathlib import Path

import pytest
import torch

from gpuwork.cli import main
from gpuwork.cli.trial import EXIT_CHECKPOINT_NOT_VERIFIED
from gpuwork.measure import checkpoint as checkpoint_module
from gpuwork.measure.checkpoint import _digest, compare_digests, digest_state
from gpuwork.measure.runtime import rng_from_tensors, rng_state, rng_tensors
from gpuwork.measure.trial import run_trial
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


def plan(method: str = "full") -> TrainPlan:
    return TrainPlan(model="tiny-llama", method=method, precision="fp32", seq_len=32, batch_size=2, lora_r=4)


def checked(damage, method: str = "full"):
    """A one-step trial whose checkpoint ``damage(folder)`` changes before the restore."""
    return run_trial(plan(method), steps=1, warmup=0, after_checkpoint_save=damage).checkpoint


def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # the last byte is tensor data (the header comes first)
    path.write_bytes(bytes(data))


# The kinds of damage the save-and-restore check is shown (the resume is shown the same ones: test_resume_verify).
SAVE_CHECK_DAMAGE = ("flipped bit in the weights", "truncated optimizer.pt", "missing trainer_state.json",
                     "missing optimizer.pt", "wrong optimizer state", "swapped RNG state",
                     "wrong step in trainer_state.json", "flipped bit in the adapter")


def damage_checkpoint(kind: str, folder: Path) -> None:
    """Damage the checkpoint in ``folder`` in one of the ways of SAVE_CHECK_DAMAGE."""
    import json

    if kind == "flipped bit in the weights":
        flip_last_byte(folder / "model.safetensors")
    elif kind == "flipped bit in the adapter":
        flip_last_byte(folder / "adapter_model.safetensors")
    elif kind == "truncated optimizer.pt":
        path = folder / "optimizer.pt"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif kind == "missing trainer_state.json":
        (folder / "trainer_state.json").unlink()
    elif kind == "missing optimizer.pt":
        (folder / "optimizer.pt").unlink()
    elif kind == "wrong optimizer state":
        state = torch.load(folder / "optimizer.pt", weights_only=True)
        state["state"][0]["exp_avg"].mul_(1.5)
        torch.save(state, folder / "optimizer.pt")
    elif kind == "swapped RNG state":
        torch.manual_seed(12345)  # another run's generator
        torch.save(rng_tensors(rng_state(torch.device("cpu"))), folder / "rng_state.pth")
    elif kind == "wrong step in trainer_state.json":
        state = json.loads((folder / "trainer_state.json").read_text())
        state["global_step"] += 1
        (folder / "trainer_state.json").write_text(json.dumps(state))


# -- pure parts ---------------------------------------------------------------------------------------------


def test_digests_see_one_bit_and_the_rng_survives_as_tensors():
    a = torch.arange(12, dtype=torch.float32)
    b = a.clone()
    b.view(torch.int32)[5] ^= 1  # one bit of one element
    assert _digest(a) == _digest(a.clone()) and _digest(a) != _digest(b)
    assert _digest(torch.ones(2, dtype=torch.bfloat16))[0] == "torch.bfloat16"
    checked_count, bad = compare_digests(digest_state("m", {"w": a, "n": 3}), digest_state("m", {"w": b, "n": 3}))
    assert (checked_count, bad) == (1, ["m.w"])
    assert compare_digests(digest_state("m", {"w": a}), digest_state("m", {"w": a, "extra": 1})) == (1, ["m.extra"])
    buffer = io.BytesIO()
    torch.save(rng_tensors(rng_state(torch.device("cpu"))), buffer)
    buffer.seek(0)
    state = rng_from_tensors(torch.load(buffer, weights_only=True))
    assert torch.equal(state["torch"], torch.get_rng_state())


# -- a verified round-trip, then each kind of damage -----------------------------------------------------------


@pytest.mark.slow
def test_an_undamaged_checkpoint_is_verified_by_its_in_memory_digests():
    ck = checked(lambda folder: None)
    assert ck.verified and ck.tensors_equal, render(ck.message)
    assert ck.tensors_checked > 100  # model, optimizer moments, RNG tensors
    assert ck.resumed_losses == ck.uninterrupted_losses


@pytest.mark.slow
@pytest.mark.parametrize("kind", SAVE_CHECK_DAMAGE)
def test_each_kind_of_damage_is_caught(kind):
    ck = checked(functools.partial(damage_checkpoint, kind), method="lora" if "adapter" in kind else "full")
    text = render(ck.message)
    assert not ck.verified and text.startswith("checkpoint NOT verified: "), text
    parts = {m.code: m for m in ck.message["parts"]}
    if kind.startswith("missing"):
        name = kind.split()[1]
        assert parts["checkpoint.file_missing"]["file"] == name and f"{name} is missing" in text
    elif kind == "truncated optimizer.pt":
        assert parts["checkpoint.file_unreadable"]["file"] == "optimizer.pt" and "cannot be read back" in text
    else:
        first = {"flipped bit in the weights": "model.", "flipped bit in the adapter": "model.",
                 "wrong optimizer state": "optimizer.state.0.exp_avg", "swapped RNG state": "rng.torch",
                 "wrong step in trainer_state.json": "trainer_state.global_step"}[kind]
        assert parts["checkpoint.state_differs"]["first"].startswith(first), text
    assert render(ck.message, "ru").startswith("чекпойнт НЕ подтверждён: ")


@pytest.mark.slow
def test_a_pickled_file_is_refused_and_runs_no_code(tmp_path):
    marker = tmp_path / "ran"

    def damage(folder: Path) -> None:
        class Payload:
            def __reduce__(self):
                return (Path.touch, (marker,))

        (folder / "rng_state.pth").write_bytes(pickle.dumps({"torch": Payload()}))

    ck = checked(damage)
    assert not ck.verified and not marker.exists()
    assert ck.message["parts"][0].code == "checkpoint.file_unreadable"
    assert ck.message["parts"][0]["file"] == "rng_state.pth"


@pytest.mark.slow
def test_the_cli_exits_non_zero_when_the_check_fails(monkeypatch, capsys):
    real_save = checkpoint_module.FileCheckpoint.save

    def save_then_flip(self, run, setup, folder, step, **position):
        saved = real_save(self, run, setup, folder, step, **position)
        flip_last_byte(folder / "model.safetensors")
        return saved

    monkeypatch.setattr(checkpoint_module.FileCheckpoint, "save", save_then_flip)
    with contextlib.redirect_stderr(io.StringIO()) as err:
        rc = main(["trial", "--model", "tiny-llama", "--method", "full", "--precision", "fp32", "--seq-len", "32",
                   "--batch-size", "2", "--steps", "1", "--warmup", "0", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == EXIT_CHECKPOINT_NOT_VERIFIED == 4
    assert "checkpoint NOT verified: " in out and "NOT verified" in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1

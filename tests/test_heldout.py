"""Held-out time cases: the protocol is checked against real git history, and the page scores frozen predictions."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuwork.measure.accuracy import heldout_markdown, heldout_scores, time_accuracy_rows
from gpuwork.measure.heldout import HELDOUT_NAME, heldout_sets, parse_sets, protocol_problems
from gpuwork.measure.time_cases import TIME_CASES

REPO = Path(__file__).resolve().parents[1]
REL = Path("gpuwork/facts/data") / HELDOUT_NAME
PLAN = {"model": "llama-3.2-1b", "method": "lora", "seq_len": 512, "batch_size": 2, "lora_targets": ["q_proj", "v_proj"],
        "eval_fraction": 0.0}


def _case(name: str, predicted: float, **extra) -> dict:
    return {"name": name, "source_id": "src", "source": "https://example.org/table", "gpu_id": "a100_80_sxm",
            "nodes": 1, "network": None, "plan": PLAN, "metric": "tokens_per_s_per_gpu",
            "predicted_tokens_per_s_per_gpu": predicted, **extra}


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path):
    """A repository that followed the protocol: model frozen, predictions committed, figures revealed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / REL.parent).mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "gpuwork/estimate.py").write_text("RATE = 1\n")
    frozen = _commit(repo, "model")
    doc = {"sets": [{"name": "s1", "frozen_commit": frozen, "predictions_commit": None,
                     "cases": [_case("a", 1000.0), _case("b", 2000.0)]}]}
    (repo / REL).write_text(json.dumps(doc))
    predictions = _commit(repo, "predictions")
    doc["sets"][0]["predictions_commit"] = predictions
    for case, value in zip(doc["sets"][0]["cases"], (1250.0, 1600.0), strict=True):
        case["measured"] = value
    (repo / REL).write_text(json.dumps(doc))
    _commit(repo, "reveal")
    return repo, doc


def test_a_set_that_followed_the_protocol_has_no_problems(history):
    repo, doc = history
    (held,) = parse_sets(doc)
    assert held.revealed and protocol_problems(held, repo) == []


def test_a_prediction_changed_after_it_was_committed_is_caught(history):
    repo, doc = history
    doc["sets"][0]["cases"][0]["predicted_tokens_per_s_per_gpu"] = 1240.0
    (held,) = parse_sets(doc)
    assert any("'a'" in p and "prediction changed" in p for p in protocol_problems(held, repo))


def test_a_configuration_changed_after_the_predictions_is_caught(history):
    repo, doc = history
    doc["sets"][0]["cases"][1]["plan"] = {**PLAN, "batch_size": 4}
    (held,) = parse_sets(doc)
    assert any("'b'" in p and "configuration changed" in p for p in protocol_problems(held, repo))


def test_figures_on_file_with_the_predictions_are_caught(history):
    repo, doc = history
    # the same set, but predicted in a commit that already held a figure
    (repo / REL).write_text(json.dumps({"sets": [{**doc["sets"][0], "predictions_commit": None, "cases": [
        _case("a", 1000.0, measured=1250.0), _case("b", 2000.0)]}]}))
    leaked = _commit(repo, "predictions with a figure")
    doc["sets"][0]["predictions_commit"] = leaked
    (held,) = parse_sets(doc)
    assert any("'a'" in p and "published figure" in p for p in protocol_problems(held, repo))


def test_a_model_change_between_freeze_and_predictions_is_caught(history):
    repo, doc = history
    (repo / "gpuwork/estimate.py").write_text("RATE = 2\n")
    (repo / REL).write_text(json.dumps({"sets": [{**doc["sets"][0], "predictions_commit": None,
                                                  "cases": [_case("a", 1000.0), _case("b", 2000.0)]}]}))
    late = _commit(repo, "model changed, then predicted")
    doc["sets"][0]["predictions_commit"] = late
    (held,) = parse_sets(doc)
    assert any("gpuwork/estimate.py changed" in p for p in protocol_problems(held, repo))


def test_frozen_predictions_are_scored_not_todays_model(history):
    _, doc = history
    sets = parse_sets(doc)
    (score,) = heldout_scores(sets)
    assert [r.error for r in score.frozen] == pytest.approx([1000 / 1250 - 1, 2000 / 1600 - 1])
    today = time_accuracy_rows(tuple(c.time_case() for c in sets[0].cases))
    assert [r.error for r in score.today] == pytest.approx([r.error for r in today])
    page = heldout_markdown([score], sets)
    assert "| a | src |" in page and "-20%" in page and "+25%" in page


def test_an_unrevealed_set_is_listed_without_a_score():
    doc = {"sets": [{"name": "pending", "frozen_commit": "0" * 40, "predictions_commit": None,
                     "cases": [_case("a", 1000.0)]}]}
    sets = parse_sets(doc)
    assert heldout_scores(sets) == []
    assert "not revealed yet" in heldout_markdown([], sets)


def test_the_bundled_sets_followed_the_protocol():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    if _git(REPO, "rev-parse", "--is-shallow-repository") == "true":
        pytest.skip("a shallow clone lacks the commits the protocol names")
    sets = heldout_sets()
    seen = {c.name for c in TIME_CASES}
    for held in sets:
        assert protocol_problems(held, REPO) == []
        assert not seen & {c.name for c in held.cases}, "a held-out case shares a name with a seen one"
    memory = heldout_sets(kind="memory")
    assert memory, "the bundled memory sets are missing"
    for held in memory:
        assert held.kind == "memory" and held.revealed and protocol_problems(held, REPO) == []


GPT2_SMALL = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 50264, "n_positions": 1024,
              "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": 3072, "activation_function": "gelu_new"}


def test_a_case_with_its_own_config_is_priced_on_that_architecture():
    from gpuwork.measure.accuracy import case_estimate, case_gpu
    from gpuwork.measure.heldout import plan_from_json

    gpu = case_gpu("a100_80_sxm")
    fields = {"model": "no-such-preset-gpt", "method": "scratch", "seq_len": 1024, "batch_size": 8,
              "eval_fraction": 0.0}
    small = case_estimate(plan_from_json(fields), gpu, 1, None, None, GPT2_SMALL)
    deep = case_estimate(plan_from_json(fields), gpu, 1, None, None, {**GPT2_SMALL, "n_layer": 24})
    # 12 more blocks of 7.1 M parameters each: the step's FLOPs per token grow by 2 x 6 x 85 M / 124 M
    assert small.flops_per_token.total < deep.flops_per_token.total
    assert 1.5 < deep.flops_per_token.total / small.flops_per_token.total < 2.0


def test_a_changed_inline_config_is_caught(history):
    repo, doc = history
    for case in doc["sets"][0]["cases"]:
        case.pop("measured")
    doc["sets"][0]["cases"][0]["model_config"] = GPT2_SMALL
    (repo / REL).write_text(json.dumps({"sets": [{**doc["sets"][0], "predictions_commit": None}]}))
    predictions = _commit(repo, "predictions with a config")
    doc["sets"][0]["predictions_commit"] = predictions
    doc["sets"][0]["cases"][0]["model_config"] = {**GPT2_SMALL, "n_layer": 24}
    (held,) = parse_sets(doc)
    assert any("'a'" in p and "configuration changed" in p for p in protocol_problems(held, repo))


def _memory_history(tmp_path: Path):
    """A memory set that followed the protocol, revealed."""
    from gpuwork.measure.heldout import MEMORY_HELDOUT_NAME

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "mrepo"
    rel = Path("gpuwork/facts/data") / MEMORY_HELDOUT_NAME
    (repo / rel.parent).mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "gpuwork/estimate.py").write_text("RATE = 1\n")
    frozen = _commit(repo, "model")
    case = {"name": "m", "source_id": "src", "source": "https://example.org/memory", "gpu_id": "a100_80_sxm",
            "plan": PLAN, "metric": "reserved", "predicted_bytes": 20 * 2**30}
    doc = {"sets": [{"name": "mem1", "frozen_commit": frozen, "predictions_commit": None, "cases": [case]}]}
    (repo / rel).write_text(json.dumps(doc))
    doc["sets"][0]["predictions_commit"] = _commit(repo, "predictions")
    case["measured"] = 25 * 2**30
    (repo / rel).write_text(json.dumps(doc))
    _commit(repo, "reveal")
    return repo, doc


def test_memory_sets_follow_the_same_protocol(tmp_path):
    repo, doc = _memory_history(tmp_path)
    (held,) = parse_sets(doc, "memory")
    assert held.kind == "memory" and held.revealed and protocol_problems(held, repo) == []
    doc["sets"][0]["cases"][0]["predicted_bytes"] = 24 * 2**30  # a prediction moved towards the figure
    (moved,) = parse_sets(doc, "memory")
    assert any("'m'" in p and "prediction changed" in p for p in protocol_problems(moved, repo))


def test_memory_sets_score_the_frozen_prediction(tmp_path):
    from gpuwork.measure.accuracy import case_memory, memory_heldout_rows
    from gpuwork.measure.heldout import plan_from_json

    _, doc = _memory_history(tmp_path)
    (held,) = parse_sets(doc, "memory")
    (row,) = memory_heldout_rows(held)
    assert row["frozen_error"] == pytest.approx(20 / 25 - 1)
    today = case_memory(plan_from_json(PLAN), "reserved")
    assert row["estimated_bytes"] == today and row["error"] == pytest.approx(today / (25 * 2**30) - 1)


def test_a_memory_case_is_priced_by_the_peak_its_source_measured():
    from gpuwork.measure.accuracy import case_memory
    from gpuwork.measure.heldout import plan_from_json

    plan = plan_from_json(PLAN)
    allocated, reserved, device = (case_memory(plan, m) for m in ("allocated", "reserved", "device"))
    assert allocated < reserved < device


def test_a_time_metric_is_refused_in_a_memory_set():
    doc = {"sets": [{"name": "x", "frozen_commit": "0" * 40, "cases": [
        {"name": "m", "source_id": "s", "source": "u", "gpu_id": "a100_80_sxm", "plan": PLAN,
         "metric": "tokens_per_s", "predicted_bytes": 1}]}]}
    with pytest.raises(ValueError, match="metric"):
        parse_sets(doc, "memory")

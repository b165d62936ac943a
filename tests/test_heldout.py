"""Held-out time cases: the protocol is checked against real git history, and the page scores frozen predictions."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import load_benchmark

from gpuwork.measure.accuracy import heldout_markdown, heldout_scores, time_accuracy_rows
from gpuwork.measure.heldout import HELDOUT_NAME, RereadError, heldout_sets, parse_sets, protocol_problems
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


def test_a_runs_size_may_stand_with_the_predictions_but_not_its_time(history):
    repo, doc = history
    # predict keeps a whole-run case's samples and covers (configuration); its wall time is the figure
    sized = {"samples": 4_000, "covers": ["steps", "first_steps"]}
    for extra, leaked in (({}, False), ({"measured_time_s": 812.0}, True)):
        (repo / REL).write_text(json.dumps({"sets": [{**doc["sets"][0], "predictions_commit": None, "cases": [
            _case("a", 1000.0, **sized, **extra), _case("b", 2000.0)]}]}))
        doc["sets"][0]["predictions_commit"] = _commit(repo, f"predictions {extra}")
        doc["sets"][0]["cases"][0].update(sized)
        (held,) = parse_sets(doc)
        problems = protocol_problems(held, repo)
        assert any("'a'" in p and "published figure" in p for p in problems) is leaked, problems


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


# -- re-readings: a case's configuration as it should have been read, kept beside the frozen one -------------

EVIDENCE = [{"url": "https://example.org/run.sh", "quote": "--per_device_train_batch_size 4"}]
REREAD = {"plan": {"batch_size": 4}, "why": "The script runs batch 4, not 2.", "evidence": EVIDENCE}


def test_a_reread_changes_the_reread_score_only(history):
    repo, doc = history
    (plain,) = heldout_scores(parse_sets(doc))
    doc["sets"][0]["cases"][1]["reread"] = REREAD
    sets = parse_sets(doc)
    (score,) = heldout_scores(sets)
    assert protocol_problems(sets[0], repo) == []
    assert [r.error for r in score.frozen] == [r.error for r in plain.frozen]
    assert [r.error for r in score.today] == [r.error for r in plain.today]
    case = sets[0].cases[1]
    assert case.reread is not None and case.reread.changed == (("plan.batch_size", "2", "4"),)
    (again,) = time_accuracy_rows((case.as_reread().time_case(),))
    assert score.reread[0] == score.today[0] and score.reread[1] == again
    # batch 4 amortises the per-step costs over twice the tokens: a different figure from the one as recorded
    assert again.predicted != score.today[1].predicted
    page = heldout_markdown([score], sets)
    assert "### Re-read configurations" in page and "plan.batch_size 2 -> 4" in page
    assert f"{score.today[1].error:+.0%} | {again.error:+.0%} |" in page and "unbiased" in page


def test_a_reread_does_not_hide_a_changed_configuration(history):
    repo, doc = history
    doc["sets"][0]["cases"][1]["reread"] = REREAD
    doc["sets"][0]["cases"][1]["plan"] = {**PLAN, "batch_size": 4}  # the frozen record itself edited
    (held,) = parse_sets({"sets": [{**doc["sets"][0], "cases": [
        {k: v for k, v in c.items() if k != "reread"} for c in doc["sets"][0]["cases"]]}]})
    assert any("'b'" in p and "configuration changed" in p for p in protocol_problems(held, repo))


def test_a_memory_reread_moves_the_reread_error_only(tmp_path):
    from gpuwork.measure.accuracy import case_memory, memory_heldout_rows
    from gpuwork.measure.heldout import plan_from_json

    repo, doc = _memory_history(tmp_path)
    (before,) = memory_heldout_rows(parse_sets(doc, "memory")[0])
    doc["sets"][0]["cases"][0]["reread"] = {"plan": {"grad_checkpointing": True}, "why": "w", "evidence": EVIDENCE}
    (held,) = parse_sets(doc, "memory")
    assert protocol_problems(held, repo) == []
    (row,) = memory_heldout_rows(held)
    assert (row["frozen_error"], row["error"]) == (before["frozen_error"], before["error"])
    checkpointed = case_memory(plan_from_json({**PLAN, "grad_checkpointing": True}), "reserved")
    assert row["reread_bytes"] == checkpointed < row["estimated_bytes"]
    assert row["reread_error"] == pytest.approx(checkpointed / (25 * 2**30) - 1)


def test_a_memory_case_recorded_without_its_gpu_can_be_re_read(tmp_path):
    # the source names no GPU (gpu_id null): its plan can be re-read; a re-read GPU must still be a known one
    from gpuwork.measure.accuracy import memory_heldout_rows

    _, doc = _memory_history(tmp_path)
    doc["sets"][0]["cases"][0]["gpu_id"] = None
    doc["sets"][0]["cases"][0]["reread"] = {"plan": {"batch_size": 1}, "why": "w", "evidence": EVIDENCE}
    (row,) = memory_heldout_rows(parse_sets(doc, "memory")[0])
    assert row["reread_bytes"] < row["estimated_bytes"]
    doc["sets"][0]["cases"][0]["reread"]["gpu_id"] = ""
    with pytest.raises(RereadError) as caught:
        parse_sets(doc, "memory")
    assert caught.value.field == "gpu_id"


@pytest.mark.parametrize(("reread", "field"), [
    ({**REREAD, "batch_size": 4}, "batch_size"),  # a plan field outside "plan"
    ({**REREAD, "plan": {"batch_sise": 4}}, "plan.batch_sise"),
    ({**REREAD, "plan": {"precision": "bf17"}}, "plan.precision"),
    ({**REREAD, "plan": {"batch_size": 0}}, "plan.batch_size"),
    ({**REREAD, "plan": ["batch_size", 4]}, "plan"),
    ({**REREAD, "metric": "samples_per_minute"}, "metric"),
    ({**REREAD, "nodes": 0}, "nodes"),
    ({**REREAD, "gpu_id": "a100_81_sxm"}, "gpu_id"),
    ({**REREAD, "why": " "}, "why"),
    ({**REREAD, "evidence": []}, "evidence"),
    ({**REREAD, "evidence": [{"url": "example.org", "quote": "q"}]}, "evidence"),
    ({**REREAD, "plan": {"batch_size": 2}}, "reread"),  # the value as recorded: nothing re-read
    ({**REREAD, "covers": ["eval_every:2"]}, "covers"),  # the span must start with the steps
    ({**REREAD, "covers": ["steps", "eval_every:0"]}, "covers"),
    ("batch 4", "reread"),
])
def test_a_malformed_reread_is_one_clear_error(reread, field):
    doc = {"sets": [{"name": "s", "frozen_commit": "0" * 40, "cases": [_case("a", 1.0), _case("b", 2.0)]}]}
    doc["sets"][0]["cases"][1]["reread"] = reread
    with pytest.raises(RereadError) as caught:
        parse_sets(doc)
    err = caught.value
    assert (err.case, err.field) == ("b", field)
    for lang in ("en", "ru"):
        assert "b" in err.text(lang) and "Traceback" not in err.text(lang)
    assert "held-out case b:" in str(err)
    assert field.rsplit(".", 1)[-1] in str(err) if field != "reread" else "re-reading" in str(err)


def test_the_memory_page_is_current():
    from gpuwork.measure.accuracy import accuracy_report

    page = (REPO / "docs" / "accuracy.md").read_text(encoding="utf-8")
    # the traced grid (--grid) follows the published and held-out sections; those are compared byte for byte
    assert page.split("## Analytic estimate vs fake-tensor trace")[0] == accuracy_report(), (
        "regenerate: gpuwork accuracy --grid --out docs/accuracy.md")


def test_the_memory_page_lists_a_reread_and_gives_both_figures(tmp_path):
    from gpuwork.measure.accuracy import _memory_heldout_section, _memory_today_line, memory_heldout_rows

    _, doc = _memory_history(tmp_path)
    doc["sets"][0]["cases"][0]["reread"] = {"plan": {"grad_checkpointing": True}, "why": "The script checkpoints.",
                                            "evidence": EVIDENCE}
    sets = parse_sets(doc, "memory")
    (row,) = memory_heldout_rows(sets[0])
    lines, held_rows = _memory_heldout_section(sets)
    assert "### Re-read configurations" in lines
    assert (f"| m | plan.grad_checkpointing False -> True | {row['error']:+.1%} | {row['reread_error']:+.1%} | "
            f"The script checkpoints. | [1](https://example.org/run.sh) |") in lines
    line = _memory_today_line([], held_rows)
    assert f"{abs(row['error']):.1%}" in line and "with the 1 re-reading applied" in line
    assert f"{abs(row['reread_error']):.1%}" in line and "unbiased" in line


def test_the_time_page_summary_gives_both_figures(history):
    from gpuwork.measure.accuracy import time_accuracy_page, time_accuracy_summary

    _, doc = history
    doc["sets"][0]["cases"][1]["reread"] = REREAD
    sets = parse_sets(doc)
    seen = time_accuracy_rows(TIME_CASES[:1])
    (score,) = heldout_scores(sets)
    page = time_accuracy_page(seen, sets)
    now, again = time_accuracy_summary(seen + score.today), time_accuracy_summary(seen + score.reread)
    assert (f"median |error| {now['median']:.0%}, 90th percentile {now['p90']:.0%} on the configurations as "
            f"recorded. With the 1 re-reading applied") in page
    assert f"median {again['median']:.0%}, 90th percentile {again['p90']:.0%}. Re-readings are looked for" in page


def test_a_reread_evaluation_share_prices_the_evaluations_a_figure_covers():
    # a whole-run figure that holds evaluations: as recorded (eval_fraction 0.0) they are priced at the app's default
    # share; a re-reading that states the share its source's config implies is priced at that share instead
    raw = {**_case("run", 1.0), "metric": "samples_per_s", "samples": 64_000, "covers": ["steps", "eval_every:100"],
           "measured": 10.0,
           "reread": {"plan": {"eval_fraction": 0.5}, "why": "config states it",
                      "evidence": [{"url": "https://example.org/config.py", "quote": "eval_iters = 200"}]}}
    (held,) = parse_sets({"sets": [{"name": "s", "frozen_commit": None, "predictions_commit": None,
                                    "cases": [raw]}]})
    case = held.cases[0]
    (recorded,) = time_accuracy_rows((case.time_case(),))
    (again,) = time_accuracy_rows((case.as_reread().time_case(),))
    assert recorded.covered is not None and again.covered is not None
    assert recorded.covered.steps_s == pytest.approx(again.covered.steps_s)
    assert recorded.covered.eval_s == pytest.approx(0.05 * recorded.covered.steps_s)
    assert again.covered.eval_s == pytest.approx(0.5 * again.covered.steps_s)
    assert again.predicted < recorded.predicted


def test_a_reread_span_prices_what_the_source_code_says_the_figure_holds():
    # recorded as the steps alone; the source's code ends every run with an evaluation and a save inside the timed
    # span: re-read, the evaluation share and the save are priced, the frozen and as-recorded figures stay
    raw = {**_case("run", 1.0), "metric": "samples_per_s", "samples": 64_000, "covers": ["steps", "first_steps"],
           "measured": 10.0,
           "reread": {"covers": ["steps", "first_steps", "eval_every:1000", "save_every:1000"],
                      "plan": {"eval_fraction": 0.4}, "why": "the loop evaluates and saves before it stops the clock",
                      "evidence": [{"url": "https://example.org/trainer.py", "quote": "self._maybe_log_save_evaluate"}]}}
    (held,) = parse_sets({"sets": [{"name": "s", "frozen_commit": None, "predictions_commit": None,
                                    "cases": [raw]}]})
    case = held.cases[0]
    assert case.reread is not None and ("covers", "steps, first_steps",
                                        "steps, first_steps, eval_every:1000, save_every:1000") in case.reread.changed
    (recorded,) = time_accuracy_rows((case.time_case(),))
    (again,) = time_accuracy_rows((case.as_reread().time_case(),))
    assert recorded.covered is not None and recorded.covered.eval_s == 0 and recorded.covered.saves_s == 0
    assert again.covered is not None and again.covered.eval_s == pytest.approx(0.4 * again.covered.steps_s)
    assert again.covered.saves_s > 0 and again.predicted < recorded.predicted


def test_a_memory_reread_cannot_set_a_time_span(tmp_path):
    _, doc = _memory_history(tmp_path)
    doc["sets"][0]["cases"][0]["reread"] = {"covers": ["steps", "eval_every:10"], "why": "w", "evidence": EVIDENCE}
    with pytest.raises(RereadError) as caught:
        parse_sets(doc, "memory")
    assert caught.value.field == "covers" and "covers" not in caught.value.text("en").split("use one of")[1]


def test_a_reread_link_prices_the_pcie_path_the_source_names():
    # two bridgeable cards recorded with the GPU's best link (the bridge); the source says they ran without it
    plan = {**PLAN, "model": "llama-2-7b", "gpus": 2, "sharding": "fsdp", "grad_checkpointing": True}
    raw = {**_case("pair", 1.0), "gpu_id": "rtx3090", "plan": plan, "measured": 100.0,
           "reread": {"link": "pcie", "why": "the rig has no NVLink bridge", "evidence": EVIDENCE}}
    (held,) = parse_sets({"sets": [{"name": "s", "frozen_commit": None, "predictions_commit": None,
                                    "cases": [raw]}]})
    case = held.cases[0]
    assert case.link is None and case.reread is not None and case.reread.changed == (("link", "nvlink_bridge", "pcie"),)
    (recorded,) = time_accuracy_rows((case.time_case(),))
    (again,) = time_accuracy_rows((case.as_reread().time_case(),))
    # the all-gathers of the whole 16-bit model now cross PCIe: the bridge's share of the step is exposed
    assert again.predicted < recorded.predicted
    assert again.breakdown["communication (exposed)"] > recorded.breakdown["communication (exposed)"]


@pytest.mark.parametrize("link", ["nvlink_switch", "pci", 3])
def test_a_reread_link_the_gpu_cannot_have_is_refused(link):
    raw = {**_case("a", 1.0), "gpu_id": "rtx3090",
           "reread": {"link": link, "why": "w", "evidence": EVIDENCE}}
    with pytest.raises(RereadError) as caught:
        parse_sets({"sets": [{"name": "s", "frozen_commit": "0" * 40, "cases": [raw]}]})
    assert caught.value.field == "link"
    for lang in ("en", "ru"):
        assert "pcie" in caught.value.text(lang)


def test_a_memory_reread_cannot_set_a_link(tmp_path):
    _, doc = _memory_history(tmp_path)
    doc["sets"][0]["cases"][0]["reread"] = {"link": "pcie", "why": "w", "evidence": EVIDENCE}
    with pytest.raises(RereadError) as caught:
        parse_sets(doc, "memory")
    assert caught.value.field == "link"


def test_personal_copilot_rereads_state_autocast_and_the_test_split():
    # StarCoder runs of hf-blog-personal-copilot: train.py's 30-file test split, and the QLoRA step under autocast
    from gpuwork.estimate.ops import StackKernels, fp32_qlora, upcast_qlora_autocast

    cases = {c.name: c for held in heldout_sets() for c in held.cases if c.source_id == "hf-blog-personal-copilot"}
    full = next(c for name, c in cases.items() if "full FT" in name)
    qlora = next(c for name, c in cases.items() if "QLoRA" in name)
    assert full.reread is not None and qlora.reread is not None
    # 20 evaluations of 11 (8 GPUs, batch 1) or 23 (batch 4) batches, against 4- and 3-forward training micro-batches
    assert full.reread.plan.eval_fraction == pytest.approx(20 * 11 / (2000 * 2 * 4), abs=1e-4)
    assert qlora.reread.plan.eval_fraction == pytest.approx(20 * 23 / (2000 * 4 * 3), abs=1e-4)
    assert qlora.plan.precision.value == "bf16"  # the frozen record stays as it was
    eager = StackKernels()  # the hf-trainer stack's eager kernels, peft's fp32 adapters
    assert fp32_qlora(qlora.plan, eager)  # as recorded: no autocast, fp32 lm_head and adapters
    assert not fp32_qlora(qlora.reread.plan, eager) and upcast_qlora_autocast(qlora.reread.plan, eager)


def test_a_revealed_figure_keeps_the_cases_sample_count():
    """A run scored with evaluations or saves inside its figure needs its sample count: the reveal takes the figure
    from the collector's entry and keeps the count the case was predicted with unless the entry gives one."""
    reveal = load_benchmark("heldout", "scripts").revealed_figure
    case = {"samples": 21348, "covers": ["steps", "eval_every:28"]}
    assert reveal(case, {"metric": "samples_per_s", "measured": 10.0}) == {
        "measured": 10.0, "measured_time_s": None, "samples": 21348}
    assert reveal(case, {"metric": "run_time", "measured_time_s": 100.0, "samples": 500}) == {
        "measured": 5.0, "measured_time_s": 100.0, "samples": 500}
    assert reveal({}, {"metric": "run_time", "measured_time_s": 50.0, "samples": 100})["measured"] == 2.0

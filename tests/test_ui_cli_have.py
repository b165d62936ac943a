"""`--have` on `offers` and `request` (issue 20, item 2): the answer on the user's own cards, as plan and advise give it.

Real subprocesses of the CLI; the expected answer is gpuwork.sizing.decide's under the same owned cards.
"""

from __future__ import annotations

import json
import subprocess
import sys

from gpuwork.estimate.decision import Constraints
from gpuwork.plan import Method, plan_from_choices
from gpuwork.present.messages import render
from gpuwork.sizing import decide, parse_have

PLAN = ["--model", "mistral-7b", "--method", "qlora", "--seq-len", "2048"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuwork", *args], capture_output=True, text=True, timeout=300)


def expected() -> object:
    # the CLI builds a plan from the user's choices: no --precision gives QLoRA's (plan.default_precision)
    plan = plan_from_choices({"model": "mistral-7b", "method": Method.QLORA, "seq_len": 2048})
    return decide(plan, constraints=Constraints(have=parse_have("1xrtx4090")))


def test_offers_have_gives_the_answer_on_the_owned_card_in_json_and_text() -> None:
    want = expected()
    out = cli("offers", *PLAN, "--have", "1xrtx4090", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    got = data["decision"]
    assert (got["gpu_id"], got["gpus"], got["nodes"], got["mode"], got["cost_usd"]) == (
        want.gpu_id, want.gpus, want.nodes, "own", None)
    assert got["suggestion"] == (want.suggestion.key if want.suggestion else None)
    assert data["offers"] and all(row["offer_id"] != got["offer_id"] for row in data["offers"])
    text = cli("offers", *PLAN, "--have", "1xrtx4090", "--lang", "ru")
    assert text.returncode == 0, text.stderr
    assert render(want.summary, "ru") in text.stdout


def test_request_have_names_the_owned_card_and_its_changes_without_a_price() -> None:
    want = expected()
    out = cli("request", *PLAN, "--have", "1xrtx4090", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["decision"]["gpu_id"] == want.gpu_id == "rtx4090"
    assert data["suggested"]["reference_gpu"] == want.gpu_id and data["suggested"]["gpus"] == want.gpus
    assert data["suggested"]["offer"] is None  # nothing to rent: no catalog price
    text = cli("request", *PLAN, "--have", "1xrtx4090")
    assert "own-rtx4090" not in text.stdout and render(want.summary, "en") in text.stdout
    bad = cli("request", *PLAN, "--have", "1xnosuchcard")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1

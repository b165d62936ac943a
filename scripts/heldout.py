"""Held-out cases (step time or peak memory): predict with the frozen model, then reveal the published figures.

    python scripts/heldout.py predict --set NAME --networks MAP.json [--exclude WHY.json] STAGING_DIR [...]
    git commit gpuwork/facts/data/time_heldout.json        # the predictions, with no figure in them
    python scripts/heldout.py reveal --set NAME STAGING_DIR [STAGING_DIR ...]
    gpuwork accuracy --time --out docs/time_accuracy.md

With ``--kind memory`` the same verbs work on ``memory_heldout.json``: each case's ``metric`` says which peak the
source measured (device, reserved or allocated), the prediction is that peak in bytes from ``estimate_memory``,
``measured.json`` gives ``measured_bytes``, and ``gpuwork accuracy --out docs/accuracy.md`` scores it.

A staging folder (kept outside the repository until the reveal) holds a collector's ``cases.json`` (the
configurations), ``measured.json`` (the published figures, keyed by case name, with the quoted row) and
``sources.md``. ``predict`` reads only ``cases.json``; it refuses to run when anything under ``gpuwork/`` but the
held-out file and model presets differs from the commit it names as frozen (HEAD). ``MAP.json`` maps each
collector's description of the inter-node fabric to one of estimate_time's networks; ``WHY.json`` maps the name of
a case left out to the reason (a configuration the plan cannot state, a figure that cannot become a throughput).
Both are written from the configurations alone, before the reveal, and are kept in the set.
The protocol is in ``gpuwork/measure/heldout.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from gpuwork.measure.accuracy import case_estimate, case_gpu, case_memory
from gpuwork.measure.heldout import KINDS, cache_emptied_flag, heldout_path, load_document, plan_from_json

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def _staged(folder: Path, name: str):
    return json.loads((folder / name).read_text(encoding="utf-8"))


def revealed_figure(case: dict, entry: dict) -> dict:
    """The fields a time case takes from its figure's entry: the figure (a run time for N samples as samples/s), the
    run time, and the sample count, which stays the case's own (its covers need it) unless the entry states one."""
    value, run_s = entry.get("measured"), entry.get("measured_time_s")
    samples = entry.get("samples") if entry.get("samples") is not None else case.get("samples")
    if entry["metric"] == "run_time" or (value is None and run_s and samples):
        value = samples / run_s
    return {"measured": value, "measured_time_s": run_s, "samples": samples}


def _metric(metric: str) -> str:
    # a run's wall time for N samples is scored as samples/s (TimeCase.measured_time_s, samples)
    return "samples_per_s" if metric == "run_time" else metric


def predict(set_name: str, networks: dict[str, str], exclude: dict[str, str], folders: list[Path],
            kind: str = "time") -> int:
    dirty = [line for line in _git("status", "--porcelain", "--", "gpuwork").splitlines()
             if heldout_path(kind).name not in line and "/models/" not in line]
    if dirty:
        print("the model is not frozen: uncommitted changes under gpuwork/:\n" + "\n".join(dirty), file=sys.stderr)
        return 2
    frozen = _git("rev-parse", "HEAD")
    document = load_document(kind=kind)
    if any(s["name"] == set_name for s in document["sets"]):
        print(f"set {set_name!r} is already on file", file=sys.stderr)
        return 2
    cases, missing, left_out = [], set(), []
    for folder in folders:
        for raw in _staged(folder, "cases.json"):
            if raw["name"] in exclude:
                left_out.append({"name": raw["name"], "source_id": raw["source_id"], "why": exclude[raw["name"]]})
                continue
            if kind == "memory":
                cases.append(_memory_case(raw, folder))
                continue
            nodes = int(raw.get("nodes") or 1)
            network = None
            if nodes > 1:
                network = networks.get(raw.get("fabric", ""))
                if network is None:
                    missing.add(raw.get("fabric", ""))
                    continue
            plan = plan_from_json(raw["plan"])
            gpu = case_gpu(raw["gpu_id"])
            est = case_estimate(plan, gpu, nodes, network, raw.get("moe_experts"), raw.get("model_config"))
            cases.append({
                "name": raw["name"], "source_id": raw["source_id"], "source": raw["source"], "gpu_id": raw["gpu_id"],
                "nodes": nodes, "network": network, "fabric": raw.get("fabric", ""), "plan": raw["plan"],
                "metric": _metric(raw["metric"]), "moe_experts": raw.get("moe_experts"),
                **({"model_config": raw["model_config"]} if raw.get("model_config") else {}),
                # what the figure's time spans (TimeCase.covers): today's model prices those parts; the frozen
                # prediction stays the steady-state step
                **{k: raw[k] for k in ("covers", "samples") if raw.get(k) is not None},
                "software": raw.get("software", ""), "notes": raw.get("notes", ""), "collector": folder.name,
                "predicted_tokens_per_s_per_gpu": round(est.tokens_per_s / plan.gpus, 3),
                "predicted_step_s": round(est.step_time_s, 6)})
    if missing:
        print("no network given for these fabrics (add them to the map):\n" + "\n".join(sorted(missing)),
              file=sys.stderr)
        return 2
    names = [c["name"] for c in cases]
    if len(set(names)) != len(names):
        print("duplicate case names: " + ", ".join(sorted({n for n in names if names.count(n) > 1})), file=sys.stderr)
        return 2
    document["sets"].append({"name": set_name, "frozen_commit": frozen, "predictions_commit": None,
                             "networks": networks, "left_out": left_out, "cases": cases})
    heldout_path(kind).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases predicted by the model at {frozen[:10]}; commit {heldout_path(kind)} now")
    return 0


def _memory_case(raw: dict, folder: Path) -> dict:
    """A memory case: the peak its source measured (metric), predicted in bytes."""
    plan = plan_from_json(raw["plan"])
    emptied = cache_emptied_flag(raw["name"], raw.get("cache_emptied"))  # how the harness measured the peak
    predicted = case_memory(plan, raw["metric"], raw.get("model_config"), raw.get("moe_experts"), raw.get("gpu_id"),
                            emptied)
    keep = ("name", "source_id", "source", "gpu_id", "gpus", "nodes", "plan", "metric", "moe_experts", "model_config",
            "cache_emptied", "data", "length_distribution", "software", "notes")
    return {**{k: raw[k] for k in keep if raw.get(k) is not None}, "collector": folder.name,
            "predicted_bytes": predicted}


def reveal(set_name: str, folders: list[Path], kind: str = "time") -> int:
    path = heldout_path(kind)
    if _git("status", "--porcelain", "--", str(path)):
        print(f"commit the predictions in {path} first", file=sys.stderr)
        return 2
    document = load_document(kind=kind)
    held = next((s for s in document["sets"] if s["name"] == set_name), None)
    if held is None:
        print(f"no set {set_name!r} on file", file=sys.stderr)
        return 2
    measured = {}
    for folder in folders:
        measured.update({name: {**entry, "collector": folder.name}
                         for name, entry in _staged(folder, "measured.json").items()})
    lacking = [c["name"] for c in held["cases"] if c["name"] not in measured]
    if lacking:
        print("no published figure for: " + ", ".join(lacking), file=sys.stderr)
        return 2
    for case in held["cases"]:
        entry = measured[case["name"]]
        if kind == "memory":
            if entry["metric"] != case["metric"]:
                print(f"{case['name']}: metric {entry['metric']} differs from the case's {case['metric']}",
                      file=sys.stderr)
                return 2
            case.update(measured=int(entry["measured_bytes"]))
            continue
        if _metric(entry["metric"]) != case["metric"]:
            print(f"{case['name']}: metric {entry['metric']} differs from the case's {case['metric']}", file=sys.stderr)
            return 2
        case.update(revealed_figure(case, entry))
    held["predictions_commit"] = _git("log", "-1", "--format=%H", "--", str(path))
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    number = next(i for i, s in enumerate(document["sets"], start=1) if s is held)
    _write_sources(DOCS / f"{kind}_heldout_sources_{number}.md", held, measured, folders, kind)
    print(f"revealed {len(held['cases'])} figures; predictions were committed at {held['predictions_commit'][:10]}")
    return 0


def _write_sources(page: Path, held: dict, measured: dict, folders: list[Path], kind: str = "time") -> None:
    """docs/<kind>_heldout_sources_N.md (set N): each collector's account of its sources, then every quoted row."""
    scores = "time_accuracy.md" if kind == "time" else "accuracy.md"
    parts = [f"# Held-out {kind} cases: sources and the rows they printed ({held['name']})", "",
             "Written by `scripts/heldout.py reveal` from the collectors' notes; the configurations and the frozen "
             f"predictions are in `gpuwork/facts/data/{heldout_path(kind).name}`, the scores in "
             f"[{scores}]({scores}#held-out-cases).", ""]
    for folder in folders:
        text = "\n" + (folder / "sources.md").read_text(encoding="utf-8").strip()
        text = text.replace("\n# ", "\n### ").replace("\n## ", "\n### ").strip()  # under this page's headings
        parts += [f"## Collector {folder.name}", "", text, ""]
    parts += ["## The rows quoted", "", "| case | source | quoted |", "|---|---|---|"]
    for case in held["cases"]:
        quote = " ".join(str(measured[case["name"]].get("quote", "")).split()).replace("|", "\\|")
        parts.append(f"| {case['name']} | {case['source_id']} | {quote} |")
    page.write_text("\n".join(parts) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("predict", allow_abbrev=False)
    p.add_argument("--set", required=True)
    p.add_argument("--kind", choices=KINDS, default="time")
    p.add_argument("--networks", type=Path, help="required for time cases on several nodes")
    p.add_argument("--exclude", type=Path)
    p.add_argument("folders", type=Path, nargs="+")
    r = sub.add_parser("reveal", allow_abbrev=False)
    r.add_argument("--set", required=True)
    r.add_argument("--kind", choices=KINDS, default="time")
    r.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.verb == "predict":
        exclude = json.loads(args.exclude.read_text(encoding="utf-8")) if args.exclude else {}
        networks = json.loads(args.networks.read_text(encoding="utf-8")) if args.networks else {}
        return predict(args.set, networks, exclude, args.folders, args.kind)
    return reveal(args.set, args.folders, args.kind)


if __name__ == "__main__":
    raise SystemExit(main())

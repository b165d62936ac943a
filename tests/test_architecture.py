"""The layers of docs/architecture.md hold: import contracts, no import cycle, estimators that read nothing at run
time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph("gpuwork")
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported == "gpuwork" or module == "gpuwork":
                continue  # the package root only re-exports the public API
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back and "gpuwork" not in back:
                cycles.append(" -> ".join((module, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_estimators_touch_no_file_network_or_torch(tmp_path: Path) -> None:
    """After the gather step, every estimator runs with file, socket and torch access forbidden."""
    script = textwrap.dedent("""
        import builtins, io, os, socket, sys
        from gpuwork.estimate import disk, memory, offers, profiles, timing
        from gpuwork.facts.catalog import load_offers
        from gpuwork.facts.resolve import resolve
        from gpuwork.plan import TrainPlan

        plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, dataset_tokens=10**8)
        inputs = resolve(plan)
        catalog = load_offers()

        def refuse(*args, **kwargs):
            raise AssertionError(f"an estimator read the outside world: {args[:1]}")

        builtins.open = io.open = os.open = os.stat = os.listdir = os.scandir = refuse
        socket.socket = refuse
        sys.modules["torch"] = None  # any import of torch now fails

        mem = memory.estimate_memory(plan, inputs.spec)
        time = timing.estimate_time(plan, inputs.gpu("h100_sxm"), inputs)
        dsk = disk.estimate_disk(plan, inputs.spec)
        ranked = offers.evaluate_offers(plan, catalog, inputs)
        match = profiles.match_profile(plan, inputs)
        assert mem.device_total_bytes > 0 and time.total_s > 0 and dsk.recommended_bytes > 0
        assert ranked and match.profile is not None
        print("pure")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "pure"


def test_a_changed_epoch_count_moves_no_memory_figure() -> None:
    from gpuwork.estimate.memory import estimate_memory
    from gpuwork.facts.resolve import resolve
    from gpuwork.plan import TrainPlan

    plan = TrainPlan(model="llama-3.2-1b", method="full", seq_len=1024)
    spec = resolve(plan).spec
    assert estimate_memory(plan, spec).as_dict() == estimate_memory(plan.replace(epochs=7.0), spec).as_dict()


def test_a_record_is_read_and_compared_without_torch() -> None:
    """gpuwork.measure.record, the one place the record schema lives, reads, summarizes and compares a record
    with torch and the runners unimportable."""
    record_file = ROOT / "tests" / "data" / "trial_record_own_run.json"
    script = textwrap.dedent(f"""
        import sys
        for name in ("torch", "transformers", "peft", "gpuwork.measure.trial", "gpuwork.measure.hf",
                     "gpuwork.measure.hf_plan", "gpuwork.measure.distributed", "gpuwork.measure.runtime"):
            sys.modules[name] = None  # any import of these now fails
        from pathlib import Path
        from gpuwork.measure.record import TrialRecord, compare, summarize

        record = TrialRecord.from_json(Path({str(record_file)!r}))
        again = TrialRecord.from_json(record.to_json())
        assert again == record
        summary = summarize(record.steps)  # the record predates the interval fields: the figures it has agree
        assert (summary.median_step_time_s, summary.peak_trial_memory_bytes) == (
            record.summary.median_step_time_s, record.summary.peak_trial_memory_bytes)
        row, = compare([record], 2.0)
        print(row["measured_steps"], row["gpus"])
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["2", "1"]  # 3 steps, 1 of them warm-up; one process

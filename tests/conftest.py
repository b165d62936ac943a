import datetime as dt
import importlib.util
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

# Import names of what the extras ([trial], [workbook], [app], [configs]) and the test tools bring. With only
# the core installed (CI's Python 3.12/3.13 legs), a test that needs one of them is skipped with a reason
# naming it; a missing gpuwork module, or a package that IS installed but fails, still fails.
EXTRA_MODULES = {
    "torch": "trial", "transformers": "trial", "peft": "trial", "bitsandbytes": "trial", "tokenizers": "trial",
    "safetensors": "trial", "psutil": "trial", "tqdm": "trial", "numpy": "trial", "trl": "test",
    "datasets": "test", "plotly": "workbook", "ipywidgets": "workbook", "traitlets": "workbook",
    "ipykernel": "workbook", "IPython": "workbook", "jupyterlab": "workbook", "nbclient": "workbook",
    "nbconvert": "workbook", "nbformat": "workbook", "jinja2": "workbook", "papermill": "workbook",
    "jupytext": "workbook", "pandas": "workbook", "voila": "app", "jupyter_server": "app", "tornado": "app",
    "yaml": "configs", "playwright": "test", "importlinter": "test", "grimp": "test",
}

# Tests that need an extra only inside a subprocess whose output they do not show. Better: the test carries
# @pytest.mark.needs("torch", ...) itself.
NEEDS_BY_ID = {
    "tests/test_notices.py::test_importing_bitsandbytes_after_gpuwork_measure_prints_nothing": ("bitsandbytes",),
    "tests/test_record_bookkeeping.py::test_sigkill_mid_run_keeps_every_finished_step_and_the_record_loads":
        ("torch",),
    "tests/test_distributed.py::test_a_ranks_error_reaches_the_caller_as_a_coded_message": ("torch",),
}


def _absent(top: str) -> str | None:
    """Why a test cannot run here when ``top`` (an import name an extra brings) is not installed, else None."""
    if top not in EXTRA_MODULES or importlib.util.find_spec(top) is not None:
        return None
    return f"needs {top} (pip install 'gpuwork[{EXTRA_MODULES[top]}]'), not installed here"


def missing_extra(exc: BaseException | None) -> str | None:
    """Why a test cannot run here, when ``exc`` is the import of an extra's package that is not installed."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    return _absent(exc.name.split(".")[0])


def _absent_named_in(text: str) -> str | None:
    """Why a test cannot run here, when its failure ``text`` holds gpuwork's own "install the extra" message
    (error.cli.missing_extra, in either language) or Python's "No module named" for an absent extra: the CLI,
    run in a subprocess or in-process, said so."""
    from gpuwork.present.messages import CATALOG

    patterns = [re.compile(r"No module named '(?P<module>[\w.]+)'")]
    for template in CATALOG["error.cli.missing_extra"].values():
        pattern = re.escape(template).replace(re.escape("{module:raw}"), r"(?P<module>[\w.]+)")
        patterns.append(re.compile(re.sub(r"\\\{\w+:raw\\\}", r"\\S+", pattern)))
    for pattern in patterns:
        for match in pattern.finditer(text):
            reason = _absent(match["module"].split(".")[0])
            if reason:
                return reason
    return None


class _ExtrasModule(pytest.Module):
    """A test module whose import may need an extra: skipped with a reason when that extra is absent."""

    def collect(self):
        try:
            self.obj  # noqa: B018 - imports the module
        except self.CollectError as exc:
            reason = missing_extra(exc.__cause__)
            if reason:
                pytest.skip(f"{self.path.name}: {reason}", allow_module_level=True)
            raise
        return super().collect()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if module_path.name == "__init__.py":
        return None
    return _ExtrasModule.from_parent(parent, path=module_path)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*modules): skipped where one of these imports is not installed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs = [*NEEDS_BY_ID.get(item.nodeid, ())]
        for mark in item.iter_markers("needs"):
            needs += mark.args
        reasons = [r for r in map(_absent, needs) if r]
        if reasons:
            item.add_marker(pytest.mark.skip(reason=reasons[0]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    try:
        return (yield)
    except ModuleNotFoundError as exc:  # a fixture that imports an absent extra (one_thread: torch)
        reason = missing_extra(exc)
        if reason:
            pytest.skip(reason)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except ModuleNotFoundError as exc:  # a lazy import inside gpuwork, reached by a test, of an absent extra
        reason = missing_extra(exc)
        if reason:
            pytest.skip(reason)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failure that gpuwork or Python explains by an absent extra becomes a skip with that reason; with every
    extra installed, nothing changes."""
    report = yield
    if report.failed and call.excinfo is not None:
        reason = _absent_named_in("\n".join([report.longreprtext, report.capstdout, report.capstderr]))
        if reason:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
    return report


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server a test starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_server(proc: subprocess.Popen, children: list, *, sig: int = signal.SIGINT, group: bool = False,
                grace_s: float = 15) -> None:
    """Stop a server this test started, by PID: ``sig`` first (its clean stop, to the process group when
    ``group``), SIGKILL when it is too slow; then wait for the children it started (kernels), killing laggards."""
    import psutil

    send = os.killpg if group else os.kill
    if proc.poll() is None:
        send(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            send(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for child in children:
        try:
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def upload_value(content: bytes, name: str = "config.json") -> tuple[dict, ...]:
    """What an ipywidgets FileUpload holds after the user picks one file."""
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)},)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list:
    """What a panel's ``show()`` displays (instead of IPython's display)."""
    from gpuwork.ui import common

    seen: list = []
    monkeypatch.setattr(common, "display", lambda *objs: seen.extend(o for o in objs if o is not None))
    return seen


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread: on a shared 2-core box two OpenMP threads stall each other (30x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def clear_package_caches() -> None:
    """Forget every cached result of the package, as a new process starts."""
    import sys

    for name, module in list(sys.modules.items()):
        if name == "gpuwork" or name.startswith("gpuwork."):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)) and not isinstance(value, type):
                    value.cache_clear()  # functools caches and IdentityMemo instances (not their classes)


def load_benchmark(name: str, folder: str = "benchmarks"):
    """A script of benchmarks/ (or another ``folder`` of the repository, e.g. scripts/) as a module (the browser
    tests drive the app through benchmarks/app_load.py)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module



def local_page(browser, url: str) -> tuple:
    """A page of a Playwright ``browser`` that reaches only the server of ``url`` (anything else, a CDN, is refused,
    never fetched), and the list its page errors are collected in."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    return page, errors


def tiny_qlora_model(folder, name: str, grad_checkpointing: bool = False, upcast: bool = True):
    """A tiny model (``name``, a preset of facts/models) saved in bf16 into ``folder`` and loaded back NF4 with
    double quantisation and bf16 compute, prepared and wrapped as peft documents for QLoRA: LoRA r 8 on every
    linear of the blocks. Without ``upcast``, not prepared (ms-swift's path: embeddings, norms and lm_head stay
    bf16)."""
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

    from gpuwork.facts.model import load_config

    config, _ = load_config(name)
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.bfloat16).save_pretrained(folder)
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, dtype=torch.bfloat16,
                                                 device_map="cpu", attn_implementation="sdpa")
    if upcast:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=grad_checkpointing)
    elif grad_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets,
                                             task_type="CAUSAL_LM"))
    model.train()
    return model


def dtype_recorder(**rules):
    """A TorchDispatchMode that records, per rule, the dtypes ("bfloat16", "float32") of the tensors its rule
    picks: ``rule(op_name, args, out)`` returns the tensor whose dtype counts, or None for an op it does not watch.
    The sets are in ``.seen[rule_name]``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.seen: dict[str, set[str]] = {key: set() for key in rules}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = str(func)
            for key, rule in rules.items():
                tensor = rule(name, args, out)
                if tensor is not None:
                    self.seen[key].add(str(tensor.dtype).removeprefix("torch."))
            return out

    return Recorder()


def record_aten_calls(fn) -> list:
    """(func, args) of every aten call ``fn()`` dispatches, in order (a TorchDispatchMode around it)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls.append((func, args))
            return func(*args, **(kwargs or {}))

    with Record() as rec:
        fn()
    return rec.calls


def saved_bytes_per_token(fn, x, skip: set[int], loss=lambda out: out.sum()) -> float:
    """Bytes per token of ``x`` (batch x seq x ...) that autograd keeps for one forward and backward of ``fn(x)``:
    every saved tensor's storage once, those in ``skip`` (parameters, shared tables) left out."""
    import torch

    saved: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    loss(out).backward()
    return sum(saved.values()) / (x.shape[0] * x.shape[1])


def sdpa_query(name: str, args: tuple, out):
    """dtype_recorder's rule for scaled-dot-product attention: its query."""
    return args[0] if "scaled_dot_product" in name else None

# The LoRA recipe of LitGPT's resource tables (held-out memory 8): r 8 on q and v, dropout 0.05, Alpaca's longest
# sample of 1,044 tokens at micro-batch 1
LITGPT_LORA = {"method": "lora", "precision": "bf16", "seq_len": 1044, "batch_size": 1, "lora_r": 8,
               "lora_dropout": 0.05, "lora_targets": ["q_proj", "v_proj"]}

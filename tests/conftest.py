import datetime as dt

import pytest


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

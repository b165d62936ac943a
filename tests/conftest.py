import pytest


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread: on a shared 2-core box two OpenMP threads stall each other (30x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Catalog entries "total.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "total"

ENTRIES: dict[str, tuple[str, str]] = {
    "total.peak_allocated_bytes": ("Peak allocated", "Пик выделенной"),
    "total.peak_allocated_bytes.meaning": (
        "tensors alive at the worst moment of a step: what torch.cuda.max_memory_allocated() reports",
        "тензоры, живые в самый тяжёлый момент шага: то, что показывает torch.cuda.max_memory_allocated()"),
    "total.peak_reserved_bytes": ("Peak reserved", "Пик зарезервированной"),
    "total.peak_reserved_bytes.meaning": (
        "allocated peak plus the PyTorch caching allocator's cache: torch.cuda.max_memory_reserved()",
        "пик выделенной плюс кэш аллокатора PyTorch: torch.cuda.max_memory_reserved()"),
    "total.device_total_bytes": ("Device total", "Всего на устройстве"),
    "total.device_total_bytes.meaning": (
        "reserved plus the CUDA context and library workspaces: what nvidia-smi shows; compare this with the "
        "card's memory",
        "зарезервированная плюс контекст CUDA и рабочие области библиотек: то, что показывает nvidia-smi; "
        "сравнивайте это с памятью карты"),
}

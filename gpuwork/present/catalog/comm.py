"""Catalog entries "comm.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "comm"

ENTRIES: dict[str, tuple[str, str]] = {
    "comm.single_gpu": ("single GPU: no inter-GPU communication", "один GPU: обмена между GPU нет"),
    "comm.no_nvlink": (
        "{gpu} has no NVLink: communication takes {share:pct} of each step over PCIe",
        "у {gpu} нет NVLink: обмен занимает {share:pct} каждого шага через PCIe"),
    "comm.no_bridge_count": (
        "the GPU table gives {gpu} no NVLink bridge (its nvlink_bridge_gpus is empty): communication takes "
        "{share:pct} of each step over PCIe",
        "в таблице GPU у {gpu} нет моста NVLink (nvlink_bridge_gpus пуст): обмен занимает {share:pct} каждого "
        "шага через PCIe"),
    "comm.bridge_pairs_only": (
        "an NVLink bridge joins only {bridged} {gpu} cards: {gpus} GPUs per node ring over PCIe, and communication "
        "takes {share:pct} of each step",
        "мост NVLink соединяет только {bridged} карты {gpu}: {gpus} GPU на узел обмениваются по кольцу через PCIe, "
        "обмен занимает {share:pct} каждого шага"),
    "comm.consider_less_traffic": (
        "consider more gradient accumulation, fewer GPUs, or a GPU with NVLink",
        "стоит увеличить накопление градиента, взять меньше GPU или GPU с NVLink"),
    "comm.geforce_no_p2p": (
        "GeForce drivers disable peer-to-peer, so traffic goes through host memory",
        "драйверы GeForce отключают прямой обмен между картами, поэтому данные идут через память хоста"),
    "comm.nvlink_needed": (
        "NVLink needed: PCIe would spend {pcie_share:pct} of each step communicating ({link_share:pct} over "
        "{link:@link})",
        "нужен NVLink: через PCIe обмен занял бы {pcie_share:pct} каждого шага ({link_share:pct} через "
        "{link:@link})"),
    "comm.setup_uses_pcie": (
        "this setup uses PCIe: rent nodes with NVLink/NVSwitch",
        "в этой конфигурации обмен идёт через PCIe: арендуйте узлы с NVLink/NVSwitch"),
    "comm.pcie_enough": (
        "PCIe is enough: communication would take {share:pct} of each step over PCIe",
        "PCIe достаточно: обмен занял бы {share:pct} каждого шага через PCIe"),
    "comm.network": (
        "{nodes} nodes over {network:@network} at ~{bytes_s:rate} per GPU: communication takes {share:pct} of "
        "each step",
        "{nodes} {nodes:pl:узел|узла|узлов} через {network:@network}, ~{bytes_s:rate} на GPU: обмен занимает "
        "{share:pct} каждого шага"),
    "comm.network_bottleneck": (
        "{nodes} nodes over {network:@network} at ~{bytes_s:rate} per GPU: communication takes {share:pct} of "
        "each step (the network is the bottleneck)",
        "{nodes} {nodes:pl:узел|узла|узлов} через {network:@network}, ~{bytes_s:rate} на GPU: обмен занимает "
        "{share:pct} каждого шага (узкое место — сеть)"),
}

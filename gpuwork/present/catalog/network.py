"""Catalog entries "network.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "network"

ENTRIES: dict[str, tuple[str, str]] = {
    "network.none": ("no inter-node network", "без сети между узлами"),
    "network.ethernet-25g": ("25 Gb/s Ethernet", "Ethernet 25 Гбит/с"),
    "network.ethernet-100g": ("100 Gb/s Ethernet", "Ethernet 100 Гбит/с"),
    "network.roce-400g": ("RoCE 400 Gb/s", "RoCE 400 Гбит/с"),
    "network.ib-hdr-200g": ("InfiniBand HDR", "InfiniBand HDR"),
    "network.ib-ndr-400g": ("InfiniBand NDR", "InfiniBand NDR"),
    "network.dgx-h100": ("DGX H100, 8 x 400 Gb/s InfiniBand", "DGX H100, InfiniBand 8 x 400 Гбит/с"),
    "network.dgx-a100": ("DGX A100, 8 x 200 Gb/s InfiniBand", "DGX A100, InfiniBand 8 x 200 Гбит/с"),
    "network.meta-roce-400g": ("RoCE, 400 Gb/s per GPU", "RoCE, 400 Гбит/с на GPU"),
    "network.aws-p5": ("AWS p5, 32 x 100 Gb/s EFA", "AWS p5, EFA 32 x 100 Гбит/с"),
    "network.aws-p5en": ("AWS p5en, 16 x 200 Gb/s EFA", "AWS p5en, EFA 16 x 200 Гбит/с"),
    "network.aws-p4d": ("AWS p4d, 4 x 100 Gb/s EFA", "AWS p4d, EFA 4 x 100 Гбит/с"),
    "network.aws-p6-b200": ("AWS p6-b200, 8 x 400 Gb/s EFA", "AWS p6-b200, EFA 8 x 400 Гбит/с"),
    "network.gcp-a3-mega": ("GCP A3 Mega, 8 x 200 Gb/s GPUDirect-TCPXO", "GCP A3 Mega, GPUDirect-TCPXO 8 x 200 Гбит/с"),
    "network.gcp-a3-high": ("GCP A3 High, 4 x 200 Gb/s GPUDirect-TCPX", "GCP A3 High, GPUDirect-TCPX 4 x 200 Гбит/с"),
    "network.roce-4x100g": ("4 x 100 Gb/s RoCE per node", "RoCE 4 x 100 Гбит/с на узел"),
    "network.rdma-800g": ("800 Gb/s RDMA per node", "RDMA 800 Гбит/с на узел"),
    "network.one-ndr-400g": ("one 400 Gb/s InfiniBand port per node", "один порт InfiniBand 400 Гбит/с на узел"),
    "network.one-hdr-200g": ("one 200 Gb/s InfiniBand port per node", "один порт InfiniBand 200 Гбит/с на узел"),
    "network.alcf-polaris": ("HPE Slingshot 11, two 200 Gb/s adapters per node (ALCF Polaris)",
                             "HPE Slingshot 11, два адаптера по 200 Гбит/с на узел (ALCF Polaris)"),
}

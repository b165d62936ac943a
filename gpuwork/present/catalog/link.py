"""Catalog entries "link.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "link"

ENTRIES: dict[str, tuple[str, str]] = {
    "link.pcie": ("PCIe", "PCIe"),
    "link.nvlink_bridge": ("an NVLink bridge", "мост NVLink"),
    "link.nvlink_switch": ("NVLink/NVSwitch", "NVLink/NVSwitch"),
    "link.nvlink_switch_rack": ("a rack-scale NVLink domain", "NVLink на всю стойку"),
    "link.xgmi": ("Infinity Fabric (xGMI)", "Infinity Fabric (xGMI)"),
}

"""Intra-node measurements: GPUs, their links (NVLink/NVSwitch/PCIe), and NCCL inside one node."""

from __future__ import annotations

"""A profile that asks for more than the hardware it describes can carry is refused at load."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from unit.bundled_registry import bundled_schema

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.profile import bundled_profiles
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.judge.ceilings import pcie_gbytes


@pytest.mark.parametrize("name", sorted(bundled_profiles()))
def test_every_bundled_profile_fits_its_own_hardware(name: str) -> None:
    load_profile(name, schema=bundled_schema())  # the check families' keys too (ndr400-burn-in)


def _refused(tmp_path: Path, body: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + body)
    with pytest.raises(SourceError) as err:
        load_profile(str(path))
    return str(err.value)


def test_nccl_over_four_hdr_ports_is_refused_with_the_ceiling_and_how(tmp_path: Path) -> None:
    # The bundled hdr200 asked 180 GB/s of four 200 Gb/s ports: every pair failed on real hardware.
    message = _refused(tmp_path, """
inter_node:
  ports: 4
  port_rate: 200 Gb/s
  nccl_allreduce: {min: 180 GB/s}
""")
    assert "p.yaml:6: inter_node.nccl_allreduce.min: 180 GB/s" in message
    assert "100 GB/s (inter_node.ports 4 x port_rate 200 Gb/s = 100 GB/s" in message


def test_rdma_and_tcp_above_one_port_and_copies_above_pcie_and_nvlink(tmp_path: Path) -> None:
    message = _refused(tmp_path, """
intra_node:
  gpu_model: A100
  gpu_pcie: {generation: 4, width: 16}
  host_to_device_bandwidth: {min: 40 GB/s}
  nvlink_bandwidth: {min: 350 GB/s}
inter_node:
  port_rate: 100 Gb/s
  rdma_bandwidth: {min: 120 Gb/s}
  tcp_throughput: {min: 110 Gb/s}
  aggregate_rdma_bandwidth: {min: 120%}
""")
    for key in ("inter_node.rdma_bandwidth.min", "inter_node.tcp_throughput.min",
                "intra_node.host_to_device_bandwidth.min", "intra_node.nvlink_bandwidth.min",
                "inter_node.aggregate_rdma_bandwidth.min"):
        assert key in message, key
    assert "Gen4 x16" in message and "31.504 GB/s" in message
    assert "300 GB/s (an A100 GPU's NVLink total one way" in message


def test_line_shares_and_floors_under_the_line_pass(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("""name: ok
inter_node:
  ports: 4
  port_rate: 200 Gb/s
  rdma_bandwidth: {min: 90% line}
  nccl_allreduce: {min: 85 GB/s}
""")
    load_profile(str(path))


def test_pcie_line_rates() -> None:
    assert pcie_gbytes(4, 16) == Decimal("31.504")
    assert pcie_gbytes(5, 16) == Decimal("63.008")

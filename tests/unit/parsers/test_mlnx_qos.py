"""mlnx_qos on the corpus (newer receive-buffer format, dscp trust) and an old-format sample."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.mlnx_qos import MlnxQosTrafficClass, parse_mlnx_qos

Read = Callable[[str], str]
DATA = Path(__file__).resolve().parents[2] / "data"


def test_trust_dscp_pfc_priority_3(corpus_text: Read) -> None:
    qos = parse_mlnx_qos(corpus_text("mlnx_qos/trust-dscp-pfc-prio3-connectx.txt"))
    assert qos.trust == "dscp" and qos.dcbx_mode == "OS controlled"
    assert qos.pfc_enabled == (False, False, False, True, False, False, False, False)
    assert qos.pfc_priorities == (3,)
    assert (
        qos.dscp_to_priority[26] == 3
        and qos.dscp_to_priority[46] == 5
        and len(qos.dscp_to_priority) == 64
    )
    assert qos.priority_to_tc[0] == 1 and qos.priority_to_tc[1] == 0 and qos.priority_to_tc[3] == 3
    assert qos.traffic_classes[3] == MlnxQosTrafficClass(3, "unlimited", "vendor", None, (3,))
    assert qos.pfc_buffer is None and qos.cable_length_m == 7


def test_set_pfc_output(corpus_text: Read) -> None:
    qos = parse_mlnx_qos(corpus_text("mlnx_qos/set-pfc-0001000-connectx.txt"))
    assert qos.pfc_priorities == (3,) and qos.trust == "dscp"


def test_receive_buffer_format_pcp_no_pfc(corpus_text: Read) -> None:
    qos = parse_mlnx_qos(corpus_text("mlnx_qos/default-pcp-no-pfc-receive-buffer-cx5.txt"))
    assert qos.trust == "pcp" and qos.pfc_priorities == () and not any(qos.pfc_enabled)
    assert qos.receive_buffer_sizes_bytes == (524160, 0, 0, 0, 0, 0, 0, 0)
    assert qos.pfc_buffer == (0,) * 8
    assert len(qos.traffic_classes) == 8 and qos.dscp_to_priority == {}


def test_old_format_trust_mode_ets_up() -> None:
    qos = parse_mlnx_qos((DATA / "mlnx_qos" / "old-trust-mode-ets-up-constructed.txt").read_text())
    assert qos.trust == "pcp" and qos.pfc_priorities == (3, 4)
    assert qos.traffic_classes[0] == MlnxQosTrafficClass(0, "unlimited", "ets", 50, (0, 1, 2))
    assert qos.priority_to_tc == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 2, 7: 2}


def test_errors() -> None:
    with pytest.raises(UnrecognizedOutput, match="^mlnx_qos"):
        parse_mlnx_qos("Priority trust state: pcp\n")
    with pytest.raises(ParseError, match=r"mlnx_qos \(line 3\): PFC 'enabled' row has 7 values"):
        parse_mlnx_qos(
            "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0\n"
        )


# Today's mlnx_qos (issue 20): mlnx-tools as DOCA-OFED ships it.


def test_recorded_max_buffer_size_and_default_priority_line() -> None:
    qos = parse_mlnx_qos(
        (
            DATA / "mlnx_qos" / "mlnx-tools-max_buffer_size-default-priority-commit-b8c08c5.txt"
        ).read_text()
    )
    # Before: 'max_buffer_size=2044224' in the sizes was a ParseError and the whole file was lost.
    assert qos.receive_buffer_sizes_bytes == (0, 187200, 0, 0, 0, 0, 0, 0)
    assert qos.max_buffer_size_bytes == 2044224
    assert qos.pfc_buffer == (1,) * 8 and qos.pfc_priorities == () and qos.trust == "pcp"
    assert qos.skipped == ("default priority:",) and qos.skipped_count == 1
    assert len(qos.traffic_classes) == 8


def test_recorded_dscp_trust_with_buffer_row_and_unsorted_tcs() -> None:
    qos = parse_mlnx_qos(
        (
            DATA / "mlnx_qos" / "mlnx-tools-dscp-buffer-row-unsorted-tcs-commit-d477a17.txt"
        ).read_text()
    )
    assert qos.trust == "dscp" and len(qos.dscp_to_priority) == 64
    assert qos.pfc_priorities == (1, 2, 3, 4, 5) and qos.pfc_buffer == (0, 1, 1, 1, 1, 1, 0, 0)
    assert (
        qos.receive_buffer_sizes_bytes == (32768, 229120, 0, 0, 0, 0, 0, 0)
        and qos.max_buffer_size_bytes is None
    )
    assert [tc.tc for tc in qos.traffic_classes][:2] == [1, 0] and qos.priority_to_tc[0] == 1
    assert qos.skipped == ()


def test_doca_firmware_dcbx_wrapped_dscp_ets_ratelimit_and_lldpad_warning() -> None:
    qos = parse_mlnx_qos(
        (
            DATA
            / "mlnx_qos"
            / "doca-ofed-fw-dcbx-dscp-wrapped-ets-ratelimit-lldpad-constructed.txt"
        ).read_text()
    )
    assert qos.dcbx_mode == "Firmware controlled" and qos.trust == "dscp"
    assert qos.warnings == ("lldpad service is running and may overwrite your settings",)
    # Priority 3's sixteen DSCP values come on two 'prio:3' lines.
    assert sorted(d for d, p in qos.dscp_to_priority.items() if p == 3) == list(range(24, 40))
    assert qos.max_buffer_size_bytes == 1048320 and qos.pfc_priorities == (3,)
    assert qos.traffic_classes[-1] == MlnxQosTrafficClass(6, "25.0 Gbps", "strict", None, (6,))
    assert qos.traffic_classes[1] == MlnxQosTrafficClass(3, "unlimited", "ets", 50, (3,))
    assert qos.skipped == ()


def test_unknown_lines_are_skipped_not_fatal() -> None:
    text = (DATA / "mlnx_qos" / "old-trust-mode-ets-up-constructed.txt").read_text()
    qos = parse_mlnx_qos("\t priority:  9\nECN: on\n" + text + "ECN: on\n")
    assert qos.pfc_priorities == (3, 4)
    assert qos.skipped == ("priority:  9", "ECN: on") and qos.skipped_count == 3

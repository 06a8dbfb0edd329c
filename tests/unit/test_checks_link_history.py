"""inter_node.link_history judged on counters as they stand and link-downs in the kernel log."""

from __future__ import annotations

from decimal import Decimal

from pytest_fabric.checks.link_history import LinkHistory, PortHistory, link_history_measurement
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, judge
from pytest_fabric.parsers.kernel_log import parse_kernel_log
from pytest_fabric.probes.counters import PortCounters, Reading
from pytest_fabric.probes.kernel_log import KernelLogReading
from pytest_fabric.probes.rdma import RdmaPort

NOW = 1764734400.0  # 2025-12-03T04:00:00Z


def port(device: str, counters: dict[str, int], netdev: str | None = None) -> PortHistory:
    rdma = RdmaPort("gpu07", device, 1, "Active", "LinkUp", Decimal(200), "InfiniBand")
    return PortHistory(rdma, PortCounters("gpu07", f"{device}/1", True, (Reading(f"{device}/1", counters),)), netdev)


def log(text: str, uptime: float = 3600.0) -> KernelLogReading:
    return KernelLogReading("gpu07", parse_kernel_log(text), "journalctl -k", NOW, uptime, ())


def failures(ports: list[PortHistory], read: KernelLogReading, settings: LinkHistory | None = None) -> list[str]:
    settings = settings or LinkHistory()
    measured = link_history_measurement("gpu07", ports, read, settings)
    out = []
    for name, op, value in settings.bounds():
        expectation = Expectation("inter_node", "link_history", op, value, f"inter_node.link_history.{name}")
        out += [v.message for part, m in measured.parts if not (v := judge(part, m, expectation)).passed]
    return out


QUIET = "2025-12-03T03:00:00+0000 gpu07 kernel: mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link ACTIVE\n"


def test_defaults_and_a_window_in_hours() -> None:
    settings = LinkHistory()
    assert (settings.link_down_events_max, settings.link_downed_max) == (parse_quantity(1), parse_quantity(1))
    assert settings.ber_max == parse_quantity("1e-12") and settings.window.to("s") == 21600
    assert LinkHistory.model_validate({"window": "24 h"}).window.to("s") == 86400


def test_forty_link_downs_before_the_run_fail_that_port() -> None:
    (message,) = failures([port("mlx5_0", {"LinkDownedCounter": 0}), port("mlx5_1", {"LinkDownedCounter": 40})],
                          log(QUIET))
    assert message.startswith("gpu07 mlx5_1/1: link_downed_max measured 40 (+3900.0%), does not meet <= 1; "
                              "0 link-down event(s) in the last 6 h (journalctl -k)")
    assert "LinkDowned 40 (mlx5_1/1 LinkDownedCounter)" in message


def test_fifty_thousand_symbol_errors_in_an_hour_up_fail_the_ber() -> None:
    (message,) = failures([port("mlx5_0", {"SymbolErrorCounter": 50000})], log(QUIET))
    assert message.startswith("gpu07 mlx5_0/1: ber_max measured 6.94e-11")  # 50,000 / (200 Gb/s x 3600 s)


def test_link_downs_in_the_window_fail_the_port_they_name_and_older_ones_do_not_count() -> None:
    text = ("2025-12-02T12:00:00+0000 gpu07 kernel: mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n"
            + "".join(f"2025-12-03T03:{m:02d}:00+0000 gpu07 kernel: mlx5_core 0000:29:00.0 mlx5_1: Port: 1 Link DOWN\n"
                      for m in range(3))
            + "2025-12-03T03:30:00+0000 gpu07 kernel: ib0: Lost carrier\n")
    ports = [port("mlx5_0", {}, "ib0"), port("mlx5_1", {})]
    messages = failures(ports, log(text))
    assert [m.split(":", 1)[0] for m in messages] == ["gpu07 mlx5_1/1"]
    assert "link_down_events_max measured 3" in messages[0] and "Port: 1 Link DOWN" in messages[0]
    measured = link_history_measurement("gpu07", ports, log(text), LinkHistory())
    assert measured.parts[0][1].bounds["link_down_events_max"] == parse_quantity(1)  # ib0 is mlx5_0/1


def test_link_downs_of_no_port_of_the_node_are_judged_on_the_node() -> None:
    text = "".join(f"2025-12-03T03:0{m}:00+0000 gpu07 kernel: mlx5_core 0000:99:00.0 mlx5_9: Port: 1 Link DOWN\n"
                   for m in range(2))
    (message,) = failures([port("mlx5_0", {})], log(text))
    assert message.startswith("gpu07 kernel log: link_down_events_max measured 2")
    assert "of mlx5_9/1, no port of this node's ibstat" in message


def test_a_healthy_port_passes() -> None:
    assert failures([port("mlx5_0", {"LinkDownedCounter": 1, "SymbolErrorCounter": 3})], log(QUIET)) == []

"""Sample a node's telemetry during a soak: one short command, its GPUs and its ports.

The command prints the sections :mod:`pytest_fabric.parsers.telemetry` reads: nvidia-smi's
temperature, SM clock, power, uncorrected ECC errors, remapped rows and clock-event reasons
(with the older ``clocks_throttle_reasons`` spelling where the driver refuses the newer), or why
there is no GPU reading; and each of the node's own ports' (a device behind it; else the default
route's; else every interface but ``lo``) state, carrier changes and error counters
from sysfs, and each InfiniBand/RoCE port's state and link_downed, symbol_error, port_rcv_errors and
link_error_recovery counters. It reads only: nothing on the node changes.
"""

from __future__ import annotations

from pytest_fabric.parsers.nvidia_smi_clock_events import PREFIXES
from pytest_fabric.parsers.telemetry import GPU_FIELD_SETS, Telemetry, gpu_fields, parse_telemetry
from pytest_fabric.run.cluster import NodeHandle

__all__ = ["SAMPLE_TIMEOUT_S", "sample", "sample_command"]

#: a sample is a few reads: a node that takes longer is itself worth saying (its sample errors)
SAMPLE_TIMEOUT_S = 20.0


def sample_command() -> str:
    """The shell command one sample runs (no value of the profile or inventory is part of it)."""
    # The first set the driver answers: the newer reason names, then the older; all fields, then the basic.
    sets = " ".join(f"{prefix}:{which}:{','.join(gpu_fields(prefix, which))}"
                    for which in GPU_FIELD_SETS for prefix in PREFIXES)
    return (
        "if ! command -v nvidia-smi >/dev/null 2>&1; then echo '## gpu none: no nvidia-smi on the node'; "
        f"else got=; for q in {sets}; do p=${{q%%:*}}; rest=${{q#*:}}; w=${{rest%%:*}}; f=${{rest#*:}}; "
        "if out=$(nvidia-smi --query-gpu=$f --format=csv,noheader,nounits 2>&1); then "
        "echo \"## gpu $p $w\"; printf '%s\\n' \"$out\"; got=1; break; fi; done; "
        "[ -n \"$got\" ] || echo \"## gpu none: nvidia-smi: $(printf '%s' \"$out\" | head -n 1)\"; fi; "
        "echo '## net'; r() { cat \"$1\" 2>/dev/null || echo -; }; "
        "ports=$(for d in /sys/class/net/*; do [ -e \"$d/device\" ] && echo \"${d##*/}\"; done); "
        "[ -n \"$ports\" ] || ports=$(awk '$2==\"00000000\"{print $1}' /proc/net/route 2>/dev/null | sort -u); "
        "[ -n \"$ports\" ] || ports=$(ls /sys/class/net | grep -vx lo); "
        "for n in $ports; do d=/sys/class/net/$n; "
        "echo \"$n $(r $d/operstate) $(r $d/carrier_changes) $(r $d/statistics/rx_errors) "
        "$(r $d/statistics/tx_errors) $(r $d/statistics/rx_dropped)\"; done; "
        # InfiniBand and RoCE ports: their state and the counters a flapping or failing link raises
        "echo '## ib'; for p in /sys/class/infiniband/*/ports/*; do [ -e \"$p/state\" ] || continue; "
        "dev=${p%/ports/*}; dev=${dev##*/}; "
        "echo \"$dev/${p##*/} $(r $p/state | tr -d ' ') $(r $p/phys_state | tr -d ' ') $(r $p/counters/link_downed) "
        "$(r $p/counters/symbol_error) $(r $p/counters/port_rcv_errors) $(r $p/counters/link_error_recovery)\"; done"
    )


def sample(node: NodeHandle, timeout: float = SAMPLE_TIMEOUT_S) -> Telemetry:
    """One sample of ``node`` (a transport error or a ParseError is the caller's to say)."""
    result = node.run(sample_command(), timeout=timeout)
    return parse_telemetry(result.stdout)

"""iperf3 on a cpu-free simulated cluster (SimCluster(cpu_free=True)).

Installed as the nodes' iperf3, it takes the run's -t asleep instead of moving bytes, and reports what the node's link would carry. The two sides meet
over a real TCP connection on -p (so refused ports and unreachable hosts fail as they would); the
figure is the slower end's share of its link (tbf rate, else the veth's speed) times TCP's goodput
at the path MTU. Flows are counted per node and direction when each starts: a node sending to two
peers at once gives each half its link (a flow starting later sees the earlier ones, not the reverse).

Its own module, importing only the standard library's cheapest parts and ``standin_base``: a 512-node
round starts 512 of these at once on the development machine's two cores, where importing the whole
``fabric_standin`` (pathlib, re, typing, contextlib: ~20 ms of a ~33 ms start) made the stand-ins'
starts most of a round. Run by a ``python3 -S`` launcher (hardware.py): site's .pth files are not
read either. Options are read from iperf3 3.12's getopt_long table, as the real tool reads them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

from standin_base import GetoptError, die, getopt_long, load_link, parse_table, recv_line, send_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    Model = dict[str, Any]

__all__ = ["main", "tcp_flow_mbit", "tcp_goodput_share"]


IPERF3_VERSION = "iperf 3.12"
_IPERF3_USAGE = "Usage: iperf3 [-s|-c host] [options]\n       iperf3 [-h|--help] [-v|--version]\n"
# Options accepted and modelled; every other option of the table is refused as not modelled (exit 2)
# rather than silently ignored, so a probe that starts to rely on one is noticed.
_IPERF3_MODELLED = {"s", "c", "1", "p", "t", "P", "J", "R", "i", "4", "N", "v", "h", "O", "f", "V",
                    "connect-timeout", "forceflush"}
_TCP_FLOWS = "/tmp/.fabric-standin-tcp"


def _sys_int(path: str, default: int) -> int:
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return default


def _link_mbit(link: Model) -> float:
    """What the node's link carries each way: its tbf rate, else the veth's reported speed."""
    if link.get("rate_mbit"):
        return float(link["rate_mbit"])
    speed = _sys_int("/sys/class/net/eth0/speed", 10000)
    return float(speed if speed > 0 else 10000)


def _atoi(text: str) -> int:
    """C atoi(): the leading (signed) digits, 0 when there are none (iperf3 reads -p, -t, -P so)."""
    text = text.lstrip()
    sign = text[:1] if text[:1] in "+-" else ""
    digits = text[len(sign):]
    end = next((i for i, c in enumerate(digits) if not "0" <= c <= "9"), len(digits))
    return int(sign + digits[:end]) if end else 0


def tcp_goodput_share(mtu: int) -> float:
    """TCP payload per byte tbf counts: MSS (MTU - 52, with timestamps) over the frame (MTU + 14)."""
    return (mtu - 52) / (mtu + 14)


def tcp_flow_mbit(sender_mbit: float, sender_flows: int, receiver_mbit: float, receiver_flows: int,
                  mtu: int) -> float:
    """One flow's goodput: the slower end's share of its link, times TCP's goodput share."""
    return min(sender_mbit / max(1, sender_flows), receiver_mbit / max(1, receiver_flows)) * tcp_goodput_share(mtu)


def _parse_iperf3(argv: list[str], link: Model) -> dict[str, str]:
    table = parse_table(link["option_tables"]["iperf3"])
    longopts = {row[0]: (row[1], None if row[2] == "-" else row[2]) for row in table.get("long", [])}
    optstring = table["optstring"][0][0]
    messages = table["message"]

    def parameter_error(code: str) -> NoReturn:
        sys.stderr.write(f"iperf3: parameter error - {messages[code]}\n\n")
        sys.stdout.write(_IPERF3_USAGE)
        sys.exit(1)

    opts: dict[str, str] = {}
    try:
        for key, value in getopt_long("iperf3", argv, optstring, longopts):
            if key is None:
                continue  # iperf3 ignores words that are not options
            if key not in _IPERF3_MODELLED:
                die(f"fabric stand-in: iperf3 option {key!r} is valid but not modelled by the cpu-free stand-in", 2)
            if key in ("s", "c") and ({"s", "c"} - {key}) & set(opts):
                parameter_error("IESERVCLIENT")
            opts[key] = "" if value is None else value
    except GetoptError as exc:
        sys.stderr.write(exc.message + _IPERF3_USAGE)
        sys.exit(1)
    for letter, low, high, code in table.get("check", []):
        if letter in opts:
            number = _atoi(opts[letter])
            if (low != "-" and number < int(low)) or (high != "-" and number > int(high)):
                parameter_error(code)
    if "v" not in opts and "h" not in opts and "s" not in opts and "c" not in opts:
        parameter_error("IENOROLE")
    return opts


class _TcpFlow:
    """A flow of this node in ``direction`` (out/in), registered while it runs: ``with`` gives how many
    there are. A class, not contextlib.contextmanager: contextlib costs each start 1-2 ms more."""

    def __init__(self, direction: str) -> None:
        self.folder = os.path.join(_TCP_FLOWS, direction)
        self.mine = os.path.join(self.folder, str(os.getpid()))

    def __enter__(self) -> int:
        os.makedirs(self.folder, exist_ok=True)
        open(self.mine, "w").close()
        return max(1, len(os.listdir(self.folder)))

    def __exit__(self, *exc: object) -> None:
        try:
            os.unlink(self.mine)
        except FileNotFoundError:
            pass


def cmd_iperf3(argv: list[str]) -> int:
    """iperf3 -s / -c as the cpu-free stand-in (see the section comment)."""
    link = load_link()
    opts = _parse_iperf3(argv, link)
    if "v" in opts:
        print(f"{IPERF3_VERSION} (cJSON 1.7.15)\n{' '.join(os.uname())}\n"
              "Optional features available: CPU affinity setting, IPv6 flow label, SCTP, TCP congestion "
              "algorithm setting, sendfile / zerocopy, socket pacing, authentication, bind to device, "
              "support IPv4 don't fragment")
        return 0
    if "h" in opts:
        sys.stdout.write(_IPERF3_USAGE)
        return 0
    port = _atoi(opts["p"]) if "p" in opts else 5201
    if "s" in opts:
        return _iperf3_server(link, port, one_off="1" in opts)
    return _iperf3_client(link, opts, opts["c"], port)


def _iperf3_server(link: Model, port: int, *, one_off: bool) -> int:
    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        listener.bind(("::", port))
    except OSError as exc:
        sys.stdout.write(f"iperf3: error - unable to start listener for connections: {exc.strerror}\n"
                         "iperf3: exiting\n")
        return 1
    listener.listen(16)
    rule = "-" * 59
    test = 0
    while True:
        test += 1
        print(f"{rule}\nServer listening on {port} (test #{test})\n{rule}", flush=True)
        conn, peer = listener.accept()  # blocking: a waiting server costs no CPU
        with conn:
            reader = conn.makefile("r")
            hello = recv_line(conn, reader)
            if hello is None:
                continue
            direction = "out" if hello.get("reverse") else "in"
            with _TcpFlow(direction) as flows:
                send_line(conn, {"node": link["node"], "rate_mbit": _link_mbit(link), "flows": flows,
                                  "mtu": _sys_int("/sys/class/net/eth0/mtu", 1500)})
                done = recv_line(conn, reader)  # the client's end of test (None: it went away)
            host = peer[0].removeprefix("::ffff:")
            print(f"Accepted connection from {host}, port {peer[1]}", flush=True)
            if done is not None:
                mbit = float(done["mbit"])
                seconds = float(done["seconds"])
                print(f"[SUM]   0.00-{seconds:.2f}  sec  {_transfer_text(mbit * 1e6 / 8 * seconds)}  "
                      f"{_bitrate_text(mbit * 1e6)}                  receiver", flush=True)
        if one_off:
            return 0


def _transfer_text(nbytes: float) -> str:
    for unit, size in (("GBytes", 2**30), ("MBytes", 2**20), ("KBytes", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} Bytes"


def _bitrate_text(bps: float) -> str:
    for unit, size in (("Gbits/sec", 1e9), ("Mbits/sec", 1e6), ("Kbits/sec", 1e3)):
        if bps >= size:
            return f"{bps / size:.3g} {unit}"
    return f"{bps:.0f} bits/sec"


def _iperf3_client(link: Model, opts: dict[str, str], host: str, port: int) -> int:
    json_out = "J" in opts
    duration = _atoi(opts["t"]) if "t" in opts else 10
    streams = max(1, _atoi(opts.get("P", "1")))
    reverse = "R" in opts
    interval = float(opts.get("i") or 1) or float(max(duration, 1))
    start = {"connected": [], "version": IPERF3_VERSION, "system_info": " ".join(os.uname())}

    def fail(message: str) -> int:
        if json_out:
            print(json.dumps({"start": start, "intervals": [], "end": {}, "error": message}, indent="\t"))
        else:
            sys.stderr.write(f"iperf3: error - {message}\n")
        return 1

    timeout_ms = opts.get("connect-timeout")
    try:
        sock = socket.create_connection((host, port), timeout=_atoi(timeout_ms) / 1000 if timeout_ms else None)
    except OSError as exc:
        return fail(f"unable to connect to server: {exc.strerror or exc}")
    sock.settimeout(None)
    local, remote = sock.getsockname(), sock.getpeername()
    if not json_out:
        print(f"Connecting to host {host}, port {port}", flush=True)
    with sock, _TcpFlow("in" if reverse else "out") as my_flows:
        reader = sock.makefile("r")
        send_line(sock, {"node": link["node"], "reverse": reverse, "streams": streams, "duration": duration})
        peer = recv_line(sock, reader)
        if peer is None:
            return fail("the server has terminated")
        mine = _link_mbit(link)
        mtu = min(_sys_int("/sys/class/net/eth0/mtu", 1500), int(peer["mtu"]))
        if reverse:
            mbit = tcp_flow_mbit(float(peer["rate_mbit"]), int(peer["flows"]), mine, my_flows, mtu)
        else:
            mbit = tcp_flow_mbit(mine, my_flows, float(peer["rate_mbit"]), int(peer["flows"]), mtu)
        began = time.time()
        time.sleep(duration)  # the test's duration, asleep: the point of the stand-in
        seconds = time.time() - began
        send_line(sock, {"done": True, "mbit": mbit, "seconds": seconds})
    bps = mbit * 1e6
    sockets = [5 + 2 * i for i in range(streams)]
    start["connected"] = [{"socket": s, "local_host": local[0], "local_port": local[1] + i,
                           "remote_host": remote[0], "remote_port": port} for i, s in enumerate(sockets)]
    if not json_out:
        for i, s in enumerate(sockets):
            print(f"[{s:3d}] local {local[0]} port {local[1] + i} connected to {remote[0]} port {port}")
        print("[ ID] Interval           Transfer     Bitrate         Retr")
        for who in ("sender", "receiver"):
            print(f"[SUM]   0.00-{seconds:.2f}  sec  {_transfer_text(bps / 8 * seconds)}  "
                  f"{_bitrate_text(bps)}    {'0' if who == 'sender' else ' '}             {who}")
        return 0
    each = bps / streams
    intervals = []
    at = 0.0
    while at < seconds - 1e-6:
        span = min(interval, seconds - at)
        rows = [{"socket": s, "start": at, "end": at + span, "seconds": span, "bytes": int(each / 8 * span),
                 "bits_per_second": each, "retransmits": 0, "omitted": False, "sender": not reverse}
                for s in sockets]
        intervals.append({"streams": rows, "sum": {"start": at, "end": at + span, "seconds": span,
                                                   "bytes": sum(r["bytes"] for r in rows), "bits_per_second": bps,
                                                   "retransmits": 0, "omitted": False, "sender": not reverse}})
        at += span
    total = int(bps / 8 * seconds)

    def side(sock_id: int | None, nbytes: int, rate: float) -> Model:
        row: Model = {"start": 0, "end": seconds, "seconds": seconds, "bytes": nbytes, "bits_per_second": rate}
        if sock_id is not None:
            row = {"socket": sock_id, **row}
        return row

    streams_end = [{"sender": {**side(s, total // streams, each), "retransmits": 0, "sender": not reverse},
                    "receiver": {**side(s, total // streams, each), "sender": not reverse}} for s in sockets]
    start.update({"connecting_to": {"host": host, "port": port}, "tcp_mss_default": mtu - 52,
                  "test_start": {"protocol": "TCP", "num_streams": streams, "blksize": 131072, "omit": 0,
                                 "duration": duration, "bytes": 0, "blocks": 0, "reverse": int(reverse),
                                 "tos": 0, "target_bitrate": 0}})
    document = {"start": start, "intervals": intervals,
                "end": {"streams": streams_end,
                        "sum_sent": {**side(None, total, bps), "retransmits": 0, "sender": not reverse},
                        "sum_received": {**side(None, total, bps), "sender": not reverse},
                        "cpu_utilization_percent": {"host_total": 0.1, "host_user": 0.05, "host_system": 0.05,
                                                    "remote_total": 0.1, "remote_user": 0.05, "remote_system": 0.05},
                        "sender_tcp_congestion": "cubic", "receiver_tcp_congestion": "cubic"}}
    print(json.dumps(document, indent="\t"))
    return 0


def main() -> int:
    """iperf3, as started (argv[0] is the installed tool)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die quietly on a closed pipe, as C tools do
    return cmd_iperf3(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

# Kernel-log stand-in for the simulated cluster (tests/simcluster/health.py writes MODEL_JSON above this line).
"""dmesg and journalctl for one fake node: its kernel log, printed as the real tools print it.

The model holds the node's kernel messages, each with the time it was logged (seconds since the
epoch), whether dmesg is refused (kernel.dmesg_restrict) and whether the journal has files.
dmesg prints util-linux 2.38's formats (``[seconds since boot]``, ``--time-format iso``,
``-T``/``--ctime``, ``-x``), journalctl -k systemd 252's (``short``, ``short-iso``,
``short-iso-precise``); the refusals are the recorded ones (tests/data/kernel-log).
"""

import json
import socket
import sys
import time
from datetime import datetime, timezone

MODEL = json.loads(MODEL_JSON)  # noqa: F821 - defined by the installer's first lines


def boot_epoch():
    with open("/proc/uptime") as f:
        return time.time() - float(f.read().split()[0])


def events():
    return sorted(MODEL["events"], key=lambda e: e[0])


def fail(tool, message, code=1):
    sys.stderr.write(f"{tool}: {message}\n")
    return code


def dmesg(args):
    fmt, decode = "raw", False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-T", "--ctime"):
            fmt = "ctime"
        elif a in ("-x", "--decode"):
            decode = True
        elif a in ("-P", "--nopager", "-k", "--kernel"):
            pass
        elif a == "--time-format" and i + 1 < len(args):
            fmt = args[i + 1]
            i += 1
        elif a.startswith("--time-format="):
            fmt = a.split("=", 1)[1]
        else:
            return fail("dmesg", f"unrecognized option '{a}'\nTry 'dmesg --help' for more information.")
        i += 1
    if fmt not in ("raw", "iso", "ctime"):
        return fail("dmesg", f"unknown time format: {fmt}")
    if MODEL["dmesg_restricted"]:
        return fail("dmesg", "read kernel buffer failed: Operation not permitted")
    boot = boot_epoch()
    out = []
    for at, message in events():
        if fmt == "iso":
            stamp = datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S,%f+00:00") + " "
        elif fmt == "ctime":
            stamp = datetime.fromtimestamp(at).strftime("[%a %b %e %H:%M:%S %Y] ")
        else:
            stamp = f"[{max(at - boot, 0.0):12.6f}] "
        lines = message.split("\n")
        prefix = "kern  :err   : " if decode else ""
        out.append(prefix + stamp + lines[0])
        # dmesg indents a message's further lines under its first
        out += [" " * len(prefix + stamp) + more for more in lines[1:]]
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def journalctl(args):
    output = "short"  # the node's journal holds only kernel messages: -k or not, the same lines
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-k", "--dmesg", "--no-pager", "-q", "--quiet", "-b", "--boot"):
            pass
        elif a in ("-o", "--output") and i + 1 < len(args):
            output = args[i + 1]
            i += 1
        elif a.startswith("--output="):
            output = a.split("=", 1)[1]
        else:
            return fail("journalctl", f"unrecognized option '{a}'")
        i += 1
    if output not in ("short", "short-iso", "short-iso-precise"):
        return fail("journalctl", f"Unknown output format '{output}'.")
    if not MODEL["journal"]:
        sys.stderr.write("No journal files were found.\n")
        sys.stdout.write("-- No entries --\n")
        return 0
    host = socket.gethostname()
    out = []
    for at, message in events():
        when = datetime.fromtimestamp(at, tz=timezone.utc)
        if output == "short-iso":
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
        elif output == "short-iso-precise":
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
        else:
            stamp = when.strftime("%b %d %H:%M:%S")
        # the journal keeps each line of a message as an entry of its own
        out += [f"{stamp} {host} kernel: {line.strip()}" for line in message.split("\n")]
    sys.stdout.write("".join(line + "\n" for line in out) if out else "-- No entries --\n")
    return 0


def main():
    import os

    tool = os.path.basename(sys.argv[0])
    run = {"dmesg": dmesg, "journalctl": journalctl}.get(tool)
    if run is None:
        return fail(tool, "not a kernel-log stand-in name")
    return run(sys.argv[1:])


sys.exit(main())

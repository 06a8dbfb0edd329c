"""What every stand-in program shares: where it was started, how it dies, its option tables and
glibc's getopt_long, and the JSON lines two ends of a simulated measurement exchange.

Kept apart from ``fabric_standin`` (2,000 lines, a dozen tools) so a stand-in that starts hundreds of
times a round imports only this and the standard library's cheapest modules: json, os, sys. Names the
annotations use are imported for type checkers only, because ``typing`` costs a stand-in start
2-3 ms of the ~10 ms python takes (``-X importtime``).
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Iterator
    from typing import Any, NoReturn

    Model = dict[str, Any]

__all__ = ["LINK_FILE", "GetoptError", "die", "getopt_long", "here", "load_link", "parse_table", "recv_line", "send_line"]

#: what a cpu-free stand-in reads of its node, beside it (SimCluster(cpu_free=True) writes it)
LINK_FILE = "fabric-link.json"


def here() -> str:
    """The directory the tool was started from (the node's /usr/local/bin), where its model lies.

    The program as started, not this module's file: the installed tool may be a launcher that
    imports this module from the checkout (tests/simcluster/hardware.py), so its bytecode is cached.
    """
    return os.path.dirname(os.path.abspath(sys.argv[0]))


def load_link() -> Model:
    """The node's link and disk as the cpu-free stand-ins model them (:data:`LINK_FILE`)."""
    folder = here()
    try:
        with open(os.path.join(folder, LINK_FILE)) as handle:
            loaded: Model = json.load(handle)
    except FileNotFoundError:
        die(f"fabric stand-in: no {LINK_FILE} beside {folder} (installed by SimCluster(cpu_free=True))", 2)
    return loaded


def die(message: str, code: int = 1) -> NoReturn:
    """Print to stderr and exit, as the real tools do on usage and lookup errors."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def parse_table(text: str) -> dict[str, list[list[str]]]:
    """A tool's option table (tests/data/option-tables/): rows by their first word, the rest split on
    blanks; a ``message NAME "TEXT"`` row maps NAME to its JSON-decoded TEXT instead. '#' lines are notes."""
    rows: dict[str, Any] = {"message": {}}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        kind, _, rest = line.partition(" ")
        if kind == "message":
            name, _, quoted = rest.strip().partition(" ")
            rows["message"][name] = json.loads(quoted)
        else:
            rows.setdefault(kind, []).append(rest.split())
    return rows


class GetoptError(Exception):
    """What glibc's getopt_long printed (argv[0]: ...) when it returned '?'."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def getopt_long(prog: str, argv: list[str], optstring: str,
                longopts: dict[str, tuple[str, str | None]]) -> Iterator[tuple[str | None, str | None]]:
    """glibc getopt_long, one option at a time as the caller's loop gets them: (key, argument) with
    key the short letter (or the long name of a long option with no letter), (None, word) for a
    non-option word (permuted: scanning goes on after it), until '--'. Raises GetoptError with
    glibc's message (2.26 and later) where getopt_long returns '?'. ``longopts``: name ->
    (no|required|optional, short letter or None)."""
    shorts: dict[str, str] = {}
    i = 0
    while i < len(optstring):
        letter = optstring[i]
        colons = len(optstring[i + 1:]) - len(optstring[i + 1:].lstrip(":"))
        shorts[letter] = ("no", "required", "optional")[min(colons, 2)]
        i += 1 + colons
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            for word in argv[i:]:
                yield None, word
            return
        if not arg.startswith("-") or arg == "-":
            yield None, arg
            continue
        if arg.startswith("--"):
            rest = arg[2:]
            name, eq, value = rest.partition("=")
            if name in longopts:
                found = name
            else:
                matches = [n for n in longopts if n.startswith(name)]
                if not matches:
                    raise GetoptError(f"{prog}: unrecognized option '--{rest}'\n")
                # one option under several names is no ambiguity; two flag-only options always are
                if len({(longopts[n][0], longopts[n][1] or n) for n in matches}) > 1:
                    raise GetoptError(f"{prog}: option '--{rest}' is ambiguous; possibilities:"
                                      + "".join(f" '--{n}'" for n in matches) + "\n")
                found = matches[0]
            has_arg, letter = longopts[found]
            key = letter or found
            if has_arg == "no":
                if eq:
                    raise GetoptError(f"{prog}: option '--{found}' doesn't allow an argument\n")
                yield key, None
            elif eq:
                yield key, value
            elif has_arg == "required":
                if i >= len(argv):
                    raise GetoptError(f"{prog}: option '--{found}' requires an argument\n")
                yield key, argv[i]
                i += 1
            else:
                yield key, None
            continue
        cluster = arg[1:]
        while cluster:
            letter, cluster = cluster[0], cluster[1:]
            if letter not in shorts or letter == ":":
                raise GetoptError(f"{prog}: invalid option -- '{letter}'\n")
            if shorts[letter] == "no":
                yield letter, None
                continue
            if cluster:
                yield letter, cluster
            elif shorts[letter] == "optional":
                yield letter, None
            elif i < len(argv):
                yield letter, argv[i]
                i += 1
            else:
                raise GetoptError(f"{prog}: option requires an argument -- '{letter}'\n")
            cluster = ""


def send_line(sock: socket.socket, payload: Model) -> None:
    sock.sendall(json.dumps(payload).encode() + b"\n")


def recv_line(sock: socket.socket, reader: Any) -> Model | None:
    line = reader.readline()
    return json.loads(line) if line else None

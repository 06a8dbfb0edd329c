"""Read a known_hosts file as OpenSSH does (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"): pure, no I/O.

paramiko's own reader cannot be used: a line with a marker (``@cert-authority *.site.org
ssh-ed25519 AAAA...``, as sites that sign host keys with an SSH CA have) makes it raise
InvalidHostKey for the whole file, it files ``@revoked`` keys nowhere, and it matches host names
literally, where OpenSSH takes ``*``/``?`` wildcards and ``!`` negations.  Here each line becomes
one :class:`KnownHostsLine` (its marker, host patterns, key type and key blob, and its line
number, for messages), and :func:`host_matches` says whether a line is about a host.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import re
from dataclasses import dataclass

__all__ = [
    "CA_MARKER", "REVOKED_MARKER", "KnownHosts", "KnownHostsLine", "SkippedLine", "host_matches", "parse_known_hosts",
]

CA_MARKER = "@cert-authority"
REVOKED_MARKER = "@revoked"
_MARKERS = (CA_MARKER, REVOKED_MARKER)


@dataclass(frozen=True)
class KnownHostsLine:
    """One key line: ``[marker] patterns keytype base64 [comment]``."""

    number: int  # 1-based, for messages
    marker: str  # "", CA_MARKER or REVOKED_MARKER
    patterns: tuple[str, ...]  # comma-separated host patterns, or one hashed ``|1|salt|hash`` name
    key_type: str
    blob: bytes  # the key in SSH wire format, as its base64 field decodes


@dataclass(frozen=True)
class SkippedLine:
    """A line that is neither blank, a comment nor a key: OpenSSH skips it too; we say why."""

    number: int
    reason: str


def parse_known_hosts(text: str) -> tuple[list[KnownHostsLine], list[SkippedLine]]:
    """The key lines of a known_hosts file's ``text`` and the lines skipped (with why)."""
    keys: list[KnownHostsLine] = []
    skipped: list[SkippedLine] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = ""
        if fields[0].startswith("@"):
            if fields[0] not in _MARKERS:
                skipped.append(SkippedLine(number, f"unknown marker {fields[0]!r}"))
                continue
            marker, fields = fields[0], fields[1:]
        if len(fields) < 3:
            skipped.append(SkippedLine(number, "expected: [marker] hosts keytype key [comment]"))
            continue
        hosts, key_type, encoded = fields[:3]
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            skipped.append(SkippedLine(number, f"the {key_type!r} key is not valid base64"))
            continue
        keys.append(KnownHostsLine(number, marker, tuple(hosts.split(",")), key_type, blob))
    return keys, skipped


def _hashed_matches(pattern: str, name: str) -> bool:
    """``|1|base64(salt)|base64(HMAC-SHA1(salt, name))``, as ``HashKnownHosts yes`` writes names."""
    parts = pattern.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt, digest = base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)


@functools.lru_cache(maxsize=8192)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower()))


def _wildcard_matches(pattern: str, name: str) -> bool:
    """OpenSSH's match_pattern: ``*`` any run, ``?`` one character, the rest literal (``[`` too), no case."""
    if "*" not in pattern and "?" not in pattern:
        # Most lines name one host: compared as text (a controller of 512 nodes matches 512 x 512).
        return pattern.lower() == name.lower()
    return _compiled(pattern).fullmatch(name.lower()) is not None


def host_matches(patterns: tuple[str, ...], name: str) -> bool:
    """Whether a line with these host ``patterns`` is about ``name`` (``host`` or ``[host]:port``).

    As OpenSSH's match_hostname: a ``!`` pattern that matches rules the line out whatever else
    matches; otherwise one matching pattern is enough.
    """
    matched = False
    for pattern in patterns:
        if pattern.startswith("|"):
            matched = matched or _hashed_matches(pattern, name)
        elif pattern.startswith("!"):
            if _wildcard_matches(pattern[1:], name):
                return False
        elif _wildcard_matches(pattern, name):
            matched = True
    return matched


def _literal(pattern: str) -> bool:
    return not pattern.startswith(("|", "!")) and "*" not in pattern and "?" not in pattern


class KnownHosts:
    """The key lines of one file, indexed so that looking a name up does not match every line.

    A controller of 512 nodes looks up 512 names in a file of 512 lines: lines that name hosts
    literally are found by their names; only wildcard, negated and hashed ones are matched in turn.
    """

    def __init__(self, lines: list[KnownHostsLine]) -> None:
        self.lines = lines
        #: the @revoked lines: OpenSSH refuses their keys whatever host they name
        self.revoked = [line for line in lines if line.marker == REVOKED_MARKER]
        self._by_name: dict[str, list[int]] = {}
        self._matched: list[int] = []
        for index, line in enumerate(lines):
            if line.marker == REVOKED_MARKER:
                continue
            if all(_literal(p) for p in line.patterns):
                for pattern in {p.lower() for p in line.patterns}:
                    self._by_name.setdefault(pattern, []).append(index)
            else:
                self._matched.append(index)

    def about(self, name: str) -> list[KnownHostsLine]:
        """The plain and @cert-authority lines whose host patterns match ``name``, in file order."""
        found = set(self._by_name.get(name.lower(), ()))
        found.update(i for i in self._matched if host_matches(self.lines[i].patterns, name))
        return [self.lines[i] for i in sorted(found)]

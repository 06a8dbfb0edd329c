"""How much of what a node prints the controller keeps: all of it up to a cap, then its head and tail.

A node controls what its tools print.  One that prints 500 MB on one line used to take the
controller to 12.9 GB (every byte was kept, decoded, joined, quoted in the error message and then
in the record, the HTML page and the terminal).  Now each stream of a command is kept whole up to
:data:`KEEP_BYTES`, and past that as its first and last halves with the count of bytes dropped
between them, the way the record already keeps an output's tail.  The cap is far above what any
tool we read prints legitimately (``nvidia-smi -q`` on 8 GPUs is ~0.3 MB, fio's JSON for 64 jobs
~1 MB, iperf3's ``-J`` ~0.4 KB per stream and second: 64 streams over 600 s ~16 MB), so a parser only ever
sees a cut output when the node flooded; the cut then reads as a parse error that says so.

Messages that quote node text (an error's "last output") are capped in characters with
:func:`cap_text`.  This module is a leaf: the transports, the errors and the reports all use it.
"""

from __future__ import annotations

import hashlib

__all__ = ["KEEP_BYTES", "MESSAGE_CHARS", "CappedBuffer", "cap_text"]

#: bytes kept per stream of one command (its first and last halves beyond this)
KEEP_BYTES = 32 * 1024 * 1024
#: characters of node text an error message quotes at most
MESSAGE_CHARS = 4000


def _cut_note(dropped: int, unit: str, total: int) -> str:
    return f"[... {dropped:,} {unit} dropped by pytest-fabric: the output was {total:,} {unit} ...]"


def cap_text(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` when it has at most ``limit`` characters; else its first and last halves, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]}\n{_cut_note(len(text) - 2 * half, 'characters', len(text))}\n{text[-half:]}"


class CappedBuffer:
    """One output stream as it arrives: kept whole up to ``limit`` bytes, then its head and tail only.

    Memory stays under ~1.5 x ``limit`` whatever the stream's size; :attr:`total` counts every
    byte and :attr:`sha256` hashes every byte, so the evidence still names the whole output.
    """

    def __init__(self, limit: int = KEEP_BYTES) -> None:
        self.limit = limit
        self._half = max(limit // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self._hash = hashlib.sha256()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Take the next chunk of the stream."""
        if not data:
            return
        self.total += len(data)
        self._hash.update(data)
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            # Trim only now and then (each trim copies): the tail holds at most twice its half.
            if len(self._tail) > 2 * self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def dropped(self) -> int:
        """Bytes of the stream that are not kept."""
        return self.total - len(self._head) - min(len(self._tail), self._tail_kept())

    def _tail_kept(self) -> int:
        return len(self._tail) if self.total <= self.limit else self._half

    @property
    def sha256(self) -> str:
        """The hex SHA-256 of the whole stream, dropped bytes included."""
        return self._hash.hexdigest()

    def head(self, size: int) -> bytes:
        """The stream's first ``size`` bytes (fewer while fewer have arrived)."""
        return bytes(self._head[:size]) if size <= self._half else self.getvalue()[:size]

    def getvalue(self) -> bytes:
        """The bytes kept: all of them, or the head, a line saying what was dropped, and the tail."""
        tail = bytes(self._tail[-self._tail_kept():]) if self._tail else b""
        dropped = self.total - len(self._head) - len(tail)
        if dropped <= 0:
            return bytes(self._head) + tail
        note = _cut_note(dropped, "bytes", self.total).encode()
        return bytes(self._head) + b"\n" + note + b"\n" + tail

    def text(self) -> str:
        """:meth:`getvalue` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.getvalue().decode(errors="replace")

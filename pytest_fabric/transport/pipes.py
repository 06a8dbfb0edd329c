"""A local process's stdout and stderr read as they come, each kept with :class:`~pytest_fabric.transport.outputcap.CappedBuffer`.

``Popen.communicate`` keeps every byte a process prints; what the local transport's commands and
Slurm's ``srun`` steps print comes from nodes, so it is read here instead, in two threads, each
stream kept up to a cap (head and tail beyond, with the count dropped).
"""

from __future__ import annotations

import subprocess
import threading
import time
from typing import IO

from pytest_fabric.transport.outputcap import KEEP_BYTES, CappedBuffer

__all__ = ["PipeCapture"]


def _read_into(pipe: IO[bytes], buffer: CappedBuffer) -> None:
    with pipe:
        while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
            buffer.write(chunk)


class PipeCapture:
    """Reads ``proc``'s stdout and stderr (both PIPEs) until they close, each kept up to ``limit``
    bytes (:data:`~pytest_fabric.transport.outputcap.KEEP_BYTES` unless given)."""

    def __init__(self, proc: subprocess.Popen[bytes], limit: int | None = None) -> None:
        self.stdout = CappedBuffer(KEEP_BYTES if limit is None else limit)
        self.stderr = CappedBuffer(KEEP_BYTES if limit is None else limit)
        self._readers = [
            threading.Thread(target=_read_into, args=(pipe, buffer), daemon=True)
            for pipe, buffer in ((proc.stdout, self.stdout), (proc.stderr, self.stderr))
        ]
        for reader in self._readers:
            reader.start()

    def join(self, timeout: float | None) -> bool:
        """Wait for both pipes to close; False if ``timeout`` came first (an escaped process holds them)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in self._readers:
            reader.join(None if deadline is None else max(deadline - time.monotonic(), 0))
        return not any(reader.is_alive() for reader in self._readers)

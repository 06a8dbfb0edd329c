"""What is computed once per run: a node's ports, topology, GPU inventory, preflight; attribution; ...

Every cache of the run's readings is one :class:`Once` on the run's state
(``state.once.get(kind, key, compute)``), with one error policy:

- ``compute`` runs once per ``(kind, key)``. A second asker, in another thread, waits for the
  first computation instead of starting its own (one ``nvidia-smi topo -m`` per node, however
  many checks and threads ask for it).
- An :class:`Exception` from ``compute`` is kept and raised again to every later asker: a node
  that could not be read is not read again in this run, and each of its checks reports the same
  cause at once. An error that offers a fresh copy of itself (``TransportError.again()``: the
  same type, the message saying it was not retried) is raised as that copy, so the tracebacks
  of many askers do not pile onto one object.
- Anything else (a pytest skip or failure, ``KeyboardInterrupt``, ``SystemExit``) is not kept:
  it belongs to the test that asked, and the next asker computes again.

Batches of subjects (waves and rounds) have their own cache, :class:`~pytest_fabric.run.batches.BatchCache`,
because a batch measures many keys in one go; everything else computed once goes through here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Once"]

T = TypeVar("T")


@dataclass
class _Cell:
    owner: int  # the thread computing it
    done: threading.Event = field(default_factory=threading.Event)
    kept: bool = False  # done with a value or a kept error; False once done: not kept, ask again
    value: Any = None
    error: Exception | None = None


class Once:
    """Values computed once per ``(kind, key)``, thread-safe, with one error policy (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cells: dict[tuple[str, Hashable], _Cell] = {}

    def get(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``'s value for ``(kind, key)``, computed by the first asker only.

        ``kind`` names what is computed (``"topology"``), ``key`` of what (a node's name).
        """
        me = threading.get_ident()
        while True:
            with self._lock:
                cell = self._cells.get((kind, key))
                if cell is None:
                    cell = self._cells[(kind, key)] = _Cell(me)
                    mine = True
                else:
                    mine = False
            if mine:
                return self._compute(kind, key, cell, compute)
            if not cell.done.is_set() and cell.owner == me:
                raise RuntimeError(f"{kind} of {key!r} asks for itself while it is being computed")
            cell.done.wait()
            if cell.kept:
                return self._outcome(cell)  # type: ignore[no-any-return]
            # its computation was not kept (a skip, Ctrl-C): the cell is gone, ask again

    def peek(self, kind: str, key: Hashable) -> Any:
        """What :meth:`get` has computed for ``(kind, key)``, computing nothing and waiting for nothing.

        The value (a kept error is raised again), or None when it was never computed or is still
        being computed. For readings that must come from an earlier moment (error counters
        before any traffic): asking later would compute them now.
        """
        with self._lock:
            cell = self._cells.get((kind, key))
        if cell is None or not cell.done.is_set() or not cell.kept:
            return None
        return self._outcome(cell)

    def _compute(self, kind: str, key: Hashable, cell: _Cell, compute: Callable[[], T]) -> T:
        try:
            value = compute()
        except Exception as exc:
            cell.error, cell.kept = exc, True
            cell.done.set()
            raise
        except BaseException:
            with self._lock:  # not kept: the next asker computes again
                del self._cells[(kind, key)]
            cell.done.set()
            raise
        cell.value, cell.kept = value, True
        cell.done.set()
        return value

    @staticmethod
    def _outcome(cell: _Cell) -> Any:
        if cell.error is not None:
            again = getattr(cell.error, "again", None)
            raise again() if callable(again) else cell.error
        return cell.value

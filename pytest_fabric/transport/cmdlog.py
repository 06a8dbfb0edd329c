"""What a transport did on each node, for pytest's logging options (``--log-cli-level=DEBUG``).

One logger per node, ``pytest_fabric.transport.node.<node>`` (a level of its own, apart from the
modules' loggers, so a node named ``ssh`` is no module), at DEBUG: the connection (address, user,
time), and each command with its exit code, its time and how many bytes it printed.  What the node
printed is not logged: it is the node's text (control characters and all) and can be megabytes;
the command line is ours, and is written as a Python literal so nothing in it reaches a terminal raw.
``--log-disable=pytest_fabric.transport.node`` silences every node, ``...node.gpu07`` one.
"""

from __future__ import annotations

import logging

__all__ = ["NODE_LOGGERS", "log_connected", "log_failed", "log_ran", "log_started", "node_logger"]

NODE_LOGGERS = "pytest_fabric.transport.node"


def node_logger(node: str) -> logging.Logger:
    """The logger of ``node``'s transport detail."""
    return logging.getLogger(f"{NODE_LOGGERS}.{node}")


def log_connected(logger: logging.Logger, address: str, user: str, seconds: float, via: str | None = None) -> None:
    """A connection opened (an SSH handshake and authentication done, or a step started)."""
    logger.debug("connected to %s as %s%s in %.3f s", address, user, f" via {via}" if via else "", seconds,
                 stacklevel=2)


def log_ran(logger: logging.Logger, command: str, exit_code: int, seconds: float, out_bytes: int, err_bytes: int) -> None:
    """A command ended with ``exit_code``."""
    logger.debug("ran %r: exit %d in %.3f s (stdout %d bytes, stderr %d bytes)",
                 command, exit_code, seconds, out_bytes, err_bytes, stacklevel=2)


def log_failed(logger: logging.Logger, command: str, what: str, seconds: float) -> None:
    """A command without an exit code: timed out, or its connection lost (``what`` is ours, not the node's)."""
    logger.debug("ran %r: %s after %.3f s", command, what, seconds, stacklevel=2)


def log_started(logger: logging.Logger, command: str, seconds: float) -> None:
    """A background command (a server) started."""
    logger.debug("started %r in the background in %.3f s", command, seconds, stacklevel=2)

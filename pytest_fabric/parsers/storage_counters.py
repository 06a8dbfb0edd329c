"""The kernel's byte counts for the filesystem a directory lives on: text -> :class:`StorageCounters`.

The probe (probes/witness.py, :func:`~pytest_fabric.probes.witness.storage_bytes`) prints up to
three kinds of line:

- ``mount MAJ:MIN FSTYPE TARGET``: what ``findmnt -T DIR`` says the directory lives on;
- ``diskstats MAJ MIN NAME reads merged SECTORS_READ ms writes merged SECTORS_WRITTEN ...``: that
  device's line of ``/proc/diskstats`` (Documentation/admin-guide/iostats.rst; sectors are 512
  bytes whatever the device's own sector size), where the filesystem sits on a block device;
- ``mountstats bytes: NORMALREAD NORMALWRITE DIRECTREAD DIRECTWRITE SERVERREAD SERVERWRITE
  READPAGES WRITEPAGES``: the NFS client's byte counters of that mount from
  ``/proc/self/mountstats`` (server* are the bytes its READ and WRITE calls moved).

The kernel keeps these whatever program did the I/O: they witness what fio's own output cannot
(docs/report.md, "What corroborates a figure").
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["SECTOR_BYTES", "StorageCounters", "parse"]

TOOL = "storage-counters"
#: /proc/diskstats counts sectors of 512 bytes, whatever the device's logical block size
SECTOR_BYTES = 512


@dataclass(frozen=True)
class StorageCounters:
    """What the kernel has counted so far for the filesystem under one directory."""

    major_minor: str
    fstype: str
    target: str
    #: the block device's name in /proc/diskstats, where the filesystem has one
    device: str | None = None
    sectors_read: int | None = None
    sectors_written: int | None = None
    #: the NFS client's READ and WRITE bytes for the mount (mountstats), where it is NFS
    nfs_server_read: int | None = None
    nfs_server_written: int | None = None

    @property
    def bytes_read(self) -> int | None:
        """What reached the filesystem's storage as reads: the device's sectors, else the NFS server's bytes."""
        if self.sectors_read is not None:
            return self.sectors_read * SECTOR_BYTES
        return self.nfs_server_read

    @property
    def bytes_written(self) -> int | None:
        """What reached the filesystem's storage as writes: the device's sectors, else the NFS server's bytes."""
        if self.sectors_written is not None:
            return self.sectors_written * SECTOR_BYTES
        return self.nfs_server_written


def _int(text: str, what: str, line: int) -> int:
    if not text.isdigit():
        raise ParseError(TOOL, f"{what}: {text!r} is not a counter value", line=line)
    return int(text)


@register(TOOL, "findmnt's MAJ:MIN of a directory with its /proc/diskstats line or its NFS mountstats bytes")
def parse(text: str) -> StorageCounters:
    """One reading; a ``mount`` line is required, the counters are there where the kernel keeps them."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    mount: tuple[str, str, str] | None = None
    disk: tuple[str, int, int] | None = None
    nfs: tuple[int, int] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        kind = words[0]
        if kind == "mount":
            if len(words) < 4 or ":" not in words[1]:
                raise ParseError(TOOL, f"a mount line needs MAJ:MIN FSTYPE TARGET, got {line.strip()!r}", line=number)
            mount = (words[1], words[2], line.split(None, 3)[3].strip())
        elif kind == "diskstats":
            if len(words) < 11:
                raise ParseError(TOOL, f"a /proc/diskstats line has at least 10 fields, got {line.strip()!r}", line=number)
            disk = (words[3], _int(words[6], "sectors read", number), _int(words[10], "sectors written", number))
        elif kind == "mountstats":
            if len(words) < 10 or words[1] != "bytes:":
                raise ParseError(TOOL, f"a mountstats bytes line has 8 counters, got {line.strip()!r}", line=number)
            nfs = (_int(words[6], "serverreadbytes", number), _int(words[7], "serverwritebytes", number))
        else:
            raise ParseError(TOOL, f"unexpected line {line.strip()[:80]!r}", line=number)
    if mount is None:
        raise UnrecognizedOutput(TOOL, "findmnt named no filesystem for the directory")
    return StorageCounters(
        mount[0], mount[1], mount[2],
        device=disk[0] if disk else None,
        sectors_read=disk[1] if disk else None,
        sectors_written=disk[2] if disk else None,
        nfs_server_read=nfs[0] if nfs else None,
        nfs_server_written=nfs[1] if nfs else None,
    )

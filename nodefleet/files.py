"""Reading the files a user names (stack files, catalogs, policy configs, renders): regular files only, of
a bounded size.

Why: a named pipe nobody writes to, a device (``/dev/zero``, ``/dev/tty``) or a socket given where a file was
expected made every command hang forever, and an endless or huge file would be read to the end. Part of the
root vocabulary: it imports nothing of nodefleet, so the boot image catalogs and the stack file model share it.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["MAX_FILE_BYTES", "FileKindError", "FileTooLargeError", "read_regular_file"]

#: The largest input file nodefleet reads (stack files, catalogs, policy configs). A 100-cluster stack file is
#: well under 1 MiB and a boot image catalog under 1 MiB; a larger file is not one of them, and reading an
#: endless one (``/dev/zero``) would never end.
MAX_FILE_BYTES = 16 * 1024 * 1024


class FileKindError(OSError):
    """A path that is not a regular file (a named pipe, a device, a socket): reading it may block forever."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"is {kind}, not a regular file")
        self.kind = kind


class FileTooLargeError(OSError):
    """A regular file over :data:`MAX_FILE_BYTES` (or the limit asked for)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"is {size:,} bytes or more (at most {limit:,})")
        self.size = size
        self.limit = limit


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def read_regular_file(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes (symlinks followed).

    Opened without blocking, so a named pipe nobody writes to cannot hang the command, and judged by what
    was opened (``fstat``), so a path swapped after a check cannot slip a device in. Raises
    :class:`FileKindError`, :class:`FileTooLargeError`, ``IsADirectoryError`` or the ``OSError`` of the
    open (``FileNotFoundError``…).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a Unix socket cannot be opened as a file
            raise FileKindError("a socket") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise FileKindError(_kind(mode))
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileTooLargeError(size, limit)
        chunks: list[bytes] = []
        total = 0
        while True:  # the size may lie (a file still being written, /proc): read to the limit, no further
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLargeError(total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)

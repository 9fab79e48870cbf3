"""Disks that fail, for the store-fault tests: a small tmpfs that fills up, an ext4 image that the
kernel turns read-only as it does on an I/O error (`errors=remount-ro`), and the fallbacks when
this process may not mount (not root, no loop device): SQLite's own limits on the server's writer
connection (`PRAGMA max_page_count`, `PRAGMA query_only`), which give the same errors SQLite
reports for a full or read-only file.

Each helper says which it did, so a test can report it.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _run(*command: str) -> bool:
    try:
        done = subprocess.run(command, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _unmount(folder: Path) -> None:
    if not _run("umount", str(folder)):
        _run("umount", "-l", str(folder))  # still busy: detach it now, free it when released


@contextmanager
def small_disk(folder: Path, size: str = "4m") -> Iterator[str]:
    """`folder` on a tmpfs of `size` ("tmpfs"), unmounted at the end; or the plain folder when
    mounting is not possible here ("plain")."""
    folder.mkdir(parents=True, exist_ok=True)
    if not _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
        yield "plain"
        return
    try:
        yield "tmpfs"
    finally:
        _unmount(folder)


def fill(folder: Path) -> Path:
    """Write a ballast file in `folder` until its filesystem is full (ENOSPC); returns it."""
    ballast = folder / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    block = b"\0" * 65536
    try:
        while True:
            try:
                os.write(fd, block)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    return ballast
                block = block[: len(block) // 2]  # fill the last bits too
    finally:
        os.close(fd)


@contextmanager
def failing_ext4(folder: Path, image: Path) -> Iterator[Path | None]:
    """`folder` on an ext4 image of 16 MiB on a loop device, mounted `errors=remount-ro`: yields
    the file that makes the kernel take an ext4 error there (`/sys/fs/ext4/loopN/
    trigger_fs_error`; the filesystem then turns read-only under its open files, as on a failing
    disk), or None when that is not possible here (the folder is then plain)."""
    folder.mkdir(parents=True, exist_ok=True)
    mkfs = shutil.which("mkfs.ext4")
    if mkfs is None or os.geteuid() != 0:
        yield None
        return
    with open(image, "wb") as file:
        file.truncate(16 * 1024 * 1024)
    if not _run(mkfs, "-q", "-F", str(image)):
        yield None
        return
    if not _run("mount", "-o", "loop,errors=remount-ro", str(image), str(folder)):
        yield None
        return
    try:
        device = _device_of(folder)
        trigger = None if device is None else Path("/sys/fs/ext4") / device / "trigger_fs_error"
        yield trigger if trigger is not None and trigger.exists() else None
    finally:
        _unmount(folder)


def _device_of(folder: Path) -> str | None:
    """The block device's name (loop3) of the filesystem mounted on `folder`."""
    with open("/proc/mounts") as mounts:
        for line in mounts:
            source, target, *_ = line.split()
            if target == str(folder) and source.startswith("/dev/"):
                return os.path.basename(os.path.realpath(source))
    return None


def writer_pragma(log: Any, pragma: str) -> None:
    """Run `PRAGMA ...` on the writer connection of a SQLiteLog (in its writer thread, from any
    thread): per-connection limits, such as max_page_count or query_only, then apply to every
    write the log makes."""

    def job() -> None:
        log._connection().execute(f"PRAGMA {pragma}")

    log._writer.submit(job).result(timeout=10)

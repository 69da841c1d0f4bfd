"""A process owns a state folder: an exclusive lock held while it runs, with the holder's pid and command in it.

Why a lock rather than a fresh folder per run: the folder is the agents' memory (their tasks, sessions and
workspaces, and the demo's unpacked Copilot CLI), which a user expects to find again on the next run. A
lock keeps it and still makes a second run on the same folder a sentence naming the first, instead of two
runs rewriting each other's configs. `fcntl.flock` is released by the kernel when the holder dies, so a
crashed run never leaves a stale lock behind; the file itself stays (removing it would race a new holder).
"""

import fcntl
import os
from pathlib import Path

from a2a_wrapper.command import this_command
from a2a_wrapper.errors import ConfigError

OWNER = "owner.lock"  # held by the run that writes the folder's configs and supervises it (a fleet, the demo)
SERVING = "serve.lock"  # held by the one `a2a-wrap serve` that runs on the folder


class FolderBusy(ConfigError):
    """Another live process holds the folder; the message names its pid and command."""

    def __init__(self, folder: Path, holder: str) -> None:
        super().__init__(f"{folder} is in use by {holder}")
        self.folder = folder
        self.holder = holder


class FolderLock:
    """`flock` on FOLDER/NAME; its descriptor is not inherited, so the agents a run starts never hold it."""

    def __init__(self, folder: Path, name: str = OWNER) -> None:
        self.folder = folder
        self._name = name
        self._fd: int | None = None

    def acquire(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / self._name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            raise FolderBusy(self.folder, _describe(holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {this_command()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # before the unlock: a later holder's line is never cut
            os.close(self._fd)
            self._fd = None


def _describe(line: str) -> str:
    pid, _, command = line.partition(" ")
    if not pid.isdigit():
        return "another process (it has not written its pid yet)"
    return f"pid {pid} ({command})" if command else f"pid {pid}"

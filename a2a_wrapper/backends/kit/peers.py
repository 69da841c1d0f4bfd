"""Which process is at the other end of a Unix socket, and whether it is the backend's own.

A socket the backend reaches (the tool hook's) can be reached by its tools too: same user, same folder. What
they cannot forge is the kernel's word on who connected (SO_PEERCRED, the connecting process's id as this
process's PID namespace sees it). A backend's main process is found once, as it becomes ready and before any
tool runs: the one process under the child the wrapper started that runs the backend's program and was not
started by another process running it. A tool that runs the same program later is another process.
"""

import os
import socket
import struct
from pathlib import Path

_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_pid(connection: socket.socket) -> int:
    """The id of the process that connected `connection` (a Unix socket)."""
    pid, _, _ = _PEERCRED.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    return int(pid)


def main_process(root: int, program: Path) -> int | None:
    """The process under `root` (itself included) that runs `program` and whose parent does not: None when none
    does (it exited) or more than one does (something else already runs it: nothing is trusted)."""
    wanted = os.path.realpath(program)
    found = [pid for pid in _tree(root) if _program(pid) == wanted and _program(_parent(pid)) != wanted]
    return found[0] if len(found) == 1 else None


def _tree(root: int) -> list[int]:
    parents = {pid: _parent(pid) for pid in _pids()}
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rpartition(")")[2].split()[1])  # after the command's name, which may hold spaces or ")"


def _program(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None

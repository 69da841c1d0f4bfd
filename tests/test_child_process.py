"""How the wrapper starts a child: it dies with a wrapper that is killed, and starting it runs no fork handlers
(a fork of the threaded wrapper ran gRPC's, whose poller aborted a backend before its exec)."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from a2a_wrapper.process import ChildProcess

pytestmark = pytest.mark.both_loops  # children are started by a2a_wrapper.spawn, alike on either loop

WRAPPER = textwrap.dedent(
    """
    import asyncio, os, sys
    from a2a_wrapper import event_loop
    from a2a_wrapper.process import ChildProcess

    async def main():
        child = ChildProcess("sleeper", ["sleep", "600"], dict(os.environ), ".")
        await child.start()
        print(child.pid, flush=True)
        await asyncio.sleep(600)

    event_loop.run(main())  # the loop a2a-wrap runs on
    """
)


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def command_name(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def test_a_child_dies_when_its_wrapper_is_killed(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", WRAPPER], cwd=tmp_path, stdout=subprocess.PIPE, text=True) as wrapper:
        assert wrapper.stdout is not None
        child = int(wrapper.stdout.readline())
        assert alive(child)
        deadline = time.monotonic() + 5
        while command_name(child) != "sleep" and time.monotonic() < deadline:
            time.sleep(0.01)  # setpriv sets the parent-death signal, then execs: a kill before that outlives it
        wrapper.send_signal(signal.SIGKILL)  # no stop(), no atexit: only the kernel can end the child now
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), f"pid {child} outlived its killed wrapper"


async def test_starting_a_child_runs_no_fork_handlers(tmp_path: Path) -> None:
    forks: list[int] = []
    os.register_at_fork(before=lambda: forks.append(os.getpid()))  # runs on any fork that runs Python's handlers
    child = ChildProcess("echo", ["sh", "-c", "echo started"], dict(os.environ), tmp_path)
    await child.start("started")
    await child.wait_ready(10)
    assert await child.wait() == 0
    await child.stop()
    assert forks == []


async def test_a_child_keeps_its_own_pid_and_process_group(tmp_path: Path) -> None:
    child = ChildProcess("sleeper", ["sleep", "600"], dict(os.environ), tmp_path)
    await child.start()
    try:
        assert child.pid is not None
        for _ in range(100):  # setpriv execs the command in place
            if command_name(child.pid) == "sleep":
                break
            await asyncio.sleep(0.05)
        assert command_name(child.pid) == "sleep"
        assert os.getpgid(child.pid) == child.pid  # a group of its own: stop() signals the whole group
    finally:
        await child.stop()
    assert not alive(child.pid)


async def test_a_stdio_child_talks_over_its_pipes_and_ends_when_its_stdin_closes(tmp_path: Path) -> None:
    child = ChildProcess("cat", ["sh", "-c", "echo ready >&2; exec cat"], dict(os.environ), tmp_path, stdio=True)
    await child.start("ready")
    await child.wait_ready(10)
    child.stdin.write(b"a line\n" + b"x" * 200_000 + b"\n")  # more than a pipe holds: drain() waits for the child
    await child.stdin.drain()
    assert await child.stdout.readline() == b"a line\n"
    assert len(await child.stdout.readline()) == 200_001
    child.stdin.close()
    assert await child.wait() == 0
    assert await child.stdout.read() == b""
    await child.stop()


async def test_a_child_ended_by_a_signal_exits_with_minus_its_number(tmp_path: Path) -> None:
    child = ChildProcess("self-killer", ["sh", "-c", "kill -TERM $$"], dict(os.environ), tmp_path)
    await child.start()
    assert await child.wait() == -signal.SIGTERM
    assert not child.running
    await child.stop()

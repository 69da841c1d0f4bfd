"""A child started the same way on any event loop: by `subprocess.Popen`, its pipes joined to the loop as streams.

asyncio's own loop starts a child with `subprocess.Popen` too, which uses vfork and exec and runs none of Python's
fork handlers. uvloop's loop starts one with libuv, which runs them first, and a fork that ran gRPC's handlers
once let its poller abort a backend before its exec (`process.dying_with_parent`). So children are started here,
not by the loop; the exit is read from a pidfd (Linux 5.3) or, where there is none, from a thread that waits.
"""

import asyncio
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
DEVNULL = subprocess.DEVNULL


class Spawned:
    """A started child: the part of `asyncio.subprocess.Process` a2a-wrap uses."""

    def __init__(
        self,
        popen: "subprocess.Popen[bytes]",
        stdin: asyncio.StreamWriter | None,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
        exited: "asyncio.Future[int]",
    ) -> None:
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._exited = exited

    @property
    def returncode(self) -> int | None:
        """The exit code once the child has exited and been reaped; minus the signal's number if one ended it."""
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)  # a caller's timeout must not cancel the exit itself

    def close(self) -> None:
        """Closes the pipe to the child's stdin (its output pipes close at their end of file)."""
        if self.stdin is not None and not self.stdin.is_closing():
            self.stdin.close()


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
    limit: int,
    pass_fds: Sequence[int] = (),
) -> Spawned:
    """Starts `argv` in a new session (PIPE, DEVNULL or, for stderr, STDOUT for each stream), with `pass_fds` open
    in it at the same numbers; `limit` bounds a line read from it."""
    # vfork and exec: as quick as asyncio's own loop is when it starts a child the same way
    popen = subprocess.Popen(  # noqa: ASYNC220
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        bufsize=0,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    loop = asyncio.get_running_loop()
    exited = _exit_of(loop, popen)
    try:
        return Spawned(
            popen,
            await _writer(loop, popen.stdin) if popen.stdin is not None else None,
            await _reader(loop, popen.stdout, limit) if popen.stdout is not None else None,
            await _reader(loop, popen.stderr, limit) if popen.stderr is not None else None,
            exited,
        )
    except BaseException:  # a pipe the loop would not take: no child is left running without its streams
        popen.kill()
        await asyncio.shield(exited)
        raise


class _PipeProtocol(asyncio.StreamReaderProtocol):
    def eof_received(self) -> bool:
        super().eof_received()
        return False  # a pipe has no half-closed state: its transport closes at the end (uvloop's waits otherwise)


async def _reader(loop: asyncio.AbstractEventLoop, pipe: object, limit: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    await loop.connect_read_pipe(lambda: _PipeProtocol(reader, loop=loop), pipe)
    return reader


async def _writer(loop: asyncio.AbstractEventLoop, pipe: object) -> asyncio.StreamWriter:
    # a StreamWriter needs a protocol that paces its drain(); the reader it carries is never fed
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop)
    transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)


def _exit_of(loop: asyncio.AbstractEventLoop, popen: "subprocess.Popen[bytes]") -> "asyncio.Future[int]":
    """A future of the child's exit code, set once it has exited and been reaped."""
    exited: asyncio.Future[int] = loop.create_future()
    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later, or refused by a seccomp filter
        threading.Thread(
            target=_wait_in_thread, args=(loop, popen, exited), name=f"wait-{popen.pid}", daemon=True
        ).start()
        return exited

    def on_exit() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        _settle(exited, popen.wait())  # readable once the child has exited: the wait reaps it at once

    loop.add_reader(pidfd, on_exit)
    return exited


def _wait_in_thread(
    loop: asyncio.AbstractEventLoop, popen: "subprocess.Popen[bytes]", exited: "asyncio.Future[int]"
) -> None:
    code = popen.wait()
    try:
        loop.call_soon_threadsafe(_settle, exited, code)
    except RuntimeError:  # the loop is closed: nobody waits any more
        pass


def _settle(exited: "asyncio.Future[int]", code: int) -> None:
    if not exited.done():
        exited.set_result(code)

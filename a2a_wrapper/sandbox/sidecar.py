"""`a2a-wrap sidecar`: the backend's container's one service (runtime.kind: sidecar). It starts what a stand-in
of the wrapper's asks for and pipes its stdin, stdout, stderr, signals and exit code over the connection.

It listens at `<folders>/sidecar.sock`, in the backend's own folder: a socket of the backend's side, which
nothing of the wrapper's trusts (a tool could replace it, and would then only be talking to its own backend's
wrapper side as the backend already does). What the wrapper trusts is in its sockets folder, read-only here.

A start names the network it expects (runtime.network): one that is not this container's is refused with a
sentence, before anything runs. The listening sockets a stand-in hands over (how the wrapper reaches a port of
the backend's when the networks are apart) come with the connection's first byte and reach the child at the
numbers the wrapper gave them (renumber.py), never by a path.

Each child runs in a session of its own. When its connection closes first (the wrapper stopped it, or went
away), its whole group is killed. With `--reap-strays` (the container's command: never on a host, where it
would reach the user's other processes), once no child runs, every other process of the container's user is
killed too: a tool that left a process behind does not outlive its backend, and nothing of one run is
running when the next backend starts. As the container's PID 1 it also reaps orphans.
"""

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from a2a_wrapper.sandbox import frames

log = logging.getLogger(__name__)

SOCKET = "sidecar.sock"
# Run as a script in front of a command given descriptors (never imported).
RENUMBER = Path(__file__).with_name("renumber.py")
_MAX_HANDED = 16
_HELLO_TIMEOUT = 10.0  # seconds: a stand-in sends its first byte at once
_CHUNK = 65536
_DRAIN = 2.0  # seconds


def socket_path(folders: Path) -> Path:
    return folders / SOCKET


class Sidecar:
    def __init__(self, folders: Path, reap_strays: bool) -> None:
        self._path = socket_path(folders)
        self._reap_strays = reap_strays
        self._children: set[int] = set()
        self._attending: set[asyncio.Task[None]] = set()
        self._inode = 0

    async def serve(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.unlink(missing_ok=True)
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(str(self._path))
        listening.listen(64)
        listening.setblocking(False)
        os.chmod(self._path, 0o666)  # connectable whichever user the wrapper runs as
        self._inode = os.lstat(self._path).st_ino
        accepting = asyncio.create_task(self._accept(listening))
        log.info("sidecar: listening at %s (pid %d)", self._path, os.getpid())
        reaping = asyncio.create_task(self._reap_orphans()) if os.getpid() == 1 else None
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):  # as PID 1 nothing else would end it
            loop.add_signal_handler(number, stopping.set)
        try:
            await stopping.wait()
        finally:
            accepting.cancel()
            listening.close()
            for pid in list(self._children):
                _kill_group(pid)
            if reaping is not None:
                reaping.cancel()
            log.info("sidecar: stopped")

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            connection, _ = await loop.sock_accept(listening)
            attending = asyncio.create_task(self._accepted(connection))
            self._attending.add(attending)
            attending.add_done_callback(self._attending.discard)

    async def _accepted(self, connection: socket.socket) -> None:
        """The first byte and the descriptors it carries, then the connection as streams."""
        try:
            handed = await asyncio.wait_for(_hello(connection), _HELLO_TIMEOUT)
            reader, writer = await asyncio.open_unix_connection(sock=connection, limit=frames.MAX_HEAD)
        except (OSError, ValueError) as exc:  # a timeout too
            log.warning("sidecar: a connection that did not begin as a stand-in's: %s", exc)
            connection.close()
            return
        try:
            await self._connection(reader, writer, handed)
        finally:
            for descriptor in handed:
                with contextlib.suppress(OSError):
                    os.close(descriptor)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handed: list[int]) -> None:
        try:
            head = json.loads(await reader.readline())
            argv, env, cwd = list(head["argv"]), dict(head["env"]), str(head["cwd"])
            argv = _renumbered(argv, handed, [int(number) for number in head["fds"]])
            refusal = _network_refusal(head["network"])
        except (ValueError, KeyError, TypeError, asyncio.LimitOverrunError) as exc:
            refusal = f"a head that is not a command: {exc}"
        if refusal:
            writer.write(frames.frame(frames.FAILED, refusal.encode()))
            writer.close()
            return
        try:
            child = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                cwd=cwd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=handed,
            )
        except OSError as exc:
            writer.write(frames.frame(frames.FAILED, f"{argv[0]}: {exc}".encode()))
            writer.close()
            return
        for descriptor in handed:  # the child's now
            os.close(descriptor)
        handed.clear()
        log.info("sidecar: started %s (pid %d)", argv[0], child.pid)
        self._children.add(child.pid)
        try:
            await self._attend(child, reader, writer)
        finally:
            self._children.discard(child.pid)
            writer.close()

    async def _attend(
        self, child: asyncio.subprocess.Process, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        assert child.stdout is not None and child.stderr is not None
        outputs = [
            asyncio.create_task(_pipe_out(child.stdout, writer, frames.STDOUT)),
            asyncio.create_task(_pipe_out(child.stderr, writer, frames.STDERR)),
        ]
        commands = asyncio.create_task(_commands(reader, child))
        exited = asyncio.create_task(child.wait())
        await asyncio.wait([exited, commands], return_when=asyncio.FIRST_COMPLETED)
        _kill_group(child.pid)  # what it left in its session; all of it when the stand-in went away first
        code = await exited
        self._children.discard(child.pid)
        if not self._children:  # before the wrapper hears of the exit: it may start the next backend at once
            self._reap_stray_processes()
        # What is still in the pipes; a process that left the session and holds them open is not waited for.
        await asyncio.wait(outputs, timeout=_DRAIN)
        commands.cancel()
        log.info("sidecar: pid %d exited with code %d", child.pid, code)
        with contextlib.suppress(OSError):
            writer.write(frames.frame(frames.EXIT, str(code if code >= 0 else 128 - code).encode()))
            await writer.drain()
        for task in outputs:
            task.cancel()

    def _reap_stray_processes(self) -> None:
        if not self._reap_strays:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL)  # every process this user may signal but PID 1 and this one
        if not self._still_ours():
            # A tool put something else at the socket's path: nothing reaches this sidecar any more. Ending makes
            # the container start afresh (its restart policy), binding the path anew.
            log.error("sidecar: %s is no longer this sidecar's socket; exiting", self._path)
            os.kill(os.getpid(), signal.SIGTERM)

    def _still_ours(self) -> bool:
        try:
            return os.lstat(self._path).st_ino == self._inode
        except FileNotFoundError:
            return False

    async def _reap_orphans(self) -> None:
        """As PID 1: reap the zombies of processes not our own children (those asyncio's watcher reaps)."""
        while True:
            await asyncio.sleep(1)
            while _reap_one_orphan(self._children):
                pass


async def _hello(connection: socket.socket) -> list[int]:
    """The descriptors the connection's first byte carries (a stand-in's hello), waited for without blocking."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, handed, flags, _ = socket.recv_fds(connection, 1, _MAX_HANDED)
        except BlockingIOError:
            readable = loop.create_future()
            loop.add_reader(connection.fileno(), readable.set_result, None)
            try:
                await readable
            finally:
                loop.remove_reader(connection.fileno())
            continue
        if data != frames.HELLO or flags & socket.MSG_CTRUNC:
            for descriptor in handed:
                os.close(descriptor)
            raise ValueError(f"a first byte {data!r} with {len(handed)} descriptors (flags {flags:#x})")
        return handed


def _renumbered(argv: list[str], handed: list[int], numbers: list[int]) -> list[str]:
    """`argv` run so that each descriptor handed over has, in it, the number the wrapper's side gave it."""
    if len(handed) != len(numbers):
        raise ValueError(f"{len(handed)} descriptors handed over for the {len(numbers)} the head names")
    if not handed:
        return argv
    if min(numbers) < 3:
        raise ValueError(f"descriptor numbers {numbers}: 0, 1 and 2 are the command's stdin, stdout and stderr")
    pairs = ",".join(f"{have}:{want}" for have, want in zip(handed, numbers, strict=True))
    return [os.path.realpath(sys.executable), "-I", "-S", str(RENUMBER), pairs, "--", *argv]


def _network_refusal(network: dict) -> str:  # type: ignore[type-arg]
    """Why a start that expects `network` must not run in this container, or ''."""
    mode, theirs = str(network["mode"]), int(network["namespace"])
    shared = theirs == os.stat("/proc/self/ns/net").st_ino
    if mode == "none" and shared:
        return (
            "runtime.network is none, but the backend's container shares the wrapper's network (as a pod's "
            "containers do): set runtime.network: shared, or give the backend's container no network"
        )
    if mode == "shared" and not shared:
        return (
            "runtime.network is shared, but the backend's container has a network of its own: set "
            "runtime.network: none (compose: network_mode: none on the backend's service)"
        )
    if mode == "apart" and shared:
        return (
            "runtime.network is apart, but the backend's container shares the wrapper's network: run it in a pod "
            "of its own (deploy kubernetes --backend-pod), or set runtime.network: shared"
        )
    if mode not in ("none", "shared", "apart"):
        return f"runtime.network {mode!r} is none of none, shared and apart"
    return ""


async def _pipe_out(stream: asyncio.StreamReader, writer: asyncio.StreamWriter, kind: bytes) -> None:
    while data := await stream.read(_CHUNK):
        writer.write(frames.frame(kind, data))
        await writer.drain()


async def _commands(reader: asyncio.StreamReader, child: asyncio.subprocess.Process) -> None:
    """The stand-in's frames until it closes: stdin for the child, its end, signals."""
    assert child.stdin is not None
    while (received := await frames.read_frame(reader)) is not None:
        kind, payload = received
        if kind == frames.STDIN:
            with contextlib.suppress(ConnectionError):
                child.stdin.write(payload)
                await child.stdin.drain()
        elif kind == frames.STDIN_END:
            child.stdin.close()
        elif kind == frames.SIGNAL and child.returncode is None:
            with contextlib.suppress(ProcessLookupError, ValueError):
                child.send_signal(signal.Signals(int(payload)))


def _reap_one_orphan(children: set[int]) -> bool:
    """Whether a zombie not among `children` was reaped (looked at first without reaping: ours are not taken)."""
    try:
        found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    if found is None or found.si_pid in children:
        return False
    with contextlib.suppress(ChildProcessError):
        os.waitpid(found.si_pid, os.WNOHANG)
    return True


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)

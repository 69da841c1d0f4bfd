"""The egress socket's bounds: a cap on connections (a 503 past it, at once) and a deadline for a request head.

~3,000 connections held on the egress socket once took the wrapper to 1,023 of its 1,024 descriptors. Here the
proxy runs in a process of its own with those 1,024 (tests/helpers/egress_process.py); the test floods it with
3,000 connections that send nothing and counts the process's descriptors from outside while they are held.
"""

import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from a2a_wrapper.sandbox.egress import MAX_CONNECTIONS, EgressDecision, EgressPolicy, EgressProxy
from tests.helpers.listener import listener, through

REPO = Path(__file__).resolve().parent.parent
FLOOD = 3000
HEAD_TIMEOUT = 5.0  # the default
LISTEN_QUEUE = 100  # asyncio.start_unix_server's backlog


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.asynccontextmanager
async def egress_process(socket_path: Path, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.helpers.egress_process",
        str(socket_path),
        str(port),
        str(HEAD_TIMEOUT),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            assert await process.stdout.readline() == b"ready\n"
        yield process
    finally:
        process.kill()
        await process.wait()


async def hold(socket_path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that sends nothing; when the proxy's listen queue is full, tried again as an attacker would."""
    while True:
        try:
            return await asyncio.open_unix_connection(socket_path)
        except BlockingIOError:
            await asyncio.sleep(0.01)


async def test_a_flood_of_idle_connections_leaves_the_wrapper_its_descriptors(tmp_path: Path) -> None:
    socket_path = tmp_path / "egress.sock"
    request = b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nping"
    async with listener() as (port, accepted), egress_process(socket_path, port) as process:
        pid = process.pid
        baseline = descriptors(pid)
        held = [await hold(socket_path) for _ in range(MAX_CONNECTIONS)]
        try:
            while_held = await through(socket_path, request % port)  # served after the idle ones: FIFO
            peak = descriptors(pid)
            started = time.monotonic()
            for count in range(FLOOD - MAX_CONNECTIONS):
                held.append(await hold(socket_path))
                if count % 25 == 0:
                    peak = max(peak, descriptors(pid))
            flooded = time.monotonic() - started
            peak = max(peak, descriptors(pid))
            async with asyncio.timeout(HEAD_TIMEOUT * 4):  # every one is answered: refused at once or timed out
                answers = await asyncio.gather(*(reader.read() for reader, _ in held), return_exceptions=True)
            settled = descriptors(pid)
            after = await through(socket_path, request % port)
        finally:
            for _, writer in held:
                writer.close()
    print(f"flood of {FLOOD} in {flooded:.1f}s: descriptors {baseline} at rest, {peak} at most, {settled} after")
    # held ones, plus at most one listen queue's worth accepted and not yet closed after their 503
    assert peak <= baseline + MAX_CONNECTIONS + LISTEN_QUEUE, f"{peak} descriptors with {baseline} at rest"
    assert while_held.startswith(b"HTTP/1.1 503 Service Unavailable") and b"128 connections open" in while_held
    statuses = [answer[:12] if isinstance(answer, bytes) else repr(answer) for answer in answers]
    assert set(statuses) == {b"HTTP/1.1 503", b"HTTP/1.1 408"}, "each one told why, none dropped silently"
    assert all(status == b"HTTP/1.1 408" for status in statuses[:MAX_CONNECTIONS]), "the first held to the deadline"
    assert after == b"HTTP/1.1 200 Connection established\r\n\r\npong" and accepted == [b"ping"]
    assert settled <= baseline + 1, "the idle ones' descriptors are all given back"


async def _proxy(tmp_path: Path, head_timeout: float) -> EgressProxy:
    async def record(decision: EgressDecision, wait_ms: float) -> None:
        pass

    proxy = EgressProxy(tmp_path / "egress.sock", EgressPolicy(set(), None), record, head_timeout=head_timeout)
    await proxy.start()
    return proxy


async def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    proxy = await _proxy(tmp_path, head_timeout=1.0)
    loop = asyncio.get_running_loop()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.setblocking(False)
            await loop.sock_connect(client, str(proxy.socket_path))
            started = time.monotonic()
            with contextlib.suppress(ConnectionError):  # the proxy closes its end while bytes still come
                for byte in b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n":  # never the blank line
                    await loop.sock_sendall(client, bytes([byte]))
                    await asyncio.sleep(0.05)
            answer = await asyncio.wait_for(loop.sock_recv(client, 1000), 5)
            cut_off = time.monotonic() - started
    finally:
        await proxy.stop()
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout") and b"within 1 s" in answer
    assert 1.0 <= cut_off < 3.0


async def test_a_head_past_the_limit_is_refused(tmp_path: Path) -> None:
    proxy = await _proxy(tmp_path, head_timeout=5.0)
    try:
        answer = await through(proxy.socket_path, b"CONNECT example.com:443 HTTP/1.1\r\nX: " + b"a" * 70_000)
    finally:
        await proxy.stop()
    assert answer.startswith(b"HTTP/1.1 431")

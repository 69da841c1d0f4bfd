"""github-copilot-sdk's JSON-RPC client with its stdio on the event loop (backends/copilot/loop_stdio.py).

Every Copilot test talks to the real CLI through it; these drive it against a peer process (tests/helpers/
jsonrpc_peer.py) which can do what the CLI does rarely or never on cue: write a frame a byte at a time, write a burst
at once, read slowly, exit with a request waiting, send a frame that is not JSON.
"""

import asyncio
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest
from copilot import client as copilot_client
from copilot._jsonrpc import ProcessExitedError

from a2a_wrapper.backends.copilot.loop_stdio import LoopJsonRpcClient, use_loop_stdio
from tests.helpers import jsonrpc_peer


@pytest.fixture
async def peer() -> AsyncIterator[tuple[LoopJsonRpcClient, "subprocess.Popen[bytes]"]]:
    async with jsonrpc_peer.connected(LoopJsonRpcClient) as connection:
        yield connection


async def test_a_request_gets_its_answer(peer: tuple[LoopJsonRpcClient, Any]) -> None:
    client, _ = peer
    async with asyncio.timeout(10):
        assert await client.request("echo", {"text": "hello"}) == {"text": "hello"}
        replies = await asyncio.gather(*(client.request("echo", {"n": n}) for n in range(50)))
    assert replies == [{"n": n} for n in range(50)]


async def test_an_answer_written_a_byte_at_a_time_is_read_whole(peer: tuple[LoopJsonRpcClient, Any]) -> None:
    client, _ = peer
    async with asyncio.timeout(10):
        assert await client.request("trickle", {"text": "é and ✓"}) == {"text": "é and ✓"}


async def test_a_burst_reaches_its_handler_whole_and_in_order_and_the_loop_runs_between(
    peer: tuple[LoopJsonRpcClient, Any],
) -> None:
    """2,000 notifications in one write: handled in order, and not in one pass of the loop (READ_SLICE each)."""
    client, _ = peer
    seen: list[int] = []
    passes_at: list[int] = []
    passes = 0

    async def ticker() -> None:
        nonlocal passes
        while True:
            passes += 1
            await asyncio.sleep(0)

    def note(method: str, params: dict[str, int]) -> None:
        seen.append(params["n"])
        passes_at.append(passes)

    client.set_notification_handler(note)
    ticking = asyncio.create_task(ticker())
    try:
        async with asyncio.timeout(10):
            assert await client.request("burst", {"n": 2000}) == "sent"
    finally:
        ticking.cancel()
    assert seen == list(range(2000))
    assert passes_at[-1] - passes_at[0] >= 2  # the loop ran other work while the burst was handled


async def test_a_failing_notification_handler_does_not_end_the_connection(
    peer: tuple[LoopJsonRpcClient, Any], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = peer
    seen: list[int] = []

    def note(method: str, params: dict[str, int]) -> None:
        seen.append(params["n"])
        if params["n"] == 1:
            raise RuntimeError("a handler's bug")

    client.set_notification_handler(note)
    async with asyncio.timeout(10):
        assert await client.request("burst", {"n": 3}) == "sent"
        assert await client.request("echo", "still here") == "still here"
    assert seen == [0, 1, 2]
    assert "a handler's bug" in caplog.text


async def test_a_message_larger_than_the_pipe_arrives_whole(peer: tuple[LoopJsonRpcClient, Any]) -> None:
    client, _ = peer
    text = "x" * (4 * 1024 * 1024)  # the pipe holds 64 KiB; the peer reads only after 0.3 s
    async with asyncio.timeout(20):
        sent = asyncio.create_task(client.request("big", {"text": text}))
        assert await client.request("echo", "behind it") == "behind it"
        assert await sent == len(text)


async def test_the_peer_asks_and_is_answered(peer: tuple[LoopJsonRpcClient, Any]) -> None:
    client, _ = peer
    client.set_request_handler("question", lambda params: {"answer": params["text"].upper()})
    async with asyncio.timeout(10):
        asked = await client.request("ask", {"text": "why"})
    assert asked["result"] == {"answer": "WHY"}


def closing(client: LoopJsonRpcClient) -> asyncio.Event:
    """Set once the client says its connection closed (the SDK calls `on_close` from a thread)."""
    closed = asyncio.Event()
    loop = asyncio.get_running_loop()
    client.on_close = lambda: loop.call_soon_threadsafe(closed.set)
    return closed


async def test_a_peer_that_exits_fails_the_waiting_request_with_its_words_and_closes(
    peer: tuple[LoopJsonRpcClient, Any],
) -> None:
    client, process = peer
    closed = closing(client)
    async with asyncio.timeout(10):
        with pytest.raises(ProcessExitedError, match="the peer gave up"):
            await client.request("die")
        await closed.wait()
        with pytest.raises(ProcessExitedError, match="the peer gave up"):
            await client.request("echo", "anyone?")
    assert await asyncio.to_thread(process.wait, 5) == 3


async def test_a_frame_that_is_not_json_ends_the_connection(
    peer: tuple[LoopJsonRpcClient, Any], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = peer
    closed = closing(client)
    async with asyncio.timeout(10):
        with pytest.raises(ProcessExitedError):
            await client.request("garble")
        await closed.wait()
    assert "could not be read or handled" in caplog.text


def test_new_copilot_clients_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copilot_client, "JsonRpcClient", copilot_client.JsonRpcClient)
    use_loop_stdio()
    assert copilot_client.JsonRpcClient is LoopJsonRpcClient


async def test_nothing_is_written_once_the_cli_input_is_closed(peer: tuple[LoopJsonRpcClient, Any]) -> None:
    """The SDK's stop closes the CLI's input first; the descriptor's number may then be another file's."""
    client, process = peer
    process.stdin.close()
    async with asyncio.timeout(10):
        with pytest.raises(ProcessExitedError):
            await client.request("echo", "late")

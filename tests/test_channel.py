"""The channels' parts on 127.0.0.1: a gate's answers and refusals, its cap, the token file, and the config a
backend pod's wrapper needs. tests/test_pod_channels.py runs them between two network namespaces."""

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.sandbox import channel
from a2a_wrapper.sandbox.channel import ChannelRefused, Gate, Refusal, loopback_opener, open_channel, read_token
from tests.helpers.listener import listener

TOKEN = b"t" * 40
Served = tuple[Gate, list[Refusal], list[bytes]]


@pytest.fixture
async def gate() -> AsyncIterator[Served]:
    refusals: list[Refusal] = []
    async with listener() as (port, received):
        served = Gate("127.0.0.1", 0, TOKEN, {"echo": loopback_opener(port)}.get, refusals.append)
        await served.start()
        try:
            yield served, refusals, received
        finally:
            await served.stop()


async def test_the_gate_opens_a_name_it_serves_for_the_token_and_refuses_the_rest(gate: Served) -> None:
    served, refusals, received = gate
    reader, writer = await open_channel("127.0.0.1", served.port, "echo", TOKEN)
    writer.write(b"ping")
    assert await asyncio.wait_for(reader.read(), 10) == b"pong" and received == [b"ping"]
    writer.close()
    with pytest.raises(ChannelRefused, match="refused echo: refused: a wrong token"):
        await open_channel("127.0.0.1", served.port, "echo", b"u" * 40)
    assert received == [b"ping"], "nothing reached the name's service"
    assert [(refusal.name, refusal.reason) for refusal in refusals] == [("echo", "a wrong token")]


async def test_past_the_cap_a_connection_is_closed_at_once(gate: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    served, refusals, _ = gate
    monkeypatch.setattr(channel, "MAX_CONNECTIONS", 3)
    monkeypatch.setattr(channel, "REPORT_EVERY", 0.0)
    held = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(3)]  # no head: waiting
    await asyncio.sleep(0.2)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    assert await asyncio.wait_for(reader.read(), 5) == b"", "closed without a word"
    assert [refusal.reason for refusal in refusals] == ["3 connections open"]
    for _, held_writer in [*held, (reader, writer)]:
        held_writer.close()


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "cannot be read"), ("short", "is 5 characters"), ("a" * 20 + " " + "b" * 20, "holds spaces")],
)
def test_a_token_file_that_cannot_serve_is_refused_naming_it(tmp_path: Path, content: str | None, says: str) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=says) as refused:
        read_token(path)
    assert str(path) in str(refused.value)


def test_apart_needs_its_channels_and_names_what_is_missing() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("runtime.network apart needs runtime.backend_gate, runtime.token_file")
    ):
        SidecarRuntime(network="apart")
    with pytest.raises(ValidationError, match="'backend:port' is not HOST:PORT"):
        SidecarRuntime(backend_gate="backend:port")

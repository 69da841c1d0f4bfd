"""The ACP fast path: which agent lines skip the acp library, and that the reader keeps every message in order.

The table pins `read_chunk` to what the library would deliver through `session_update`: a plain text chunk
becomes its Text or Thought, anything the library would treat otherwise (a request, another update kind, an
image, annotations, a malformed field) is left to it. The reader test runs the real acp library
(`ClientSideConnection`) over a real pipe, as the agent's stdout is, with the wrapper's client behind it.
"""

import asyncio
import json
import os
from typing import Any

import pytest
from acp import Client
from acp.client.connection import ClientSideConnection
from acp.schema import AgentMessageChunk, SessionNotification

from a2a_wrapper.backends.acp.chunks import read_chunk
from a2a_wrapper.backends.acp.client import Channel, WrapperClient
from a2a_wrapper.backends.acp.reader import YieldingReader
from a2a_wrapper.events import Text, Thought, ToolCall


def notification(update: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update, **params}}


def chunk(text: Any = "hi", kind: str = "agent_message_chunk", **content: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text, **content}}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (notification(chunk("hello ")), Text(delta="hello ")),
        (notification(chunk("why", kind="agent_thought_chunk")), Thought(delta="why")),
        (notification({**chunk("x"), "messageId": "m1", "_meta": {"k": 1}}, _meta={"a": 1}), Text(delta="x")),
        (notification(chunk("")), Text(delta="")),
        (notification({**chunk("x"), "extra": 1}), Text(delta="x")),  # unknown keys: the schema ignores them
        (notification(chunk("x", kind="user_message_chunk")), None),  # a replay: not the answer
        (notification(chunk(5)), None),
        (notification(chunk("x", annotations={"priority": 1})), None),
        (notification(chunk("x", _meta="no")), None),
        (notification({**chunk("x"), "messageId": 3}), None),
        (
            notification(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "", "mimeType": "a"}}
            ),
            None,
        ),
        (notification({"sessionUpdate": "tool_call", "toolCallId": "agent_message_chunk", "title": "t"}), None),
        ({**notification(chunk("x")), "id": 4}, None),  # a request is the library's
        ({**notification(chunk("x")), "method": "session/other"}, None),
        ({"jsonrpc": "2.0", "method": "session/update", "params": {"update": chunk("x")}}, None),
    ],
)
def test_read_chunk_matches_the_library(message: dict[str, Any], expected: Text | Thought | None) -> None:
    read = read_chunk(line(message))
    assert read == (None if expected is None else ("s1", expected))
    if expected is not None:  # the library reads the same message as the same text
        update = SessionNotification.model_validate(message["params"]).update
        assert isinstance(update.content.text, str) and update.content.text == expected.delta


def test_a_line_that_is_not_json_is_left_to_the_library() -> None:
    assert read_chunk(b'{"agent_message_chunk": \n') is None
    assert read_chunk(b"[]\n") is None


async def test_reader_keeps_order_across_the_library_and_the_fast_path() -> None:
    """Chunks around a tool call (which the library parses) reach the turn in the order the agent sent them."""
    async with asyncio.timeout(10):
        read_fd, write_fd = os.pipe()
        loop = asyncio.get_running_loop()
        source = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(source), os.fdopen(read_fd, "rb")
        )
        client = WrapperClient("test")
        channel = client.open("s1")
        tool = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls", "kind": "execute", "status": "pending"}
        sent = [notification(chunk("a")), notification(tool), notification(chunk("b")), notification(chunk("c"))]
        other_session = {**notification(chunk("z")), "params": {"sessionId": "s2", "update": chunk("z")}}
        os.write(write_fd, b"".join(line(m) for m in [*sent[:2], other_session, *sent[2:]]))
        os.close(write_fd)
        writer = await _stdin(loop)
        conn = ClientSideConnection(_as_client(client), writer, YieldingReader(source, client.deliver))
        events = [await _next(channel) for _ in range(4)]
        await conn.close()
        transport.close()
        writer.close()
    assert [type(e).__name__ for e in events] == ["Text", "ToolCall", "Text", "Text"]
    assert [e.delta for e in events if isinstance(e, Text)] == ["a", "b", "c"]
    assert isinstance(events[1], ToolCall) and events[1].id == "t1"
    assert channel.queue.empty()  # the other session's chunk went nowhere: no turn runs there


def test_the_library_sees_a_chunk_as_the_fast_path_does() -> None:
    message = notification(chunk("same"))
    update = SessionNotification.model_validate(message["params"]).update
    assert isinstance(update, AgentMessageChunk)
    assert read_chunk(line(message)) == ("s1", Text(delta=update.content.text))  # type: ignore[union-attr]


async def _next(channel: Channel) -> Any:
    return await channel.queue.get()


def _as_client(client: WrapperClient) -> Client:
    return client  # type: ignore[return-value]


async def _stdin(loop: asyncio.AbstractEventLoop) -> asyncio.StreamWriter:
    """The agent's stdin, as the library needs a StreamWriter: a pipe nobody reads (the test sends nothing)."""
    read_fd, write_fd = os.pipe()
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb"))
    os.close(read_fd)
    return asyncio.StreamWriter(transport, protocol, None, loop)

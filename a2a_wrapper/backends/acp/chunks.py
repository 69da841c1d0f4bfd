"""The one ACP message of a long reply, read without the acp library: a `session/update` that is a text chunk.

A reply streams as hundreds of `agent_message_chunk` (or `agent_thought_chunk`) notifications. The library
turns each into an asyncio task, a tracing span and a pydantic model before the client sees it, ~0.1 ms a
chunk on this machine; here a line that is only such a chunk becomes its StreamEvent at once. It must mean
exactly what the library would deliver: every field translate.py reads is checked as the schema types it, and
anything else (an image block, annotations, a request, a malformed field) is None, left to the library.
"""

import json
from typing import Any

from a2a_wrapper.events import StreamEvent, Text, Thought

_MARKERS = (b'"agent_message_chunk"', b'"agent_thought_chunk"')
_KINDS: dict[object, type[Text] | type[Thought]] = {"agent_message_chunk": Text, "agent_thought_chunk": Thought}


def read_chunk(line: bytes) -> tuple[str, StreamEvent] | None:
    """The session and the Text or Thought of a notification line that is a plain text chunk, else None."""
    if not any(marker in line for marker in _MARKERS):
        return None  # most other messages are not even parsed here
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or "id" in message or message.get("method") != "session/update":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str) or not _meta_ok(params):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or not _meta_ok(update) or not _optional_str(update, "messageId"):
        return None
    kind = _KINDS.get(update.get("sessionUpdate"))
    text = _plain_text(update.get("content"))
    if kind is None or text is None:
        return None
    session_id: str = params["sessionId"]
    return session_id, kind(delta=text)


def _plain_text(content: Any) -> str | None:
    """The text of a text block without annotations (which the library validates; left to it)."""
    if not isinstance(content, dict) or content.get("type") != "text" or not _meta_ok(content):
        return None
    if content.get("annotations") is not None:
        return None
    text = content.get("text")
    return text if isinstance(text, str) else None


def _meta_ok(holder: dict[str, Any]) -> bool:
    return holder.get("_meta") is None or isinstance(holder["_meta"], dict)


def _optional_str(holder: dict[str, Any], key: str) -> bool:
    return holder.get(key) is None or isinstance(holder[key], str)

"""What every wire format hands the shared planner: a chat-shaped request, and how it answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from a2a_wrapper.offline_model.plan import ReplyPlan
from a2a_wrapper.offline_model.stream import Completion

MODEL_ID = "offline-model"
ModelT = TypeVar("ModelT", bound=BaseModel)


class InvalidRequest(ValueError):
    """A request body the model cannot read; answered with a 400."""


class ChatRequest(BaseModel):
    """A request in chat-completions terms: the directive parser and turn planner read only this shape."""

    model_config = ConfigDict(extra="allow")

    model: str = MODEL_ID
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[Any] | None = None


class FormatRequest(BaseModel):
    """The keys every non-chat format shares; each format's request adds its own."""

    model_config = ConfigDict(extra="allow")

    model: str = MODEL_ID
    tools: list[dict[str, Any]] | None = None
    stream: bool = False


@dataclass(frozen=True)
class Wire:
    """One wire format: read its request as chat, answer a plan in its own shape, shape its errors."""

    name: str
    read: Callable[[dict[str, Any], web.Request], ChatRequest]  # raises InvalidRequest
    answer: Callable[[web.Request, ChatRequest, ReplyPlan, Completion], Awaitable[web.StreamResponse]]
    error: Callable[[int, str], web.Response]


def chat_tool(name: object) -> dict[str, Any]:
    """A tool offered in another format, as chat completions names it (the planner reads only the name)."""
    return {"type": "function", "function": {"name": str(name)}}


def tool_call_message(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant turn that called tools, as chat completions records it."""
    return {"role": "assistant", "content": None, "tool_calls": calls}


def call_entry(call_id: str, name: object, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": str(name), "arguments": arguments}}


def tool_result_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def validated(body: dict[str, Any], model: type[ModelT]) -> ModelT:
    """`body` as `model`, or an InvalidRequest naming the first bad key and why."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise InvalidRequest(f"{where}: {first['msg']}") from exc


def parts_text(parts: object) -> str:
    """The text of a list of parts that carry `text` (Responses `input_text`/`output_text`, Gemini's); thoughts
    are not the prompt."""
    if not isinstance(parts, list):
        return ""
    return "".join(str(p["text"]) for p in parts if isinstance(p, Mapping) and "text" in p and not p.get("thought"))

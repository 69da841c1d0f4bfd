"""The Gemini API (`:streamGenerateContent?alt=sse`, `:generateContent`), as Gemini CLI calls it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from a2a_wrapper.offline_model import wire
from a2a_wrapper.offline_model.plan import ReplyPlan, message_text
from a2a_wrapper.offline_model.sse import Event, stream_events
from a2a_wrapper.offline_model.stream import Completion

_ROLES = {"user": "user", "model": "assistant"}
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_STATUS_NAMES |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class GenerateRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    contents: list[dict[str, Any]]
    systemInstruction: dict[str, Any] | None = None  # the wire's own key
    tools: list[dict[str, Any]] | None = None


def _reader(stream: bool) -> Callable[[dict[str, Any], web.Request], wire.ChatRequest]:
    def read(body: dict[str, Any], request: web.Request) -> wire.ChatRequest:
        if stream and request.query.get("alt") != "sse":
            alt = request.query.get("alt")
            raise wire.InvalidRequest(f"query parameter alt: only 'sse' is served, got {alt!r}")
        sent = wire.validated(body, GenerateRequest)
        messages: list[dict[str, Any]] = []
        if sent.systemInstruction:
            messages.append({"role": "system", "content": wire.parts_text(sent.systemInstruction.get("parts"))})
        for index, content in enumerate(sent.contents):
            messages += _as_chat(content, index)
        declared = (d for tool in sent.tools or () for d in tool.get("functionDeclarations") or ())
        tools = [wire.chat_tool(declaration.get("name")) for declaration in declared]
        return wire.ChatRequest(
            model=request.match_info["model"], messages=messages, stream=stream, tools=tools or None
        )

    return read


def _as_chat(content: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """One Gemini content as chat messages. Gemini has no call ids unless it sends them: the name stands in."""
    role = _ROLES.get(str(content.get("role", "user")))
    if role is None:
        raise wire.InvalidRequest(f"contents.{index}.role: unknown role {content.get('role')!r}")
    given = [p for p in content.get("parts") or () if isinstance(p, Mapping)]
    parts = [p for p in given if not (role == "user" and _is_context(p))]
    if given and not parts:
        return []  # Gemini CLI's context alone: no prompt of the user's
    calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), Mapping)]
    results = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), Mapping)]
    if role == "assistant" and calls:
        entries = [wire.call_entry(_call_id(c), c.get("name"), json.dumps(c.get("args") or {})) for c in calls]
        return [wire.tool_call_message(entries)]
    if role == "user" and results:
        return [
            wire.tool_result_message(_call_id(r), str(r.get("name")), _result_text(r.get("response"))) for r in results
        ]
    return [{"role": role, "content": wire.parts_text(parts)}]


# Gemini CLI's own text in a user content (its session's setting, its hooks' output): context for the model, not
# what the user asked. Gemini CLI itself leaves these out when it reads a session back.
_CONTEXT_TAGS = ("<session_context>", "<hook_context>")


def _is_context(part: Mapping[str, Any]) -> bool:
    text = part.get("text")
    return isinstance(text, str) and text.lstrip().startswith(_CONTEXT_TAGS)


def _call_id(call: Mapping[str, Any]) -> str:
    return str(call.get("id") or call.get("name"))


def _result_text(response: object) -> str:
    """Gemini CLI returns `{output: "..."}`; anything else is read as its JSON."""
    if isinstance(response, Mapping) and isinstance(response.get("output"), str):
        return str(response["output"])
    return message_text({"content": json.dumps(response)})


def _usage(meta: Completion) -> dict[str, int]:
    return {
        "promptTokenCount": meta.usage["prompt_tokens"],
        "candidatesTokenCount": meta.usage["completion_tokens"],
        "totalTokenCount": meta.usage["total_tokens"],
    }


def _chunk(meta: Completion, parts: list[dict[str, Any]]) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    return {"candidates": [candidate], "modelVersion": meta.model, "responseId": meta.id}


def _finished(meta: Completion, chunk: dict[str, Any]) -> dict[str, Any]:
    """The last chunk: it carries the finish reason and the usage."""
    candidate = {**chunk["candidates"][0], "finishReason": "STOP"}
    return {**chunk, "candidates": [candidate], "usageMetadata": _usage(meta)}


def _call_parts(plan: ReplyPlan) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": call.name, "args": json.loads(call.arguments)}} for call in plan.tool_calls]


def _chunks(plan: ReplyPlan, meta: Completion) -> list[dict[str, Any]]:
    """A chunk per thought piece, then per text piece, then one with every function call; the last one finished."""
    chunks = [_chunk(meta, [{"text": piece, "thought": True}]) for piece in plan.reasoning]
    chunks += [_chunk(meta, [{"text": piece}]) for piece in plan.content]
    if plan.tool_calls:
        chunks.append(_chunk(meta, _call_parts(plan)))
    chunks = chunks or [_chunk(meta, [{"text": ""}])]
    return [*chunks[:-1], _finished(meta, chunks[-1])]


async def answer(request: web.Request, chat: wire.ChatRequest, plan: ReplyPlan, meta: Completion) -> web.StreamResponse:
    if chat.stream:
        events: list[Event] = [(None, chunk) for chunk in _chunks(plan, meta)]
        return await stream_events(request, [], events[:-1], events[-1:], plan.duration)
    await asyncio.sleep(plan.duration)
    thought = [{"text": "".join(plan.reasoning), "thought": True}] if plan.reasoning else []
    text = [{"text": plan.text}] if plan.content or not plan.tool_calls else []
    parts = thought + text + _call_parts(plan)
    return web.json_response(_finished(meta, _chunk(meta, parts)))


def error(status: int, message: str) -> web.Response:
    name = _STATUS_NAMES.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return web.json_response({"error": {"code": status, "message": message, "status": name}}, status=status)


STREAM_WIRE = wire.Wire("gemini-stream", _reader(stream=True), answer, error)
WIRE = wire.Wire("gemini", _reader(stream=False), answer, error)

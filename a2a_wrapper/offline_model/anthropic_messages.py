"""The Anthropic Messages API (`POST /v1/messages`), as Claude Code calls it: read as chat, answer in blocks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from a2a_wrapper.offline_model import wire
from a2a_wrapper.offline_model.plan import ReplyPlan, message_text, split_even
from a2a_wrapper.offline_model.sse import Event, stream_events
from a2a_wrapper.offline_model.stream import ARGUMENT_PIECES, Completion


class MessagesRequest(wire.FormatRequest):
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None = None


def read(body: dict[str, Any], request: web.Request) -> wire.ChatRequest:
    sent = wire.validated(body, MessagesRequest)
    messages: list[dict[str, Any]] = []
    if sent.system:
        messages.append({"role": "system", "content": sent.system})
    names: dict[str, str] = {}
    for message in sent.messages:
        messages += _as_chat(message, names)
    tools = [wire.chat_tool(tool.get("name")) for tool in sent.tools or ()]
    return wire.ChatRequest(model=sent.model, messages=messages, stream=sent.stream, tools=tools or None)


def _as_chat(message: Mapping[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """One Anthropic message as chat messages; `names` maps each tool_use id seen so far to its tool."""
    role, content = message.get("role"), message.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    uses = [b for b in blocks if b.get("type") == "tool_use"]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if role == "assistant" and uses:
        for use in uses:
            names[str(use.get("id"))] = str(use.get("name"))
        calls = [wire.call_entry(str(u.get("id")), u.get("name"), json.dumps(u.get("input") or {})) for u in uses]
        return [wire.tool_call_message(calls)]
    if role == "user" and results:
        # Text beside tool results (Claude Code's reminders) is not a new prompt: the turn's directives stand.
        return [_result_message(result, names) for result in results]
    if role == "user" and blocks:
        return [{"role": "user", "content": prompt} for prompt in _prompts(blocks)]
    return [{"role": role, "content": content}]


# Claude Code's own text in a user message: context for the model, not what the user asked.
_REMINDER = "<system-reminder>"
# Where a prompt the user interrupted before any reply ends; the next prompt is sent in the same message after it.
_INTERRUPTED = "[Request interrupted by user"


def _prompts(blocks: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The prompts one user message of Claude Code's holds, each as its blocks: reminders left out, and split at
    each interruption marker, so an interrupted prompt's directives are not the next prompt's."""
    prompts: list[list[Mapping[str, Any]]] = [[]]
    for block in blocks:
        text = block.get("text") if block.get("type") == "text" else None
        if isinstance(text, str) and text.lstrip().startswith(_REMINDER):
            continue
        if isinstance(text, str) and text.lstrip().startswith(_INTERRUPTED):
            prompts.append([])
            continue
        prompts[-1].append(block)
    return [prompt for prompt in prompts if prompt] or [[]]


def _result_message(result: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    call_id = str(result.get("tool_use_id"))
    text = message_text({"content": result.get("content")})
    return wire.tool_result_message(call_id, names.get(call_id, "unknown"), text)


# Claude Code hands thinking blocks back verbatim; nothing checks the signature offline.
THINKING_SIGNATURE = "offline"


def content_blocks(plan: ReplyPlan, meta: Completion) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if plan.reasoning:
        blocks.append({"type": "thinking", "thinking": "".join(plan.reasoning), "signature": THINKING_SIGNATURE})
    if plan.content or not plan.tool_calls:
        blocks.append({"type": "text", "text": plan.text})
    for call, call_id in zip(plan.tool_calls, meta.call_ids, strict=True):
        blocks.append(
            {"type": "tool_use", "id": _tool_use_id(call_id), "name": call.name, "input": json.loads(call.arguments)}
        )
    return blocks


def _tool_use_id(call_id: str) -> str:
    return f"toolu_{call_id}"


def _stop_reason(plan: ReplyPlan) -> str:
    return "tool_use" if plan.tool_calls else "end_turn"


def _usage(meta: Completion) -> dict[str, int]:
    return {
        "input_tokens": meta.usage["prompt_tokens"],
        "output_tokens": meta.usage["completion_tokens"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message_body(plan: ReplyPlan, meta: Completion) -> dict[str, Any]:
    return {
        "id": f"msg_{meta.id}",
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content_blocks(plan, meta),
        "stop_reason": _stop_reason(plan),
        "stop_sequence": None,
        "usage": _usage(meta),
    }


def _block_events(plan: ReplyPlan, meta: Completion) -> list[Event]:
    """Each block: start (empty), its deltas (thinking or text pieces, or the input JSON in pieces), stop."""
    events: list[Event] = []
    for index, block in enumerate(content_blocks(plan, meta)):
        if block["type"] == "thinking":
            start = {**block, "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in plan.reasoning]
            deltas.append({"type": "signature_delta", "signature": THINKING_SIGNATURE})
        elif block["type"] == "text":
            start = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in plan.content]
        else:
            start = {**block, "input": {}}
            pieces = split_even(json.dumps(block["input"]), ARGUMENT_PIECES)
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


async def answer(request: web.Request, chat: wire.ChatRequest, plan: ReplyPlan, meta: Completion) -> web.StreamResponse:
    body = message_body(plan, meta)
    if not chat.stream:
        await asyncio.sleep(plan.duration)
        return web.json_response(body)
    started = {**body, "content": [], "stop_reason": None, "usage": {**body["usage"], "output_tokens": 1}}
    head: list[Event] = [
        ("message_start", {"type": "message_start", "message": started}),
        ("ping", {"type": "ping"}),
    ]
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": None}
    tail: list[Event] = [
        (
            "message_delta",
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": body["usage"]["output_tokens"]}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return await stream_events(request, head, _block_events(plan, meta), tail, plan.duration)


def error(status: int, message: str) -> web.Response:
    """Anthropic's error body; 5xx as `api_error` (Claude Code retries those), 4xx as `invalid_request_error`."""
    kind = "invalid_request_error" if status < 500 else "api_error"
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


WIRE = wire.Wire("anthropic-messages", read, answer, error)

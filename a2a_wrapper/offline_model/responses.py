"""The OpenAI Responses API (`POST /v1/responses`), as Codex calls it: read as chat, answer in output items."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from a2a_wrapper.offline_model import wire
from a2a_wrapper.offline_model.plan import ReplyPlan, split_even
from a2a_wrapper.offline_model.sse import Event, stream_events
from a2a_wrapper.offline_model.stream import ARGUMENT_PIECES, Completion, error_response

# Responses roles as chat roles: Codex sends its instructions to the model as `developer` messages.
_ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}


class ResponsesRequest(wire.FormatRequest):
    input: str | list[dict[str, Any]]
    instructions: str | None = None


def read(body: dict[str, Any], request: web.Request) -> wire.ChatRequest:
    sent = wire.validated(body, ResponsesRequest)
    messages: list[dict[str, Any]] = []
    if sent.instructions:
        messages.append({"role": "system", "content": sent.instructions})
    items = [{"type": "message", "role": "user", "content": sent.input}] if isinstance(sent.input, str) else sent.input
    names: dict[str, str] = {}
    for index, item in enumerate(items):
        messages += _as_chat(item, index, names)
    tools = [wire.chat_tool(tool.get("name")) for tool in sent.tools or () if tool.get("type") == "function"]
    return wire.ChatRequest(model=sent.model, messages=messages, stream=sent.stream, tools=tools or None)


def _as_chat(item: Mapping[str, Any], index: int, names: dict[str, str]) -> list[dict[str, Any]]:
    """One input item as chat messages (reasoning and other items the planner has no use for: none)."""
    kind = item.get("type", "message")
    if kind == "function_call":
        call_id = str(item.get("call_id"))
        names[call_id] = str(item.get("name"))
        return [
            wire.tool_call_message([wire.call_entry(call_id, item.get("name"), str(item.get("arguments") or "{}"))])
        ]
    if kind == "function_call_output":
        call_id = str(item.get("call_id"))
        output = item.get("output")
        text = output if isinstance(output, str) else wire.parts_text(output)
        return [wire.tool_result_message(call_id, names.get(call_id, "unknown"), text)]
    if kind != "message":
        return []
    role = _ROLES.get(str(item.get("role")))
    if role is None:
        raise wire.InvalidRequest(f"input.{index}.role: unknown role {item.get('role')!r}")
    content = item.get("content")
    return [{"role": role, "content": content if isinstance(content, str) else wire.parts_text(content)}]


def _usage(meta: Completion) -> dict[str, Any]:
    return {
        "input_tokens": meta.usage["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": meta.usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": meta.usage["total_tokens"],
    }


def output_items(plan: ReplyPlan, meta: Completion) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if plan.reasoning:
        summary = [{"type": "summary_text", "text": "".join(plan.reasoning)}]
        items.append({"id": f"rs_{meta.id}", "type": "reasoning", "summary": summary})
    if plan.content or not plan.tool_calls:
        part = {"type": "output_text", "text": plan.text, "annotations": []}
        items.append(
            {"id": f"msg_{meta.id}", "type": "message", "role": "assistant", "status": "completed", "content": [part]}
        )
    for call, call_id in zip(plan.tool_calls, meta.call_ids, strict=True):
        items.append(
            {
                "id": f"fc_{call_id}",
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def response_body(
    meta: Completion, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "id": f"resp_{meta.id}",
        "object": "response",
        "created_at": meta.created,
        "status": status,
        "model": meta.model,
        "output": output,
        "usage": usage,
    }


def _item_events(plan: ReplyPlan, items: list[dict[str, Any]]) -> list[Event]:
    """Per output item: added (in progress, empty), its deltas and done events, then the finished item."""
    events: list[Event] = []
    for index, item in enumerate(items):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "reasoning":
            events += _reasoning_events(plan, item, index)
        elif item["type"] == "message":
            part = item["content"][0]
            events.append(
                _event(
                    "response.output_item.added",
                    output_index=index,
                    item={**item, "status": "in_progress", "content": []},
                )
            )
            events.append(_event("response.content_part.added", **where, content_index=0, part={**part, "text": ""}))
            events += [
                _event("response.output_text.delta", **where, content_index=0, delta=piece) for piece in plan.content
            ]
            events.append(_event("response.output_text.done", **where, content_index=0, text=part["text"]))
            events.append(_event("response.content_part.done", **where, content_index=0, part=part))
        else:
            events.append(
                _event(
                    "response.output_item.added",
                    output_index=index,
                    item={**item, "status": "in_progress", "arguments": ""},
                )
            )
            pieces = split_even(item["arguments"], ARGUMENT_PIECES)
            events += [_event("response.function_call_arguments.delta", **where, delta=piece) for piece in pieces]
            events.append(_event("response.function_call_arguments.done", **where, arguments=item["arguments"]))
        events.append(_event("response.output_item.done", output_index=index, item=item))
    return events


def _reasoning_events(plan: ReplyPlan, item: dict[str, Any], index: int) -> list[Event]:
    """A reasoning item carries `[[think:…]]` as one summary part, streamed in pieces."""
    where = {"output_index": index, "item_id": item["id"], "summary_index": 0}
    part = item["summary"][0]
    return [
        _event("response.output_item.added", output_index=index, item={**item, "summary": []}),
        _event("response.reasoning_summary_part.added", **where, part={**part, "text": ""}),
        *(_event("response.reasoning_summary_text.delta", **where, delta=piece) for piece in plan.reasoning),
        _event("response.reasoning_summary_text.done", **where, text=part["text"]),
        _event("response.reasoning_summary_part.done", **where, part=part),
    ]


def _event(kind: str, **fields: Any) -> Event:
    return kind, {"type": kind, **fields}


def _numbered(events: list[Event], start: int) -> list[Event]:
    return [(kind, {**payload, "sequence_number": start + n}) for n, (kind, payload) in enumerate(events)]


async def answer(request: web.Request, chat: wire.ChatRequest, plan: ReplyPlan, meta: Completion) -> web.StreamResponse:
    items = output_items(plan, meta)
    finished = response_body(meta, "completed", items, _usage(meta))
    if not chat.stream:
        await asyncio.sleep(plan.duration)
        return web.json_response(finished)
    head = _numbered([_event("response.created", response=response_body(meta, "in_progress", [], None))], 0)
    body = _numbered(_item_events(plan, items), len(head))
    tail = _numbered([_event("response.completed", response=finished)], len(head) + len(body))
    return await stream_events(request, head, body, tail, plan.duration)


WIRE = wire.Wire("responses", read, answer, error_response)

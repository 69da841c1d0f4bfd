"""OpenAI chat-completion wire formats: SSE chunks, the non-streaming body, error bodies."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from a2a_wrapper.offline_model.plan import FinishReason, ReplyPlan, split_even
from a2a_wrapper.offline_model.sse import open_stream, send, send_paced

logger = logging.getLogger(__name__)

ARGUMENT_PIECES = 4
Delta = dict[str, Any]


@dataclass(frozen=True)
class Completion:
    """Identity shared by every chunk of one completion."""

    id: str
    model: str
    created: int
    call_ids: tuple[str, ...]
    usage: dict[str, int]


def error_response(status: int, message: str) -> web.Response:
    """An OpenAI-shaped error; 5xx carries `retry-after-ms` so clients retry fast."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    headers = {"retry-after-ms": "50"} if status >= 500 else None
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return web.json_response(body, status=status, headers=headers)


def plan_deltas(plan: ReplyPlan, call_ids: tuple[str, ...]) -> list[Delta]:
    """The deltas after the role chunk: reasoning, content, then each tool call (header, argument pieces)."""
    deltas: list[Delta] = [{"reasoning_content": piece} for piece in plan.reasoning]
    deltas += [{"content": piece} for piece in plan.content]
    for index, (call, call_id) in enumerate(zip(plan.tool_calls, call_ids, strict=True)):
        header = {"index": index, "id": call_id, "type": "function"}
        deltas.append({"tool_calls": [{**header, "function": {"name": call.name, "arguments": ""}}]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in split_even(call.arguments, ARGUMENT_PIECES)
        ]
    return deltas


def completion_body(plan: ReplyPlan, meta: Completion) -> dict[str, Any]:
    """The `stream: false` answer: one `chat.completion` object."""
    # OpenAI sends null content beside tool calls, "" for an empty plain answer.
    content = plan.text if plan.text or not plan.tool_calls else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if plan.reasoning:
        message["reasoning_content"] = "".join(plan.reasoning)
    if plan.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call, call_id in zip(plan.tool_calls, meta.call_ids, strict=True)
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish_reason}
    return {**_envelope(meta, "chat.completion"), "choices": [choice], "usage": meta.usage}


async def stream_reply(
    request: web.Request, plan: ReplyPlan, meta: Completion, include_usage: bool
) -> web.StreamResponse:
    """Stream the plan as SSE chunks, pacing the deltas evenly over `plan.duration`."""
    response = await open_stream(request)
    try:
        await send(response, _chunk(meta, {"role": "assistant", "content": ""}))
        chunks = [(None, _chunk(meta, delta)) for delta in plan_deltas(plan, meta.call_ids)]
        await send_paced(response, chunks, plan.duration)
        await send(response, _chunk(meta, {}, plan.finish_reason))
        if include_usage:
            usage_chunk = {**_envelope(meta, "chat.completion.chunk"), "choices": [], "usage": meta.usage}
            await send(response, usage_chunk)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    except ConnectionResetError:
        logger.debug("client left during completion %s", meta.id)
    return response


def _envelope(meta: Completion, kind: str) -> dict[str, Any]:
    return {"id": meta.id, "object": kind, "created": meta.created, "model": meta.model}


def _chunk(meta: Completion, delta: Delta, finish_reason: FinishReason | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {**_envelope(meta, "chat.completion.chunk"), "choices": [choice]}

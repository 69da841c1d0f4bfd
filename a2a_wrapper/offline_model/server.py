"""aiohttp routes of the offline model: each wire format, models, health, and the test controls."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from a2a_wrapper.offline_model import anthropic_messages, gemini, responses
from a2a_wrapper.offline_model.control import ControlState
from a2a_wrapper.offline_model.plan import TITLE_PLAN, ReplyPlan, is_title_request, plan_reply, usage
from a2a_wrapper.offline_model.steps import Script, plan_step
from a2a_wrapper.offline_model.stream import Completion, completion_body, error_response, stream_reply
from a2a_wrapper.offline_model.wire import MODEL_ID, ChatRequest, InvalidRequest, Wire, validated

logger = logging.getLogger(__name__)

SMALL_MODEL_ID = "offline-small"
CONTROL = web.AppKey("control", ControlState)
MAX_REQUEST = 64 * 2**20  # bytes: a long context, as a provider takes it (aiohttp's own default is 1 MiB)


def create_app() -> web.Application:
    """The offline model as an aiohttp application with its own control state."""
    app = web.Application(client_max_size=MAX_REQUEST)
    app[CONTROL] = ControlState()
    app.router.add_post("/v1/chat/completions", _handler(CHAT))
    app.router.add_post("/chat/completions", _handler(CHAT))
    app.router.add_post("/v1/responses", _handler(responses.WIRE))
    app.router.add_post("/v1/messages", _handler(anthropic_messages.WIRE))
    app.router.add_post("/v1beta/models/{model}:streamGenerateContent", _handler(gemini.STREAM_WIRE))
    app.router.add_post("/v1beta/models/{model}:generateContent", _handler(gemini.WIRE))
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/health", health)
    app.router.add_post("/control/script", queue_script)
    app.router.add_get("/control/requests", list_requests)
    app.router.add_get("/control/headers", list_headers)
    app.router.add_delete("/control/requests", clear_requests)
    app.router.add_get("/control/state", control_state)
    return app


def _handler(wire: Wire) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await _complete(request, wire)

    return handle


async def _complete(request: web.Request, wire: Wire) -> web.StreamResponse:
    """Every format alike: read the request as chat, record it, plan the reply, answer in the format's shape."""
    try:
        body = _json_object(await request.read())
        chat = wire.read(body, request)
    except InvalidRequest as exc:
        return wire.error(400, str(exc))
    control = request.app[CONTROL]
    title = is_title_request(chat.messages, chat.tools)
    control.record(body, title, dict(request.headers))
    plan = _choose_plan(control, chat, title)
    logger.debug("%s model=%s stream=%s title=%s", wire.name, chat.model, chat.stream, title)
    with control.answering():
        if plan.error_status is not None:
            await asyncio.sleep(plan.duration)
            return wire.error(plan.error_status, plan.error_message)
        meta = Completion(
            id=control.completion_id(),
            model=chat.model,
            created=int(time.time()),
            call_ids=tuple(control.call_id() for _ in plan.tool_calls),
            usage=usage(chat.messages, plan),
        )
        return await wire.answer(request, chat, plan, meta)


def _choose_plan(control: ControlState, chat: ChatRequest, title: bool) -> ReplyPlan:
    if title:
        return TITLE_PLAN
    step = control.next_step()
    return plan_step(step) if step else plan_reply(chat.messages, chat.tools)


def _read_chat(body: dict[str, Any], request: web.Request) -> ChatRequest:
    return validated(body, ChatRequest)


async def _answer_chat(
    request: web.Request, chat: ChatRequest, plan: ReplyPlan, meta: Completion
) -> web.StreamResponse:
    if chat.stream:
        include_usage = bool((chat.stream_options or {}).get("include_usage"))
        return await stream_reply(request, plan, meta, include_usage)
    await asyncio.sleep(plan.duration)
    return web.json_response(completion_body(plan, meta))


CHAT = Wire("chat", _read_chat, _answer_chat, error_response)


async def list_models(request: web.Request) -> web.Response:
    models = [
        {"id": name, "object": "model", "created": 0, "owned_by": "offline"} for name in (MODEL_ID, SMALL_MODEL_ID)
    ]
    return web.json_response({"object": "list", "data": models})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def queue_script(request: web.Request) -> web.Response:
    try:
        script = validated(_json_object(await request.read()), Script)
    except InvalidRequest as exc:
        return error_response(400, str(exc))
    queued = request.app[CONTROL].queue(script.steps)
    return web.json_response({"queued_steps": queued})


async def list_requests(request: web.Request) -> web.Response:
    return web.json_response(request.app[CONTROL].requests())


async def list_headers(request: web.Request) -> web.Response:
    return web.json_response(request.app[CONTROL].headers())


async def clear_requests(request: web.Request) -> web.Response:
    request.app[CONTROL].clear()
    return web.json_response({"ok": True})


async def control_state(request: web.Request) -> web.Response:
    return web.json_response(request.app[CONTROL].snapshot())


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise InvalidRequest(f"request body must be a JSON object, got {type(body).__name__}")
    return body

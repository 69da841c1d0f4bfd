"""aiohttp routes of the offline model: chat completions, models, health, and the test controls."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from a2a_wrapper.offline_model.control import ControlState
from a2a_wrapper.offline_model.plan import TITLE_PLAN, ReplyPlan, is_title_request, plan_reply, usage
from a2a_wrapper.offline_model.steps import Script, plan_step
from a2a_wrapper.offline_model.stream import Completion, completion_body, error_response, stream_reply

logger = logging.getLogger(__name__)

MODEL_ID = "offline-model"
SMALL_MODEL_ID = "offline-small"
CONTROL = web.AppKey("control", ControlState)
ModelT = TypeVar("ModelT", bound=BaseModel)
MAX_REQUEST = 64 * 2**20  # bytes: a long context, as a provider takes it (aiohttp's own default is 1 MiB)


class InvalidRequest(ValueError):
    """A request body the model cannot read; answered with a 400."""


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = MODEL_ID
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[Any] | None = None


def create_app() -> web.Application:
    """The offline model as an aiohttp application with its own control state."""
    app = web.Application(client_max_size=MAX_REQUEST)
    app[CONTROL] = ControlState()
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/chat/completions", chat_completions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/health", health)
    app.router.add_post("/control/script", queue_script)
    app.router.add_get("/control/requests", list_requests)
    app.router.add_get("/control/headers", list_headers)
    app.router.add_delete("/control/requests", clear_requests)
    app.router.add_get("/control/state", control_state)
    return app


async def chat_completions(request: web.Request) -> web.StreamResponse:
    try:
        body, chat = _parse_json(await request.read(), ChatRequest)
    except InvalidRequest as exc:
        return error_response(400, str(exc))
    control = request.app[CONTROL]
    title = is_title_request(chat.messages, chat.tools)
    control.record(body, title, dict(request.headers))
    plan = _choose_plan(control, chat, title)
    logger.debug("completion model=%s stream=%s title=%s", chat.model, chat.stream, title)
    with control.answering():
        return await _respond(request, chat, plan, control)


def _choose_plan(control: ControlState, chat: ChatRequest, title: bool) -> ReplyPlan:
    if title:
        return TITLE_PLAN
    step = control.next_step()
    return plan_step(step) if step else plan_reply(chat.messages, chat.tools)


async def _respond(
    request: web.Request, chat: ChatRequest, plan: ReplyPlan, control: ControlState
) -> web.StreamResponse:
    if plan.error_status is not None:
        await asyncio.sleep(plan.duration)
        return error_response(plan.error_status, plan.error_message)
    meta = Completion(
        id=control.completion_id(),
        model=chat.model,
        created=int(time.time()),
        call_ids=tuple(control.call_id() for _ in plan.tool_calls),
        usage=usage(chat.messages, plan),
    )
    if chat.stream:
        include_usage = bool((chat.stream_options or {}).get("include_usage"))
        return await stream_reply(request, plan, meta, include_usage)
    await asyncio.sleep(plan.duration)
    return web.json_response(completion_body(plan, meta))


async def list_models(request: web.Request) -> web.Response:
    models = [
        {"id": name, "object": "model", "created": 0, "owned_by": "offline"} for name in (MODEL_ID, SMALL_MODEL_ID)
    ]
    return web.json_response({"object": "list", "data": models})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def queue_script(request: web.Request) -> web.Response:
    try:
        _, script = _parse_json(await request.read(), Script)
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


def _parse_json(raw: bytes, model: type[ModelT]) -> tuple[dict[str, Any], ModelT]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise InvalidRequest(f"request body must be a JSON object, got {type(body).__name__}")
    try:
        return body, model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise InvalidRequest(f"{where}: {first['msg']}") from exc

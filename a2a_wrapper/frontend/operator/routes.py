"""The operator endpoint's routes, mounted at /operator/v1 behind the console's key (access.py), outside the A2A
callers' guards. JSON in camelCase; a refusal is `{"error": SENTENCE}`.

- GET  /state             the live turns and what they wait for (view.py)
- GET  /events            the state as an SSE stream: at once, then at each change (at most ~10 a second)
- POST /approvals/{id}    an operator's answer: {"option": OPTION, "operator": NAME} (a question: {"text": ...})
- GET  /audit             decisions, newest first: ?decision=allow|deny&caller=NAME&limit=N
"""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Mount, Route

from a2a_wrapper.config.settings import ConsoleSettings
from a2a_wrapper.events import Question
from a2a_wrapper.frontend.edge.body_limit import BodyLimit
from a2a_wrapper.frontend.operator.access import ConsoleKey
from a2a_wrapper.frontend.operator.view import audit_entry, state
from a2a_wrapper.frontend.turns import Turns
from a2a_wrapper.permissions.approvals import OPTIONS, Answer
from a2a_wrapper.state.audit import recent
from a2a_wrapper.state.engines import StateDatabase

PATH = "/operator/v1"
OPERATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")  # a caller's name, as auth.callers spells it
DECISIONS = ("allow", "deny")  # what the audit keeps: an ask is recorded by how it was answered
MAX_AUDIT = 1000
KEEP_ALIVE = 15.0  # seconds between comments on a quiet event stream
PACE = 0.1  # seconds between two states on the event stream: changes meanwhile go out as one
MAX_BODY = 16 * 1024


class BadRequest(Exception):
    """A request the endpoint cannot use; the message is the sentence sent back with 400."""


def operator_routes(agent: str, turns: Turns, console: ConsoleSettings, database: StateDatabase) -> Mount:
    """The endpoint, its key read from the environment now."""

    async def get_state(request: Request) -> JSONResponse:
        return JSONResponse(state(agent, turns))

    async def get_events(request: Request) -> StreamingResponse:
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(_states(agent, turns), media_type="text/event-stream", headers=headers)

    async def post_answer(request: Request) -> JSONResponse:
        approval_id = request.path_params["approval_id"]
        try:
            operator, answer = _read_answer(await request.body())
        except BadRequest as exc:
            return _error(str(exc), 400)
        live = turns.waiting_on(approval_id)
        pending = live.pending if live is not None else None
        if live is None or pending is None:
            earlier = turns.claim_of(approval_id)
            if earlier is not None:
                return _error(earlier.refusal(), 409)
            return _error(f"No approval {approval_id} waits on this agent.", 404)
        if not isinstance(pending.request, Question) and "console" not in turns.approvers:  # a question: anyone
            sentence = "Approvals of this agent are answered by its callers only (shield.approvers leaves out console)."
            return _error(sentence, 403)
        if isinstance(pending.request, Question) != (answer.option is None):
            return _error(_mismatch(approval_id, answer), 400)
        if pending.left() <= 0:  # the deadline is about to answer it: this answer would be none
            return _error(f"Approval {approval_id} expired unanswered; the deadline answers it.", 409)
        decided_by = f"console:{operator}"
        earlier = turns.answer_for(live, pending, answer, decided_by)
        if earlier is not None:
            return _error(earlier.refusal(), 409)
        return JSONResponse({"id": approval_id, "option": answer.option or "answer", "decidedBy": decided_by})

    async def get_audit(request: Request) -> JSONResponse:
        try:
            decision, caller, limit = _audit_query(request)
        except BadRequest as exc:
            return _error(str(exc), 400)
        entries = await asyncio.to_thread(recent, database, limit, decision, caller)
        return JSONResponse({"entries": [audit_entry(entry) for entry in entries]})

    routes = [
        Route("/state", get_state, methods=["GET"]),
        Route("/events", get_events, methods=["GET"]),
        Route("/approvals/{approval_id}", post_answer, methods=["POST"]),
        Route("/audit", get_audit, methods=["GET"]),
    ]
    guards = [Middleware(ConsoleKey, console=console), Middleware(BodyLimit, limit=MAX_BODY, timeout=10.0)]
    return Mount(PATH, routes=routes, middleware=guards)


async def _states(agent: str, turns: Turns) -> AsyncIterator[str]:
    """The state at once, then each time it changes, paced; a keep-alive comment while nothing changes. Ends
    when the agent shuts down (the feed closes); a client gone ends it at the next write."""
    feed = turns.feed
    while not feed.closed:
        seen = feed.version
        yield f"event: state\ndata: {json.dumps(state(agent, turns), separators=(',', ':'))}\n\n"
        await asyncio.sleep(PACE)
        while feed.version == seen and not feed.closed:
            try:
                async with asyncio.timeout(KEEP_ALIVE):
                    await feed.moved_past(seen)
            except TimeoutError:
                yield ": keep-alive\n\n"


def _read_answer(body: bytes) -> tuple[str, Answer]:
    """The operator's name and answer from a POST body; BadRequest names what is wrong."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise BadRequest('The body must be a JSON object: {"option": "allow_once", "operator": "NAME"}.')
    operator = data.get("operator")
    if not isinstance(operator, str) or not OPERATOR.fullmatch(operator):
        shown = repr(operator)[:80]
        raise BadRequest(f"operator must be the operator's name (letters, digits and _.@-, at most 64), not {shown}.")
    if "text" in data and "option" not in data:
        text = data["text"]
        if not isinstance(text, str) or not text.strip():
            raise BadRequest("text must be the answer to the question, as a non-empty string.")
        return operator, Answer(None, text)
    option = data.get("option")
    if option not in OPTIONS:
        raise BadRequest(f"option must be one of {', '.join(OPTIONS)}, not {repr(option)[:80]}.")
    return operator, Answer(option, None)


def _mismatch(approval_id: str, answer: Answer) -> str:
    if answer.option is None:
        return f'{approval_id} is an approval: answer it with {{"option": ...}}, one of {", ".join(OPTIONS)}.'
    return f'{approval_id} is a question: answer it with {{"text": ...}}.'


def _audit_query(request: Request) -> tuple[str | None, str | None, int]:
    params = request.query_params
    decision = params.get("decision")
    if decision is not None and decision not in DECISIONS:
        raise BadRequest(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}.")
    limit_text = params.get("limit", "200")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_AUDIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_AUDIT}, not {limit_text!r}.")
    return decision, params.get("caller"), int(limit_text)


def _error(sentence: str, status: int) -> JSONResponse:
    return JSONResponse({"error": sentence}, status_code=status)

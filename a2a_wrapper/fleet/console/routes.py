"""The console's routes on the registry's port, under /console:

GET  /console                               the page (signed in), else how to sign in (a form, or the link's page)
POST /console/login, /console/logout        a session cookie opened (an operator's name and key) or closed
GET  /console/signin?token=TOKEN            a session cookie opened by the fleet's one-time link (no operators)
GET  /console/static/{name}                 the page's script and style
GET  /console/api/state                     {"operator", "agents": [entry + tasks, approvals, console]}
GET  /console/api/events                    the same body as server-sent events, on every change
POST /console/api/approvals/{agent}/{id}    {"option"}: forwarded to the agent as the signed-in operator
GET  /console/api/audit                     ?agent=&decision=&caller=&limit=: the agents' audits merged, newest first

Every request but sign-in and the static files needs a session (access.py); every POST carries the CSRF token
and no foreign Origin. No peer address is trusted: a loopback request without a session is refused like any.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from a2a_wrapper.fleet.console import agent_api
from a2a_wrapper.fleet.console.access import CSRF_HEADER, SESSION_COOKIE, Gate, Visitor, foreign_origin
from a2a_wrapper.fleet.console.hub import Hub
from a2a_wrapper.fleet.console.links import SIGN_IN_PATH
from a2a_wrapper.fleet.console.operators import LINK_OPERATOR, SESSION_LIFETIME
from a2a_wrapper.fleet.console.page import console_page, link_sign_in, sign_in_form, static_file
from a2a_wrapper.fleet.registry import CONSOLE_PATH, Listed

log = logging.getLogger(__name__)

OPTIONS = ("allow_once", "allow_context", "deny")
DECISIONS = ("allow", "deny")  # what the audit keeps: an ask is recorded by how it was answered
KEEP_ALIVE = 15.0
COALESCE = 0.2  # seconds a burst of changes gathers into one event
FAILED_SIGN_IN_DELAY = 1.0
MAX_BODY = 4096  # bytes of a form or a decision
AUDIT_LIMIT = 200

Handler = Callable[[Request, Visitor], Awaitable[Response]]


def _error(sentence: str, status_code: int) -> JSONResponse:
    return JSONResponse({"error": sentence}, status_code=status_code)


class ConsoleRoutes:
    """The handlers, sharing the hub (what the agents say) and the gate (who is asking)."""

    def __init__(self, hub: Hub, gate: Gate) -> None:
        self.hub = hub
        self.gate = gate
        self._failed_sign_ins = asyncio.Lock()  # failed attempts wait in line: guessing is paced for everyone

    def routes(self) -> list[Route]:
        return [
            Route(CONSOLE_PATH, self._open(self.page, api=False), methods=["GET"]),
            Route(CONSOLE_PATH + "/login", self.login, methods=["POST"]),
            Route(CONSOLE_PATH + SIGN_IN_PATH, self.sign_in_with_link, methods=["GET"]),
            Route(CONSOLE_PATH + "/logout", self._open(self.logout, api=False), methods=["POST"]),
            Route(CONSOLE_PATH + "/static/{name}", self.static, methods=["GET"]),
            Route(CONSOLE_PATH + "/api/state", self._open(self.state), methods=["GET"]),
            Route(CONSOLE_PATH + "/api/events", self._open(self.events), methods=["GET"]),
            Route(CONSOLE_PATH + "/api/approvals/{agent}/{id}", self._open(self.decide), methods=["POST"]),
            Route(CONSOLE_PATH + "/api/audit", self._open(self.audit), methods=["GET"]),
        ]

    def _open(self, handler: Handler, api: bool = True) -> Callable[[Request], Awaitable[Response]]:
        """`handler` for signed-in visitors; anyone else, from whatever address, gets how to sign in (or a 401)."""

        async def gated(request: Request) -> Response:
            visitor = self.gate.visitor(request)
            if visitor is None:
                return _error("sign in first, at /console", 401) if api else self._how_to_sign_in()
            return await handler(request, visitor)

        return gated

    def _how_to_sign_in(self, message: str = "", status_code: int = 200) -> Response:
        if self.gate.links is not None:
            return link_sign_in(message, status_code)
        return sign_in_form(message, status_code)

    async def page(self, request: Request, visitor: Visitor) -> Response:
        return console_page(visitor.operator, visitor.csrf, signed_in_by_link=self.gate.links is not None)

    async def static(self, request: Request) -> Response:
        return static_file(request.path_params["name"])

    async def login(self, request: Request) -> Response:
        refusal = foreign_origin(request)
        if refusal is not None:
            return Response(refusal, 403, media_type="text/plain")
        if self.gate.links is not None:
            return link_sign_in("This console has no operators: it signs in with the fleet's link.", 403)
        form = await _form(request)
        name, key = form.get("name", ""), form.get("key", "")
        if not self.gate.operators.check(name, key):
            await self._pace_failure()
            log.warning("console: a failed sign-in as %r from %s", name[:64], request.client and request.client.host)
            return sign_in_form("That name and key are not an operator's of this registry.", status_code=401)
        log.info("console: %s signed in", name)
        return self._session_opened(request, name)

    async def sign_in_with_link(self, request: Request) -> Response:
        """The fleet's one-time link: a session for its owner, once; every later use refused with a sentence."""
        if self.gate.links is None:
            return sign_in_form("This console signs in operators with their keys; it has no sign-in links.", 404)
        refusal = self.gate.links.redeem(request.query_params.get("token", ""))
        if refusal is not None:
            await self._pace_failure()
            log.warning("console: a refused sign-in link from %s", request.client and request.client.host)
            return link_sign_in(refusal, status_code=401)
        log.info("console: %s signed in with the one-time link", LINK_OPERATOR)
        return self._session_opened(request, LINK_OPERATOR)

    async def _pace_failure(self) -> None:
        async with self._failed_sign_ins:
            await asyncio.sleep(FAILED_SIGN_IN_DELAY)

    def _session_opened(self, request: Request, operator: str) -> Response:
        """To the console, with the new session's cookie (Secure when the request came over TLS)."""
        response = RedirectResponse(CONSOLE_PATH, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            self.gate.sessions.open(operator),
            max_age=int(SESSION_LIFETIME),
            path=CONSOLE_PATH,
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    async def logout(self, request: Request, visitor: Visitor) -> Response:
        refusal = self.gate.action_refusal(request, visitor, (await _form(request)).get("csrf"))
        if refusal is not None:
            return Response(refusal, 403, media_type="text/plain")
        self.gate.sessions.close(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(CONSOLE_PATH, status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=CONSOLE_PATH, httponly=True, samesite="strict")
        return response

    def _state(self, visitor: Visitor) -> dict[str, Any]:
        return {"operator": visitor.operator, "agents": self.hub.snapshot()}

    async def state(self, request: Request, visitor: Visitor) -> Response:
        return JSONResponse(self._state(visitor))

    async def events(self, request: Request, visitor: Visitor) -> Response:
        return StreamingResponse(
            self._stream(visitor),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},  # a proxy in front must not hold the events back
        )

    async def _stream(self, visitor: Visitor) -> AsyncIterator[str]:
        """The state at once, then again after each burst of changes that altered it; a keep-alive when quiet."""
        sent = json.dumps(self._state(visitor))
        yield f"retry: 2000\nevent: state\ndata: {sent}\n\n"
        while not self.hub.closed:
            if not await self.hub.changes.wait(KEEP_ALIVE):
                yield ": keep-alive\n\n"
                continue
            await asyncio.sleep(COALESCE)
            now = json.dumps(self._state(visitor))
            if now != sent and not self.hub.closed:
                sent = now
                yield f"event: state\ndata: {now}\n\n"

    async def decide(self, request: Request, visitor: Visitor) -> Response:
        refusal = self.gate.action_refusal(request, visitor, request.headers.get(CSRF_HEADER))
        if refusal is not None:
            return _error(refusal, 403)
        answer = _answer(await _small_body(request))
        if answer is None:
            shape = f'{{"option": ...}}, one of {", ".join(OPTIONS)} (a question: {{"text": ...}})'
            return _error(f"the body is {shape}", 400)
        name = request.path_params["agent"]
        agent = self.hub.find(name)
        if agent is None:
            return _error(f"no agent named {name!r} in this registry", 404)
        approval = request.path_params["id"]
        try:
            status, body = await agent_api.answer(
                self.hub.http, agent.describe()["url"], agent.console_key, approval, answer, visitor.operator
            )
        except agent_api.ConsoleUnreachable as exc:
            return _error(f"agent {name!r}: {exc}", 502)
        shown = answer.get("option", "an answer")
        log.info("console: %s answered %s of %s with %s: %d", visitor.operator, approval, name, shown, status)
        return JSONResponse(body, status_code=status)

    async def audit(self, request: Request, visitor: Visitor) -> Response:
        params = request.query_params
        decision, caller, only = params.get("decision", ""), params.get("caller", ""), params.get("agent", "")
        if decision and decision not in DECISIONS:
            return _error(f"decision is one of {', '.join(DECISIONS)}, not {decision!r}", 400)
        try:
            limit = min(max(int(params.get("limit", AUDIT_LIMIT)), 1), 1000)
        except ValueError:
            return _error(f"limit is a number, not {params.get('limit')!r}", 400)
        query = {k: v for k, v in {"decision": decision, "caller": caller, "limit": str(limit)}.items() if v}
        agents = [agent for agent in self.hub.agents() if not only or agent.name == only]
        fetched = await asyncio.gather(*(self._audit_of(agent, query) for agent in agents))
        entries = sorted((e for found, _ in fetched for e in found), key=_audit_time, reverse=True)[:limit]
        errors = [{"agent": agent.name, "error": why} for (_, why), agent in zip(fetched, agents, strict=True) if why]
        return JSONResponse({"entries": entries, "errors": errors})

    async def _audit_of(self, agent: Listed, query: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
        """The agent's entries, named as the registry names it, or none and the sentence why."""
        try:
            found = await agent_api.audit(self.hub.http, agent.describe()["url"], agent.console_key, query)
        except agent_api.ConsoleUnreachable as exc:
            return [], str(exc)
        return [{**entry, "agent": agent.name} for entry in found], ""


def _answer(body: bytes | None) -> dict[str, str] | None:
    """`{"option": OPTION}` for an approval, `{"text": TEXT}` for a question; None for anything else."""
    try:
        data = json.loads(body) if body is not None else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("option") in OPTIONS:
        return {"option": data["option"]}
    text = data.get("text")
    if "option" not in data and isinstance(text, str) and text.strip():
        return {"text": text}
    return None


def _audit_time(entry: dict[str, Any]) -> datetime:
    try:
        at = datetime.fromisoformat(str(entry.get("time")))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


async def _small_body(request: Request) -> bytes | None:
    """The body, read up to MAX_BODY; None when it is larger (nothing the console takes is)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return body


async def _form(request: Request) -> dict[str, str]:
    """A small url-encoded form; a larger or malformed body is read as an empty one (the sign-in then fails)."""
    body = await _small_body(request)
    try:
        fields = parse_qs(body.decode(errors="replace"), max_num_fields=8) if body is not None else {}
    except ValueError:
        return {}
    return {name: values[0] for name, values in fields.items()}

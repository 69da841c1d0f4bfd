"""The console's calls to an agent's operator endpoint (/operator/v1, part of the approvals extension): its state
as a stream of events, an operator's answer to an approval, its audit.

The console talks to every agent over HTTP only, with the agent's console key as a bearer token: an agent the
fleet runs and one run elsewhere (compose, another host) are reached the same way. What an agent sends is
redacted once more here (the agent redacts it already): nothing secret reaches the page.
"""

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from a2a_wrapper.errors import WrapperError
from a2a_wrapper.guard.secrets import redact_value

OPERATOR_PATH = "/operator/v1"
KEEP_ALIVE = 15.0  # the agent's keep-alive comment: a stream silent for much longer than this is dead
MAX_EVENT = 4 * 1024 * 1024  # characters of one state event
CALL_TIMEOUT = 10.0


class ConsoleUnreachable(WrapperError):
    """The agent's operator endpoint did not answer as one should; the message is a sentence for the page."""


def _headers(key: str | None) -> dict[str, str]:
    if not key:
        raise ConsoleUnreachable("the registry has no console key for this agent (console_key_env in the fleet file)")
    return {"authorization": f"Bearer {key}"}


def refusal(response: httpx.Response) -> str:
    """Why the agent did not answer with what was asked, as a sentence naming its status."""
    try:
        said = response.json().get("error")
    except (ValueError, AttributeError):
        said = None
    why = {
        401: "the agent refused the console's key",
        403: "the agent's operator endpoint is closed to the console",
        404: "the agent has no operator endpoint (an older a2a-wrap?)",
    }.get(response.status_code, "the agent's operator endpoint failed")
    return f"{why} (HTTP {response.status_code}{': ' + str(said) if said else ''})"


async def follow_state(http: httpx.AsyncClient, url: str, key: str | None) -> AsyncIterator[dict[str, Any]]:
    """Each state the agent sends, the first at once; ends when the agent closes the stream."""
    timeout = httpx.Timeout(CALL_TIMEOUT, read=KEEP_ALIVE * 2 + 5)
    with _reaching():
        async with http.stream("GET", url + OPERATOR_PATH + "/events", headers=_headers(key), timeout=timeout) as sent:
            if sent.status_code != 200:
                await sent.aread()
                raise ConsoleUnreachable(refusal(sent))
            async for name, data in _events(sent.aiter_lines()):
                if name == "state":
                    yield _state(data)


@contextmanager
def _reaching() -> Iterator[None]:
    """A call to the agent; a transport failure becomes the sentence the page shows."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise ConsoleUnreachable(f"not reachable ({type(exc).__name__}: {exc})") from exc


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as (event name, data); comments (keep-alives) skipped."""
    name, data = "message", list[str]()
    async for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
            if sum(map(len, data)) > MAX_EVENT:
                raise ConsoleUnreachable(f"the agent sent a state event larger than {MAX_EVENT} characters")


def _state(data: str) -> dict[str, Any]:
    """The agent's state, checked and redacted; anything else is refused with a sentence."""
    try:
        state = json.loads(data)
    except ValueError:
        state = None
    if not isinstance(state, dict) or not all(isinstance(state.get(k), list) for k in ("tasks", "approvals")):
        raise ConsoleUnreachable("the agent sent a state the console does not understand")
    return {
        "tasks": [redact_value(task) for task in state["tasks"] if isinstance(task, dict)],
        "approvals": [redact_value(item) for item in state["approvals"] if isinstance(item, dict)],
        "approvers": [str(who) for who in state.get("approvers") or [] if isinstance(who, str)],
    }


async def answer(
    http: httpx.AsyncClient, url: str, key: str | None, approval: str, answer: dict[str, str], operator: str
) -> tuple[int, dict[str, Any]]:
    """The agent's status and body for an operator's `answer` ({"option"}, or {"text"} to a question), its 409's
    sentence included."""
    target = f"{url}{OPERATOR_PATH}/approvals/{quote(approval, safe='')}"
    with _reaching():
        response = await http.post(
            target, json={**answer, "operator": operator}, headers=_headers(key), timeout=CALL_TIMEOUT
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"error": refusal(response)}
    return response.status_code, redact_value(body)


async def audit(http: httpx.AsyncClient, url: str, key: str | None, query: dict[str, str]) -> list[dict[str, Any]]:
    """The agent's audit entries (newest first) that match `query` (decision, caller, limit)."""
    with _reaching():
        response = await http.get(
            url + OPERATOR_PATH + "/audit", params=query, headers=_headers(key), timeout=CALL_TIMEOUT
        )
    if response.status_code != 200:
        raise ConsoleUnreachable(refusal(response))
    try:
        entries = response.json()["entries"]
    except (ValueError, KeyError, TypeError):
        entries = None
    if not isinstance(entries, list):
        raise ConsoleUnreachable("the agent's audit is not one the console understands")
    return [redact_value(entry) for entry in entries if isinstance(entry, dict)]

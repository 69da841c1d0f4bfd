"""Red team, class 4: the wrapper's own network reached through the sandbox's egress, a webhook, or the console.

Egress: CONNECTs and proxied requests written by hand, as a tool would, through a real EgressProxy that allows
every host by name (`network: allow`); the effect looked at is a real 127.0.0.1 listener standing for the
wrapper's port: it must accept nothing. Push: each webhook URL the wrapper would call is called for real, at the
address the guard hands back; the same listener must accept nothing. Console: a fleet console with no operators
(the demo's default) served in-process, each request from a loopback peer as an agent's egress would come: no
agent's state, no session, no decision.
"""

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.fleet.console.access import SESSION_COOKIE, Gate
from a2a_wrapper.fleet.console.hub import Hub
from a2a_wrapper.fleet.console.operators import Operators
from a2a_wrapper.fleet.console.routes import ConsoleRoutes
from a2a_wrapper.fleet.registry import build_registry_app, describe_agent
from a2a_wrapper.push.urls import WebhookPolicy, WebhookRefused
from a2a_wrapper.sandbox.egress import EgressDecision, EgressPolicy, EgressProxy
from a2a_wrapper.shield import Shield
from a2a_wrapper.shield.rules import ShieldConfig
from tests.helpers.listener import listener, through

pytestmark = pytest.mark.slow

ALLOW_EVERY_HOST = ShieldConfig.model_validate({"defaults": {"network": "allow"}})
FULLWIDTH = "".join(chr(ord(letter) + 0xFEE0) for letter in "localhost")  # `localhost` in fullwidth letters
HOSTNAME = socket.gethostname()  # /etc/hosts may map it to 127.0.0.1, or it resolves to this machine's address

# Request heads past the ones tests/test_egress_addresses.py tries: PORT is the listener's.
HEADS = [
    "CONNECT 0:PORT HTTP/1.1",  # `0` is 0.0.0.0 to inet_aton: this machine
    "CONNECT 127.0.0.1.:PORT HTTP/1.1",  # a trailing dot
    "CONNECT localhost.:PORT HTTP/1.1",
    "CONNECT LocalHost:PORT HTTP/1.1",
    f"CONNECT {HOSTNAME}:PORT HTTP/1.1",
    "CONNECT [0:0:0:0:0:ffff:7f00:1]:PORT HTTP/1.0",  # mapped, written out, HTTP/1.0
    "CONNECT [::1%lo]:PORT HTTP/1.1",  # a zone index
    "CONNECT 0177.0.0.01:PORT HTTP/1.1",  # octal and a leading zero
    "CONNECT 127.0.0.1:0PORT HTTP/1.1",  # a port with a leading zero
    f"CONNECT {FULLWIDTH}:PORT HTTP/1.1",  # fullwidth letters, which IDNA folds to ASCII
    "GET http://x@127.0.0.1:PORT/ HTTP/1.1",  # userinfo in a proxied URL
    "GET http://example.com\\@127.0.0.1:PORT/ HTTP/1.1",  # the backslash parsers disagree on
    "GET http://127.0.0.1:PORT#@example.com/ HTTP/1.1",
    "GET HTTP://[::ffff:127.0.0.1]:PORT/ HTTP/1.1",
    "OPTIONS http://127.0.0.1:PORT HTTP/1.1",
    "GET /x HTTP/1.1\r\nHost: 127.0.0.1:PORT",  # origin-form: a Host header alone
    "CONNECT 127.0.0.1:PORT:443 HTTP/1.1",
]


@contextlib.asynccontextmanager
async def egress(tmp_path: Path) -> AsyncIterator[EgressProxy]:
    async def record(decision: EgressDecision, wait_ms: float) -> None:
        pass

    proxy = EgressProxy(tmp_path / "egress.sock", EgressPolicy(set(), Shield(ALLOW_EVERY_HOST, tmp_path)), record)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


@pytest.mark.parametrize("head", HEADS)
async def test_no_spelling_of_this_machine_gets_through_the_egress(tmp_path: Path, head: str) -> None:
    async with listener() as (port, accepted), egress(tmp_path) as proxy:
        answer = await through(proxy.socket_path, (head.replace("PORT", str(port)) + "\r\n\r\nping").encode())
    assert accepted == [], answer
    assert not answer.startswith(b"HTTP/1.1 200"), answer


WEBHOOKS = [
    "http://0:PORT/",
    "http://127.0.0.1.:PORT/",
    f"http://{HOSTNAME}:PORT/",
    "http://LOCALHOST:PORT/",
    "HTTP://localhost:PORT/",
    "http://[::ffff:127.0.0.1]:PORT/",
    "http://[::ffff:7f00:1]:PORT/",
    "http://2130706433:PORT/",
    "http://0x7f.1:PORT/",
    f"http://{FULLWIDTH}:PORT/",
    "http://127.0.0.1\\@example.com:PORT/",
    "http://[::1%25lo]:PORT/",
]


@pytest.mark.parametrize("url", WEBHOOKS)
async def test_a_webhook_never_reaches_this_machine(url: str) -> None:
    async with listener() as (port, accepted):
        try:
            destination = await WebhookPolicy([]).destination(url.replace("PORT", str(port)))
        except WebhookRefused:
            destination = None
        if destination is not None:  # the guard let it through: deliver as push/delivery.py would
            async with httpx.AsyncClient(timeout=5) as http:
                with contextlib.suppress(httpx.HTTPError):
                    await http.post(destination.url, headers={"Host": destination.authority}, json={})
    assert accepted == [], (url, destination)


class StandIn:
    """A listed agent; its name is what an unsigned visitor must never see."""

    name = "builder-agent-of-the-fleet"
    console_key = "builder-key"
    decided: list[Any] = []

    def describe(self) -> dict[str, Any]:
        return describe_agent(self.name, "http://127.0.0.1:9", "http://127.0.0.1:9/card", "running", None)

    async def refresh(self, http: httpx.AsyncClient) -> None:
        return None


CONSOLE_REQUESTS = [
    ("GET", "/console/api/state", {}, None),
    ("GET", "/console/api/audit", {}, None),
    ("GET", "/console/api/events", {}, None),
    ("GET", "/console/api/state", {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"}, None),
    ("GET", "/console/api/state", {"Cookie": f"{SESSION_COOKIE}=owner"}, None),
    ("GET", "/console/api/state", {"Authorization": "Basic b3duZXI6"}, None),  # owner:
    ("GET", "/console/api/state", {"Host": "localhost"}, None),
    ("GET", "/console", {}, None),
    ("GET", "/console/signin?token=", {}, None),
    ("GET", "/console/signin?token=owner", {}, None),
    ("POST", "/console/login", {}, {"name": "owner", "key": ""}),
    ("POST", "/console/login", {}, {"name": "local", "key": "local"}),
    ("POST", "/console/api/approvals/builder-agent-of-the-fleet/1", {}, {"decision": "allow"}),
    ("POST", "/console/api/approvals/builder-agent-of-the-fleet/1", {"X-CSRF-Token": "x"}, {"decision": "allow"}),
]


@pytest.mark.parametrize(("method", "path", "headers", "form"), CONSOLE_REQUESTS)
async def test_a_loopback_peer_is_nobody_to_the_console(
    method: str, path: str, headers: dict[str, str], form: dict[str, str] | None
) -> None:
    agents = [StandIn()]
    hub = Hub(lambda: agents)
    async with asyncio.timeout(30), hub.running():
        hub.close()
        app = build_registry_app(lambda: agents, ConsoleRoutes(hub, Gate(Operators({}))).routes())
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8800") as client:
            answer = await client.request(method, path, headers=headers, data=form)
            after = await client.get("/console/api/state")  # with whatever cookie the answer set
    assert StandIn.name not in answer.text and StandIn.name not in after.text, (answer.status_code, answer.text[:200])
    assert SESSION_COOKIE not in answer.headers.get("set-cookie", ""), "no session was opened"
    assert after.status_code == 401


async def test_the_owners_link_does_see_the_agents_the_attacks_above_look_for() -> None:
    """The control: signed in with the fleet's own link, the same state names the agent (so its absence above is
    the gate's doing, not an empty page)."""
    agents = [StandIn()]
    hub = Hub(lambda: agents)
    gate = Gate(Operators({}))
    assert gate.links is not None
    async with asyncio.timeout(30), hub.running():
        hub.close()
        app = build_registry_app(lambda: agents, ConsoleRoutes(hub, gate).routes())
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8800") as client:
            await client.get(f"/console/signin?token={gate.links.issue()}")
            state = await client.get("/console/api/state")
    assert state.status_code == 200 and StandIn.name in state.text

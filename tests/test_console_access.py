"""The console's gate, pure and fast: the fleet file's operators and console keys, sign-in, sessions, CSRF and
Origin checks, loopback-only without operators, and the security headers on every console response.

The registry app is served in-process (httpx's ASGI transport, the peer address given) with agents that are
small hand-written stand-ins: nothing here reaches an agent.
"""

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from a2a_wrapper.errors import ConfigError
from a2a_wrapper.fleet import load_fleet
from a2a_wrapper.fleet.console.access import Gate
from a2a_wrapper.fleet.console.headers import SECURITY_HEADERS
from a2a_wrapper.fleet.console.hub import Hub
from a2a_wrapper.fleet.console.operators import Operators, Sessions
from a2a_wrapper.fleet.console.routes import FAILED_SIGN_IN_DELAY, ConsoleRoutes
from a2a_wrapper.fleet.registry import build_registry_app, describe_agent

KEY = "alice-key-0123456789"
REGISTRY = "http://127.0.0.1:8800"
LOOPBACK = ("127.0.0.1", 50000)
ELSEWHERE = ("192.0.2.7", 50000)


def fleet_file(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


REMOTE = {"url": "http://docs:8000"}


@pytest.mark.parametrize(
    ("registry", "agent", "message"),
    [
        (
            {"operators": [{"name": "alice", "key_env": "CONSOLE_TEST_UNSET"}]},
            REMOTE,
            "registry.operators.0: operator 'alice': environment variable CONSOLE_TEST_UNSET is unset or empty",
        ),
        (
            {"operators": [{"name": "alice", "key_env": "CONSOLE_TEST_EMPTY"}]},
            REMOTE,
            "operator 'alice': environment variable CONSOLE_TEST_EMPTY is unset or empty",
        ),
        (
            {"operators": [{"name": "-alice", "key_env": "CONSOLE_TEST_KEY"}]},
            REMOTE,
            "registry.operators.0.name: ",
        ),
        (
            {"operators": [{"name": "alice", "key_env": "NOT-A-NAME"}]},
            REMOTE,
            "registry.operators.0.key_env: ",
        ),
        (
            {
                "operators": [
                    {"name": "alice", "key_env": "CONSOLE_TEST_KEY"},
                    {"name": "alice", "key_env": "CONSOLE_TEST_OTHER"},
                ]
            },
            REMOTE,
            "operators: name alice appears more than once",
        ),
        (
            {
                "operators": [
                    {"name": "alice", "key_env": "CONSOLE_TEST_KEY"},
                    {"name": "bob", "key_env": "CONSOLE_TEST_KEY"},
                ]
            },
            REMOTE,
            "operators: key_env CONSOLE_TEST_KEY appears more than once",
        ),
        (
            {},
            {"url": "http://docs:8000", "console_key_env": "CONSOLE_TEST_UNSET"},
            "the console key of the agent at http://docs:8000: environment variable CONSOLE_TEST_UNSET is unset",
        ),
        (
            {},
            {"config": "a/config.yaml", "console_key_env": "CONSOLE_TEST_KEY"},
            "`console_key_env` applies to a `url` agent; the fleet keys the agents it runs",
        ),
    ],
)
def test_fleet_file_console_settings_are_refused_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: dict[str, Any], agent: dict[str, Any], message: str
) -> None:
    monkeypatch.setenv("CONSOLE_TEST_KEY", KEY)
    monkeypatch.setenv("CONSOLE_TEST_EMPTY", "")
    monkeypatch.setenv("CONSOLE_TEST_OTHER", "other-key")
    monkeypatch.delenv("CONSOLE_TEST_UNSET", raising=False)
    path = fleet_file(tmp_path, {"registry": registry, "agents": [agent]})
    with pytest.raises(ConfigError) as caught:
        load_fleet([path])
    assert f"{path}: " in str(caught.value) and message in str(caught.value), str(caught.value)


def test_operators_and_a_remote_agents_console_key_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSOLE_TEST_KEY", KEY)
    monkeypatch.setenv("CONSOLE_TEST_DOCS", "docs-key")
    operators = [{"name": "alice", "key_env": "CONSOLE_TEST_KEY"}]
    agent = {"url": "http://docs:8000/", "console_key_env": "CONSOLE_TEST_DOCS"}
    fleet = load_fleet([fleet_file(tmp_path, {"registry": {"operators": operators}, "agents": [agent]})])
    assert [(operator.name, operator.key()) for operator in fleet.registry.operators] == [("alice", KEY)]
    assert (fleet.remotes[0].url, fleet.remotes[0].console_key_env) == ("http://docs:8000", "CONSOLE_TEST_DOCS")


@pytest.mark.parametrize(
    ("name", "key", "signed_in"),
    [
        ("alice", KEY, True),
        ("alice", KEY + "x", False),
        ("alice", KEY[:-1], False),
        ("alice", "", False),
        ("bob", KEY, False),
        ("", "", False),
    ],
)
def test_only_an_operators_own_key_signs_in(name: str, key: str, signed_in: bool) -> None:
    assert Operators({"alice": KEY, "carol": "carol-key"}).check(name, key) is signed_in


def test_sessions_expire_close_and_are_bounded() -> None:
    now = [1000.0]
    sessions = Sessions(lifetime=60, limit=2, clock=lambda: now[0])
    first, second = sessions.open("alice"), sessions.open("bob")
    found = sessions.find(first)
    assert found is not None and found.operator == "alice" and found.csrf
    assert sessions.find("not-a-token") is None and sessions.find(None) is None
    third = sessions.open("carol")  # past the limit: the oldest is closed
    assert sessions.find(first) is None and len(sessions) == 2
    sessions.close(second)
    assert sessions.find(second) is None
    now[0] += 60
    assert sessions.find(third) is None and len(sessions) == 0


class StandIn:
    """A listed agent the console knows only by its registry entry (no operator endpoint behind it)."""

    name = "builder"
    console_key = "builder-key"

    def describe(self) -> dict[str, Any]:
        return describe_agent(self.name, "http://127.0.0.1:9", "http://127.0.0.1:9/card", "running", None)

    async def refresh(self, http: httpx.AsyncClient) -> None:
        return None


@asynccontextmanager
async def console_app(operators: dict[str, str]) -> AsyncIterator[Any]:
    """The registry app with its console, its hub running (its feed of the stand-in finds nobody on port 9)."""
    agents = [StandIn()]
    hub = Hub(lambda: agents)
    async with hub.running():
        hub.close()  # every browser's event stream sends the state once and ends, as at the registry's shutdown
        yield build_registry_app(lambda: agents, ConsoleRoutes(hub, Gate(Operators(operators))).routes())


@pytest.fixture
async def signed_out() -> AsyncIterator[httpx.AsyncClient]:
    """A browser on this machine, before signing in to a console with one operator, alice."""
    async with asyncio.timeout(30), console_app({"alice": KEY}) as app:
        transport = httpx.ASGITransport(app=app, client=LOOPBACK)
        async with httpx.AsyncClient(transport=transport, base_url=REGISTRY) as client:
            yield client


async def sign_in(client: httpx.AsyncClient) -> str:
    """Signed in as alice; the page's CSRF token."""
    response = await client.post("/console/login", data={"name": "alice", "key": KEY})
    assert response.status_code == 303 and response.headers["location"] == "/console"
    page = await client.get("/console")
    assert "Signed in as alice" in page.text
    return page.text.split('name="csrf-token" content="')[1].split('"')[0]


async def test_signing_in_opens_a_strict_http_only_session(signed_out: httpx.AsyncClient) -> None:
    form = await signed_out.get("/console")
    assert form.status_code == 200 and 'action="/console/login"' in form.text
    refused = await signed_out.get("/console/api/state")
    assert refused.status_code == 401 and refused.json() == {"error": "sign in first, at /console"}

    response = await signed_out.post("/console/login", data={"name": "alice", "key": KEY})
    cookie = response.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/console", "Max-Age=43200"):
        assert attribute.casefold() in cookie.casefold(), cookie
    assert "secure" not in cookie.casefold()  # plain http on loopback: a Secure cookie would never come back
    state = await signed_out.get("/console/api/state")
    assert state.status_code == 200
    assert state.json() == {"operator": "alice", "loopbackOnly": False, "agents": [state.json()["agents"][0]]}
    assert state.json()["agents"][0]["name"] == "builder"

    events = await signed_out.get("/console/api/events")
    assert events.headers["content-type"].startswith("text/event-stream")
    assert events.text.startswith("retry: 2000\nevent: state\ndata: {")


async def test_a_wrong_key_is_refused_with_a_sentence_after_a_pause(signed_out: httpx.AsyncClient) -> None:
    started = time.monotonic()
    response = await signed_out.post("/console/login", data={"name": "alice", "key": "guess"})
    assert time.monotonic() - started >= FAILED_SIGN_IN_DELAY
    assert response.status_code == 401
    assert "That name and key are not an operator&#x27;s of this registry." in response.text
    assert "set-cookie" not in response.headers
    assert (await signed_out.get("/console/api/state")).status_code == 401


async def test_actions_need_the_sessions_csrf_token_and_no_foreign_origin(signed_out: httpx.AsyncClient) -> None:
    token = await sign_in(signed_out)
    path = "/console/api/approvals/builder/approval-1"
    allow = {"option": "allow_once"}
    cases = [
        ({}, 403, "the page's CSRF token is missing or wrong: reload the console and try again"),
        ({"x-csrf-token": "wrong"}, 403, "the page's CSRF token is missing or wrong: reload the console and try again"),
        (
            {"x-csrf-token": token, "origin": "http://evil.example"},
            403,
            "a request from 'http://evil.example' is not one from this console's own page",
        ),
        (
            {"x-csrf-token": token, "sec-fetch-site": "cross-site", "origin": "null"},
            403,
            "a request from another site (cross-site) is not one from this console's own page",
        ),
        (
            {"x-csrf-token": token, "origin": "null"},
            403,
            "a request of unknown origin is not one from this console's page",
        ),
    ]
    for headers, status, sentence in cases:
        response = await signed_out.post(path, json=allow, headers=headers)
        assert (response.status_code, response.json()) == (status, {"error": sentence}), headers
    # The page sends no referrer, so the browser's Origin is "null"; Sec-Fetch-Site says the page is this one.
    same_origin = {"x-csrf-token": token, "origin": "null", "sec-fetch-site": "same-origin"}
    bad = await signed_out.post(path, json={"option": "always"}, headers=same_origin)
    assert bad.status_code == 400 and "allow_once, allow_context, deny" in bad.json()["error"]
    nobody = await signed_out.post("/console/api/approvals/nobody/a-1", json=allow, headers=same_origin)
    assert nobody.json() == {"error": "no agent named 'nobody' in this registry"} and nobody.status_code == 404
    named = {"x-csrf-token": token, "origin": REGISTRY}
    unreachable = await signed_out.post(path, json=allow, headers=named)  # past the gate, to the agent
    assert unreachable.status_code == 502 and unreachable.json()["error"].startswith("agent 'builder': not reachable")

    assert (await signed_out.post("/console/logout", data={"csrf": "wrong"})).status_code == 403
    out = await signed_out.post("/console/logout", data={"csrf": token})
    assert out.status_code == 303 and "a2a_console=" in out.headers["set-cookie"]
    assert (await signed_out.get("/console/api/state")).status_code == 401


async def test_without_operators_only_this_machine_is_answered_and_the_page_says_so() -> None:
    async with asyncio.timeout(30), console_app({}) as app:
        elsewhere = httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=ELSEWHERE), base_url=REGISTRY)
        async with elsewhere:
            for path in ("/console", "/console/api/state", "/console/static/console.js"):
                refused = await elsewhere.get(path)
                assert refused.status_code == 403 and "answers only on the registry's own machine" in refused.text
            assert (await elsewhere.get("/agents")).status_code == 200  # the registry itself stays open

        local = httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=LOOPBACK), base_url=REGISTRY)
        async with local:
            rebound = await local.get("/console/api/state", headers={"host": "attacker.example"})
            assert rebound.status_code == 403 and "only under a loopback name" in rebound.json()["error"]
            page = await local.get("/console")
            assert "No operators are configured" in page.text and 'action="/console/login"' not in page.text
            state = (await local.get("/console/api/state")).json()
            assert (state["operator"], state["loopbackOnly"]) == ("local", True)
            decided = await local.post("/console/api/approvals/builder/approval-1", json={"option": "deny"})
            assert decided.status_code == 403 and "CSRF" in decided.json()["error"]


ROUTES = [
    ("GET", "/console"),
    ("GET", "/console/static/console.js"),
    ("GET", "/console/static/console.css"),
    ("GET", "/console/static/secrets.txt"),
    ("GET", "/console/api/state"),
    ("GET", "/console/api/events"),
    ("GET", "/console/api/audit"),
    ("POST", "/console/api/approvals/builder/approval-1"),
    ("POST", "/console/login"),
    ("POST", "/console/logout"),
    ("GET", "/console/no-such-page"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("signed", [False, True])
async def test_every_console_response_carries_the_security_headers(
    signed_out: httpx.AsyncClient, method: str, path: str, signed: bool
) -> None:
    if signed:
        await sign_in(signed_out)
    response = await signed_out.request(method, path)
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (response.status_code, name)
    assert "content-security-policy" not in (await signed_out.get("/agents")).headers


async def test_the_page_has_no_inline_script_or_style(signed_out: httpx.AsyncClient) -> None:
    """The policy allows only the console's own files: anything inline would be blocked by the browser."""
    form = (await signed_out.get("/console")).text
    await sign_in(signed_out)
    for html in (form, (await signed_out.get("/console")).text):
        assert "<style" not in html and re.search(r"\s(style|on\w+)=", html) is None
        assert all(tag.startswith(' src="/console/static/') for tag in html.split("<script")[1:])

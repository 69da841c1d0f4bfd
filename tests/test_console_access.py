"""The console's gate, pure and fast: the fleet file's operators and console keys, sign-in, sessions, CSRF and
Origin checks, the one-time sign-in link without operators (no peer trusted for its address), and the security
headers on every console response.

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
from a2a_wrapper.fleet.console.links import SignInLinks
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
async def console_app(operators: dict[str, str], gate: Gate | None = None) -> AsyncIterator[Any]:
    """The registry app with its console, its hub running (its feed of the stand-in finds nobody on port 9)."""
    agents = [StandIn()]
    hub = Hub(lambda: agents)
    async with hub.running():
        hub.close()  # every browser's event stream sends the state once and ends, as at the registry's shutdown
        yield build_registry_app(lambda: agents, ConsoleRoutes(hub, gate or Gate(Operators(operators))).routes())


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
    assert state.json() == {"operator": "alice", "agents": [state.json()["agents"][0]]}
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


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (["issue", "redeem"], None),
        (
            ["issue", "redeem", "redeem"],
            "This sign-in link no longer signs in: it was used already: each link signs in once.",
        ),
        (["issue", "wait 899", "redeem"], None),
        (
            ["issue", "wait 900", "redeem"],
            "This sign-in link no longer signs in: it expired (15 minutes after it was made).",
        ),
        (
            ["issue", "wait 900", "redeem", "redeem"],
            "This sign-in link no longer signs in: it expired (15 minutes after",
        ),
        (
            ["issue", "issue (another)", "redeem"],
            "This sign-in link no longer signs in: a newer sign-in link replaced it.",
        ),
        (["issue", "redeem a guess"], "This is not a sign-in link of this console."),
        (["redeem a guess"], "This is not a sign-in link of this console."),
    ],
)
def test_a_sign_in_link_signs_in_once_within_its_lifetime(steps: list[str], expected: str | None) -> None:
    now = [1000.0]
    links = SignInLinks(clock=lambda: now[0])
    token, said = "", None
    for step in steps:
        if step == "issue":
            token = links.issue()
        elif step == "issue (another)":
            links.issue()
        elif step.startswith("wait "):
            now[0] += float(step.split()[1])
        else:
            said = links.redeem("a-guess" if step == "redeem a guess" else token)
    assert said == expected if expected is None else said is not None and said.startswith(expected), said


@asynccontextmanager
async def without_operators(clock: list[float]) -> AsyncIterator[tuple[SignInLinks, Any]]:
    """A console with no operators, its links on `clock`; the app."""
    gate = Gate(Operators({}))
    assert gate.links is not None
    gate.links = SignInLinks(clock=lambda: clock[0])
    async with asyncio.timeout(30), console_app({}, gate) as app:
        yield gate.links, app


def browser(app: Any, peer: tuple[str, int] = LOOPBACK) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=peer), base_url=REGISTRY)


async def test_without_operators_loopback_is_not_trusted_and_the_one_time_link_signs_in_once() -> None:
    now = [1000.0]
    async with without_operators(now) as (links, app):
        token = links.issue()
        async with browser(app) as local:  # this machine, without a session: nobody
            page = await local.get("/console")
            assert page.status_code == 200 and "one-time link the fleet printed" in page.text
            assert 'name="csrf-token"' not in page.text and 'action="/console/login"' not in page.text
            refused = await local.get("/console/api/state")
            assert refused.status_code == 401 and refused.json() == {"error": "sign in first, at /console"}
            headers = {"x-csrf-token": "x", "origin": REGISTRY, "sec-fetch-site": "same-origin"}
            decided = await local.post("/console/api/approvals/builder/approval-1", json={"option": "allow_once"})
            assert decided.status_code == 401
            decided = await local.post(
                "/console/api/approvals/builder/approval-1", json={"option": "deny"}, headers=headers
            )
            assert decided.status_code == 401
            form = await local.post("/console/login", data={"name": "owner", "key": ""})
            assert form.status_code == 403 and "signs in with the fleet&#x27;s link" in form.text
            assert (await local.get("/console/static/console.js")).status_code == 200  # the same file for anyone

        async with browser(app, ELSEWHERE) as remote:  # the link is the credential, wherever the browser is
            signed = await remote.get("/console/signin", params={"token": token})
            assert signed.status_code == 303 and signed.headers["location"] == "/console"
            cookie = signed.headers["set-cookie"]
            for attribute in ("a2a_console=", "HttpOnly", "SameSite=strict", "Path=/console", "Max-Age=43200"):
                assert attribute.casefold() in cookie.casefold(), cookie
            assert "secure" not in cookie.casefold()  # plain http: a Secure cookie would never come back
            state = await remote.get("/console/api/state")
            assert state.status_code == 200 and state.json()["operator"] == "owner"
            page = await remote.get("/console")
            assert "Signed in as owner" in page.text and "one-time" in page.text

        async with browser(app) as second:
            again = await second.get("/console/signin", params={"token": token})
            assert again.status_code == 401 and "set-cookie" not in again.headers
            assert "This sign-in link no longer signs in: it was used already" in again.text
            assert (await second.get("/console/api/state")).status_code == 401

            expiring = links.issue()
            now[0] += links.lifetime
            late = await second.get("/console/signin", params={"token": expiring})
            assert late.status_code == 401 and "it expired (15 minutes after it was made)" in late.text
            guessed = await second.get("/console/signin", params={"token": "a-guess"})
            assert guessed.status_code == 401 and "not a sign-in link of this console" in guessed.text
            assert (await second.get("/console/api/state")).status_code == 401


async def test_over_tls_the_sessions_cookie_is_secure() -> None:
    async with without_operators([0.0]) as (links, app):
        transport = httpx.ASGITransport(app=app, client=LOOPBACK)
        async with httpx.AsyncClient(transport=transport, base_url="https://127.0.0.1:8800") as client:
            signed = await client.get("/console/signin", params={"token": links.issue()})
    assert signed.status_code == 303 and "secure" in signed.headers["set-cookie"].casefold()


async def test_with_operators_there_is_no_sign_in_link(signed_out: httpx.AsyncClient) -> None:
    response = await signed_out.get("/console/signin", params={"token": "anything"})
    assert response.status_code == 404 and "it has no sign-in links" in response.text


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
    ("GET", "/console/signin"),
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

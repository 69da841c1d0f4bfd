"""Inbound auth over the real served agent: keys from the environment, 401s, the card, tasks kept per caller."""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.helpers import new_text_message
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.types import Role, SendMessageRequest
from pydantic import ValidationError
from starlette.requests import Request

from a2a_wrapper.config.settings import AgentSettings, AuthSettings, CardSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.auth import CallContextBuilder, Callers
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, task_answer, user_message
from tests.helpers.auth import AUTH, CI_KEY, KEYS, ORCHESTRATOR_KEY, api_key, bearer
from tests.helpers.cli import a2a_wrap, check_output

UNAUTHENTICATED_DETAILS = [  # as a2a-sdk details its errors, in this product's domain: the reason is not A2A's
    {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "UNAUTHENTICATED",
        "domain": "a2a-wrapper",
        "metadata": {},
    }
]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def guarded(
    make_settings: SettingsFactory, offline_model: OfflineModel, keys: None
) -> AsyncIterator[ServedAgent]:
    async with serving(make_settings(auto_approve=True, auth=AUTH), offline_model) as served:
        yield served


async def call(
    http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return await http.post(url, json=body, headers={**V1, **headers})


async def result(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
    answer = (await call(http, url, method, params, bearer(key))).json()
    assert "result" in answer, answer
    return dict(answer["result"])


def message_03(text: str) -> dict[str, Any]:
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


# -- the card and the open paths


@pytest.mark.slow
async def test_card_and_health_are_open_and_the_card_declares_both_schemes(
    guarded: ServedAgent, http: httpx.AsyncClient
) -> None:
    response = await http.get(guarded.url + "/.well-known/agent-card.json")
    assert response.status_code == 200
    card = response.json()
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"] | {"description": ""} == {
        "location": "header",
        "name": "X-API-Key",
        "description": "",
    }
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}, {"schemes": {"apiKey": {}}}]
    assert card["security"] == [{"bearer": []}, {"apiKey": []}]  # the same, for 0.3 clients
    assert not any(secret in response.text for secret in (*KEYS, *KEYS.values(), "orchestrator"))
    health = await http.get(guarded.url + "/health")
    assert health.status_code == 200 and health.json()["frontend"] == "ok"


def test_without_callers_the_card_declares_no_security() -> None:
    card = build_card(AgentSettings(card=CardSettings(name="open")))
    assert not card.security_schemes and not card.security_requirements


# -- refusals

MISSING, INVALID = "Bearer", 'Bearer error="invalid_token"'


def latin1(value: str) -> bytes:
    """A header value as the bytes sent (httpx would refuse a str outside ASCII)."""
    return value.encode("latin-1")


REFUSED = {  # what the request carries: the challenge it gets back
    "no key": ({}, MISSING),
    "a wrong bearer token": (bearer("not-a-key"), INVALID),
    "a wrong API key": (api_key("not-a-key"), INVALID),
    "a right key in an unknown scheme": ({"Authorization": f"Basic {ORCHESTRATOR_KEY}"}, MISSING),
    "a right key without a scheme": ({"Authorization": ORCHESTRATOR_KEY}, MISSING),
    "two callers' keys at once": ({**bearer(ORCHESTRATOR_KEY), **api_key(CI_KEY)}, INVALID),
    "a right key and a wrong one": ({**bearer(ORCHESTRATOR_KEY), **api_key("not-a-key")}, INVALID),
    # only HTTP whitespace (space, tab) surrounds a value: a no-break space or a next-line is part of the key sent
    "a right key and a no-break space": ({"Authorization": latin1(f"Bearer {ORCHESTRATOR_KEY}\xa0")}, INVALID),
    "a right API key and a next-line": ({"X-API-Key": latin1(f"{CI_KEY}\x85")}, INVALID),
}


@pytest.mark.slow
async def test_requests_without_a_valid_key_get_401(
    guarded: ServedAgent, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sent = await result(http, guarded.jsonrpc, "SendMessage", {"message": user_message("hello")}, ORCHESTRATOR_KEY)
    task = sent["task"]
    refused = "this must never reach the model"
    send_1_0 = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(refused)}}
    attempts = {
        "JSON-RPC SendMessage": ("POST", guarded.jsonrpc, V1, send_1_0),
        "JSON-RPC 0.3 message/send": ("POST", guarded.jsonrpc, {}, message_03(refused)),
        "REST message:send": ("POST", guarded.rest + "/message:send", V1, {"message": user_message(refused)}),
        "REST GET /tasks/{id}": ("GET", f"{guarded.rest}/tasks/{task['id']}", V1, None),
        "REST GET /tasks": ("GET", guarded.rest + "/tasks", V1, None),
        "REST 0.3 GET /v1/tasks/{id}": ("GET", f"{guarded.rest}/v1/tasks/{task['id']}", {}, None),
        "an unknown path": ("GET", guarded.url + "/no/such/path", {}, None),
    }
    for carried, (headers, challenge) in REFUSED.items():
        for what, (verb, url, version, body) in attempts.items():
            response = await http.request(verb, url, json=body, headers={**version, **headers})
            assert response.status_code == 401, (what, carried, response.text)
            assert response.headers["WWW-Authenticate"] == challenge, (what, carried)
            answer = response.json()
            if url == guarded.jsonrpc:
                assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", None, -32000)
                assert answer["error"]["data"] == UNAUTHENTICATED_DETAILS
            else:
                assert (answer["error"]["code"], answer["error"]["status"]) == (401, "UNAUTHENTICATED")
                assert answer["error"]["details"] == UNAUTHENTICATED_DETAILS
    requests = (await http.get(guarded.model.url + "/control/requests")).json()
    assert not any(refused in str(r) for r in requests)
    assert not any(key in caplog.text for key in KEYS.values())


@pytest.mark.slow
async def test_the_key_is_accepted_as_bearer_or_api_key(guarded: ServedAgent, http: httpx.AsyncClient) -> None:
    answer = await call(http, guarded.jsonrpc, "SendMessage", {"message": user_message("by bearer")}, bearer(CI_KEY))
    assert task_answer(answer.json()["result"]["task"]) == "Offline model reply: by bearer"
    sent = await http.post(
        guarded.rest + "/message:send", json={"message": user_message("by api key")}, headers={**V1, **api_key(CI_KEY)}
    )
    assert sent.status_code == 200, sent.text
    task_id = sent.json()["task"]["id"]
    fetched = await http.get(f"{guarded.rest}/tasks/{task_id}", headers={**V1, **api_key(CI_KEY)})
    assert fetched.json()["status"]["state"] == "TASK_STATE_COMPLETED"
    old = (await http.post(guarded.jsonrpc, json=message_03("old client"), headers=api_key(CI_KEY))).json()
    assert old["result"]["status"]["state"] == "completed"


class KeyFor(CredentialService):
    def __init__(self, scheme: str, key: str) -> None:
        self._scheme = scheme
        self._key = key

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        return self._key if security_scheme_name == self._scheme else None


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["bearer", "apiKey"])
async def test_the_sdk_client_sends_the_key_the_card_asks_for(
    guarded: ServedAgent, http: httpx.AsyncClient, scheme: str
) -> None:
    # the caller's own backend up first: its start can take longer than the SDK client's 5 s on a busy machine
    await result(http, guarded.jsonrpc, "SendMessage", {"message": user_message("ready?")}, ORCHESTRATOR_KEY)
    interceptor = AuthInterceptor(KeyFor(scheme, ORCHESTRATOR_KEY))
    client = await create_client(guarded.url, ClientConfig(streaming=True), interceptors=[interceptor])
    async with client:
        request = SendMessageRequest(message=new_text_message("from the sdk", role=Role.ROLE_USER))
        text = ""
        async for event in client.send_message(request):
            if event.HasField("artifact_update"):
                text += "".join(p.text for p in event.artifact_update.artifact.parts)
    assert text == "Offline model reply: from the sdk"


# -- tasks belong to the caller who started them


async def state_once_started(http: httpx.AsyncClient, url: str, task_id: str) -> str:
    """The owner's view of a task sent with returnImmediately, once it has left `submitted` (its turn starts a
    moment after the answer; on a busy machine the other caller's refusals can all come first)."""
    for _ in range(100):
        task = await result(http, url, "GetTask", {"id": task_id}, ORCHESTRATOR_KEY)
        if task["status"]["state"] != "TASK_STATE_SUBMITTED":
            return str(task["status"]["state"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} still submitted after 10 s")


@pytest.mark.slow
async def test_a_task_is_seen_and_cancelled_only_by_its_caller(guarded: ServedAgent, http: httpx.AsyncClient) -> None:
    # the caller's own backend up first (one per caller, started on demand): a task that waits for it is `submitted`
    await result(http, guarded.jsonrpc, "SendMessage", {"message": user_message("ready?")}, ORCHESTRATOR_KEY)
    params = {"message": user_message("[[slow:5]] mine"), "configuration": {"returnImmediately": True}}
    task_id = (await result(http, guarded.jsonrpc, "SendMessage", params, ORCHESTRATOR_KEY))["task"]["id"]

    for method, request in [
        ("GetTask", {"id": task_id}),
        ("CancelTask", {"id": task_id}),
        ("SendMessage", {"message": user_message("hijack", task_id=task_id)}),
        ("SubscribeToTask", {"id": task_id}),
    ]:
        answer = (await call(http, guarded.jsonrpc, method, request, bearer(CI_KEY))).json()
        assert answer["error"]["code"] == -32001, (method, answer)
    rest = await http.get(f"{guarded.rest}/tasks/{task_id}", headers={**V1, **api_key(CI_KEY)})
    assert rest.status_code == 404
    theirs = await result(http, guarded.jsonrpc, "ListTasks", {}, CI_KEY)
    assert task_id not in [t["id"] for t in theirs.get("tasks", [])]

    mine = await result(http, guarded.jsonrpc, "ListTasks", {}, ORCHESTRATOR_KEY)
    assert task_id in [t["id"] for t in mine["tasks"]]
    still = await state_once_started(http, guarded.jsonrpc, task_id)
    assert still == "TASK_STATE_WORKING"
    canceled = await result(http, guarded.jsonrpc, "CancelTask", {"id": task_id}, ORCHESTRATOR_KEY)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


# -- keys from the environment: fail closed


def write_config(folder: Path) -> Path:
    path = folder / "agent.yaml"
    path.write_text(yaml.safe_dump({"card": {"name": "guarded"}, "auth": AUTH}))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_a_missing_key_stops_the_start_naming_caller_and_variable(
    value: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, keys: None
) -> None:
    if value is None:
        monkeypatch.delenv("CI_AGENT_KEY")
    else:
        monkeypatch.setenv("CI_AGENT_KEY", value)
    with pytest.raises(ValidationError, match=r"caller 'ci': environment variable CI_AGENT_KEY is unset or empty"):
        AgentSettings(card=CardSettings(name="guarded"), auth=AUTH)
    checked = a2a_wrap("check", "--config", str(write_config(tmp_path)), env={"CI_AGENT_KEY": value or ""})
    assert checked.returncode != 0
    assert "auth.callers.1" in checked.stderr and "caller 'ci'" in checked.stderr and "CI_AGENT_KEY" in checked.stderr
    assert "Traceback" not in checked.stderr


def test_a_key_removed_before_the_front_end_starts_is_an_error(monkeypatch: pytest.MonkeyPatch, keys: None) -> None:
    settings = AuthSettings.model_validate(AUTH)
    monkeypatch.delenv("ORCHESTRATOR_KEY")
    with pytest.raises(ConfigError, match="caller 'orchestrator': environment variable ORCHESTRATOR_KEY"):
        Callers.from_settings(settings)


@pytest.mark.parametrize(
    ("callers", "problem"),
    [
        ([{"name": "a", "key_env": "ORCHESTRATOR_KEY"}, {"name": "a", "key_env": "CI_AGENT_KEY"}], "name a appears"),
        ([{"name": "a", "key_env": "CI_AGENT_KEY"}, {"name": "b", "key_env": "CI_AGENT_KEY"}], "key_env CI_AGENT_KEY"),
        ([{"name": "a b", "key_env": "CI_AGENT_KEY"}], "name"),
        ([{"name": "a", "key_env": "CI-AGENT-KEY"}], "key_env"),
        ([{"name": "a", "key_env": "CI_AGENT_KEY", "key": "inline"}], "key"),
    ],
)
def test_callers_that_cannot_be_told_apart_are_refused(callers: list[dict[str, str]], problem: str, keys: None) -> None:
    with pytest.raises(ValidationError, match=problem):
        AuthSettings.model_validate({"callers": callers})


def test_two_callers_with_the_same_key_are_refused(monkeypatch: pytest.MonkeyPatch, keys: None) -> None:
    monkeypatch.setenv("CI_AGENT_KEY", ORCHESTRATOR_KEY)
    with pytest.raises(ConfigError, match="'orchestrator' and 'ci' have the same key"):
        Callers.from_settings(AuthSettings.model_validate(AUTH))


@pytest.mark.slow
def test_check_shows_the_variables_never_the_keys(tmp_path: Path) -> None:
    checked = a2a_wrap("check", "--config", str(write_config(tmp_path)), env=KEYS)
    assert checked.returncode == 0, checked.stderr
    config, card = check_output(checked.stdout)
    assert config["auth"] == AUTH
    assert set(card["securitySchemes"]) == {"bearer", "apiKey"}
    assert not any(key in checked.stdout + checked.stderr for key in KEYS.values())


def test_the_call_context_carries_the_caller_but_not_the_key() -> None:
    headers = [(b"authorization", b"Bearer k1"), (b"x-api-key", b"k2"), (b"a2a-version", b"1.0")]
    request = Request({"type": "http", "method": "POST", "path": "/a2a/jsonrpc", "headers": headers})
    assert DefaultServerCallContextBuilder().build(request).state["headers"]["authorization"] == "Bearer k1"
    assert CallContextBuilder().build(request).state["headers"] == {"a2a-version": "1.0"}

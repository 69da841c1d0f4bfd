"""The operator endpoint: the fleet's console reads an agent's waiting approvals and answers them.

Real OpenCode on the offline model, a real HTTP client with the console's key: a `touch` the shield puts to a
person shows on the disk whether the answer let it run; the caller's side is watched with SubscribeToTask.
"""

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from pydantic import ValidationError

from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.fleet import load_fleet
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.permissions.approvals import CONSOLE_ANSWERS
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import (
    V1,
    answer_text,
    approval_of,
    data_parts,
    final_state,
    status_text,
    stream,
    user_message,
)
from tests.helpers.auth import bearer
from tests.helpers.cli import a2a_wrap
from tests.helpers.secrets import GITHUB
from tests.helpers.tool_messages import answer_params, bash_params

CONSOLE_KEY = "console-key-7d21c4"
TOUCH = "touch approved.txt"
ASKED, COMPLETED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"


@pytest.fixture
def console_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WRAP_CONSOLE_KEY", CONSOLE_KEY)


@pytest.fixture
async def console() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60, headers=bearer(CONSOLE_KEY)) as client:
        yield client


@pytest.fixture
def settings(make_settings: SettingsFactory, console_key: None) -> AgentSettings:
    return make_settings(shield=ShieldConfig())  # every command asks


def operator(served: ServedAgent, path: str) -> str:
    return f"{served.url}/operator/v1{path}"


async def asked(http: httpx.AsyncClient, served: ServedAgent, command: str = TOUCH) -> tuple[dict[str, Any], str]:
    """The caller's bash call, ended in input-required: its task, and the approval it waits on."""
    events = await stream(http, served.jsonrpc, bash_params(command))
    assert final_state(events) == ASKED, events
    return events[0]["task"], approval_of(events)["id"]


class Subscription:
    """SubscribeToTask's events until the stream ends: what a caller watching the task sees."""

    def __init__(self, http: httpx.AsyncClient, served: ServedAgent, task_id: str) -> None:
        self._body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        self._http, self._url = http, served.jsonrpc
        self.open = asyncio.Event()
        self.events: list[dict[str, Any]] = []

    async def follow(self) -> list[dict[str, Any]]:
        async with self._http.stream("POST", self._url, json=self._body, headers=V1) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    self.events.append(json.loads(line[5:])["result"])
                    self.open.set()
        return self.events


async def audited(console: httpx.AsyncClient, served: ServedAgent, query: str = "") -> list[dict[str, Any]]:
    """The agent's audit entries, newest first, as the console reads them."""
    return list((await console.get(operator(served, f"/audit{query}"))).json()["entries"])


async def audited_when(
    console: httpx.AsyncClient, served: ServedAgent, ready: Callable[[list[dict[str, Any]]], bool], query: str = ""
) -> list[dict[str, Any]]:
    """The audit once `ready` holds for it: a console's answer is applied to the turn, then audited, behind its 200."""
    async with asyncio.timeout(30):
        while not ready(entries := await audited(console, served, query)):  # noqa: ASYNC110 (polled over HTTP)
            await asyncio.sleep(0.05)
    return entries


async def answer(console: httpx.AsyncClient, served: ServedAgent, approval: str, **body: Any) -> httpx.Response:
    return await console.post(operator(served, f"/approvals/{approval}"), json=body)


@pytest.mark.slow
async def test_the_console_sees_the_waiting_approval_and_its_allow_runs_the_command(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served)
        state = (await console.get(operator(served, "/state"))).json()
        assert state["agent"] == "test-agent" and state["approvers"] == ["caller", "console"]
        [waiting] = state["approvals"]
        assert waiting["id"] == approval and waiting["type"] == "approval" and waiting["taskId"] == task["id"]
        assert waiting["tool"]["command"] == TOUCH and waiting["class"] == "execute" and waiting["rule"]
        assert [option["id"] for option in waiting["options"]] == ["allow_once", "allow_context", "deny"]
        [live] = state["tasks"]
        assert live["taskId"] == task["id"] and live["state"] == "input-required"

        watching = Subscription(http, served, task["id"])
        followed = asyncio.create_task(watching.follow())
        await watching.open.wait()
        decided = await answer(console, served, approval, option="allow_once", operator="alice")
        assert decided.status_code == 200, decided.text
        assert decided.json() == {"id": approval, "option": "allow_once", "decidedBy": "console:alice"}

        events = await followed
        assert final_state(events) == COMPLETED
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "allow" and permission["command"] == TOUCH
        assert (served.workdir / "approved.txt").exists()

        again = await answer(console, served, approval, option="deny", operator="bob")
        assert again.status_code == 409
        assert again.json()["error"] == f"Approval {approval} was already answered by console:alice (allow_once)."
        state = (await console.get(operator(served, "/state"))).json()
        assert state["approvals"] == [] and state["tasks"] == []


@pytest.mark.slow
async def test_a_deny_from_the_console_keeps_the_command_from_running_and_the_audit_names_the_operator(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served)
        watching = Subscription(http, served, task["id"])
        followed = asyncio.create_task(watching.follow())
        await watching.open.wait()
        decided = await answer(console, served, approval, option="deny", operator="bob")
        assert decided.json() == {"id": approval, "option": "deny", "decidedBy": "console:bob"}
        events = await followed
        assert final_state(events) == COMPLETED
        assert [p["decision"] for p in data_parts(events, "permission")] == ["deny"]
        assert not (served.workdir / "approved.txt").exists()

        audit = (await console.get(operator(served, "/audit"), params={"decision": "deny"})).json()
        [entry] = [e for e in audit["entries"] if e["target"] == TOUCH]
        assert entry["decidedBy"] == "console:bob" and entry["taskId"] == task["id"] and entry["tool"] == "bash"
        allowed = (await console.get(operator(served, "/audit"), params={"decision": "allow"})).json()["entries"]
        assert [e for e in allowed if e["tool"] == "bash"] == []
        for query, sentence in [({"decision": "maybe"}, "decision must be"), ({"limit": "1001"}, "limit must be")]:
            refused = await console.get(operator(served, "/audit"), params=query)
            assert refused.status_code == 400 and refused.json()["error"].startswith(sentence)


@pytest.mark.slow
async def test_a_callers_answer_after_the_consoles_is_refused_naming_the_operator_and_the_turn_goes_on(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served, "sleep 2 && touch late.txt")
        decided = await answer(console, served, approval, option="allow_once", operator="alice")
        assert decided.status_code == 200
        events = await stream(http, served.jsonrpc, answer_params(task, "no"))  # while the command sleeps
        refused = f"Approval {approval} was already answered by console:alice (allow_once)."
        assert refused in [status_text(e["statusUpdate"]["status"]) for e in events if "statusUpdate" in e]
        assert final_state(events) == COMPLETED, "the caller's request follows the turn the console resumed"
        assert (served.workdir / "late.txt").exists()
        [entry] = [e for e in (await console.get(operator(served, "/audit"))).json()["entries"] if e["tool"] == "bash"]
        assert entry["decidedBy"] == "console:alice"


@pytest.mark.slow
async def test_the_console_cannot_answer_after_the_caller_nor_where_only_callers_answer(
    make_settings: SettingsFactory,
    console_key: None,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    console: httpx.AsyncClient,
) -> None:
    async with asyncio.timeout(120), serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        task, approval = await asked(http, served)
        assert final_state(await stream(http, served.jsonrpc, answer_params(task, "yes"))) == COMPLETED
        late = await answer(console, served, approval, option="deny", operator="alice")
        assert late.status_code == 409
        assert late.json()["error"] == f"Approval {approval} was already answered by caller (allow_once)."
        assert (await answer(console, served, "apr_unknown", option="deny", operator="alice")).status_code == 404

    settings = make_settings(shield=ShieldConfig(approvers=["caller"]))
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served, "touch callers-only.txt")
        assert (await console.get(operator(served, "/state"))).json()["approvers"] == ["caller"]
        refused = await answer(console, served, approval, option="allow_once", operator="alice")
        assert refused.status_code == 403 and "callers only" in refused.json()["error"]
        assert final_state(await stream(http, served.jsonrpc, answer_params(task, "no"))) == COMPLETED
        assert not (served.workdir / "callers-only.txt").exists()


@pytest.mark.slow
async def test_where_only_the_console_answers_the_callers_yes_leaves_the_task_waiting(
    make_settings: SettingsFactory,
    console_key: None,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    console: httpx.AsyncClient,
) -> None:
    settings = make_settings(shield=ShieldConfig(approvers=["console"]))
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        task, approval = await asked(http, served)
        events = await stream(http, served.jsonrpc, answer_params(task, "yes"))
        assert final_state(events) == ASKED
        told = status_text(events[-1]["statusUpdate"]["status"])
        assert CONSOLE_ANSWERS in told and "Answer yes" not in told, told  # never told to answer what it cannot
        assert not (served.workdir / "approved.txt").exists()
        assert (await answer(console, served, approval, option="allow_once", operator="alice")).status_code == 200
        async with asyncio.timeout(30):
            while not (served.workdir / "approved.txt").exists():  # noqa: ASYNC110 (the disk offers no event)
                await asyncio.sleep(0.05)


async def read_states(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The `state` events of the operator's event stream, as they come."""
    event = None
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:") and event == "state":
            yield json.loads(line[5:])


@pytest.mark.slow
async def test_the_event_stream_sends_a_state_when_an_approval_appears_and_when_it_is_answered(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    async with (
        asyncio.timeout(120),
        serving(settings, offline_model) as served,
        console.stream("GET", operator(served, "/events")) as response,
    ):
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        states = read_states(response)
        first = await anext(states)
        assert first["approvals"] == [] and first["tasks"] == []
        caller = asyncio.create_task(asked(http, served))
        state = first
        while not state["approvals"]:
            state = await anext(states)
            assert state["version"] > first["version"]
        [waiting] = state["approvals"]
        assert waiting["tool"]["command"] == TOUCH
        assert (await caller)[1] == waiting["id"]
        await answer(console, served, waiting["id"], option="allow_once", operator="alice")
        while state["approvals"] or state["tasks"]:
            state = await anext(states)
        assert (served.workdir / "approved.txt").exists()


@pytest.mark.slow
async def test_without_the_right_key_the_endpoint_refuses_and_without_a_key_set_it_is_closed(
    make_settings: SettingsFactory,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("A2A_WRAP_CONSOLE_KEY", raising=False)
    async with asyncio.timeout(120), serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        closed = await http.get(operator(served, "/state"), headers=bearer(CONSOLE_KEY))
        assert closed.status_code == 403 and "A2A_WRAP_CONSOLE_KEY" in closed.json()["error"]

    monkeypatch.setenv("A2A_WRAP_CONSOLE_KEY", CONSOLE_KEY)
    async with asyncio.timeout(120), serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        for headers in [{}, bearer("not-the-key"), {"Authorization": f"Basic {CONSOLE_KEY}"}]:
            refused = await http.get(operator(served, "/state"), headers=headers)
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
            assert refused.json()["error"]
        padded = await http.get(operator(served, "/state"), headers={"Authorization": f"Bearer \t{CONSOLE_KEY}"})
        assert padded.status_code == 200
        for body, sentence in [
            (b"[]", "The body must be a JSON object"),
            (json.dumps({"option": "sometimes", "operator": "alice"}).encode(), "option must be one of"),
            (json.dumps({"option": "deny", "operator": ""}).encode(), "operator must be"),
        ]:
            bad = await http.post(operator(served, "/approvals/apr_x"), content=body, headers=bearer(CONSOLE_KEY))
            assert bad.status_code == 400 and bad.json()["error"].startswith(sentence)


@pytest.mark.parametrize(
    ("shield", "key", "error"),
    [
        ({"approvers": []}, CONSOLE_KEY, "shield.approvers"),
        ({"approvers": ["caller", "boss"]}, CONSOLE_KEY, "shield.approvers.1"),
    ],
)
def test_approvers_that_no_one_can_be_are_a_config_error(
    shield: dict[str, Any], key: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WRAP_CONSOLE_KEY", key)
    with pytest.raises(ValidationError, match=re.escape(error)):
        AgentSettings(card={"name": "a"}, shield=shield)


@pytest.mark.slow  # an a2a-wrap process
def test_an_agent_only_the_console_answers_starts_only_with_the_console_key(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"card": {"name": "a"}, "shield": {"approvers": ["console"]}}))
    result = a2a_wrap("serve", "--config", str(config), "--state-dir", str(tmp_path / "state"))
    assert result.returncode != 0
    assert "agent 'a': shield.approvers: only the console answers, but its key's environment variable" in result.stderr
    assert "A2A_WRAP_CONSOLE_KEY (console.key_env) is unset or empty" in result.stderr
    assert "Traceback" not in result.stderr and " started " not in result.stderr  # refused before any backend
    fleet = load_fleet([config])  # a fleet reads it before it hands the agent the run's key: no error there
    assert fleet.agents[0].settings.shield is not None and fleet.agents[0].settings.shield.approvers == ("console",)


@pytest.mark.parametrize(
    ("shield", "key", "approvers"),
    [
        (None, CONSOLE_KEY, ("caller", "console")),
        (None, "", ("caller",)),
        ({"approvers": ["console"]}, CONSOLE_KEY, ("console",)),
        ({"approvers": ["caller"]}, CONSOLE_KEY, ("caller",)),
    ],
)
def test_who_answers_by_default_depends_on_the_console_key(
    shield: dict[str, Any] | None, key: str, approvers: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WRAP_CONSOLE_KEY", key)
    assert AgentSettings(card={"name": "a"}, shield=shield).approvers == approvers


@pytest.mark.slow
async def test_the_console_answers_a_question_with_text(
    make_settings: SettingsFactory,
    console_key: None,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    console: httpx.AsyncClient,
) -> None:
    question = {
        "questions": [
            {"question": "Which color?", "header": "Color", "options": [{"label": "Red", "description": "warm"}]}
        ]
    }
    message = {"message": user_message(f"[[question:{json.dumps(question)}]]")}
    async with asyncio.timeout(120), serving(make_settings(auto_approve=True), offline_model) as served:
        events = await stream(http, served.jsonrpc, message)
        assert final_state(events) == ASKED
        [waiting] = (await console.get(operator(served, "/state"))).json()["approvals"]
        assert waiting["type"] == "question" and waiting["text"] == "Which color?"
        assert waiting["options"] == [{"id": "Red", "label": "Red"}]
        wrong = await answer(console, served, waiting["id"], option="allow_once", operator="alice")
        assert wrong.status_code == 400 and "is a question" in wrong.json()["error"]

        watching = Subscription(http, served, events[0]["task"]["id"])
        followed = asyncio.create_task(watching.follow())
        await watching.open.wait()
        decided = await answer(console, served, waiting["id"], text="Blue", operator="alice")
        assert decided.json() == {"id": waiting["id"], "option": "answer", "decidedBy": "console:alice"}
        resumed = await followed
        assert final_state(resumed) == COMPLETED and "Blue" in answer_text(resumed)


@pytest.mark.slow
async def test_a_credential_in_a_waiting_command_never_reaches_the_console(
    settings: AgentSettings, offline_model: OfflineModel, http: httpx.AsyncClient, console: httpx.AsyncClient
) -> None:
    command = f'curl -H "Authorization: Bearer {GITHUB}" https://api.github.com/user'
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        _, approval = await asked(http, served, command)
        state = await console.get(operator(served, "/state"))
        assert GITHUB not in state.text
        [waiting] = state.json()["approvals"]
        assert waiting["tool"]["command"].startswith("curl -H") and "[REDACTED:" in waiting["tool"]["command"]
        async with console.stream("GET", operator(served, "/events")) as events:
            first = await anext(line async for line in events.aiter_lines() if line.startswith("data:"))
        assert GITHUB not in first and "[REDACTED:" in first
        assert (await answer(console, served, approval, option="deny", operator="alice")).status_code == 200
        audit = await audited_when(console, served, lambda found: any(e["decidedBy"] == "console:alice" for e in found))
        assert GITHUB not in json.dumps(audit) and "[REDACTED:" in json.dumps(audit)


@pytest.mark.slow
async def test_the_console_reads_the_audit_of_an_agent_whose_state_is_on_postgres(
    make_settings: SettingsFactory,
    console_key: None,
    postgres_url: str,
    offline_model: OfflineModel,
    http: httpx.AsyncClient,
    console: httpx.AsyncClient,
) -> None:
    settings = make_settings(shield=ShieldConfig(), state={"url": postgres_url})
    async with asyncio.timeout(120), serving(settings, offline_model) as served:
        _, approval = await asked(http, served)
        assert (await answer(console, served, approval, option="deny", operator="alice")).status_code == 200
        entries = await audited_when(console, served, bool, "?decision=deny")
        assert [(e["tool"], e["target"], e["decidedBy"]) for e in entries] == [("bash", TOUCH, "console:alice")]

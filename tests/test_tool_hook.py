"""Every tool call reaches the shield before it runs, whether or not the backend asks permission for it.

Real OpenCode and the real Copilot CLI on the offline model. OpenCode 1.18.33 asks nothing for `>README.md`,
`declare -i x='a[$(…)]'` or `cd '$(…)'; cd ${_@P}` (its own parse decides); the wrapper's pre-tool hook (an OpenCode
plugin on a Unix socket, the Copilot SDK's PreToolUse) holds each call until the shield has decided. A call seen by
the hook and by a permission request is decided once and audited once.
"""

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from a2a_wrapper.backends.opencode.hook import NO_TURN, HookServer
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import ShieldConfig
from a2a_wrapper.state.audit import AuditEntry, recent
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, data_parts, final_state, rpc, stream, task_answer, user_message
from tests.helpers.copilot_fixtures import copilot_backend
from tests.helpers.tenants import sole_backend
from tests.helpers.tool_messages import answer_params, bash_call

README = "# A project\nIts readme, which nothing may truncate.\n"
NO_DELETE = {
    "rules": [{"name": "no-delete", "decision": "deny", "class": "delete", "reason": "Nothing is deleted here."}]
}


@pytest.fixture(params=["opencode", "copilot"])
def make_agent(
    request: pytest.FixtureRequest, make_settings: SettingsFactory, offline_model: OfflineModel, tmp_path: Path
) -> SettingsFactory:
    """Settings for an agent on either backend (both on the offline model, in the default sandbox)."""

    def make(**fields: Any) -> AgentSettings:
        if request.param == "opencode":
            return make_settings(**fields)
        state = tmp_path / "state"
        backend = copilot_backend(offline_model, state / "workspace")
        card, server = CardSettings(name="test-agent"), ServerSettings(port=free_port())
        return AgentSettings(card=card, server=server, backend=backend, state_dir=state, **fields)

    return make


def tools(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A message whose offline model calls these tools, one after another."""
    return {"message": user_message(" ".join(f"[[tool:{name} {json.dumps(args)}]]" for name, args in calls))}


def audit_of(served: ServedAgent) -> list[AuditEntry]:
    """Every tool call decision the agent recorded, oldest first (not the sandbox proxy's, per connection)."""
    state_dir = served.agent.settings.state_dir
    assert state_dir is not None
    return [entry for entry in reversed(recent(state_dir / "state.db", 100)) if entry.tool != "egress"]


def with_readme(served: ServedAgent) -> Path:
    readme = served.workdir / "README.md"
    readme.write_text(README)
    return readme


@pytest.mark.slow
async def test_a_truncation_the_backend_does_not_ask_about_is_denied_and_the_model_reads_why(
    make_agent: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(make_agent(shield=ShieldConfig.model_validate(NO_DELETE)), offline_model) as served:
        readme = with_readme(served)
        events = await stream(http, served.jsonrpc, tools(bash_call(">README.md", description="a command")))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert readme.read_text() == README, "the denied redirection did not run"
        [decision] = data_parts(events, "permission")
        assert decision["decision"] == "deny" and decision["rule"] == "agent:no-delete"
        assert "Nothing is deleted here." in answer_text(events), "the hook's block reaches the model as its sentence"
        assert [(e.tool, e.decision, e.rule, e.target) for e in audit_of(served)] == [
            ("bash", "deny", "agent:no-delete", ">README.md")
        ]


@pytest.mark.slow
async def test_an_ask_at_the_hook_pauses_the_turn_until_the_caller_answers(
    make_agent: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(make_agent(shield=ShieldConfig()), offline_model) as served:
        readme = with_readme(served)
        for reply in ("no", "yes"):
            asked = await stream(http, served.jsonrpc, tools(bash_call(">README.md", description="a command")))
            assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
            assert readme.read_text() == README, "nothing runs while the person is asked"
            done = await stream(http, served.jsonrpc, answer_params(asked[0]["task"], reply))
            assert final_state(done) == "TASK_STATE_COMPLETED"
            assert readme.read_text() == (README if reply == "no" else ""), f"after {reply!r}"
        assert [(e.decision, e.decided_by, e.target) for e in audit_of(served)] == [
            ("deny", "person", ">README.md"),
            ("allow", "person", ">README.md"),
        ], "one row per call, though the backend may ask about an allowed call again"


@pytest.mark.slow
async def test_code_in_words_the_backend_does_not_parse_never_runs(
    make_agent: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    commands = ["declare -i x='a[$(touch pwned-one)]'", "cd '$(touch pwned-two)'; cd ${_@P}"]
    async with serving(make_agent(shield=ShieldConfig()), offline_model) as served:
        events = await stream(
            http, served.jsonrpc, tools(*(bash_call(command, description="a command") for command in commands))
        )
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert not list(served.workdir.glob("pwned*")), "neither command ran"
        assert [(e.decision, e.rule, e.target) for e in audit_of(served)] == [
            ("deny", "shield:unchecked", command) for command in commands
        ]
        assert "The shield cannot check" in answer_text(events)


@pytest.mark.slow
async def test_no_answer_at_the_hook_by_the_deadline_denies(
    make_agent: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(make_agent(shield=ShieldConfig(ask_timeout=2)), offline_model) as served:
        readme = with_readme(served)
        asked = await stream(http, served.jsonrpc, tools(bash_call(">README.md", description="a command")))
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
        task = await _ended(http, served, asked[0]["task"]["id"])
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "No person answered in time" in task_answer(task)
        assert readme.read_text() == README
        [entry] = audit_of(served)
        assert (entry.decision, entry.decided_by) == ("deny", "deadline")


@pytest.mark.slow
async def test_a_hook_that_cannot_reach_the_wrapper_blocks_the_call(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(auto_approve=True), offline_model) as served:
        hooks = sole_backend(served.agent).hooks
        await hooks.stop()  # OpenCode keeps running; its plugin finds no socket
        events = await stream(http, served.jsonrpc, tools(bash_call("touch made.txt", description="a command")))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert not (served.workdir / "made.txt").exists(), "fail closed: no answer is no"
        assert "could not be reached" in answer_text(events)
        assert audit_of(served) == [], "the wrapper never saw the call"


@pytest.mark.slow
async def test_a_subagents_call_is_held_by_the_turn_that_started_it(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    rules = {"rules": [{"name": "subagents-ok", "decision": "allow", "tools": ["task"]}]}
    async with serving(make_settings(shield=ShieldConfig.model_validate(rules)), offline_model) as served:
        child = f"[[tool:bash {json.dumps({'command': '>child.txt', 'description': 'c'})}]]"
        task = {"description": "d", "prompt": child, "subagent_type": "general"}
        asked = await stream(http, served.jsonrpc, tools(("task", task)))
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED", "the child's redirection is asked in this task"
        done = await stream(http, served.jsonrpc, answer_params(asked[0]["task"], "no"))
        assert final_state(done) == "TASK_STATE_COMPLETED"
        assert not (served.workdir / "child.txt").exists()
        assert [(e.tool, e.decision, e.decided_by) for e in audit_of(served)] == [
            ("task", "allow", "rules"),
            ("bash", "deny", "person"),
        ]


@pytest.mark.slow
async def test_copilot_runs_no_subagent_and_no_workspace_hook_unseen(
    offline_model: OfflineModel, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    workspace = state / "workspace"
    (workspace / ".github" / "hooks").mkdir(parents=True)
    marker = workspace / "hook-ran"
    command = {"type": "command", "bash": f"touch {marker}"}
    hooks = {"version": 1, "hooks": {"sessionStart": [command], "preToolUse": [command]}}
    (workspace / ".github" / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    settings = AgentSettings(
        card=CardSettings(name="test-agent"), server=ServerSettings(port=free_port()),
        backend=copilot_backend(offline_model, workspace), state_dir=state, shield=ShieldConfig(),
    )  # fmt: skip
    child = f"[[tool:bash {json.dumps({'command': 'touch child.txt', 'description': 'c'})}]]"
    task = {"description": "d", "prompt": child, "agent_type": "general-purpose", "name": "kid"}
    async with serving(settings, offline_model) as served:
        events = await stream(http, served.jsonrpc, tools(("task", task)))
        assert final_state(events) == "TASK_STATE_COMPLETED", "the CLI asks nothing for a subagent; the hook does"
        assert "Denied by preToolUse hook" in answer_text(events)
        assert not (workspace / "child.txt").exists()
        assert not marker.exists(), "the workspace's own hook commands never ran"
        assert [(e.tool, e.cls, e.decision) for e in audit_of(served)] == [("task", "other", "deny")]


async def test_the_hook_socket_blocks_what_it_cannot_place(tmp_path: Path) -> None:
    async def no_parent(session_id: str) -> str | None:
        return None

    server = HookServer("test-agent", tmp_path / "hook.sock", no_parent)
    await server.start()
    try:
        connector = aiohttp.UnixConnector(path=str(server.path))
        async with aiohttp.ClientSession(connector=connector) as client:
            for body in (b"not json", json.dumps({"tool": "bash", "sessionID": "ses_unknown", "args": {}}).encode()):
                async with client.post("http://a2a-wrapper/tool", data=body) as response:
                    verdict = await response.json()
                assert verdict["decision"] == "deny", body
            assert verdict["reason"] == NO_TURN
        assert oct(server.path.stat().st_mode & 0o777) == "0o600"
    finally:
        await server.stop()
    assert not server.path.exists()


async def _ended(http: httpx.AsyncClient, served: ServedAgent, task_id: str) -> dict[str, Any]:
    """The task once it has stopped waiting and working (the deadline answers it by itself)."""
    async with asyncio.timeout(30):
        while True:
            task = (await rpc(http, served.jsonrpc, "GetTask", {"id": task_id}))["result"]
            if task["status"]["state"] not in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"):
                return dict(task)
            await asyncio.sleep(0.2)


@pytest.mark.slow
async def test_a_deep_state_folder_still_gets_its_hook_in_the_sandbox(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The hook's socket is in the sandbox's short socket folder: a state path past a socket's 107 bytes works."""
    state = tmp_path / ("a-deep-folder-name-" * 6) / "state"
    settings = make_settings(state_dir=state, shield=ShieldConfig.model_validate({"defaults": {"delete": "deny"}}))
    settings.backend.workdir.mkdir(parents=True)
    (settings.backend.workdir / "README.md").write_text("kept")
    async with serving(settings, offline_model) as served:
        events = await stream(http, served.jsonrpc, tools(("bash", {"command": ">README.md", "description": "t"})))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert [(e.tool, e.decision) for e in audit_of(served)] == [("bash", "deny")]
    assert (settings.backend.workdir / "README.md").read_text() == "kept"

"""The Copilot backend over the real Copilot CLI and the offline model, through the A2A front end; its pure parts."""

import asyncio
import json
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends.base import Prompt, events_of
from a2a_wrapper.backends.copilot import launch
from a2a_wrapper.backends.copilot.program import Program
from a2a_wrapper.backends.copilot.translate import Translator, file_diffs, permission_kind
from a2a_wrapper.backends.copilot.turn import NOBODY_ANSWERED
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.backends.tenants.folders import TENANTS
from a2a_wrapper.config.backends import CopilotSettings
from a2a_wrapper.config.runtimes import SandboxRuntime
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.events import Done, FileDiff, Permission, Question, Text, ToolCall, ToolResult
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.offline_model.directives import ToolCall as ModelToolCall
from a2a_wrapper.offline_model.plan import for_offered_tools
from a2a_wrapper.shield import kind_class
from tests.conftest import serving
from tests.helpers.a2a_wire import (
    answer_text,
    data_parts,
    final_state,
    send,
    session_of,
    status_text,
    stream,
    task_answer,
    user_message,
)
from tests.helpers.copilot_fixtures import copilot_backend
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tenants import sole_backend

CopilotFactory = Callable[..., AgentSettings]


@pytest.fixture
def copilot_settings(tmp_path: Path, offline_model: OfflineModel) -> CopilotFactory:
    def make(**fields: Any) -> AgentSettings:
        state = tmp_path / "state"
        backend = {**copilot_backend(offline_model, state / "workspace"), **fields.pop("backend", {})}
        return AgentSettings(
            card=CardSettings(name="copilot-agent"),
            server=ServerSettings(port=free_port()),
            backend=backend,
            state_dir=state,
            **fields,
        )

    return make


# --- turns over the real CLI ----------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_replacing_system_prompt_is_what_the_model_gets(
    copilot_settings: CopilotFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    backend = {"system_prompt": "You are the release notes agent.", "system_prompt_mode": "replace"}
    async with serving(copilot_settings(auto_approve=True, backend=backend), offline_model) as served:
        task = await send(http, served.jsonrpc, "[[echo-system]]")
        assert task_answer(task).startswith("System prompt starts: You are the release notes agent.")


@pytest.mark.slow
async def test_a_created_file_becomes_a_write_permission_and_a_diff_artifact(
    copilot_settings: CopilotFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(copilot_settings(auto_approve=True), offline_model) as served:
        target = served.workdir / "notes.txt"
        create = json.dumps({"path": str(target), "file_text": "first line\n"})
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:create {create}]]")})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert target.read_text() == "first line\n"
        [permission] = data_parts(events, "permission")
        assert permission["kind"] == "write" and permission["paths"] == [str(target)]
        [diff] = [
            e["artifactUpdate"]["artifact"]
            for e in events
            if "artifactUpdate" in e and "diff" in e["artifactUpdate"]["artifact"]["name"]
        ]
        assert diff["name"] == f"diff {target}" and "+first line" in diff["parts"][0]["text"]


@pytest.mark.slow
async def test_a_read_outside_the_workspace_is_decided_once(
    copilot_settings: CopilotFactory, offline_model: OfflineModel, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside-text")
    readable = SandboxRuntime(read=[outside])  # the sandbox shows nothing else outside the workspace
    async with serving(copilot_settings(auto_approve=True, runtime=readable), offline_model) as served:
        view = json.dumps({"path": str(outside)})
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:view {view}]]")})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        [permission] = data_parts(events, "permission")  # the CLI asks twice for one allowed read: one decision
        assert permission["kind"] == "read" and permission["decision"] == "allow"
        assert "outside-text" in answer_text(events)
        assert not [
            e for e in events if "artifactUpdate" in e and e["artifactUpdate"]["artifact"]["name"] != "response"
        ]


@pytest.mark.slow
async def test_an_unanswered_question_tells_the_model_so(copilot_settings: CopilotFactory) -> None:
    async with running_agent(copilot_settings(auto_approve=True)) as agent:
        session = await sole_backend(agent).open_session("ctx-unanswered")
        turn = sole_backend(agent).turn(session, Prompt('[[tool:ask_user {"question": "Which?", "choices": ["A"]}]]'))
        texts: list[str] = []
        async with asyncio.timeout(60):
            async for event, _ in events_of(turn):
                if isinstance(event, Permission):  # the ask_user call itself, held by the pre-tool hook
                    await turn.reply(event.id, "allow", "asking is allowed")
                elif isinstance(event, Question):
                    assert (event.text, event.options) == ("Which?", ("A",))
                    await turn.answer(event.id, None)
                elif isinstance(event, Text):
                    texts.append(event.delta)
        assert event == Done(outcome="completed")
        assert NOBODY_ANSWERED in "".join(texts)


@pytest.mark.slow
async def test_a_cli_killed_mid_turn_fails_the_task_and_comes_back(
    copilot_settings: CopilotFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(copilot_settings(auto_approve=True), offline_model) as served:
        first = await send(http, served.jsonrpc, "warm up")
        pid = (await served.agent.backend.health())["pid"]
        doomed = marker("doomed")
        turn = asyncio.create_task(
            stream(http, served.jsonrpc, {"message": user_message(f"[[slow:20]] {doomed}", first["contextId"])})
        )
        await wait_until_the_model_receives(offline_model, doomed)
        os.kill(pid, signal.SIGKILL)
        async with asyncio.timeout(5):  # the moment the process is gone (no call to it: readiness asks none)
            while (down := await http.get(served.url + "/health")).status_code != 503:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert down.json()["backend"]["healthy"] is False
        async with asyncio.timeout(15):
            events = await turn
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED"
        assert "stopped during the turn" in status_text(final), status_text(final)
        async with asyncio.timeout(60):
            while (await http.get(served.url + "/health")).status_code != 200:  # noqa: ASYNC110
                await asyncio.sleep(0.2)
        health = await served.agent.backend.health()
        assert health["pid"] != pid and health["restarts"] == 1
        again = await send(http, served.jsonrpc, "[[turns]]", context_id=first["contextId"])
        assert final_state_of(again) == "TASK_STATE_COMPLETED"
        assert task_answer(again).startswith("This conversation holds"), "the session was resumed on the new CLI"
    with pytest.raises(ProcessLookupError):
        os.kill(health["pid"], 0)  # no CLI left after stop


def final_state_of(task: dict[str, Any]) -> str:
    return str(task["status"]["state"])


@pytest.mark.slow
async def test_a_session_the_cli_lost_is_recreated(
    copilot_settings: CopilotFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with serving(copilot_settings(auto_approve=True), offline_model) as served:
        first = await send(http, served.jsonrpc, "hello")
        events = await stream(http, served.jsonrpc, {"message": user_message("[[turns]]", first["contextId"])})
        assert answer_text(events) == "This conversation holds 2 user messages."
        session_id = session_of(events)
        await served.agent.backend.close_session(session_id)  # behind the session map's back
        events = await stream(http, served.jsonrpc, {"message": user_message("[[turns]]", first["contextId"])})
        assert events[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]["sessionRecreated"] is True
        assert answer_text(events) == "This conversation holds 1 user messages."


@pytest.mark.slow
async def test_a_closed_session_is_deleted_from_the_cli(copilot_settings: CopilotFactory) -> None:
    async with running_agent(copilot_settings(auto_approve=True)) as agent:
        backend = sole_backend(agent)
        session = await backend.open_session("ctx-close")
        assert session.created and session.id == launch.session_id_for("ctx-close")
        again = await backend.open_session("ctx-close", resume=session.id)
        assert again == type(session)(session.id, created=False)
        await backend.close_session(session.id)
        recreated = await backend.open_session("ctx-close", resume=session.id)
        assert recreated.created, "a deleted session is gone from the CLI"


# --- start-up and configuration -------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_no_token_and_no_provider_fails_at_start_naming_the_keys(
    copilot_settings: CopilotFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in launch.TOKEN_ENV:
        monkeypatch.delenv(name, raising=False)
    settings = copilot_settings(backend={"provider": None, "model": None})
    with pytest.raises(ConfigError) as caught:
        async with running_agent(settings):
            pass
    for key in ("backend.github_token", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "backend.provider"):
        assert key in str(caught.value)
    assert settings.state_dir is not None and not list(settings.state_dir.glob(f"{TENANTS}/*/copilot"))


def backend_settings(**fields: Any) -> CopilotSettings:
    return CopilotSettings.model_validate({"workdir": "/tmp/ws", **fields})


PROVIDER = {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-provider"}


def test_the_child_environment_is_an_allow_list_plus_the_backend_env(tmp_path: Path) -> None:
    wrapper_env = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "AWS_SECRET_ACCESS_KEY": "x",
        "GH_TOKEN": "ghp_env",
        "HOME": "/root",
    }
    env = {"EXTRA": "1", "COPILOT_CLI_DIST_DIR": "/elsewhere", "COPILOT_AUTO_UPDATE": "true"}
    backend = backend_settings(provider=PROVIDER, model="m", env=env)
    program = Program(tmp_path / "program", tmp_path / "program" / "pkg" / "linux-x64" / "1.0.0")
    plan = launch.prepare(Path("/bin/copilot"), program, backend, tmp_path, wrapper_env)
    assert plan.env["PATH"] == "/bin" and plan.env["LANG"] == "C.UTF-8" and plan.env["EXTRA"] == "1"
    assert plan.env["COPILOT_CLI_DIST_DIR"] == str(program.dist), "the code the CLI runs is the wrapper's"
    assert plan.env["COPILOT_PKG_CACHE_HOME"] == str(program.folder) and plan.env["COPILOT_AUTO_UPDATE"] == "false"
    assert "AWS_SECRET_ACCESS_KEY" not in plan.env and "GH_TOKEN" not in plan.env
    assert plan.env["HOME"] == str(tmp_path / "copilot" / "home")
    assert plan.env["XDG_CACHE_HOME"] == str(tmp_path / "copilot" / "cache")
    assert plan.copilot_home == tmp_path / "copilot" / "copilot-home" and plan.copilot_home.is_dir()
    offline = {k: plan.env[k] for k in ("COPILOT_OFFLINE", "COPILOT_PROVIDER_BASE_URL", "COPILOT_MODEL")}
    assert offline == {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/v1",
        "COPILOT_MODEL": "m",
    }
    assert "sk-provider" not in json.dumps(plan.env), "the key travels on the session, not in the environment"


@pytest.mark.parametrize(
    ("configured", "environment", "expected"),
    [
        ("ghp_config", {"COPILOT_GITHUB_TOKEN": "a", "GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "ghp_config"),
        (None, {"COPILOT_GITHUB_TOKEN": "a", "GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "a"),
        (None, {"GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "b"),
        (None, {"GITHUB_TOKEN": "c"}, "c"),
        (None, {"GH_TOKEN": ""}, None),
    ],
)
def test_the_github_token_comes_from_config_then_the_environment(
    configured: str | None, environment: dict[str, str], expected: str | None
) -> None:
    backend = backend_settings(github_token=configured) if configured else backend_settings()
    assert launch.github_token(backend, environment) == expected


UNUSED_PROGRAM = Program(Path("/nonexistent"), Path("/nonexistent/pkg/linux-x64/1.0.0"))


def test_a_provider_without_a_model_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"backend\.model is required with backend\.provider"):
        launch.prepare(Path("/bin/copilot"), UNUSED_PROGRAM, backend_settings(provider=PROVIDER), tmp_path, {})


def test_session_options_carry_provider_model_system_message_and_mcp() -> None:
    backend = backend_settings(
        provider={**PROVIDER, "type": "azure", "azure_api_version": "2024-10-21", "wire_api": "responses"},
        model="m",
        system_prompt="Be brief.",
        system_prompt_mode="replace",
        reasoning_effort="low",
        mcp_servers={"files": {"command": ["mcp-files", "--root", "."]}, "off": {"url": "http://x", "enabled": False}},
    )
    options = launch.session_options(backend)
    assert options["provider"] == {
        "type": "azure",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-provider",
        "wire_api": "responses",
        "azure": {"api_version": "2024-10-21"},
    }
    assert options["model"] == "m" and options["streaming"] is True and options["reasoning_effort"] == "low"
    assert options["system_message"] == {"mode": "replace", "content": "Be brief."}
    assert options["mcp_servers"] == {
        "files": {"type": "local", "command": "mcp-files", "args": ["--root", "."], "env": {}, "tools": ["*"]}
    }
    assert options["working_directory"] == "/tmp/ws"


def test_session_ids_are_stable_per_context_and_distinct_between_them() -> None:
    assert launch.session_id_for("ctx-1") == launch.session_id_for("ctx-1")
    assert launch.session_id_for("ctx-1") != launch.session_id_for("ctx-2")


# --- translation ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "kind", "cls", "fields"),
    [
        (
            {"kind": "shell", "fullCommandText": "ls -la", "possibleUrls": []},
            "execute",
            "execute",
            {"command": "ls -la"},
        ),
        ({"kind": "write", "fileName": "/w/a.txt", "diff": "..."}, "write", "write", {"paths": ("/w/a.txt",)}),
        ({"kind": "read", "path": "/etc/hosts"}, "read", "read", {"paths": ("/etc/hosts",)}),
        ({"kind": "url", "url": "https://example.org/x"}, "fetch", "network", {"url": "https://example.org/x"}),
        ({"kind": "mcp", "serverName": "files", "toolName": "read_file"}, "mcp", "mcp", {"tool": "files/read_file"}),
        ({"kind": "memory", "fact": "x"}, "other", "other", {"tool": "memory"}),  # a kind the adapter does not know
        ({"kind": "custom-tool", "toolName": "mine"}, "other", "other", {"tool": "mine"}),
    ],
)
def test_permission_requests_become_permission_events(
    request_: dict[str, Any], kind: str, cls: str, fields: dict[str, Any]
) -> None:
    event = Translator().permission("perm_1", request_)
    assert isinstance(event, Permission) and event.kind == kind == permission_kind(request_["kind"])
    assert kind_class(event.kind) == cls
    for name, value in fields.items():
        assert getattr(event, name) == value
    assert event.raw == request_


def test_a_shell_request_names_its_tool_and_first_url() -> None:
    translator = Translator()
    translator.feed("user.message", {"content": "x"})
    translator.feed("tool.execution_start", {"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "c"}})
    event = translator.permission("p", {"kind": "shell", "toolCallId": "c1", "fullCommandText": "curl https://a.b"})
    assert event.tool == "bash" and event.url is None
    event = translator.permission("p", {"kind": "shell", "fullCommandText": "curl x", "possibleUrls": ["https://a.b"]})
    assert event.url == "https://a.b"


def test_events_before_the_prompt_echo_belong_to_an_earlier_turn() -> None:
    translator = Translator()
    assert translator.feed("session.idle", {"aborted": True}) == []
    assert translator.feed("user.message", {"content": "hi"}) == []
    assert translator.feed("assistant.message_delta", {"messageId": "m", "deltaContent": "Hel"}) == [Text(delta="Hel")]
    assert translator.feed("assistant.message", {"messageId": "m", "content": "Hello"}) == [Text(delta="lo")]
    assert translator.feed("session.idle", {}) == [Done(outcome="completed")]


def test_an_error_before_the_prompt_echo_still_ends_the_turn() -> None:
    translator = Translator()
    translator.feed("session.error", {"errorType": "authentication", "message": "No GitHub OAuth token"})
    [done] = translator.feed("session.idle", {})
    assert done == Done(outcome="failed", sentence="Copilot reported an error: No GitHub OAuth token")


def test_tool_events_become_calls_and_results_with_diffs() -> None:
    translator = Translator()
    translator.feed("user.message", {})
    start = {"toolCallId": "c", "toolName": "create", "arguments": {"path": "/w/n.txt"}, "toolTitle": "Creating"}
    assert translator.feed("tool.execution_start", start) == [
        ToolCall(
            id="c",
            tool="create",
            kind="edit",
            status="running",
            title="Creating",
            arguments={"path": "/w/n.txt"},
            locations=("/w/n.txt",),
        )
    ]
    diff = "\ndiff --git a/w/n.txt b/w/n.txt\n--- a/dev/null\n+++ b/w/n.txt\n@@ -1,0 +1,1 @@\n+abc\n"
    complete = {
        "toolCallId": "c",
        "success": True,
        "fileEdits": [{"kind": "create", "path": "/w/n.txt"}],
        "result": {"content": "Created file", "detailedContent": diff},
    }
    [result] = translator.feed("tool.execution_complete", complete)
    assert isinstance(result, ToolResult) and result.status == "completed" and result.output == "Created file"
    assert result.diffs == (FileDiff(path="/w/n.txt", diff=diff.strip("\n") + "\n"),)
    failed = {"toolCallId": "c", "success": False, "error": {"message": "The user rejected this tool call."}}
    assert translator.feed("tool.execution_complete", failed)[0] == ToolResult(
        id="c", tool="create", kind="edit", status="failed", output="The user rejected this tool call."
    )


def test_diffs_of_several_files_are_split_per_path() -> None:
    detail = "diff --git a/a b/a\n+1\ndiff --git a/b b/b\n+2\n"
    diffs = file_diffs([{"path": "a"}, {"path": "b"}], {}, detail)
    assert [d.path for d in diffs] == ["a", "b"] and diffs[1].diff == "diff --git a/b b/b\n+2\n"


def test_the_offline_models_question_becomes_ask_user_only_where_offered() -> None:
    call = ModelToolCall("question", json.dumps({"questions": [{"question": "Q?", "options": [{"label": "A"}]}]}))
    ask_user = [{"type": "function", "function": {"name": "ask_user"}}]
    converted = for_offered_tools(call, ask_user)
    assert converted.name == "ask_user"
    assert json.loads(converted.arguments) == {"question": "Q?", "allow_freeform": True, "choices": ["A"]}
    assert for_offered_tools(call, [{"type": "function", "function": {"name": "question"}}, *ask_user]) == call
    assert for_offered_tools(call, None) == call


# --- configs written for the Node a2a-copilot wrapper ---------------------------------------------------------------

NODE_COPILOT = {
    "$comment": ["Example Agent — Minimal starter configuration for a2a-wrapper-gh-copilot."],
    "agentCard": {
        "name": "Example Agent",
        "description": "A minimal example agent.",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "streaming": True,
        "skills": [{"id": "general-assistant", "name": "General Assistant", "tags": ["general"]}],
    },
    "server": {"port": 3001, "hostname": "0.0.0.0", "advertiseHost": "localhost", "advertiseProtocol": "http"},
    "copilot": {
        "$comment": ["Controls how the wrapper connects to the GitHub Copilot SDK."],
        "model": "gpt-4o",
        "streaming": True,
        "systemPromptMode": "replace",
        "systemPrompt": "You are the Filesystem Assistant.",
        "workspaceDirectory": "",
    },
    "features": {"streamArtifactChunks": False},
    "timeouts": {"prompt": 120000},
    "logging": {"level": "info"},
    "mcp": {
        "filesystem": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "$WORKSPACE_DIR"],
            "enabled": True,
        },
        "linear": {"type": "http", "url": "http://127.0.0.1:8002/mcp", "headers": {"Authorization": "Bearer t"}},
    },
}


def write_json(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_node_copilot_config_loads_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from a2a_wrapper.config.files import load_config

    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "files"))
    with caplog.at_level(logging.WARNING, logger="a2a_wrapper.config.node"):
        settings = load_config(write_json(tmp_path, NODE_COPILOT))
    assert settings.card.name == "Example Agent" and settings.card.default_input_modes == ["text/plain"]
    assert (settings.server.host, settings.server.port, settings.advertised_url) == (
        "0.0.0.0",
        3001,
        "http://localhost:3001",
    )
    backend = settings.backend
    assert isinstance(backend, CopilotSettings)
    assert backend.model == "gpt-4o" and backend.provider is None
    assert (backend.system_prompt, backend.system_prompt_mode) == ("You are the Filesystem Assistant.", "replace")
    assert backend.workdir == tmp_path / "files", "an empty workspaceDirectory is taken from WORKSPACE_DIR"
    files = backend.mcp_servers["filesystem"]
    assert files.command == ["npx", "-y", "@modelcontextprotocol/server-filesystem", str(tmp_path / "files")]
    linear = backend.mcp_servers["linear"]
    assert (linear.url, linear.headers) == ("http://127.0.0.1:8002/mcp", {"Authorization": "Bearer t"})
    assert settings.timeouts.turn == 120 and settings.logging.level == "INFO"
    assert settings.auto_approve is False, "a2a-copilot had no permission handler: tools stay denied"
    warning = " ".join(record.getMessage() for record in caplog.records)
    for ignored in ("agentCard.protocolVersion", "copilot.streaming", "features.streamArtifactChunks"):
        assert ignored in warning
    assert "a2a-copilot" in warning and "copilot.workspaceDirectory" not in warning


@pytest.mark.parametrize(
    ("copilot", "mcp", "check"),
    [
        ({}, {}, lambda b: (b.model, b.workdir.name) == ("claude-sonnet-4.5", "workspace")),
        (
            {
                "provider": {
                    "type": "azure",
                    "baseUrl": "https://r.openai.azure.com",
                    "apiKey": "k",
                    "wireApi": "responses",
                    "azure": {"apiVersion": "2024-10-21"},
                },
                "model": "gpt-5",
            },
            {},
            lambda b: (
                (
                    b.provider.type,
                    b.provider.base_url,
                    b.provider.api_key.get_secret_value(),
                    b.provider.wire_api,
                    b.provider.azure_api_version,
                )
                == ("azure", "https://r.openai.azure.com", "k", "responses", "2024-10-21")
            ),
        ),
        ({"githubToken": "ghp_x", "cliUrl": ""}, {}, lambda b: b.github_token.get_secret_value() == "ghp_x"),
        (
            {},
            {"s": {"type": "stdio", "command": "srv", "args": ["$NOT_SET_ANYWHERE"]}},
            lambda b: b.mcp_servers["s"].command == ["srv", "$NOT_SET_ANYWHERE"],
        ),
        (
            {},
            {"off": {"type": "sse", "url": "http://127.0.0.1:1/sse", "enabled": False}},
            lambda b: b.mcp_servers["off"].enabled is False and b.mcp_servers["off"].url == "http://127.0.0.1:1/sse",
        ),
    ],
    ids=["node-defaults", "azure-provider", "token", "unknown-arg-token-kept", "sse"],
)
def test_node_copilot_sections_map_onto_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copilot: dict[str, Any], mcp: dict[str, Any], check: Any
) -> None:
    from a2a_wrapper.config.files import load_config

    monkeypatch.delenv("WORKSPACE_DIR", raising=False)
    raw: dict[str, Any] = {"agentCard": {"name": "N"}, "copilot": copilot, **({"mcp": mcp} if mcp else {})}
    assert check(load_config(write_json(tmp_path, raw)).backend)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        (
            {
                "agentCard": {"name": "N"},
                "copilot": {"model": "m", "provider": {"type": "bedrock", "baseUrl": "http://x"}},
            },
            "backend.provider.type",
        ),
        ({"agentCard": {"name": "N"}, "copilot": {"modle": "m"}}, "backend.modle"),
        (
            {"agentCard": {"name": "N"}, "copilot": {}, "mcp": {"x": {"type": "websocket", "url": "ws://x"}}},
            "backend.mcp_servers.x.type",
        ),
    ],
)
def test_a_bad_node_copilot_config_is_named(tmp_path: Path, raw: dict[str, Any], key: str) -> None:
    from a2a_wrapper.config.files import load_config

    with pytest.raises(ConfigError) as caught:
        load_config(write_json(tmp_path, raw))
    assert f": {key}: " in str(caught.value), str(caught.value)

"""The generic ACP backend: real `opencode acp` and `copilot --acp` on the offline model, through A2A.

Plus the pure parts: the ToolKind table, the choice of the agent's own permission option, translation.
"""

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    PlanEntry,
    PromptResponse,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends import create_backend
from a2a_wrapper.backends.acp import translate
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.errors import ConfigError, Unauthorized
from a2a_wrapper.events import Done, FileDiff, Permission, Plan, PlanStep, Text, ToolCall, ToolResult, Usage
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield import kind_class
from tests.conftest import ServedAgent, serving
from tests.helpers.a2a_wire import (
    send,
    status_text,
    stream,
    task_answer,
    user_message,
)
from tests.helpers.acp_fixtures import ACP_BACKENDS
from tests.helpers.model_prompts import marker, wait_until_the_model_receives
from tests.helpers.tenants import sole_backend

AcpSettingsFactory = Callable[..., AgentSettings]


@pytest.fixture(params=sorted(ACP_BACKENDS))
def which(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_acp(which: str, tmp_path: Path, offline_model: OfflineModel) -> AcpSettingsFactory:
    def make(state_dir: Path | None = None, **fields: Any) -> AgentSettings:
        state = state_dir or tmp_path / "state"
        backend = {**ACP_BACKENDS[which](offline_model, state / "workspace", state), **fields.pop("backend", {})}
        return AgentSettings(
            card=CardSettings(name=f"acp-{which}"),
            server=ServerSettings(port=free_port()),
            backend=backend,
            state_dir=state,
            **fields,
        )

    return make


@asynccontextmanager
async def served(settings: AgentSettings, model: OfflineModel) -> AsyncIterator[ServedAgent]:
    async with asyncio.timeout(150), serving(settings, model) as agent:
        yield agent


# through A2A, on both agents


COPILOT_ERROR_AS_TEXT = (
    "Copilot over ACP ends a turn whose model call failed with stopReason end_turn and the error as answer "
    "text ('Error: 400 ...'), so the task completes"
)


@pytest.mark.slow
async def test_agent_killed_mid_turn_fails_the_task_and_comes_back(
    make_acp: AcpSettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    async with served(make_acp(auto_approve=True), offline_model) as agent:
        first = await send(http, agent.jsonrpc, "before the crash")
        context = first["contextId"]
        pid = sole_backend(agent.agent)._agent.child.pid
        doomed = marker("doomed")
        turn = asyncio.create_task(
            stream(http, agent.jsonrpc, {"message": user_message(f"[[slow:20]] {doomed}", context)})
        )
        await wait_until_the_model_receives(offline_model, doomed)
        os.killpg(pid, signal.SIGKILL)
        async with asyncio.timeout(5):  # down until the restart (backoff 0.5 s first)
            while (health := await http.get(agent.url + "/health")).status_code != 503:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert health.json()["backend"]["healthy"] is False
        events = await turn
        final = events[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED" and "stopped during the turn" in status_text(final)
        async with asyncio.timeout(60):
            while (await http.get(agent.url + "/health")).status_code != 200:  # noqa: ASYNC110
                await asyncio.sleep(0.2)
        assert sole_backend(agent.agent)._agent.child.pid != pid
        again = await send(http, agent.jsonrpc, "[[turns]]", context_id=context)
        assert task_answer(again).startswith("This conversation holds"), "the session was loaded again"


@pytest.mark.slow
async def test_system_prompt_goes_before_the_first_prompt_only(
    make_acp: AcpSettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> None:
    settings = make_acp(auto_approve=True, backend={"system_prompt": "Always answer kindly."})
    async with served(settings, offline_model) as agent:
        await http.delete(offline_model.url + "/control/requests")
        first = await send(http, agent.jsonrpc, "hello")
        assert "Always answer kindly." in task_answer(first)
        second = await send(http, agent.jsonrpc, "again", context_id=first["contextId"])
        assert task_answer(second) == "Offline model reply: again"


@pytest.mark.slow
async def test_an_agent_without_sign_in_is_refused_at_start_with_its_sign_in_methods(
    offline_model: OfflineModel, tmp_path: Path
) -> None:
    backend = ACP_BACKENDS["copilot"](offline_model, tmp_path / "workspace", tmp_path)
    for key in ("COPILOT_OFFLINE", "COPILOT_PROVIDER_BASE_URL", "COPILOT_MODEL", "COPILOT_PROVIDER_API_KEY"):
        del backend["env"][key]
    settings = AgentSettings(card=CardSettings(name="no-auth"), backend=backend, state_dir=tmp_path)
    with pytest.raises(Unauthorized, match=r"Authentication required.*copilot-login"):
        async with asyncio.timeout(60), running_agent(settings):
            pass


def test_replace_mode_is_refused_naming_the_key(tmp_path: Path) -> None:
    backend = {"kind": "acp", "command": ["agent"], "system_prompt": "x", "system_prompt_mode": "replace"}
    settings = AgentSettings(card=CardSettings(name="r"), backend=backend, state_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"backend\.system_prompt_mode"):
        create_backend(settings)


# the pure parts

ACP_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]


@pytest.mark.parametrize(
    ("acp_kind", "kind", "cls"),
    [
        ("read", "read", "read"),
        ("search", "search", "read"),
        ("think", "think", "read"),
        ("edit", "edit", "write"),
        ("move", "move", "delete"),
        ("delete", "delete", "delete"),
        ("execute", "execute", "execute"),
        ("fetch", "fetch", "network"),
        ("switch_mode", "switch_mode", "other"),
        ("other", "other", "other"),
        (None, "other", "other"),
        ("teleport", "other", "other"),
    ],
)
def test_tool_kinds_map_to_what_the_shield_knows(acp_kind: str | None, kind: str, cls: str) -> None:
    assert translate.tool_kind(acp_kind) == kind
    assert kind_class(kind) == cls


def test_the_table_covers_every_acp_tool_kind() -> None:
    assert sorted(translate.TOOL_KINDS) == sorted(ACP_KINDS)


def option(kind: str, option_id: str | None = None) -> PermissionOption:
    return PermissionOption(option_id=option_id or f"id-{kind}", name=kind, kind=kind)  # type: ignore[arg-type]


OPENCODE = [option("allow_once", "once"), option("allow_always", "always"), option("reject_once", "reject")]


@pytest.mark.parametrize(
    ("options", "verdict", "chosen"),
    [
        (OPENCODE, "allow", "once"),
        (OPENCODE, "deny", "reject"),
        ([option("allow_always"), option("reject_once")], "allow", "id-reject_once"),
        ([option("allow_always"), option("reject_always")], "allow", None),
        ([option("allow_once"), option("reject_always")], "deny", None),
        ([], "allow", None),
        (OPENCODE, "cancelled", None),
    ],
)
def test_the_agents_own_one_time_option_is_chosen(
    options: list[PermissionOption], verdict: translate.Verdict, chosen: str | None
) -> None:
    assert translate.chosen_option(options, verdict) == chosen


def tool_call(**fields: Any) -> ToolCallStart:
    return ToolCallStart(session_update="tool_call", tool_call_id="c1", **fields)


def tool_update(**fields: Any) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id="c1", **fields)


def test_a_permission_request_without_input_takes_it_from_the_cached_tool_call() -> None:
    tools = translate.ToolCache()
    cwd = ToolCallLocation(path="/w")
    translate.translate(tool_call(title="bash", kind="execute", status="pending", raw_input={"cwd": "/w"}), tools)
    translate.translate(tool_update(status="in_progress", raw_input={"command": "ls -la"}, locations=[cwd]), tools)
    request = ToolCallUpdate(tool_call_id="c1", raw_input={})
    asked = translate.permission("acp-1", tools.merged(request), OPENCODE)
    assert (asked.kind, asked.tool, asked.command, asked.paths) == ("execute", "execute", "ls -la", ("/w",))


def test_a_permission_request_with_no_usable_input_names_nothing() -> None:
    request = ToolCallUpdate(tool_call_id="c9", kind="edit", title="edit", raw_input={})
    asked = translate.permission("acp-2", translate.ToolCache().merged(request), OPENCODE)
    assert asked == Permission(id="acp-2", kind="edit", tool="edit", paths=(), command=None, url=None, raw=asked.raw)
    fetch = ToolCallUpdate(tool_call_id="c8", kind="execute", raw_input={"url": "http://x"})
    assert translate.permission("acp-3", translate.ToolCache().merged(fetch), OPENCODE).url is None


def test_updates_become_stream_events() -> None:
    tools = translate.ToolCache()
    text = AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(type="text", text="hi"))
    replay = UserMessageChunk(session_update="user_message_chunk", content=TextContentBlock(type="text", text="old"))
    started = tool_call(title="bash", kind="execute", status="pending", raw_input={"command": "ls"})
    output = ContentToolCallContent(type="content", content=TextContentBlock(type="text", text="a.txt"))
    edited = FileEditToolCallContent(type="diff", path="/w/a.txt", old_text="one\n", new_text="two\n")
    finished = tool_update(status="completed", content=[output, edited])
    plan = AgentPlanUpdate(
        session_update="plan", entries=[PlanEntry(content="step", priority="high", status="in_progress")]
    )
    events = [
        e for u in (text, replay, started, started, finished, finished, plan) for e in translate.translate(u, tools)
    ]
    diff = "--- a/w/a.txt\n+++ b/w/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
    assert events == [
        Text(delta="hi"),
        ToolCall(id="c1", tool="execute", kind="execute", status="pending", title="bash", arguments={"command": "ls"}),
        ToolResult(
            id="c1",
            tool="execute",
            kind="execute",
            status="completed",
            output="a.txt",
            diffs=(FileDiff(path="/w/a.txt", diff=diff),),
        ),
        Plan(steps=(PlanStep(text="step", status="in_progress", priority="high"),)),
    ]


def test_a_new_file_diffs_from_nothing() -> None:
    assert (
        translate.unified_diff("n.txt", None, "x")
        == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    ("stop", "outcome"),
    [
        ("end_turn", "completed"),
        ("cancelled", "canceled"),
        ("refusal", "failed"),
        ("max_tokens", "failed"),
        ("max_turn_requests", "failed"),
    ],
)
def test_stop_reasons_end_the_turn(stop: str, outcome: str) -> None:
    response = PromptResponse.model_validate(
        {"stopReason": stop, "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}}
    )
    usage, done = translate.ending(response, 0.5)
    assert usage == Usage(input_tokens=3, output_tokens=2, reasoning_tokens=0, cost=0.5)
    assert isinstance(done, Done) and done.outcome == outcome
    assert done.sentence or outcome == "completed"


def test_a_bare_backend_name_runs_the_managed_install(tmp_path: Path) -> None:
    from a2a_wrapper.backends.acp.launch import agent_command
    from a2a_wrapper.backends.install import find_binary

    empty_path = {"PATH": str(tmp_path)}
    assert agent_command(["copilot", "--acp"], empty_path) == [str(find_binary("copilot")), "--acp"]
    assert agent_command(["opencode", "acp"], empty_path) == [str(find_binary("opencode")), "acp"]
    assert agent_command(["/usr/bin/true"], empty_path) == ["/usr/bin/true"]
    assert agent_command(["my-agent", "--stdio"], empty_path) == ["my-agent", "--stdio"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ({"message": "The user rejected this tool call.", "code": "rejected"}, "The user rejected this tool call."),
        ({"stdout": "a.txt", "stderr": "warn"}, "a.txt\nwarn"),
        ({"exit": 2, "signal": None}, '{"exit": 2, "signal": null}'),
        (["one", 2], '["one", 2]'),
        ("plain", "plain"),
    ],
)
def test_a_structured_raw_output_reads_as_text(raw: Any, shown: str) -> None:
    tools = translate.ToolCache()
    translate.translate(tool_call(title="bash", kind="execute", status="pending", raw_input={"command": "x"}), tools)
    (result,) = translate.translate(tool_update(status="failed", raw_output=raw), tools)
    assert isinstance(result, ToolResult) and result.output == shown


@pytest.mark.slow
async def test_the_model_an_agent_reports_is_on_health(
    make_acp: AcpSettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, which: str
) -> None:
    async with served(make_acp(auto_approve=True), offline_model) as agent:
        backend = (await http.get(agent.url + "/health")).json()["backend"]
    if which == "opencode":  # `opencode acp` names its model in session/new; copilot --acp offline names none
        assert backend["model"].endswith("offline-model"), backend
    else:
        assert "model" not in backend, backend


@pytest.mark.slow
async def test_the_configured_model_stands_in_when_the_agent_names_none(
    make_acp: AcpSettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient, which: str
) -> None:
    async with served(make_acp(auto_approve=True, backend={"model": "the-configured-one"}), offline_model) as agent:
        backend = (await http.get(agent.url + "/health")).json()["backend"]
    expected = "the-configured-one" if which == "copilot" else "offline/offline-model"  # the agent's word first
    assert backend["model"] == expected, backend

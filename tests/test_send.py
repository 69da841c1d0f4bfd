"""`a2a-wrap send` as a real subprocess against a real agent: the live view, approvals at the terminal, exit codes."""

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import (
    Artifact,
    Message,
    StreamResponse,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from aiohttp import web

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.client.answers import reply_parts, request_of
from a2a_wrapper.client.connect import SendError, card_location, parse_headers
from a2a_wrapper.client.text import OUTPUT_LINES, as_text, decided_by
from a2a_wrapper.client.view import LiveView
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.shield import ShieldConfig
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.acp_fixtures import acp_copilot_backend
from tests.helpers.aiohttp_served import aiohttp_served
from tests.helpers.auth import AUTH, KEYS
from tests.helpers.send_process import read_until, started
from tests.helpers.tool_messages import bash_directive


@dataclass
class Sent:
    code: int
    stdout: str
    stderr: str


async def a2a_send(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Sent:
    async with started(*args, env=env) as process:
        async with asyncio.timeout(90):
            out, err = await process.communicate(stdin.encode())
    assert process.returncode is not None
    return Sent(process.returncode, out.decode(), err.decode())


@pytest.mark.slow
async def test_a_plain_answer_streams_to_stdout_and_a_context_continues(agent: ServedAgent) -> None:
    first = await a2a_send(agent.url, "hello from the terminal")
    assert first.code == 0, first.stderr
    assert first.stdout == "Offline model reply: hello from the terminal\n"
    context = first.stderr.strip().splitlines()[-1].removeprefix("[context ").removesuffix("]")
    assert len(context) >= 8, first.stderr

    again = await a2a_send(agent.url + "/.well-known/agent-card.json", "[[turns]]", "--context", context)
    assert again.code == 0, again.stderr
    assert again.stdout == "This conversation holds 2 user messages.\n", "the card URL works; the context continued"
    assert f"[context {context}]" in again.stderr


@pytest.mark.slow
async def test_tool_calls_and_decisions_are_one_line_each(agent: ServedAgent) -> None:
    sent = await a2a_send(agent.url, bash_directive("echo shown > shown.txt"))
    assert sent.code == 0, sent.stderr
    assert (agent.workdir / "shown.txt").read_text().strip() == "shown"
    lines = sent.stderr.splitlines()
    assert lines.count("[tool] bash: echo shown > shown.txt") == 1, lines
    assert [line.split(" (rule ")[0] for line in lines if line.startswith("[allow]")] == [
        "[allow] bash: echo shown > shown.txt"
    ], lines
    assert any(line.startswith("[done] bash") for line in lines), lines
    tools = [line.split(":")[0] for line in lines if line.startswith(("[tool]", "[allow]", "[done]"))]
    assert tools == ["[tool] bash", "[allow] bash", "[done] bash"], lines
    assert "(rule autoApprove: true)" in sent.stderr
    assert sent.stdout.startswith("Tool bash returned"), "the answer after the tool call is on stdout alone"


@pytest.mark.slow
async def test_json_prints_every_event(agent: ServedAgent) -> None:
    sent = await a2a_send(agent.url, "raw events", "--json")
    assert sent.code == 0, sent.stderr
    events = [json.loads(line) for line in sent.stdout.splitlines()]
    assert "task" in events[0]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    chunks = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    assert "".join(p.get("text", "") for a in chunks for p in a["parts"]) == "Offline model reply: raw events"


@pytest.fixture
async def asking(make_settings: SettingsFactory, offline_model: Any) -> AsyncIterator[ServedAgent]:
    """An agent whose shield asks a person for every shell command (the default for `execute`)."""
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        yield served


@pytest.mark.slow
async def test_an_approval_is_asked_at_the_terminal_and_allowed_once(asking: ServedAgent) -> None:
    async with started(asking.url, bash_directive("touch approved.txt")) as process:
        assert process.stdin is not None and process.stderr is not None and process.stdout is not None
        shown = await read_until(process.stderr, "[ask]")
        assert "[ask] bash: touch approved.txt (class execute, rule default:execute)" in shown
        assert not (asking.workdir / "approved.txt").exists(), "nothing runs before the answer"
        process.stdin.write(b"maybe\ny\n")  # not an answer: asked again, locally
        async with asyncio.timeout(60):
            out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert (asking.workdir / "approved.txt").exists()
    lines = (shown + err.decode()).splitlines()
    tool_lines = [line for line in lines if line.startswith(("[tool]", "[ask]", "[allow]", "[done]"))]
    assert tool_lines == [
        "[tool] bash: touch approved.txt",
        "[ask] bash: touch approved.txt (class execute, rule default:execute)",
        "[allow] bash: touch approved.txt (by a person)",
        "[done] bash: (no output)",  # OpenCode's own words for it
    ], lines
    assert err.decode().count("y = allow once, a = allow in this context, n = deny? ") == 2
    assert out.decode().startswith("Tool bash returned")


@pytest.mark.slow
async def test_always_needs_no_second_ask_in_the_context_and_no_denies(asking: ServedAgent) -> None:
    always = await a2a_send(asking.url, bash_directive("touch always.txt"), stdin="a\n")
    assert always.code == 0, always.stderr
    assert "[allow] bash: touch always.txt (by a person)" in always.stderr
    context = always.stderr.strip().splitlines()[-1].removeprefix("[context ").removesuffix("]")
    again = await a2a_send(asking.url, bash_directive("touch always.txt"), "--context", context)
    assert again.code == 0 and "[ask]" not in again.stderr, again.stderr
    assert "[allow] bash: touch always.txt (rule context:" in again.stderr

    denied = await a2a_send(asking.url, bash_directive("touch denied.txt"), stdin="n\n")
    assert denied.code == 0, denied.stderr
    assert "[deny] bash: touch denied.txt A person denied this tool call." in denied.stderr
    assert denied.stderr.index("[tool] bash: touch denied.txt") < denied.stderr.index("[deny] bash: touch denied.txt")
    assert not (asking.workdir / "denied.txt").exists()


@pytest.mark.slow
async def test_end_of_input_cancels_the_waiting_task(asking: ServedAgent) -> None:
    sent = await a2a_send(asking.url, bash_directive("touch never.txt"), stdin="")
    assert sent.code == 1
    assert "no answer (end of input): canceling task" in sent.stderr
    assert not (asking.workdir / "never.txt").exists()


@pytest.mark.slow
async def test_a_failed_task_exits_1_with_its_sentence(agent: ServedAgent) -> None:
    sent = await a2a_send(agent.url, "[[error:400]]")
    assert sent.code == 1
    [last] = sent.stderr.strip().splitlines()[-1:]
    assert last.startswith("task failed: ") and "Offline model error 400" in last, sent.stderr


@pytest.mark.slow
async def test_a_key_is_sent_and_its_absence_is_one_clear_line(
    make_settings: SettingsFactory, offline_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, key in KEYS.items():
        monkeypatch.setenv(name, key)
    async with serving(make_settings(auto_approve=True, auth=AUTH), offline_model) as served:
        refused = await a2a_send(served.url, "hello")
        allowed = await a2a_send(served.url, "hello", "--key-env", "CI_AGENT_KEY")
        unset = await a2a_send(served.url, "hello", "--key-env", "NO_SUCH_KEY_VARIABLE")
    assert refused.code == 1
    assert refused.stderr.strip() == (
        "Error: the agent refused the call (HTTP 401): give its key with --key or --key-env, "
        "or a gateway's header with --header"
    )
    assert allowed.code == 0 and allowed.stdout == "Offline model reply: hello\n", allowed.stderr
    assert unset.code == 1 and "NO_SUCH_KEY_VARIABLE is not set" in unset.stderr


@pytest.mark.slow
async def test_unreachable_agents_and_invalid_cards_are_one_line_errors() -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    unreachable = await a2a_send(nobody, "hello")
    assert unreachable.code == 1
    assert unreachable.stderr.startswith(f"Error: agent unreachable at {nobody}/.well-known/agent-card.json")
    assert len(unreachable.stderr.strip().splitlines()) == 1

    async def not_json(_: web.Request) -> web.Response:
        return web.Response(text="not a card")

    async def bad_card(_: web.Request) -> web.Response:
        return web.json_response({"name": 5, "skills": "none"})

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", not_json)
    app.router.add_get("/card.json", bad_card)
    async with aiohttp_served(app) as port:
        text = await a2a_send(f"http://127.0.0.1:{port}", "hello")
        wrong = await a2a_send(f"http://127.0.0.1:{port}/card.json", "hello")
        missing = await a2a_send(f"http://127.0.0.1:{port}/elsewhere", "hello")
    for sent in (text, wrong, missing):
        assert sent.code == 1 and len(sent.stderr.strip().splitlines()) == 1, sent.stderr
    assert text.stderr.startswith(f"Error: invalid agent card at http://127.0.0.1:{port}/.well-known/agent-card")
    assert wrong.stderr.startswith(f"Error: invalid agent card at http://127.0.0.1:{port}/card.json")
    assert missing.stderr.startswith(f"Error: no agent card at http://127.0.0.1:{port}/elsewhere/.well-known/")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:1", ("http://h:1", None)),
        ("http://h:1/", ("http://h:1", None)),
        ("https://h/agents/a", ("https://h/agents/a", None)),
        ("http://h:1/.well-known/agent-card.json", ("http://h:1", "/.well-known/agent-card.json")),
        ("http://h/agents/a/card.json", ("http://h", "/agents/a/card.json")),
    ],
)
def test_card_location(url: str, expected: tuple[str, str | None]) -> None:
    assert card_location(url) == expected


@pytest.mark.parametrize("url", ["h:1", "ftp://h/x", "127.0.0.1:8000", "http://"])
def test_card_location_refuses_what_is_not_http(url: str) -> None:
    with pytest.raises(SendError, match="not an http"):
        card_location(url)


APPROVAL = {
    "type": "approval_request",
    "approval": {
        "id": "apr_1",
        "tool": {"kind": "execute", "name": "bash", "paths": [], "command": "ls"},
        "class": "execute",
        "rule": "default:execute",
        "reason": "`ls` needs a person's approval.",
        "options": [{"id": "allow_once"}, {"id": "allow_context"}, {"id": "deny"}],
    },
}


def paused(*data: dict[str, Any], text: str = "") -> TaskStatus:
    parts = [new_text_part(text)] if text else []
    return TaskStatus(
        state=TaskState.TASK_STATE_INPUT_REQUIRED,
        message=Message(parts=[*parts, *(new_data_part(d) for d in data)]),
    )


@pytest.mark.parametrize(
    ("typed", "option"),
    [("y\n", "allow_once"), ("YES", "allow_once"), ("a", "allow_context"), (" always ", "allow_context"),
     ("n", "deny"), ("d", "deny"), ("no", "deny"), ("", None), ("maybe", None), ("allow", None)],
)  # fmt: skip
def test_a_typed_line_answers_an_approval(typed: str, option: str | None) -> None:
    request = request_of(paused(APPROVAL))
    assert request.lines == (
        "[ask] bash: ls (class execute, rule default:execute)",
        "  `ls` needs a person's approval.",
    )
    parts = reply_parts(request, typed)
    assert (get_data_parts(parts) if parts else None) == ([{"approval": "apr_1", "option": option}] if option else None)


def test_only_offered_options_are_taken() -> None:
    only_deny = {**APPROVAL, "approval": {**APPROVAL["approval"], "options": [{"id": "deny"}]}}
    request = request_of(paused(only_deny))
    assert request.prompt == "n = deny? "
    assert reply_parts(request, "y") is None


def test_questions_and_other_pauses_take_free_text() -> None:
    question = {"type": "question", "question": {"id": "q1", "text": "Which file?", "options": [{"label": "a.txt"}]}}
    request = request_of(paused(question))
    assert request.lines == ("[question] Which file?", "  options: a.txt")
    assert reply_parts(request, "  ") is None
    [part] = reply_parts(request, "a.txt\n") or []
    assert part.text == "a.txt"
    other = request_of(paused(text="Say more."))
    assert other.lines == ("[input] Say more.",) and other.approval_id is None


GATEWAY_HEADER = "X-Gateway-Key"


@dataclass
class Gateway:
    url: str
    seen: list[tuple[str, str, str | None]]  # method, path, the gateway key header as it arrived


@asynccontextmanager
async def gateway(upstream: str, port: int) -> AsyncIterator[Gateway]:
    """A third-party A2A gateway in front of an agent: it refuses any request without its own key header
    and streams everything else through, recording what arrived."""
    seen: list[tuple[str, str, str | None]] = []
    http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))

    async def forward(request: web.Request) -> web.StreamResponse:
        key = request.headers.get(GATEWAY_HEADER)
        seen.append((request.method, request.path, key))
        if key != "gw-secret":
            return web.Response(status=401, text="gateway key required")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        body = await request.read()
        outgoing = http.build_request(request.method, upstream + request.path_qs, headers=headers, content=body)
        answer = await http.send(outgoing, stream=True)
        response = web.StreamResponse(status=answer.status_code)
        response.content_type = answer.headers["content-type"].split(";")[0]
        await response.prepare(request)
        async for chunk in answer.aiter_raw():
            await response.write(chunk)
        await answer.aclose()
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    try:
        async with aiohttp_served(app, port):
            yield Gateway(f"http://127.0.0.1:{port}", seen)
    finally:
        await http.aclose()


@pytest.mark.slow
async def test_a_header_is_sent_on_every_request_through_a_gateway(
    make_settings: SettingsFactory, offline_model: Any
) -> None:
    port = free_port()
    settings = make_settings(auto_approve=True, server={"advertise_url": f"http://127.0.0.1:{port}"})
    upstream = f"http://127.0.0.1:{settings.server.port}"
    async with serving(settings, offline_model) as served, gateway(upstream, port) as gw:
        assert served.url == gw.url, "the card sends every call through the gateway"
        refused = await a2a_send(gw.url, "hello")
        gw.seen.clear()
        through = await a2a_send(gw.url, "hello", "--header", f"{GATEWAY_HEADER}: gw-secret", "--header", "X-Other: 1")
        malformed = await a2a_send(gw.url, "hello", "--header", "X-Gateway-Key gw-secret")
    assert refused.code == 1
    assert refused.stderr.strip() == (
        f"Error: the agent refused to show its card at {gw.url}/.well-known/agent-card.json (HTTP 401): "
        "give its key with --key or --key-env, or a gateway's header with --header"
    )
    assert through.code == 0, through.stderr
    assert through.stdout == "Offline model reply: hello\n"
    assert ("GET", "/.well-known/agent-card.json", "gw-secret") in gw.seen, gw.seen
    assert ("POST", "/a2a/jsonrpc", "gw-secret") in gw.seen, gw.seen  # the streamed reply (SSE)
    assert all(key == "gw-secret" for _, _, key in gw.seen), gw.seen
    assert malformed.code == 1
    assert malformed.stderr.strip() == (
        "Error: --header 'X-Gateway-Key gw-secret' is not a header: write it as 'Name: value'"
    )


@pytest.mark.slow
async def test_done_shows_the_whole_output(agent: ServedAgent) -> None:
    sent = await a2a_send(agent.url, bash_directive("printf 'one\\ntwo\\nthree\\n'"))
    assert sent.code == 0, sent.stderr
    assert "[done] bash: one\n  two\n  three\n" in sent.stderr, sent.stderr


@pytest.mark.slow
async def test_the_agent_stopping_while_a_person_is_asked_ends_the_wait(
    make_settings: SettingsFactory, offline_model: Any
) -> None:
    serve = serving(make_settings(shield=ShieldConfig()), offline_model)
    served = await serve.__aenter__()
    up = True
    try:
        async with started(served.url, bash_directive("touch late.txt")) as process:
            assert process.stderr is not None
            shown = await read_until(process.stderr, "[ask]")
            up = False
            await serve.__aexit__(None, None, None)  # the agent stops; nobody answered, stdin stays open
            async with asyncio.timeout(30):
                rest = (await process.stderr.read()).decode()
                await process.wait()
    finally:
        if up:
            await serve.__aexit__(None, None, None)
    assert process.returncode == 1, shown + rest
    [last] = rest.strip().splitlines()[-1:]
    assert last.startswith("the agent stopped while waiting for your answer: task "), rest
    assert "y = allow once" in rest  # it was asked, and gave up waiting without an answer


def working(*data: dict[str, Any]) -> StreamResponse:
    status = TaskStatus(state=TaskState.TASK_STATE_WORKING, message=Message(parts=[new_data_part(d) for d in data]))
    return StreamResponse(status_update=TaskStatusUpdateEvent(task_id="t", context_id="c", status=status))


def answer_event(text: str) -> StreamResponse:
    artifact = Artifact(artifact_id="response-1", name="response", parts=[new_text_part(text)])
    return StreamResponse(artifact_update=TaskArtifactUpdateEvent(task_id="t", context_id="c", artifact=artifact))


CALL = {"type": "tool_call", "id": "call_1", "tool": "bash", "kind": "execute", "arguments": {"command": "ls -la"}}
ALLOWED = {"type": "permission", "id": "per_9", "tool": "bash", "command": "ls -la", "paths": [], "decision": "allow",
           "reason": "allowed", "rule": "agent:listing"}  # fmt: skip
DENIED = {**ALLOWED, "decision": "deny", "reason": "No listing.", "rule": "person:alice"}
RESULT = {"type": "tool_result", "id": "call_1", "tool": "bash", "kind": "execute", "status": "completed",
          "output": "total 0\n.\n.."}  # fmt: skip


def viewed(*events: StreamResponse, announce: dict[str, Any] | None = None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    view = LiveView(out, err)
    if announce is not None:
        view.announce(announce)
    for event in events:
        view.show(event)
    view.close()
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "events",
    [
        [working(CALL), working(ALLOWED), working(RESULT)],
        [working(ALLOWED), working(CALL), working(RESULT)],  # the decision reached the stream first
        [working(ALLOWED, CALL), working(RESULT)],
    ],
)
def test_a_tool_line_comes_before_its_decision_whatever_arrives_first(events: list[StreamResponse]) -> None:
    assert viewed(*events)[1] == (
        "[tool] bash: ls -la\n[allow] bash: ls -la (rule agent:listing)\n[done] bash: total 0\n  .\n  ..\n"
    )


def test_a_decision_whose_call_never_comes_gets_its_own_tool_line_before_anything_else() -> None:
    out, err = viewed(working(DENIED), answer_event("I could not list."), working(CALL))
    assert err == "[tool] bash: ls -la\n[deny] bash: ls -la No listing. (by alice)\n", "the late call is not repeated"
    assert out == "I could not list.\n"


def test_an_asked_tool_is_shown_once_before_the_ask_and_its_decision_after() -> None:
    tool = {"kind": "execute", "name": "bash", "paths": [], "command": "ls -la"}
    _, err = viewed(working(ALLOWED), working(CALL), announce=tool)
    assert err == "[tool] bash: ls -la\n[allow] bash: ls -la (rule agent:listing)\n"
    _, err = viewed(working(CALL), working(ALLOWED), announce=tool)
    assert err.count("[tool]") == 1, err


def test_long_output_is_capped_saying_how_much_was_left_out() -> None:
    many = {**RESULT, "output": "\n".join(f"line {n}" for n in range(1, 51))}
    lines = viewed(working(many))[1].splitlines()
    assert lines[0] == "[done] bash: line 1"
    assert lines[1:3] == ["  line 2", "  line 3"]
    assert lines[-1] == f"  ... ({50 - OUTPUT_LINES + 1} more lines)" and len(lines) == OUTPUT_LINES


ACP_REJECTED = "{'message': 'The user rejected this tool call.', 'code': 'rejected'}"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain output", "plain output"),
        (ACP_REJECTED, "The user rejected this tool call."),  # copilot --acp's rawOutput of a rejected call
        ({"message": "no such file"}, "no such file"),
        ({"code": 2, "signal": None}, "code: 2"),
        ('[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]', "a\nb"),
        (["x", {"output": "y"}], "x\ny"),
        ("{not python}", "{not python}"),
        (None, ""),
        (3, "3"),
    ],
)
def test_structured_results_are_shown_as_text(value: Any, text: str) -> None:
    assert as_text(value) == text


def test_an_acp_deny_is_text_in_the_view() -> None:
    rejected = {**RESULT, "tool": "execute", "status": "failed", "output": ACP_REJECTED}
    assert viewed(working(rejected))[1] == "[failed] execute: The user rejected this tool call.\n"


@pytest.mark.parametrize(
    ("rule", "shown"),
    [
        ("person:person", "by a person"),
        ("person:alice", "by alice"),
        ("person:deadline", "no answer in time"),
        ("default:execute", "rule default:execute"),
        ("context:always-1", "rule context:always-1"),
        ("autoApprove: true", "rule autoApprove: true"),
    ],
)
def test_who_decided_reads_as_words(rule: str, shown: str) -> None:
    assert decided_by(rule) == shown


@pytest.mark.parametrize(
    ("given", "error"),
    [
        (["X-Key"], "--header 'X-Key' is not a header"),
        (["X Key: v"], "--header 'X Key: v' is not a header"),
        ([": v"], "--header ': v' is not a header"),
        (["X-Key: a\nb"], "--header 'X-Key': a value holds no line break"),
    ],
)
def test_malformed_headers_are_refused_by_name(given: list[str], error: str) -> None:
    with pytest.raises(SendError, match=re.escape(error)):
        parse_headers(given)


def test_headers_are_name_and_value() -> None:
    assert parse_headers(["X-Gateway-Key: abc ", "X-Empty:"]) == {"X-Gateway-Key": "abc", "X-Empty": ""}


@pytest.mark.slow
async def test_a_task_that_ends_on_its_own_while_a_person_is_asked_ends_the_wait(
    make_settings: SettingsFactory, offline_model: Any
) -> None:
    async with serving(make_settings(shield=ShieldConfig(ask_timeout=2)), offline_model) as served:
        async with started(served.url, bash_directive("touch unanswered.txt")) as process:
            assert process.stderr is not None and process.stdout is not None
            await read_until(process.stderr, "[ask]")  # nobody answers; the agent's deadline denies it
            async with asyncio.timeout(60):
                out, err = await process.communicate()
    lines = err.decode().splitlines()
    assert "[deny] bash: touch unanswered.txt No person answered in time" in err.decode(), lines
    assert lines[-2:-1] == ["the task ended while waiting for your answer"], lines
    assert process.returncode == 0, "the task completed: the agent went on without the tool"
    assert out.decode().startswith("Tool bash returned: No person answered in time")
    assert not (served.workdir / "unanswered.txt").exists()


@pytest.mark.slow
async def test_an_acp_agents_denied_call_reads_as_text(tmp_path: Path, offline_model: Any) -> None:
    state = tmp_path / "acp-state"
    settings = AgentSettings(
        card=CardSettings(name="acp-send"),
        server=ServerSettings(port=free_port()),
        backend=acp_copilot_backend(offline_model, state / "workspace", state),
        state_dir=state,
        shield=ShieldConfig(),
    )
    async with asyncio.timeout(150), serving(settings, offline_model) as served:
        denied = await a2a_send(served.url, bash_directive("touch acp-denied.txt"), stdin="n\n")
    assert denied.code == 0, denied.stderr
    lines = [line for line in denied.stderr.splitlines() if line.startswith(("[tool]", "[deny]", "[failed]"))]
    assert [line.split(":")[0] for line in lines] == ["[tool] execute", "[deny] execute", "[failed] execute"], lines
    assert lines[-1] == "[failed] execute: The user rejected this tool call.", "copilot --acp's rawOutput, as text"
    assert "{'" not in denied.stderr and '{"' not in denied.stderr

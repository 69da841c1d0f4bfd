"""The offline model's other wire formats over real HTTP on 127.0.0.1: the Responses API (Codex), the
Anthropic Messages API (Claude Code) and Gemini's generateContent (Gemini CLI), shaped as
notes/backends-2026-12.md records what those agents sent and accepted.

No official client library (openai, anthropic, google-genai) is installed in the project's environment,
so these tests speak the wire with httpx and parse the SSE with httpx-sse.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx_sse
import pytest

from a2a_wrapper.offline_model import OfflineModel

TIMEOUT = 10.0
SHELL = '[[tool:Bash {"command": "echo hi"}]]'
TWO_TOOLS = '[[tool:Read {"path": "a"}]] [[tool:Bash {"command": "ls"}]]'


@pytest.fixture(scope="module")
async def offline() -> AsyncIterator[OfflineModel]:
    async with OfflineModel() as running:
        yield running


@pytest.fixture(scope="module")
async def client(offline: OfflineModel) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=offline.url, timeout=TIMEOUT) as http:
        yield http


async def events(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """POST and read the SSE stream: (event name, JSON data) per event, `message` when unnamed."""
    async with httpx_sse.aconnect_sse(client, "POST", path, json=body) as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(sse.event, json.loads(sse.data)) async for sse in source.aiter_sse()]


# --- Anthropic Messages ---------------------------------------------------------------------------


def claude(*messages: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    system = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "Read", "input_schema": {}}]
    return {
        "model": "fake-claude",
        "max_tokens": 32000,
        "system": system,
        "tools": tools,
        "messages": list(messages),
        "stream": stream,
    }


def tool_result(tool_use_id: str, text: str) -> dict[str, Any]:
    result = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": False}
    reminder = {"type": "text", "text": "<system-reminder>not a prompt</system-reminder>"}
    return {"role": "user", "content": [{**result, "cache_control": {"type": "ephemeral"}}, reminder]}


async def test_anthropic_stream_text(client: httpx.AsyncClient) -> None:
    got = await events(client, "/v1/messages?beta=true", claude({"role": "user", "content": "hello   there"}))
    names = [name for name, _ in got]
    deltas = names.count("content_block_delta")
    assert deltas >= 1
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in got)
    start = got[0][1]["message"]
    assert start["type"] == "message" and start["role"] == "assistant" and start["model"] == "fake-claude"
    assert (start["content"], start["stop_reason"], start["stop_sequence"]) == ([], None, None)
    assert start["usage"]["input_tokens"] > 0 and start["usage"]["output_tokens"] == 1
    assert got[2][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    text = "".join(
        d["delta"]["text"] for n, d in got if n == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )
    assert text == "Offline model reply: hello there"
    finish = got[-2][1]
    assert finish["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert finish["usage"]["output_tokens"] == len(text.split())


async def test_anthropic_stream_tool_use_then_result_completes_the_turn(client: httpx.AsyncClient) -> None:
    ask = {"role": "user", "content": [{"type": "text", "text": SHELL}]}
    got = await events(client, "/v1/messages", claude(ask))
    block = got[2][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["input"] == {}
    assert block["id"].startswith("toolu_")
    pieces = [d["delta"] for n, d in got if n == "content_block_delta"]
    assert {p["type"] for p in pieces} == {"input_json_delta"}
    assert json.loads("".join(p["partial_json"] for p in pieces)) == {"command": "echo hi"}
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"

    use = {"type": "tool_use", "id": block["id"], "name": "Bash", "input": {"command": "echo hi"}}
    answer = await events(
        client, "/v1/messages", claude(ask, {"role": "assistant", "content": [use]}, tool_result(block["id"], "hi"))
    )
    text = "".join(d["delta"].get("text", "") for n, d in answer if n == "content_block_delta")
    assert text == "Tool Bash returned: hi"
    assert answer[-2][1]["delta"]["stop_reason"] == "end_turn"


async def test_anthropic_two_tools_in_turn(client: httpx.AsyncClient) -> None:
    ask = {"role": "user", "content": TWO_TOOLS}
    first = (await client.post("/v1/messages", json=claude(ask, stream=False))).json()
    read = first["content"][0]
    assert (read["type"], read["name"], read["input"]) == ("tool_use", "Read", {"path": "a"})
    second = (
        await client.post(
            "/v1/messages",
            json=claude(ask, {"role": "assistant", "content": [read]}, tool_result(read["id"], "x"), stream=False),
        )
    ).json()
    assert [(b["name"], b["input"]) for b in second["content"]] == [("Bash", {"command": "ls"})]
    assert second["stop_reason"] == "tool_use"


async def test_anthropic_not_streamed(client: httpx.AsyncClient) -> None:
    reply = await client.post("/v1/messages", json=claude({"role": "user", "content": "hi"}, stream=False))
    assert reply.status_code == 200
    body = reply.json()
    assert body["id"].startswith("msg_") and body["type"] == "message" and body["role"] == "assistant"
    assert body["content"] == [{"type": "text", "text": "Offline model reply: hi"}]
    assert (body["stop_reason"], body["stop_sequence"]) == ("end_turn", None)
    assert body["usage"]["output_tokens"] == 4 and body["usage"]["input_tokens"] > 0


async def test_anthropic_reminders_are_not_the_prompt(client: httpx.AsyncClient) -> None:
    reminder = {"type": "text", "text": "<system-reminder>Attribution for git commits</system-reminder>"}
    asked = {"role": "user", "content": [reminder, {"type": "text", "text": "hi"}]}
    body = (await client.post("/v1/messages", json=claude(asked, stream=False))).json()
    assert body["content"] == [{"type": "text", "text": "Offline model reply: hi"}]


async def test_anthropic_interrupted_prompt_is_a_turn_of_its_own(client: httpx.AsyncClient) -> None:
    """Claude Code sends a prompt interrupted before any reply, the marker and the next prompt as one message."""
    blocks = ["too slow [[slow:30]]\n", "[Request interrupted by user]\n", "[[turns]]"]
    asked = {"role": "user", "content": [{"type": "text", "text": text} for text in blocks]}
    async with asyncio.timeout(10):  # the interrupted prompt's [[slow:30]] is not the next one's
        body = (await client.post("/v1/messages", json=claude(asked, stream=False))).json()
    assert body["content"] == [{"type": "text", "text": "This conversation holds 2 user messages."}]


async def test_a_tool_named_in_another_case_is_called_as_offered(client: httpx.AsyncClient) -> None:
    asked = {"role": "user", "content": '[[tool:bash {"command": "ls"}]]'}
    body = (await client.post("/v1/messages", json=claude(asked, stream=False))).json()
    assert [(b["name"], b["input"]) for b in body["content"]] == [("Bash", {"command": "ls"})]


async def test_anthropic_errors(client: httpx.AsyncClient) -> None:
    failed = await client.post("/v1/messages", json=claude({"role": "user", "content": "[[error:529]]"}))
    assert failed.status_code == 529
    assert failed.json()["type"] == "error" and failed.json()["error"]["type"] == "api_error"
    bad = await client.post("/v1/messages", json={"model": "m"})
    assert bad.status_code == 400
    assert bad.json()["error"] == {"type": "invalid_request_error", "message": "messages: Field required"}


# --- OpenAI Responses -----------------------------------------------------------------------------


def codex(*items: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox rules"}]}
    tools = [{"type": "function", "name": "exec_command", "parameters": {}}, {"type": "web_search"}]
    return {
        "model": "fake-codex",
        "instructions": "You are Codex.",
        "input": [developer, *items],
        "tools": tools,
        "stream": stream,
    }


def said(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


async def test_responses_stream_text(client: httpx.AsyncClient) -> None:
    got = await events(client, "/v1/responses", codex(said("hello there")))
    names = [name for name, _ in got]
    deltas = names.count("response.output_text.delta")
    assert names == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in got] == list(range(len(got)))
    assert all(data["type"] == name for name, data in got)
    assert got[0][1]["response"]["status"] == "in_progress" and got[0][1]["response"]["output"] == []
    text = "".join(d["delta"] for n, d in got if n == "response.output_text.delta")
    assert text == "Offline model reply: hello there"
    item = got[-2][1]["item"]
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"] == [{"type": "output_text", "text": text, "annotations": []}]
    done = got[-1][1]["response"]
    assert done["status"] == "completed" and done["output"] == [item]
    usage = done["usage"]
    assert usage["output_tokens"] == len(text.split()) and usage["input_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


async def test_responses_function_call_then_output_completes_the_turn(client: httpx.AsyncClient) -> None:
    ask = said('[[tool:exec_command {"cmd": "echo hi"}]]')
    got = await events(client, "/v1/responses", codex(ask))
    names = [name for name, _ in got]
    assert names[:2] == ["response.created", "response.output_item.added"]
    assert names[-3:] == ["response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    added = got[1][1]["item"]
    assert (added["type"], added["name"], added["arguments"]) == ("function_call", "exec_command", "")
    pieces = "".join(d["delta"] for n, d in got if n == "response.function_call_arguments.delta")
    call = got[-2][1]["item"]
    assert json.loads(pieces) == json.loads(call["arguments"]) == {"cmd": "echo hi"}
    assert call["call_id"] == added["call_id"]

    returned = {
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": "Process exited with code 0\nOutput:\nhi",
    }
    answer = (await client.post("/v1/responses", json=codex(ask, call, returned, stream=False))).json()
    assert (
        answer["output"][0]["content"][0]["text"] == "Tool exec_command returned: Process exited with code 0 Output: hi"
    )


async def test_responses_not_streamed_and_instructions_as_system(client: httpx.AsyncClient) -> None:
    reply = await client.post("/v1/responses", json=codex(said("[[echo-system]]"), stream=False))
    body = reply.json()
    assert reply.status_code == 200 and body["object"] == "response" and body["status"] == "completed"
    assert body["output"][0]["content"][0]["text"] == "System prompt starts: You are Codex."
    plain = (await client.post("/v1/responses", json={"input": "just text", "stream": False})).json()
    assert plain["output"][0]["content"][0]["text"] == "Offline model reply: just text"


async def test_responses_errors(client: httpx.AsyncClient) -> None:
    failed = await client.post("/v1/responses", json=codex(said("[[error:500]]")))
    assert failed.status_code == 500 and failed.json()["error"]["type"] == "server_error"
    odd = await client.post("/v1/responses", json={"input": [{"type": "message", "role": "robot", "content": "x"}]})
    assert odd.status_code == 400 and odd.json()["error"]["message"] == "input.0.role: unknown role 'robot'"


# --- Gemini ----------------------------------------------------------------------------------------

STREAM = "/v1beta/models/fake-gemini:streamGenerateContent?alt=sse"
ONCE = "/v1beta/models/fake-gemini:generateContent"


def gemini(*contents: dict[str, Any]) -> dict[str, Any]:
    declarations = [{"name": "run_shell_command", "parametersJsonSchema": {}}, {"name": "read_file"}]
    return {
        "contents": list(contents),
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": declarations}],
        "generationConfig": {},
    }


def asks(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


async def test_gemini_stream_text(client: httpx.AsyncClient) -> None:
    got = await events(client, STREAM, gemini(asks("hello there")))
    assert {name for name, _ in got} == {"message"}
    chunks = [data for _, data in got]
    assert len(chunks) >= 2
    candidates = [chunk["candidates"][0] for chunk in chunks]
    assert all(c["content"]["role"] == "model" for c in candidates)
    assert [c.get("finishReason") for c in candidates] == [None] * (len(chunks) - 1) + ["STOP"]
    assert ["usageMetadata" in chunk for chunk in chunks] == [False] * (len(chunks) - 1) + [True]
    text = "".join(part["text"] for c in candidates for part in c["content"]["parts"])
    assert text == "Offline model reply: hello there"
    usage = chunks[-1]["usageMetadata"]
    assert usage["candidatesTokenCount"] == len(text.split()) and usage["promptTokenCount"] > 0
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]


async def test_gemini_function_call_then_response_completes_the_turn(client: httpx.AsyncClient) -> None:
    ask = asks('[[tool:run_shell_command {"command": "echo hi"}]]')
    got = await events(client, STREAM, gemini(ask))
    assert len(got) == 1
    candidate = got[0][1]["candidates"][0]
    assert candidate["finishReason"] == "STOP"
    assert candidate["content"]["parts"] == [
        {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hi"}}}
    ]

    called = {"role": "model", "parts": candidate["content"]["parts"]}
    returned = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "hi"}}}],
    }
    answer = await events(client, STREAM, gemini(ask, called, returned))
    text = "".join(p["text"] for _, d in answer for p in d["candidates"][0]["content"]["parts"])
    assert text == "Tool run_shell_command returned: hi"


async def test_gemini_not_streamed(client: httpx.AsyncClient) -> None:
    reply = await client.post(ONCE, json=gemini(asks("[[echo-system]]")))
    assert reply.status_code == 200
    body = reply.json()
    candidate = body["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "System prompt starts: You are Gemini CLI."}]}
    assert candidate["finishReason"] == "STOP" and body["usageMetadata"]["candidatesTokenCount"] == 7


async def test_gemini_session_context_is_not_the_prompt(client: httpx.AsyncClient) -> None:
    """Gemini CLI puts its session's setting before the first prompt: in the prompt's content, or alone in one."""
    context = {"text": "<session_context>\nThis is the Gemini CLI. Today's date is …\n</session_context>"}
    beside = {"role": "user", "parts": [context, {"text": "hi"}]}
    reply = (await client.post(ONCE, json=gemini(beside))).json()
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "Offline model reply: hi"}]
    alone = {"role": "user", "parts": [context]}
    counted = (await client.post(ONCE, json=gemini(alone, asks("[[turns]]")))).json()
    assert counted["candidates"][0]["content"]["parts"] == [{"text": "This conversation holds 1 user messages."}]


async def test_bash_is_called_as_gemini_clis_shell_tool(client: httpx.AsyncClient) -> None:
    reply = (await client.post(ONCE, json=gemini(asks('[[tool:bash {"command": "ls"}]]')))).json()
    parts = reply["candidates"][0]["content"]["parts"]
    assert parts == [{"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}}]


async def test_gemini_errors(client: httpx.AsyncClient) -> None:
    failed = await client.post(ONCE, json=gemini(asks("[[error:503]]")))
    assert failed.status_code == 503
    assert failed.json() == {
        "error": {"code": 503, "message": "Offline model error 503 (requested by the prompt)", "status": "UNAVAILABLE"}
    }
    no_sse = await client.post(STREAM.split("?")[0], json=gemini(asks("hi")))
    assert no_sse.status_code == 400
    assert no_sse.json()["error"]["message"] == "query parameter alt: only 'sse' is served, got None"


# --- every format alike ----------------------------------------------------------------------------


async def test_each_format_records_its_request_and_plays_scripted_steps(
    client: httpx.AsyncClient, offline: OfflineModel
) -> None:
    step = {"text": "scripted", "tool_calls": [{"name": "Bash", "arguments": {"n": 1}}]}
    offline.control.clear()
    await client.post("/control/script", json={"steps": [step, step, step]})
    anthropic = (await client.post("/v1/messages", json=claude({"role": "user", "content": "x"}, stream=False))).json()
    assert [b["type"] for b in anthropic["content"]] == ["text", "tool_use"]
    assert anthropic["content"][0]["text"] == "scripted" and anthropic["content"][1]["input"] == {"n": 1}
    responses = (await client.post("/v1/responses", json=codex(said("x"), stream=False))).json()
    assert [item["type"] for item in responses["output"]] == ["message", "function_call"]
    google = (await client.post(ONCE, json=gemini(asks("x")))).json()
    assert google["candidates"][0]["content"]["parts"] == [
        {"text": "scripted"},
        {"functionCall": {"name": "Bash", "args": {"n": 1}}},
    ]
    recorded = offline.control.requests()
    assert [r["model"] for r in recorded[:2]] == ["fake-claude", "fake-codex"]
    assert "contents" in recorded[2] and offline.control.snapshot()["queued_steps"] == 0


# --- [[think:…]] where the format carries thoughts --------------------------------------------------


async def test_anthropic_thinking_block_before_text(client: httpx.AsyncClient) -> None:
    got = await events(client, "/v1/messages", claude({"role": "user", "content": "[[think:weigh it up]] go"}))
    starts = [d["content_block"] for n, d in got if n == "content_block_start"]
    assert starts == [{"type": "thinking", "thinking": "", "signature": ""}, {"type": "text", "text": ""}]
    first = [d["delta"] for n, d in got if n == "content_block_delta" and d["index"] == 0]
    assert "".join(d.get("thinking", "") for d in first) == "weigh it up"
    assert first[-1] == {"type": "signature_delta", "signature": "offline"}
    body = (
        await client.post("/v1/messages", json=claude({"role": "user", "content": "[[think:hm]] go"}, stream=False))
    ).json()
    assert body["content"][0] == {"type": "thinking", "thinking": "hm", "signature": "offline"}
    assert body["content"][1] == {"type": "text", "text": "Offline model reply: go"}


async def test_gemini_thought_parts_before_text(client: httpx.AsyncClient) -> None:
    got = await events(client, STREAM, gemini(asks("[[think:weigh it up]] go")))
    parts = [p for _, d in got for p in d["candidates"][0]["content"]["parts"]]
    assert "".join(p["text"] for p in parts if p.get("thought")) == "weigh it up"
    assert "".join(p["text"] for p in parts if not p.get("thought")) == "Offline model reply: go"
    assert parts[0].get("thought") is True and "thought" not in parts[-1]


# --- pacing and hanging up, shared by every format ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", claude({"role": "user", "content": "[[slow:1]] [[long:8]]"})),
        ("/v1/responses", codex(said("[[slow:1]] [[long:8]]"))),
        (STREAM, gemini(asks("[[slow:1]] [[long:8]]"))),
    ],
)
async def test_slow_directive_spreads_the_stream(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    arrivals: list[float] = []
    async with httpx_sse.aconnect_sse(client, "POST", path, json=body) as source:
        async for _ in source.aiter_sse():
            arrivals.append(asyncio.get_running_loop().time())
    assert len(arrivals) >= 8
    assert arrivals[-1] - arrivals[0] >= 0.8  # 8 of the 1 s's pieces come after the first event


async def test_client_hanging_up_ends_the_stream(client: httpx.AsyncClient, offline: OfflineModel) -> None:
    body = claude({"role": "user", "content": "[[slow:30]] [[long:4]]"})
    async with httpx_sse.aconnect_sse(client, "POST", "/v1/messages", json=body) as source:
        async for sse in source.aiter_sse():
            assert sse.event == "message_start"
            break
    await asyncio.wait_for(offline.control.wait_idle(), timeout=5)
    assert offline.control.snapshot()["in_flight"] == 0


async def test_responses_reasoning_item_before_message(client: httpx.AsyncClient) -> None:
    got = await events(client, "/v1/responses", codex(said("[[think:weigh it up]] go")))
    names = [name for name, _ in got]
    pieces = names.count("response.reasoning_summary_text.delta")
    assert names[: 4 + pieces] == [
        "response.created",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        *["response.reasoning_summary_text.delta"] * pieces,
        "response.reasoning_summary_text.done",
    ]
    assert "".join(d["delta"] for n, d in got if n == "response.reasoning_summary_text.delta") == "weigh it up"
    output = got[-1][1]["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "weigh it up"}]
    assert output[1]["content"][0]["text"] == "Offline model reply: go"
    assert [d["sequence_number"] for _, d in got] == list(range(len(got)))

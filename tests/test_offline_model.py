"""The offline model: the real server over 127.0.0.1 (its pure parts: test_offline_model_plan.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel, create_app
from tests.helpers.chat_messages import tool_call, tool_result, user

DEADLINE = 10.0
TITLE_SYSTEM = "You are a title generator. You output ONLY a thread title. Nothing else."
BASH_TOOL = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


@dataclass
class Streamed:
    chunks: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    done: bool = False

    def deltas(self, key: str) -> list[Any]:
        """Values of `key` in the deltas after the opening role chunk."""
        found = (c["choices"][0]["delta"] for c in self.chunks if c["choices"])
        return [delta[key] for delta in found if key in delta and "role" not in delta]

    @property
    def text(self) -> str:
        return "".join(self.deltas("content"))

    @property
    def reasoning(self) -> str:
        return "".join(self.deltas("reasoning_content"))

    @property
    def finish_reason(self) -> str | None:
        reasons = [c["choices"][0]["finish_reason"] for c in self.chunks if c["choices"]]
        return next((r for r in reasons if r), None)

    def tool_calls(self) -> list[dict[str, str]]:
        calls: list[dict[str, str]] = []
        for piece in (part for delta in self.deltas("tool_calls") for part in delta):
            if "id" in piece:
                calls.append({"id": piece["id"], "name": piece["function"]["name"], "arguments": ""})
            calls[piece["index"]]["arguments"] += piece["function"]["arguments"]
        return calls


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[OfflineModel]:
    async with OfflineModel() as running:
        yield running


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DEADLINE)) as session:
        yield session


@pytest.fixture(autouse=True)
async def fresh_log(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with http.delete(f"{model.url}/control/requests") as response:
        response.raise_for_status()


def chat_body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_ID,
        "messages": list(messages),
        "tools": [BASH_TOOL],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    return body | extra


async def stream(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Streamed:
    result = Streamed()
    async with http.post(url, json=body) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        async for raw in response.content:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                result.done = True
            elif line.startswith("data: "):
                result.chunks.append(json.loads(line.removeprefix("data: ")))
                result.arrivals.append(time.monotonic())
    return result


async def test_plain_reply_streams_like_openai(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        body = chat_body(user("please  say hello to the whole wide world"), model="someone-elses-model")
        reply = await stream(http, f"{model.base_url}/chat/completions", body)
    assert reply.text == "Offline model reply: please say hello to the whole wide world"
    assert len(reply.deltas("content")) >= 3
    first, *_, finish, usage = reply.chunks
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert finish["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 11
    assert usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + 11
    assert reply.done
    assert {(c["object"], c["model"], c["id"]) for c in reply.chunks} == {
        ("chat.completion.chunk", "someone-elses-model", first["id"])
    }


async def test_tool_call_streams_arguments_in_pieces(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    arguments = {"command": "echo ]] done > out.txt", "timeout": 5}
    async with asyncio.timeout(DEADLINE):
        reply = await stream(
            http, f"{model.base_url}/chat/completions", chat_body(user(f"[[tool:bash {json.dumps(arguments)}]]"))
        )
    [call] = reply.tool_calls()
    assert call["name"] == "bash" and call["id"].startswith("call_")
    assert json.loads(call["arguments"]) == arguments
    header, *fragments = [part for delta in reply.deltas("tool_calls") for part in delta]
    assert header["function"]["arguments"] == "" and header["type"] == "function"
    assert len(fragments) >= 2
    assert reply.finish_reason == "tool_calls" and reply.text == ""


async def test_after_the_tool_result_the_model_answers(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    prompt = user('[[tool:bash {"command": "ls"}]]')
    async with asyncio.timeout(DEADLINE):
        first = await stream(http, f"{model.base_url}/chat/completions", chat_body(prompt))
        [call] = first.tool_calls()
        body = chat_body(prompt, tool_call(call["id"], "bash"), tool_result(call["id"], "a.txt\nb.txt\n"))
        second = await stream(http, f"{model.base_url}/chat/completions", body)
    assert second.tool_calls() == []
    assert second.text == "Tool bash returned: a.txt b.txt"
    assert second.finish_reason == "stop"


async def test_tool_call_ids_are_unique(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    body = chat_body(user("[[question:{}]]"))
    async with asyncio.timeout(DEADLINE):
        replies = [await stream(http, f"{model.base_url}/chat/completions", body) for _ in range(3)]
    ids = [call["id"] for reply in replies for call in reply.tool_calls()]
    assert len(set(ids)) == 3
    assert {call["name"] for reply in replies for call in reply.tool_calls()} == {"question"}


async def test_think_streams_reasoning_before_the_answer(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        reply = await stream(
            http, f"{model.base_url}/chat/completions", chat_body(user("[[think:weigh the options first]] go"))
        )
    assert reply.reasoning == "weigh the options first"
    assert reply.text == "Offline model reply: go"
    kinds = [next(iter(c["choices"][0]["delta"])) for c in reply.chunks if c["choices"] and c["choices"][0]["delta"]]
    assert kinds.index("content", 1) > max(i for i, kind in enumerate(kinds) if kind == "reasoning_content")


async def test_turns_counts_user_messages(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    messages = [user("a"), {"role": "assistant", "content": "b"}, user("c"), user("[[turns]]")]
    async with asyncio.timeout(DEADLINE):
        reply = await stream(http, f"{model.base_url}/chat/completions", chat_body(*messages))
    assert reply.text == "This conversation holds 3 user messages."


async def test_long_streams_one_word_per_delta(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        reply = await stream(http, f"{model.base_url}/chat/completions", chat_body(user("[[long:50]]")))
    assert reply.text == " ".join(f"word{i}" for i in range(1, 51))
    assert len(reply.deltas("content")) == 50


@pytest.mark.parametrize(
    ("status", "kind", "retry_after"),
    [(400, "invalid_request_error", None), (429, "invalid_request_error", None), (503, "server_error", "50")],
)
async def test_error_directive(
    model: OfflineModel, http: aiohttp.ClientSession, status: int, kind: str, retry_after: str | None
) -> None:
    async with asyncio.timeout(DEADLINE):
        body = chat_body(user(f"fail [[error:{status}]]"))
        async with http.post(f"{model.base_url}/chat/completions", json=body) as response:
            payload = await response.json()
    assert response.status == status
    assert response.headers.get("retry-after-ms") == retry_after
    message = f"Offline model error {status} (requested by the prompt)"
    assert payload == {"error": {"message": message, "type": kind, "param": None, "code": status}}


async def test_slow_spreads_the_deltas(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    started = time.monotonic()
    async with asyncio.timeout(DEADLINE):
        reply = await stream(http, f"{model.base_url}/chat/completions", chat_body(user("[[slow:0.6]] " + "w " * 12)))
    content_times = [
        t
        for c, t in zip(reply.chunks, reply.arrivals, strict=True)
        if c["choices"] and "content" in c["choices"][0]["delta"]
    ]
    assert reply.text == "Offline model reply: " + "w " * 11 + "w"
    assert content_times[0] - started < 0.4
    assert content_times[-1] - content_times[0] >= 0.35
    assert time.monotonic() - started >= 0.55


async def test_client_hang_up_stops_a_slow_stream(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(3):
        body = chat_body(user("[[slow:60]] " + "word " * 30))
        async with http.post(f"{model.base_url}/chat/completions", json=body) as response:
            first = await response.content.readline()
            assert first.startswith(b"data: ")
            async with http.get(f"{model.url}/control/state") as state:
                assert (await state.json())["in_flight"] == 1
            response.close()
        await model.control.wait_idle()


async def test_script_is_consumed_in_order_and_titles_do_not_consume(
    model: OfflineModel, http: aiohttp.ClientSession
) -> None:
    steps = [
        {"text": "first scripted answer", "chunks": 4},
        {"reasoning": "hmm", "tool_calls": [{"name": "bash", "arguments": {"command": "pwd"}}]},
        {"status": 500, "error": "scripted outage"},
    ]
    title_body = chat_body({"role": "system", "content": TITLE_SYSTEM}, user("hi"), model=SMALL_MODEL_ID)
    del title_body["tools"]
    url = f"{model.base_url}/chat/completions"
    async with asyncio.timeout(DEADLINE):
        async with http.post(f"{model.url}/control/script", json={"steps": steps}) as response:
            assert await response.json() == {"queued_steps": 3}
        title = await stream(http, url, title_body)
        first = await stream(http, url, chat_body(user("[[turns]]")))
        second = await stream(http, url, chat_body(user("ignored")))
        async with http.post(url, json=chat_body(user("ignored"))) as failed:
            error = await failed.json()
        after = await stream(http, url, chat_body(user("back to directives")))
        async with http.get(f"{model.url}/control/requests") as response:
            log = await response.json()
    assert title.text == "Offline title"
    assert (first.text, len(first.deltas("content"))) == ("first scripted answer", 4)
    assert second.reasoning == "hmm" and second.finish_reason == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in second.tool_calls()] == [("bash", {"command": "pwd"})]
    assert failed.status == 500 and error["error"]["message"] == "scripted outage"
    assert after.text == "Offline model reply: back to directives"
    assert [entry["title"] for entry in log] == [True, False, False, False, False]
    assert log[1]["messages"] == [user("[[turns]]")]


async def test_invalid_script_is_rejected(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        async with http.post(f"{model.url}/control/script", json={"steps": [{"txt": "typo"}]}) as response:
            payload = await response.json()
    assert response.status == 400
    assert payload["error"]["message"].startswith("steps.0.txt:")


async def test_requests_log_state_and_clear(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        await stream(http, f"{model.base_url}/chat/completions", chat_body(user("one")))
        async with http.post(f"{model.url}/control/script", json={"steps": [{"text": "x"}]}):
            pass
        async with http.get(f"{model.url}/control/state") as response:
            before = await response.json()
        async with http.delete(f"{model.url}/control/requests"):
            pass
        async with http.get(f"{model.url}/control/state") as response:
            after = await response.json()
        async with http.get(f"{model.url}/control/requests") as response:
            log = await response.json()
    assert before == {"requests": 1, "queued_steps": 1, "in_flight": 0}
    assert after == {"requests": 0, "queued_steps": 0, "in_flight": 0}
    assert log == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b"[1, 2]", "request body must be a JSON object"),
        (b'{"model": "m"}', "messages: Field required"),
    ],
)
async def test_malformed_bodies_get_400(
    model: OfflineModel, http: aiohttp.ClientSession, data: bytes, message: str
) -> None:
    async with asyncio.timeout(DEADLINE):
        async with http.post(f"{model.base_url}/chat/completions", data=data) as response:
            payload = await response.json()
    assert response.status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["message"].startswith(message)


async def test_non_streaming_completion(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        body = chat_body(user('[[think:ok]] [[tool:bash {"command": "ls"}]]'), stream=False)
        async with http.post(f"{model.url}/chat/completions", json=body) as response:
            tool_step = await response.json()
        async with http.post(f"{model.url}/chat/completions", json=chat_body(user("plain"), stream=False)) as response:
            plain = await response.json()
    [choice] = tool_step["choices"]
    assert tool_step["object"] == "chat.completion" and choice["finish_reason"] == "tool_calls"
    assert choice["message"]["reasoning_content"] == "ok" and choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == ("bash", {"command": "ls"})
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": "Offline model reply: plain"}
    assert plain["usage"]["completion_tokens"] == 4


async def test_ten_concurrent_requests_are_independent(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    url = f"{model.base_url}/chat/completions"
    async with asyncio.timeout(DEADLINE), asyncio.TaskGroup() as group:
        tasks = [group.create_task(stream(http, url, chat_body(user(f"[[slow:0.3]] request {i}")))) for i in range(10)]
    assert [task.result().text for task in tasks] == [f"Offline model reply: request {i}" for i in range(10)]


async def test_models_and_health(model: OfflineModel, http: aiohttp.ClientSession) -> None:
    async with asyncio.timeout(DEADLINE):
        async with http.get(f"{model.base_url}/models") as response:
            models = await response.json()
        async with http.get(f"{model.url}/health") as response:
            health = await response.json()
    assert [m["id"] for m in models["data"]] == [MODEL_ID, SMALL_MODEL_ID]
    assert health == {"ok": True}


async def test_explicit_start_and_stop_on_loopback() -> None:
    offline = OfflineModel()
    async with asyncio.timeout(DEADLINE):
        await offline.start()
        try:
            assert offline.port > 0
            assert offline.base_url == f"http://127.0.0.1:{offline.port}/v1"
            async with aiohttp.ClientSession() as session, session.get(f"{offline.url}/health") as response:
                assert response.status == 200
        finally:
            await offline.stop()
        with pytest.raises(aiohttp.ClientConnectionError):
            async with aiohttp.ClientSession() as session, session.get(f"{offline.url}/health"):
                pass


async def test_create_app_returns_independent_apps() -> None:
    # async, as every test here: the module's autouse fixtures are async (pytest-asyncio tears them down for a
    # sync test before it runs)
    assert create_app() is not create_app()

"""The model relay on real sockets: it adds the operator's key in the wire's header, streams the answer through as
it arrives, and refuses what is not the backend's call to its provider (another path, another host, no token)."""

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from pydantic import SecretStr

from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.sandbox import model_relay
from a2a_wrapper.sandbox.model_relay import WIRES, ModelRelay, Upstream
from a2a_wrapper.sandbox.relayed_provider import backend_settings, upstream_of

pytestmark = pytest.mark.timeout(60)
CHAT = {"model": "offline-model", "stream": True, "messages": [{"role": "user", "content": "hello"}]}


def a_key() -> str:
    return f"relaykey-{secrets.token_hex(12)}"


@asynccontextmanager
async def recording_provider() -> AsyncIterator[tuple[str, list[web.Request]]]:
    """A provider on 127.0.0.1 that answers every path with 200 and keeps each request it got."""
    seen: list[web.Request] = []

    async def record(request: web.Request) -> web.Response:
        await request.read()
        seen.append(request)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


def auth(relay: ModelRelay) -> dict[str, str]:
    return {"Authorization": f"Bearer {relay.token}"}


async def test_the_key_is_added_and_the_backends_credentials_are_stripped(offline_model: OfflineModel) -> None:
    key = a_key()
    offline_model.control.clear()
    async with (
        model_relay.serving(Upstream("openai", offline_model.base_url, SecretStr(key))) as relay,
        aiohttp.ClientSession() as http,
    ):
        headers = {**auth(relay), "x-api-key": "planted", "Cookie": "c=1"}
        async with http.post(f"{relay.url}/chat/completions?key=planted", json=CHAT, headers=headers) as answer:
            body = await answer.text()
    assert answer.status == 200 and "data: [DONE]" in body
    [received] = offline_model.control.headers()
    assert received["Authorization"] == f"Bearer {key}"
    assert relay.token not in json.dumps(received) and "planted" not in json.dumps(received)
    assert "Cookie" not in received


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_each_wire_gets_its_own_header(wire: str) -> None:
    key = a_key()
    async with recording_provider() as (base, seen):
        async with (
            model_relay.serving(Upstream(wire, f"{base}/v1", SecretStr(key))) as relay,
            aiohttp.ClientSession() as http,
        ):
            tail = WIRES[wire].endpoints[0]
            async with http.post(f"{relay.url}/{tail}?api-version=1", json={}, headers=auth(relay)) as answer:
                assert answer.status == 200, await answer.text()
    [request] = seen
    expected = WIRES[wire]
    assert request.headers[expected.key_header] == expected.key_prefix + key
    assert request.path == f"/v1/{tail}" and request.query_string == "api-version=1"
    others = {"authorization", "x-api-key", "api-key"} - {expected.key_header.lower()}
    assert not any(name in {h.lower() for h in request.headers} for name in others)


async def test_a_bearer_token_wins_over_the_key() -> None:
    async with recording_provider() as (base, seen):
        upstream = Upstream("anthropic", base, SecretStr("key"), SecretStr("bearer-value"))
        async with model_relay.serving(upstream) as relay, aiohttp.ClientSession() as http:
            async with http.post(f"{relay.url}/v1/messages", json={}, headers={"x-api-key": relay.token}) as answer:
                assert answer.status == 200
    assert seen[0].headers["Authorization"] == "Bearer bearer-value" and "x-api-key" not in seen[0].headers


async def test_gemini_calls_a_models_method_with_the_key_in_its_header() -> None:
    """Gemini CLI sends its key as `x-goog-api-key`: the relay's token there, the operator's key on the way out."""
    key = a_key()
    async with recording_provider() as (base, seen):
        async with (
            model_relay.serving(Upstream("gemini", base, SecretStr(key))) as relay,
            aiohttp.ClientSession() as http,
        ):
            target = f"{relay.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=planted"
            async with http.post(target, json={}, headers={"x-goog-api-key": relay.token}) as answer:
                assert answer.status == 200, await answer.text()
    [request] = seen
    assert request.headers["x-goog-api-key"] == key and "Authorization" not in request.headers
    assert request.path == "/v1beta/models/gemini-x:streamGenerateContent" and request.query_string == "alt=sse"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/v1beta/models/m:deleteModel", 403),  # a method that is no inference call
        ("/v1beta/models/:generateContent", 403),  # no model
        ("/v1beta/tunedModels/m:generateContent", 403),
        ("/v1beta/files", 403),
        ("/v1beta/models/m:generateContent", 401),  # no token
    ],
)
async def test_what_is_not_a_gemini_call_is_refused(target: str, expected: int) -> None:
    async with recording_provider() as (base, seen):
        async with model_relay.serving(Upstream("gemini", base, SecretStr(a_key()))) as relay:
            headers = {} if expected == 401 else {"x-goog-api-key": relay.token}
            status, _ = await raw_request(relay, f"POST {target} HTTP/1.1", headers)
    assert status == expected
    assert seen == [], "nothing reached the provider"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/control/requests", 403),  # the model's other routes
        ("/health", 403),
        ("/v1/../control/requests", 403),
        ("/v1/%2e%2e/control/requests", 403),
        ("/v1/files", 403),  # the provider's, but no inference endpoint
        ("/v1//chat/completions", 403),
        ("/v1/chat/completions", 401),  # no token
    ],
)
async def test_what_is_not_a_call_to_the_provider_is_refused(
    offline_model: OfflineModel, target: str, expected: int
) -> None:
    offline_model.control.clear()
    async with model_relay.serving(Upstream("openai", offline_model.base_url, SecretStr(a_key()))) as relay:
        headers = {} if expected == 401 else {"Authorization": f"Bearer {relay.token}"}
        status, _ = await raw_request(relay, f"POST {target} HTTP/1.1", headers)
    assert status == expected
    assert offline_model.control.requests() == [], "nothing reached the provider"


async def test_another_host_or_a_wrong_token_is_refused(offline_model: OfflineModel) -> None:
    offline_model.control.clear()
    async with model_relay.serving(Upstream("openai", offline_model.base_url, SecretStr(a_key()))) as relay:
        token = {"Authorization": f"Bearer {relay.token}"}
        absolute = await raw_request(relay, "POST http://example.com/v1/chat/completions HTTP/1.1", token)
        other_host = await raw_request(relay, "POST /v1/chat/completions HTTP/1.1", token, host="example.com")
        wrong = await raw_request(relay, "POST /v1/chat/completions HTTP/1.1", {"Authorization": "Bearer x"})
    assert [absolute[0], other_host[0], wrong[0]] == [403, 403, 401], (absolute, other_host, wrong)
    assert offline_model.control.requests() == []


async def raw_request(
    relay: ModelRelay, line: str, headers: dict[str, str], host: str | None = None
) -> tuple[int, bytes]:
    """One request written byte for byte (no client normalises its path or host); the status and the body."""
    port = int(relay.url.split(":")[2].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(CHAT).encode()
    head = [line, f"Host: {host or f'127.0.0.1:{port}'}", f"Content-Length: {len(body)}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    answer = await reader.read()
    writer.close()
    return int(answer.split(b" ", 2)[1]), answer


async def test_an_answer_streams_through_as_it_arrives(offline_model: OfflineModel) -> None:
    """A slow reply's first chunk reaches the backend long before its last is written."""
    slow = {**CHAT, "messages": [{"role": "user", "content": "[[slow:1.5]] a slow reply of several words"}]}
    async with (
        model_relay.serving(Upstream("openai", offline_model.base_url, SecretStr(a_key()))) as relay,
        aiohttp.ClientSession() as http,
    ):
        started = time.monotonic()
        async with http.post(f"{relay.url}/chat/completions", json=slow, headers=auth(relay)) as answer:
            first = await answer.content.readany()
            first_at = time.monotonic() - started
            await answer.read()
            done_at = time.monotonic() - started
    assert first.startswith(b"data: ")
    assert done_at >= 1.4 and first_at < done_at - 0.5, (first_at, done_at)


async def test_an_unreachable_provider_is_a_502() -> None:
    async with recording_provider() as (base, _):
        pass  # closed: nothing listens there any more
    async with model_relay.serving(Upstream("openai", base, SecretStr(a_key()))) as relay:
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{relay.url}/chat/completions", json=CHAT, headers=auth(relay)) as answer:
                assert answer.status == 502 and "could not be reached" in await answer.text()


def test_an_unknown_wire_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="'gopher' has no relay wire"):
        ModelRelay(Upstream("gopher", "https://example.invalid/v1", SecretStr("k")))


def settings_with(backend: dict[str, Any], runtime: dict[str, Any] | None = None) -> AgentSettings:
    return AgentSettings(card=CardSettings(name="relayed"), backend=backend, runtime=runtime or {"kind": "sandbox"})


OPENCODE = {"kind": "opencode", "provider": {"id": "p", "base_url": "https://models.example/v1", "models": ["m"]}}
COPILOT = {"kind": "copilot", "model": "m", "provider": {"type": "anthropic", "base_url": "https://models.example"}}
GEMINI = {"kind": "gemini", "provider": {"base_url": "https://models.example", "api_key": "k"}}
ACP = {"kind": "acp", "command": ["agent"], "provider": {"base_url": "https://models.example/v1", "url_env": "U"}}


@pytest.mark.parametrize(
    ("backend", "runtime", "wire"),
    [
        ({**OPENCODE, "provider": {**OPENCODE["provider"], "api_key": "k"}}, None, "openai"),
        ({**COPILOT, "provider": {**COPILOT["provider"], "bearer_token": "k"}}, None, "anthropic"),
        ({**ACP, "provider": {**ACP["provider"], "key_env": "K", "api_key": "k"}}, {"kind": "process"}, "openai"),
        (GEMINI, None, "gemini"),
        (OPENCODE, None, None),  # no key: nothing to keep out
        (
            {**OPENCODE, "provider": {**OPENCODE["provider"], "api_key": "k"}, "base_url": "http://127.0.0.1:1"},
            None,
            None,
        ),
        ({**OPENCODE, "provider": {**OPENCODE["provider"], "api_key": "k"}}, {"kind": "docker", "image": "i"}, None),
    ],
    ids=["opencode", "copilot-bearer", "acp-process", "gemini", "no-key", "attached", "docker"],
)
def test_which_agents_get_a_relay(backend: dict[str, Any], runtime: dict[str, Any] | None, wire: str | None) -> None:
    settings = settings_with(backend, runtime)
    upstream = upstream_of(settings)
    assert (upstream.wire if upstream else None) == wire


async def test_the_backend_sees_the_relay_and_its_token_only() -> None:
    settings = settings_with({**COPILOT, "provider": {**COPILOT["provider"], "api_key": "real", "bearer_token": "b"}})
    async with backend_settings(settings) as started:
        provider = started.backend.provider  # type: ignore[union-attr]
        assert provider.base_url.startswith("http://127.0.0.1:") and provider.bearer_token is None
        assert provider.api_key.get_secret_value() not in ("real", "b")
        assert "real" not in started.model_dump_json() and '"b"' not in started.model_dump_json()
    assert settings.backend.provider.api_key.get_secret_value() == "real", "the operator's settings unchanged"  # type: ignore[union-attr]


async def test_a_provider_breaking_off_leaves_the_answer_unfinished() -> None:
    """The first chunk arrives, then the provider's connection drops: the backend sees an unfinished answer (not
    a complete one), and the relay goes on serving."""

    async def half_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + b'10\r\ndata: {"a": 1}\n\n\r\n')
        await writer.drain()
        writer.close()

    provider = await asyncio.start_server(half_answer, "127.0.0.1", 0)
    port = provider.sockets[0].getsockname()[1]
    try:
        upstream = Upstream("openai", f"http://127.0.0.1:{port}/v1", SecretStr(a_key()))
        async with model_relay.serving(upstream) as relay, aiohttp.ClientSession() as http:
            for _ in range(2):
                async with http.post(f"{relay.url}/chat/completions", json=CHAT, headers=auth(relay)) as answer:
                    assert await answer.content.readany() == b'data: {"a": 1}\n\n'
                    with pytest.raises(aiohttp.ClientPayloadError):
                        await answer.read()
    finally:
        provider.close()
        await provider.wait_closed()

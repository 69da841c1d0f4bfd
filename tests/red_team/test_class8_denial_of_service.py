"""Red team, class 8: one client makes the agent unusable for the others.

A real agent (OpenCode, served by uvicorn on a free port) takes each hostile body on JSON-RPC and REST, or a flood
of connections from one peer (127.0.0.2: all of 127/8 is loopback). The effects looked at: the attacker's own
answer is a 4xx within seconds (never a 500, never a hang), and right after, another peer's /health and a
JSON-RPC call are answered at once.
"""

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel
from tests.conftest import ServedAgent, serving
from tests.helpers.a2a_wire import V1

pytestmark = pytest.mark.slow

DEEP = 100_000


@pytest.fixture(scope="module")
async def served(opencode_binary, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServedAgent]:  # type: ignore[no-untyped-def]
    state = tmp_path_factory.mktemp("dos") / "state"
    async with OfflineModel() as model:  # the module's own (a session one was torn down between modules)
        settings = AgentSettings(
            card=CardSettings(name="dos-target"),
            server=ServerSettings(port=free_port()),
            backend=OpenCodeSettings(
                binary=opencode_binary,
                workdir=state / "workspace",
                model=f"offline/{MODEL_ID}",
                provider=ModelProvider(id="offline", base_url=model.base_url, models=[MODEL_ID]),
            ),
            state_dir=state,
            auto_approve=True,
        )
        async with serving(settings, model) as agent:
            yield agent


def rpc(params: bytes) -> bytes:
    return b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ' + params + b"}"


def message(inner: bytes) -> bytes:
    return (
        b'{"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}], "metadata": ' + inner + b"}}"
    )


BODIES = {
    # a string without its closing quote: the depth check's pattern backtracked through every split of it
    "rest-unterminated-string": ("rest", b'{"a": "' + b"x" * 40),
    "jsonrpc-unterminated-string": ("jsonrpc", b'{"jsonrpc": "2.0", "id": "' + b"x" * 40),
    "rest-arrays-100k-deep": ("rest", message(b"[" * DEEP + b"]" * DEEP)),
    "jsonrpc-objects-100k-deep": ("jsonrpc", rpc(b'{"a": ' * DEEP + b"1" + b"}" * DEEP)),
    "rest-deep-with-whitespace": ("rest", message(b"[ \n\t" * DEEP + b"] " * DEEP)),
    "brackets-after-an-escaped-backslash": ("jsonrpc", rpc(b'{"x": "\\\\", "y": ' + b"[" * DEEP + b"]" * DEEP + b"}")),
    "jsonrpc-id-of-10k-digits": ("jsonrpc", b'{"jsonrpc": "2.0", "id": ' + b"9" * 10_000 + b', "method": "GetTask"}'),
    "rest-metadata-number-of-10k-digits": ("rest", message(b'{"n": ' + b"7" * 10_000 + b"}")),
    "rest-exponent-overflow": ("rest", message(b'{"n": 1e999999999}')),
    "jsonrpc-exponent-overflow": ("jsonrpc", rpc(message(b'{"n": -1e400}'))),
    "invalid-utf8": ("jsonrpc", b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe\xfd"}'),
    "nan-and-infinity": ("jsonrpc", b'{"jsonrpc": "2.0", "id": NaN, "method": "GetTask", "params": {"x": Infinity}}'),
    "jsonrpc-batch-of-5000": (
        "jsonrpc",
        b"[" + b",".join([b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}'] * 5000) + b"]",
    ),
    "lone-surrogate-in-text": (
        "rest",
        b'{"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "\\ud800"}]}}',
    ),
    "body-of-64-mib": ("rest", b'{"message": "' + b"a" * (64 << 20) + b'"}'),
}


async def _others_are_served(agent: ServedAgent) -> float:
    """How long another peer waits for /health and a JSON-RPC call, both answered."""
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=10) as other:
        health = await other.get(agent.url + "/health")
        call = await other.post(
            agent.jsonrpc, json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}, headers=V1
        )
    assert health.status_code == 200 and call.status_code == 200, (health.status_code, call.text[:200])
    return time.monotonic() - started


@pytest.mark.parametrize("name", BODIES)
async def test_a_hostile_body_gets_a_prompt_refusal_and_leaves_others_served(served: ServedAgent, name: str) -> None:
    binding, body = BODIES[name]
    url = served.jsonrpc if binding == "jsonrpc" else served.rest + "/message:send"
    async with httpx.AsyncClient(timeout=15, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2")) as attacker:
        try:
            answer = await attacker.post(url, content=body, headers={**V1, "Content-Type": "application/json"})
            status = answer.status_code
            if b'"code":-32603' in answer.content.replace(b" ", b""):  # JSON-RPC's internal error: a 500 in 200
                status = 500
        except httpx.TimeoutException:
            status = 0  # held past 15 s: the loop is busy with it
        except httpx.RemoteProtocolError:
            status = 413  # closed while the body was still being sent: refused by size, as uvicorn does
    assert 0 < status < 500, f"{name}: {status or 'no answer within 15 s'}"
    assert await _others_are_served(served) < 5.0


async def _hold(port: int, first: bytes, count: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    held = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
        writer.write(first)
        held.append((reader, writer))
    return held


FLOODS: dict[str, tuple[bytes, int]] = {
    "600-idle": (b"", 600),
    "600-half-sent-heads": (b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\n", 600),
    "600-heads-without-their-bodies": (
        b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{",
        600,
    ),
}


@pytest.mark.parametrize("flood", FLOODS)
async def test_one_peers_flood_of_connections_leaves_another_peer_served(served: ServedAgent, flood: str) -> None:
    first, count = FLOODS[flood]
    held = await _hold(served.agent.settings.server.port, first, count)
    try:
        await asyncio.sleep(0.5)
        assert await _others_are_served(served) < 5.0
    finally:
        for _, writer in held:
            writer.close()

"""A third-party client: the JavaScript SDK (@a2a-js/sdk, pinned in tests/node_client) drives the agent unchanged."""

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ServedAgent

pytestmark = pytest.mark.slow

NODE_CLIENT = Path(__file__).parent / "node_client"
INSTALL_TIMEOUT = 300
RUN_TIMEOUT = 150


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: the JS SDK tests need Node.js 20+ and npm (CI installs them)")
    return path


async def _run(*command: str, timeout: float) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=NODE_CLIENT,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(timeout):
            stdout, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"{' '.join(command)} did not finish within {timeout}s")
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


@pytest.fixture(scope="session")
async def node() -> str:
    """The node binary, with tests/node_client's locked dependencies installed (`npm ci`) if they are missing."""
    node = _tool("node")
    if not (NODE_CLIENT / "node_modules" / "@a2a-js" / "sdk" / "package.json").exists():
        npm = _tool("npm")
        code, out, err = await _run(npm, "ci", "--no-audit", "--no-fund", timeout=INSTALL_TIMEOUT)
        assert code == 0, f"npm ci failed in {NODE_CLIENT} (exit {code}):\n{out}\n{err}"
    return node


async def run_js_client(node: str, agent: ServedAgent, text: str, *options: str) -> dict[str, Any]:
    code, out, err = await _run(node, "stream.mjs", agent.url, text, *options, timeout=RUN_TIMEOUT)
    assert code == 0, f"the JS SDK client failed (exit {code}):\nstdout: {out}\nstderr: {err}"
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"expected one JSON line, got: {out!r} (stderr: {err})"
    return dict(json.loads(lines[0]))


def state(name: str) -> str:
    """TASK_STATE_COMPLETED (v1.0 enum name) and completed (v0.3) both become `completed`."""
    return name.lower().removeprefix("task_state_")


ANSWER = "Offline model reply: hello from js"

# @a2a-js/sdk 1.3.0, v0.3 REST compat transport: LegacyRestTransport decodes each SSE event with
# FromProto.taskArtifactUpdateEvent (dist/client/index.js), which copies lastChunk but not `append`,
# so the SDK reports append=false for every chunk although the wire says "append": true.
LEGACY_REST_DROPS_APPEND = pytest.mark.xfail(
    strict=True, reason="@a2a-js/sdk 1.3.0 v0.3 REST compat transport drops TaskArtifactUpdateEvent.append"
)


def assert_streamed_task(result: dict[str, Any]) -> None:
    kinds = result["kinds"]
    assert kinds[0] == "task" and kinds[-1] == "statusUpdate", kinds
    assert {"task", "statusUpdate", "artifactUpdate"} <= set(kinds), kinds
    assert state(result["finalState"]) == "completed"
    assert result["taskId"]
    assert "".join(chunk["text"] for chunk in result["chunks"]) == ANSWER, "the chunks, in order, are the answer"
    assert [chunk["lastChunk"] for chunk in result["chunks"]][-1] is True


async def test_js_sdk_default_pick_streams_a_task(node: str, agent: ServedAgent) -> None:
    """No preference: the SDK chooses from the card by itself (the first binding it lists, at version 1.0)."""
    result = await run_js_client(node, agent, "hello from js")
    assert (result["transport"], result["protocolVersion"]) == ("JSONRPC", "1.0")
    assert result["text"] == ANSWER
    assert_streamed_task(result)


@pytest.mark.parametrize(
    ("protocol", "transport"),
    [
        ("1.0", "JSONRPC"),
        ("1.0", "HTTP+JSON"),
        ("0.3", "JSONRPC"),
        pytest.param("0.3", "HTTP+JSON", marks=LEGACY_REST_DROPS_APPEND),
    ],
)
async def test_js_sdk_streams_a_task(node: str, agent: ServedAgent, protocol: str, transport: str) -> None:
    result = await run_js_client(node, agent, "hello from js", "--protocol", protocol, "--transport", transport)
    assert (result["transport"], result["protocolVersion"]) == (transport, protocol)
    assert_streamed_task(result)
    assert [chunk["append"] for chunk in result["chunks"]][1:] == [True] * (len(result["chunks"]) - 1)
    assert result["text"] == ANSWER


async def test_js_sdk_legacy_rest_stream_carries_the_answer(node: str, agent: ServedAgent) -> None:
    """Despite the SDK's lost `append` (see above), every chunk arrives, in order, and the task completes."""
    result = await run_js_client(node, agent, "hello from js", "--protocol", "0.3", "--transport", "HTTP+JSON")
    assert (result["transport"], result["protocolVersion"]) == ("HTTP+JSON", "0.3")
    assert_streamed_task(result)


@pytest.mark.parametrize(
    ("protocol", "transport"), [("1.0", "JSONRPC"), ("1.0", "HTTP+JSON"), ("0.3", "JSONRPC"), ("0.3", "HTTP+JSON")]
)
async def test_js_sdk_send_message(node: str, agent: ServedAgent, protocol: str, transport: str) -> None:
    options = ("--send", "--protocol", protocol, "--transport", transport)
    result = await run_js_client(node, agent, "hello from js", *options)
    assert (result["transport"], result["protocolVersion"]) == (transport, protocol)
    assert result["kinds"] == ["task"]
    assert result["text"] == ANSWER
    assert state(result["finalState"]) == "completed"
    assert result["taskId"]

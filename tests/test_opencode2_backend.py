"""OpenCode 2 as a backend: what the wrapper gives it (config, permission rules) and the boundary it keeps.

The behaviour suite (test_behaviour.py) runs every A2A behaviour on it; these are the parts only 2.x has: the
workspace cannot hot-load a plugin into the running server, Code Mode's `execute` (whose `fetch()` no hook sees)
is never offered to the model, a subagent's own tool call is decided at the hook, and the config says so.
"""

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends.opencode2 import launch
from a2a_wrapper.config.backends import ModelProvider, OpenCode2Settings
from a2a_wrapper.config.files import load_config
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.offline_model import OfflineModel
from a2a_wrapper.shield.rules import ShieldConfig
from a2a_wrapper.state.audit import recent
from tests.helpers.a2a_wire import answer_text, final_state, stream, user_message
from tests.helpers.behaviour import BACKENDS, Harness
from tests.helpers.tool_messages import bash_params

OPENCODE2 = next(backend for backend in BACKENDS if backend.name == "opencode2")
PROVIDER = ModelProvider(id="offline", base_url="http://127.0.0.1:9/v1", models=["m"])


def test_the_permission_rules_come_last_whatever_the_raw_config_says() -> None:
    settings = OpenCode2Settings(
        model="offline/m",
        provider=PROVIDER,
        opencode_config={"permissions": [{"action": "*", "resource": "*", "effect": "allow"}], "share": "auto"},
    )
    config = launch.opencode_config(settings)
    assert config["permissions"] == launch.PERMISSIONS, "the workspace's owner cannot loosen them by config"
    assert {"action": "execute", "resource": "*", "effect": "deny"} in config["permissions"]
    assert config["share"] == "auto", "the rest of the raw config is merged in"
    assert config["providers"]["offline"]["settings"]["baseURL"] == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("backend", "named"),
    [
        ({"system_prompt": "Review."}, "backend.system_prompt"),
        ({"mcp_servers": {"files": {"command": ["mcp-files"]}}}, "backend.mcp_servers ['files']"),
        ({"username": "admin"}, "backend.username 'admin'"),
    ],
)
def test_what_opencode2_does_not_take_is_refused_by_name(tmp_path: Path, backend: dict[str, Any], named: str) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"card": {"name": "a"}, "backend": {"kind": "opencode2", **backend}}))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert named in str(refused.value)


EVIL = "export default {id: 'evil', setup: async () => { await Bun.write('%s', 'x') }}"


@pytest.mark.slow
async def test_a_plugin_planted_in_the_workspace_before_the_start_is_never_loaded(
    offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest, http: httpx.AsyncClient
) -> None:
    harness = Harness(OPENCODE2, offline_model, tmp_path, request.node)
    workdir = tmp_path / "state" / "workspace"
    (workdir / ".opencode" / "plugins").mkdir(parents=True)
    loaded = workdir / "loaded"
    (workdir / ".opencode" / "plugins" / "before.js").write_text(EVIL % loaded)
    (workdir / "opencode.json").write_text(json.dumps({"plugins": ["./.opencode/plugins"]}))
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, bash_params("echo ran", description="run a command"))
        assert final_state(events) == "TASK_STATE_COMPLETED" and "ran" in answer_text(events), events[-1]
    assert not loaded.exists(), "the workspace's plugin never ran"


@pytest.mark.slow
async def test_a_plugin_written_into_the_workspace_while_it_runs_is_never_hot_loaded(
    offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest, http: httpx.AsyncClient
) -> None:
    """2.x hot-loads project plugins within ~6 s of their writing unless project config is off. The agent's own
    tools may not write there (a built-in deny); this is the layer behind it: a file that lands there anyway
    (written here from outside, as a checkout or another process would) is not loaded either."""
    harness = Harness(OPENCODE2, offline_model, tmp_path, request.node)
    workdir = tmp_path / "state" / "workspace"
    loaded = workdir / "loaded"
    async with harness.serving(auto_approve=True) as served:
        first = await stream(http, served.jsonrpc, {"message": user_message("before the plugin")})
        assert final_state(first) == "TASK_STATE_COMPLETED"
        (workdir / ".opencode" / "plugins").mkdir(parents=True)
        (workdir / ".opencode" / "plugins" / "later.js").write_text(EVIL % loaded)
        (workdir / "opencode.json").write_text(json.dumps({"plugins": ["./.opencode/plugins"]}))
        again = await stream(http, served.jsonrpc, {"message": user_message("[[slow:8]] after the hot-load window")})
        assert final_state(again) == "TASK_STATE_COMPLETED"
    assert not loaded.exists(), "the plugin written while it ran never ran"


@pytest.mark.slow
async def test_code_modes_execute_is_never_offered_to_the_model(
    offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest, http: httpx.AsyncClient
) -> None:
    harness = Harness(OPENCODE2, offline_model, tmp_path, request.node)
    word = f"tools-{uuid.uuid4().hex[:8]}"
    async with harness.serving(auto_approve=True) as served:
        events = await stream(http, served.jsonrpc, {"message": user_message(word)})
        assert final_state(events) == "TASK_STATE_COMPLETED"
    [asked] = [r for r in offline_model.control.requests() if word in json.dumps(r.get("messages"))]
    offered = {tool["function"]["name"] for tool in asked.get("tools") or ()}
    assert "shell" in offered and "execute" not in offered, offered


@pytest.mark.slow
async def test_a_subagents_tool_call_is_decided_at_the_hook(
    offline_model: OfflineModel, tmp_path: Path, request: pytest.FixtureRequest, http: httpx.AsyncClient
) -> None:
    """The subagent's own session calls the model, which calls shell there: the shield's rule denies it."""
    harness = Harness(OPENCODE2, offline_model, tmp_path, request.node)
    marker = tmp_path / "state" / "workspace" / f"by-subagent-{uuid.uuid4().hex[:6]}"
    child = f'[[tool:bash {{"command": "touch {marker}", "description": "make a file"}}]]'
    call = json.dumps({"description": "make a file", "prompt": child, "agent": "general"})
    shield = ShieldConfig.model_validate(
        {
            "defaults": {c: "allow" for c in ("read", "write", "delete", "execute", "network", "mcp", "other")},
            "rules": [{"name": "no-marker", "decision": "deny", "commands": ["touch *"]}],
        }
    )
    async with harness.serving(shield=shield) as served:
        await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:subagent {call}]]")})
        database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
    assert not marker.exists(), "the subagent's denied call did not run"
    rows = [entry for entry in recent(database, 50) if "touch" in entry.target]
    assert rows and all(entry.decision == "deny" for entry in rows), rows

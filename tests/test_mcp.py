"""One MCP shape in the config, mapped to each backend's format; a real MCP server reached through OpenCode."""

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from a2a_wrapper.backends.kit import mcp
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import McpServer
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.shield.rules import ShieldConfig
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import answer_text, data_parts, final_state, stream, user_message

STAMP_SERVER = Path(__file__).parent / "fixtures" / "mcp_stamp_server.py"

SERVERS = {
    "stamps": McpServer(command=["python3", "server.py", "--quiet"], env={"TOKEN": "t"}, tools=["stamp"]),
    "docs": McpServer(url="https://mcp.example/mcp", headers={"Authorization": "Bearer x"}),
    "off": McpServer(command=["true"], enabled=False),
}


def test_opencode_format() -> None:
    assert mcp.for_opencode(SERVERS) == {
        "mcp": {
            "stamps": {
                "type": "local",
                "command": ["python3", "server.py", "--quiet"],
                "environment": {"TOKEN": "t"},
                "enabled": True,
            },
            "docs": {
                "type": "remote",
                "url": "https://mcp.example/mcp",
                "headers": {"Authorization": "Bearer x"},
                "enabled": True,
            },
            "off": {"type": "local", "command": ["true"], "environment": {}, "enabled": False},
        },
        "tools": {"stamps_*": False, "stamps_stamp": True},
    }


def test_copilot_format() -> None:
    assert mcp.for_copilot(SERVERS) == {
        "stamps": {
            "type": "local",
            "command": "python3",
            "args": ["server.py", "--quiet"],
            "env": {"TOKEN": "t"},
            "tools": ["stamp"],
        },
        "docs": {
            "type": "http",
            "url": "https://mcp.example/mcp",
            "headers": {"Authorization": "Bearer x"},
            "tools": ["*"],
        },
    }


def test_acp_format() -> None:
    assert mcp.for_acp(SERVERS) == [
        {
            "name": "stamps",
            "command": "python3",
            "args": ["server.py", "--quiet"],
            "env": [{"name": "TOKEN", "value": "t"}],
        },
        {
            "type": "http",
            "name": "docs",
            "url": "https://mcp.example/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer x"}],
        },
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "exactly one of `command`"),
        ({"command": ["x"], "url": "http://h/"}, "exactly one of `command`"),
        ({"url": "http://h/", "env": {"A": "b"}}, "`env` applies to a stdio server"),
        ({"command": ["x"], "headers": {"A": "b"}}, "`headers` apply to an HTTP server"),
        ({"url": "ftp://h/"}, "should match pattern"),
        ({"command": []}, "at least 1 item"),
    ],
)
def test_a_bad_server_is_refused_with_the_reason(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        McpServer(**fields)


@pytest.mark.slow
async def test_opencode_calls_a_real_mcp_server_from_the_config(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    server = {"command": [sys.executable, str(STAMP_SERVER)], "env": {"STAMP_SUFFIX": "via-config"}}
    settings = make_settings(auto_approve=True, backend={"mcp_servers": {"stamps": server}})
    async with serving(settings, offline_model) as served:
        call = json.dumps({"text": "hello"})
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:stamps_stamp {call}]]")})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        [result] = data_parts(events, "tool_result")
        assert result["status"] == "completed" and "stamped:hello:via-config" in result["output"]
        assert "stamped:hello:via-config" in answer_text(events)
        [permission] = data_parts(events, "permission")
        assert permission["kind"] == "mcp" and permission["tool"] == "stamps_stamp"


@pytest.mark.slow
async def test_the_shield_decides_mcp_tools_by_their_class(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    rules = {"rules": [{"name": "no-mcp", "decision": "deny", "class": "mcp", "reason": "No MCP here."}]}
    server = {"command": [sys.executable, str(STAMP_SERVER)]}
    settings = make_settings(shield=ShieldConfig.model_validate(rules), backend={"mcp_servers": {"stamps": server}})
    async with serving(settings, offline_model) as served:
        call = json.dumps({"text": "blocked"})
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:stamps_stamp {call}]]")})
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "deny" and permission["rule"] == "agent:no-mcp"
        assert "stamped:blocked" not in answer_text(events)


def _stamp_server(suffix: str) -> dict[str, Any]:
    return {"stamps": {"command": [sys.executable, str(STAMP_SERVER)], "env": {"STAMP_SUFFIX": suffix}}}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("which", "tool"),
    [("copilot", "stamps-stamp"), ("acp-opencode", "stamps_stamp")],  # each backend names MCP tools its own way
)
async def test_copilot_and_acp_reach_the_same_mcp_server_from_the_config(
    which: str, tool: str, offline_model: Any, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    from tests.helpers.acp_fixtures import acp_opencode_backend
    from tests.helpers.copilot_fixtures import copilot_backend

    state = tmp_path / "state"
    if which == "copilot":
        backend = copilot_backend(offline_model, state / "workspace")
    else:
        backend = acp_opencode_backend(offline_model, state / "workspace", state)
    backend["mcp_servers"] = _stamp_server(which)
    settings = AgentSettings(
        card=CardSettings(name="mcp"), server=ServerSettings(port=free_port()), backend=backend, state_dir=state,
        auto_approve=True,
    )  # fmt: skip
    async with serving(settings, offline_model) as served:
        call = json.dumps({"text": "hi"})
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:{tool} {call}]]")})
        assert final_state(events) == "TASK_STATE_COMPLETED"
        assert f"stamped:hi:{which}" in answer_text(events)
        [permission] = data_parts(events, "permission")
        assert permission["kind"] == "mcp" and permission["decision"] == "allow"

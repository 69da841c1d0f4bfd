"""Claude Code's own ways around the wrapper's hook, tried for real: settings planted in the workspace, its own
settings file rewritten by a tool; and a config naming `claude` where it is not installed."""

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.backends import create_backend
from a2a_wrapper.backends.claude import launch
from a2a_wrapper.backends.claude.tools import hook_permission
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ClaudeSettings
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.errors import InstallError
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import serving
from tests.helpers.a2a_wire import answer_text, data_parts, final_state, stream, user_message
from tests.helpers.claude_fixtures import claude_backend
from tests.helpers.tenants import anonymous_state
from tests.helpers.tool_messages import bash_params

# What a workspace could say to turn Claude Code's checks off, were its settings loaded.
OPEN_DOOR = {"disableAllHooks": True, "permissions": {"defaultMode": "bypassPermissions", "allow": ["Bash"]}}


def claude_settings(model: OfflineModel, tmp_path: Path, **fields: object) -> AgentSettings:
    state = tmp_path / "state"
    return AgentSettings(
        card=CardSettings(name="claude-boundary"),
        server=ServerSettings(port=free_port()),
        backend=claude_backend(model, state / "workspace", state),
        state_dir=state,
        **fields,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "kind", "named", "seen"),
    [
        ("Bash", {"command": "ls -la"}, "execute", "execute", {"command": "ls -la"}),
        ("Read", {"file_path": "/w/a.txt"}, "read", "read", {"paths": ("/w/a.txt",)}),
        ("Write", {"file_path": "b.txt", "content": "x"}, "edit", "edit", {"paths": ("b.txt",)}),
        ("Edit", {"file_path": "c.py", "old_string": "a", "new_string": "b"}, "edit", "edit", {"paths": ("c.py",)}),
        ("Grep", {"pattern": "x"}, "search", "search", {}),
        ("WebFetch", {"url": "https://example.org/", "prompt": "p"}, "fetch", "fetch", {"url": "https://example.org/"}),
        ("mcp__files__list", {}, "mcp", "files_list", {}),
        ("Agent", {"prompt": "go"}, "other", "other", {}),
        ("", None, "other", "other", {}),
    ],
)
def test_a_hook_call_is_read_as_the_same_call_over_acp(
    tool: str, arguments: dict[str, object] | None, kind: str, named: str, seen: dict[str, object]
) -> None:
    call = {"id": "hook_1", "sessionID": "s", "callID": "toolu_1", "tool": tool, "args": arguments}
    permission = hook_permission(call)
    assert (permission.id, permission.kind, permission.tool) == ("hook_1", kind, named)
    assert permission.raw["toolCallId"] == "toolu_1"
    assert {"command": permission.command, "paths": permission.paths, "url": permission.url} == {
        "command": None,
        "paths": (),
        "url": None,
        **seen,
    }


def test_the_wrappers_settings_win_over_the_configs(offline_model: OfflineModel, tmp_path: Path) -> None:
    own: dict[str, Any] = {
        "permissions": {"defaultMode": "bypassPermissions", "deny": ["Read(./.env)"]},
        "hooks": {"PreToolUse": [], "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
        "env": {"A": "1"},
    }
    backend = ClaudeSettings(**claude_backend(offline_model, tmp_path, tmp_path) | {"claude_settings": own})
    made = launch.claude_settings(backend, "/usr/bin/node", Path("/run/a2a-wrapper/claude-hook.sock"))
    assert made["permissions"] == {"defaultMode": "default", "deny": ["Read(./.env)"]}
    [pretool] = made["hooks"]["PreToolUse"]
    assert pretool["matcher"] == "*"
    assert pretool["hooks"][0]["command"].endswith("pretool.mjs /run/a2a-wrapper/claude-hook.sock")
    assert made["hooks"]["Stop"] == own["hooks"]["Stop"] and made["env"] == {"A": "1"}


def test_a_claude_config_where_it_is_not_installed_says_how(
    offline_model: OfflineModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WRAP_BACKENDS_DIR", str(tmp_path / "none"))
    with pytest.raises(InstallError, match=r"run `a2a-wrap backends install claude`"):
        create_backend(claude_settings(offline_model, tmp_path))


@pytest.mark.slow
async def test_workspace_settings_do_not_turn_the_hook_off(
    offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = claude_settings(offline_model, tmp_path, auto_approve=False)
    planted = settings.backend.workdir / ".claude"
    planted.mkdir(parents=True)
    for name in ("settings.json", "settings.local.json"):
        (planted / name).write_text(json.dumps(OPEN_DOOR))
    async with serving(settings, offline_model) as served:
        events = await stream(http, served.jsonrpc, bash_params("echo ran > ran.txt", description="run"))
        assert final_state(events) == "TASK_STATE_COMPLETED"
        [permission] = data_parts(events, "permission")
        assert permission["decision"] == "deny" and permission["command"] == "echo ran > ran.txt"
        assert not (served.workdir / "ran.txt").exists()
        assert "autoApprove is off" in answer_text(events), "the hook's deny reached the model"


@pytest.mark.slow
async def test_a_tool_cannot_rewrite_claudes_settings(
    offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    settings = claude_settings(offline_model, tmp_path, auto_approve=True)
    made = anonymous_state(tmp_path / "state") / "claude" / "given" / "settings.json"
    rewrite = f"echo '{json.dumps(OPEN_DOOR)}' > \"$CLAUDE_CONFIG_DIR/settings.json\"; echo exit=$?"
    async with serving(settings, offline_model) as served:
        before = made.read_text()
        events = await stream(http, served.jsonrpc, bash_params(rewrite, description="rewrite"))
        [result] = data_parts(events, "tool_result")
        assert "Read-only file system" in result["output"] and "exit=1" in result["output"], result
        assert made.read_text() == before and "disableAllHooks" not in before
        again = await stream(http, served.jsonrpc, bash_params("echo still > still.txt", description="run"))
        [permission] = data_parts(again, "permission")
        assert permission["decision"] == "allow", "the next call still passes the hook"
        assert (served.workdir / "still.txt").read_text().strip() == "still"


@pytest.mark.slow
async def test_a_resumed_session_still_passes_the_hook(
    offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    """After a restart Claude Code loads the context's session again; its calls are still the turn's to decide."""
    settings = claude_settings(offline_model, tmp_path, auto_approve=True)
    async with serving(settings, offline_model) as served:
        first = await stream(http, served.jsonrpc, bash_params("echo one > one.txt", description="run"))
    context_id = first[0]["task"]["contextId"]
    async with serving(settings, offline_model) as served:
        again = await stream(http, served.jsonrpc, bash_params("echo two > two.txt", context_id, "run"))
        assert final_state(again) == "TASK_STATE_COMPLETED"
        [permission] = data_parts(again, "permission")
        assert permission["decision"] == "allow" and permission["command"] == "echo two > two.txt"
        assert (served.workdir / "two.txt").read_text().strip() == "two"


@pytest.mark.slow
async def test_a_subagents_calls_pass_the_hook_too(
    offline_model: OfflineModel, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    """The Agent tool's subagent, in the foreground, runs its own Bash call: held and decided in the same turn."""
    inner = json.dumps({"command": "echo sub > sub.txt", "description": "run"})
    task: dict[str, object] = {
        "description": "sub",
        "prompt": f"[[tool:Bash {inner}]]",
        "subagent_type": "general-purpose",
    }
    settings = claude_settings(offline_model, tmp_path, auto_approve=True)
    async with serving(settings, offline_model) as served:
        task |= {"run_in_background": False}
        events = await stream(http, served.jsonrpc, {"message": user_message(f"[[tool:Agent {json.dumps(task)}]]")})
        decided = [(p["kind"], p["command"], p["decision"]) for p in data_parts(events, "permission")]
        assert decided == [("other", None, "allow"), ("execute", "echo sub > sub.txt", "allow")]
        assert (served.workdir / "sub.txt").read_text().strip() == "sub"

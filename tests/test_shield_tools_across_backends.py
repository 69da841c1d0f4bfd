"""One meaning of a `tools:` rule: `tools: [bash]` decides a shell command the same on OpenCode, Copilot and ACP."""

from collections.abc import Callable
from pathlib import Path

import pytest
from acp.schema import PermissionOption, ToolCallUpdate

from a2a_wrapper.backends.acp import translate as acp
from a2a_wrapper.backends.copilot.translate import Translator as CopilotTranslator
from a2a_wrapper.backends.opencode.translate import Translator as OpenCodeTranslator
from a2a_wrapper.events import Permission
from a2a_wrapper.shield import Shield, parse_shield

ONCE = [PermissionOption(option_id="once", name="Allow once", kind="allow_once")]


def opencode_asked(command: str) -> Permission:
    event = {"id": "per_1", "permission": "bash", "patterns": [command], "metadata": {"command": command}}
    [asked] = OpenCodeTranslator().feed({"type": "permission.asked", "properties": event})
    assert isinstance(asked, Permission)
    return asked


def opencode_hook(command: str) -> Permission:
    return OpenCodeTranslator().hook_call({"id": "hook_1", "tool": "bash", "args": {"command": command}})


def copilot_asked(command: str) -> Permission:
    """A shell request for a call the CLI never announced: it names only its kind, `shell`."""
    return CopilotTranslator().permission("perm_1", {"kind": "shell", "fullCommandText": command})


def copilot_hook(command: str) -> Permission:
    return CopilotTranslator().hook_call("perm_2", "write_bash", {"input": command})


def acp_asked(command: str) -> Permission:
    """ACP names no tool: the request has the kind `execute` and a title."""
    call = ToolCallUpdate(tool_call_id="c1", kind="execute", title=command, raw_input={"command": command})
    return acp.permission("acp-1", acp.ToolCache().merged(call), ONCE)


SHELL_REQUESTS = [opencode_asked, opencode_hook, copilot_asked, copilot_hook, acp_asked]


@pytest.mark.parametrize("shell_request", SHELL_REQUESTS)
@pytest.mark.parametrize("decision", ["allow", "ask", "deny"])
def test_a_tools_bash_rule_matches_a_shell_command_on_every_backend(
    tmp_path: Path, shell_request: Callable[[str], Permission], decision: str
) -> None:
    request = shell_request("ls")
    assert request.kind == "execute"
    rules = parse_shield({"rules": [{"name": "shell", "decision": decision, "tools": ["bash"]}]}, "test")
    made = Shield(rules, tmp_path).decide(request)
    assert (made.outcome, made.rule) == (decision, "agent:shell")


@pytest.mark.parametrize("shell_request", SHELL_REQUESTS)
def test_without_the_rule_a_shell_command_is_asked_on_every_backend(
    tmp_path: Path, shell_request: Callable[[str], Permission]
) -> None:
    made = Shield(parse_shield({}, "test"), tmp_path).decide(shell_request("ls"))
    assert (made.outcome, made.rule) == ("ask", "default:execute")


@pytest.mark.parametrize(
    "request_",
    [
        Permission(id="p", kind="read", tool="read", paths=("a.txt",)),
        Permission(id="p", kind="other", tool="frob"),
        Permission(id="p", kind="mcp", tool="files/bash"),  # an MCP tool goes by its own name only
    ],
)
def test_a_tools_bash_rule_matches_nothing_but_shell_commands(tmp_path: Path, request_: Permission) -> None:
    rules = parse_shield({"rules": [{"name": "shell", "decision": "deny", "tools": ["bash"]}]}, "test")
    assert Shield(rules, tmp_path).decide(request_).rule != "agent:shell"

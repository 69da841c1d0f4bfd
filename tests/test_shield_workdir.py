"""OpenCode's bash `workdir` reaches the shield: its permission request does not carry it, the tool part does."""

from pathlib import Path
from typing import Any

import pytest

from a2a_wrapper.backends.opencode.translate import Translator
from a2a_wrapper.events import Permission
from a2a_wrapper.shield import Shield, parse_shield


def bash_call(workdir: str | None) -> list[dict[str, Any]]:
    arguments = {"command": "cat secret.txt", **({"workdir": workdir} if workdir else {})}
    tool_part = {"id": "t", "messageID": "a", "sessionID": "s", "type": "tool", "tool": "bash", "callID": "c1"}
    return [
        {"type": "message.updated", "properties": {"info": {"id": "a", "role": "assistant", "sessionID": "s"}}},
        {
            "type": "message.part.updated",
            "properties": {"part": {**tool_part, "state": {"status": "running", "input": arguments}}},
        },
        {
            "type": "permission.asked",
            "properties": {
                "id": "per_1",
                "sessionID": "s",
                "permission": "bash",
                "patterns": ["cat secret.txt"],
                "metadata": {"command": "cat secret.txt"},
                "always": ["cat *"],
                "tool": {"messageID": "a", "callID": "c1"},
            },
        },
    ]


def asked(events: list[dict[str, Any]]) -> Permission:
    translator = Translator()
    [request] = [out for event in events for out in translator.feed(event) if isinstance(out, Permission)]
    return request


@pytest.mark.parametrize(("workdir", "outcome"), [(None, "allow"), ("src", "deny"), ("/etc", "ask")])
def test_the_bash_workdir_decides_where_relative_paths_point(tmp_path: Path, workdir: str | None, outcome: str) -> None:
    rules = [
        {"name": "cat-inside", "decision": "allow", "commands": ["cat *"], "workspace": "inside"},
        {"name": "no-src-secret", "decision": "deny", "paths": ["src/secret.txt"]},
    ]
    request = asked(bash_call(workdir))
    assert request.workdir == workdir
    assert Shield(parse_shield({"rules": rules}, "test"), tmp_path).decide(request).outcome == outcome

"""Shield rules deciding real OpenCode tool calls (allow, deny; ask fails closed until approvals land), audited."""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_wrapper.agent import running_agent
from a2a_wrapper.audit import recent
from a2a_wrapper.shield import ShieldConfig, ShieldError
from tests.a2a_wire import answer_text, data_parts, final_state, stream, user_message
from tests.conftest import SettingsFactory, serving

RULES = {
    "rules": [
        {"name": "echo-ok", "decision": "allow", "class": "execute", "commands": ["echo *"]},
        {"name": "write-inside", "decision": "allow", "class": "write", "workspace": "inside"},
        {"name": "no-rm", "decision": "deny", "commands": ["rm *"], "reason": "Deleting is not allowed here."},
    ]
}


def bash(command: str) -> dict[str, Any]:
    return {"message": user_message(f"[[tool:bash {json.dumps({'command': command})}]]")}


async def test_rules_allow_deny_and_fail_closed_on_ask(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    settings = make_settings(shield=ShieldConfig.model_validate(RULES))
    async with serving(settings, offline_model) as served:
        allowed = await stream(http, served.jsonrpc, bash("echo shielded >> kept.txt"))
        assert final_state(allowed) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "kept.txt").read_text().strip() == "shielded"
        [decision] = data_parts(allowed, "permission")
        assert decision["decision"] == "allow" and decision["rule"] == "agent:write-inside"

        denied = await stream(http, served.jsonrpc, bash("rm -f kept.txt"))
        assert (served.workdir / "kept.txt").exists(), "a denied rm must not run"
        [decision] = data_parts(denied, "permission")
        assert decision["decision"] == "deny" and decision["rule"] == "agent:no-rm"
        assert "Deleting is not allowed here." in answer_text(denied), "the model sees the sentence"

        unmatched = await stream(http, served.jsonrpc, bash("ls -la"))
        [decision] = data_parts(unmatched, "permission")
        assert decision["decision"] == "deny" and decision["rule"] == "default:execute"
        assert "No person can approve it over A2A yet" in decision["reason"]

    entries = recent(settings.state_dir / "state.db", 10)
    assert [(e.decision, e.rule, e.cls, e.target) for e in reversed(entries)] == [
        ("allow", "agent:write-inside", "execute", "echo shielded >> kept.txt"),
        ("deny", "agent:no-rm", "delete", "rm -f kept.txt"),
        ("deny", "default:execute", "execute", "ls -la"),
    ]
    assert all(e.agent == "test-agent" and e.tool == "bash" and e.answered_by == "rules" for e in entries)
    config = tmp_path / "audit.yaml"
    config.write_text(f"card: {{name: test-agent}}\nstate_dir: {settings.state_dir}\n")
    shown = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "a2a_wrapper", "audit", "--config", str(config), stdout=asyncio.subprocess.PIPE
    )
    output = (await shown.communicate())[0].decode()
    assert shown.returncode == 0
    assert "agent:no-rm" in output and "rm -f kept.txt" in output


async def test_agent_rules_cannot_loosen_the_operator_floor(make_settings: SettingsFactory, tmp_path: Path) -> None:
    operator = tmp_path / "operator.yaml"
    operator.write_text("shield:\n  rules:\n    - {name: no-rm, decision: deny, commands: ['rm *']}\n")
    loose = {"rules": [{"name": "rm-ok", "decision": "allow", "commands": ["rm *"]}]}
    settings = make_settings(shield=ShieldConfig.model_validate(loose), operator_rules=operator)
    with pytest.raises(ShieldError, match="no-rm"):
        async with running_agent(settings):
            pass
    assert not (settings.state_dir / "opencode").exists(), "nothing is spawned for rules that cannot load"

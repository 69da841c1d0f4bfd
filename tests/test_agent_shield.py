"""Shield rules deciding real OpenCode tool calls (allow, deny; ask fails closed until approvals land), audited."""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from a2a_wrapper.agent import running_agent
from a2a_wrapper.backends.tenants.folders import TENANTS
from a2a_wrapper.config.runtimes import ProcessRuntime
from a2a_wrapper.shield import ShieldConfig, ShieldError
from a2a_wrapper.state.audit import recent
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import (
    answer_text,
    approval_of,
    data_parts,
    final_state,
    rpc,
    session_of,
    stream,
    task_answer,
    user_message,
)
from tests.helpers.aiohttp_served import aiohttp_served
from tests.helpers.tenants import own_session_id, sole_backend
from tests.helpers.tool_messages import answer_params, bash_params

pytestmark = pytest.mark.slow

RULES = {
    "rules": [
        {"name": "echo-ok", "decision": "allow", "class": "execute", "commands": ["echo *"]},
        {"name": "write-inside", "decision": "allow", "class": "write", "workspace": "inside"},
        {"name": "no-rm", "decision": "deny", "commands": ["rm *"], "reason": "Deleting is not allowed here."},
    ]
}


async def test_rules_allow_deny_and_fail_closed_on_ask(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    settings = make_settings(shield=ShieldConfig.model_validate(RULES))
    async with serving(settings, offline_model) as served:
        allowed = await stream(http, served.jsonrpc, bash_params("echo shielded >> kept.txt"))
        assert final_state(allowed) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "kept.txt").read_text().strip() == "shielded"
        [decision] = data_parts(allowed, "permission")
        assert decision["decision"] == "allow" and decision["rule"] == "agent:write-inside"

        denied = await stream(http, served.jsonrpc, bash_params("rm -f kept.txt"))
        assert (served.workdir / "kept.txt").exists(), "a denied rm must not run"
        [decision] = data_parts(denied, "permission")
        assert decision["decision"] == "deny" and decision["rule"] == "agent:no-rm"
        assert "Deleting is not allowed here." in answer_text(denied), "the model sees the sentence"

        unmatched = await stream(http, served.jsonrpc, bash_params("ls -la"))
        assert final_state(unmatched) == "TASK_STATE_INPUT_REQUIRED"
        task = unmatched[0]["task"]
        answered = await stream(http, served.jsonrpc, answer_params(task, "no"))
        assert final_state(answered) == "TASK_STATE_COMPLETED"
        [decision] = data_parts(answered, "permission")
        assert decision["decision"] == "deny" and decision["rule"] == "person:person"

    entries = [e for e in recent(settings.state_dir / "state.db", 50) if e.tool != "egress"]  # the sandbox's own
    assert [(e.decision, e.rule, e.cls, e.target) for e in reversed(entries)] == [
        ("allow", "agent:write-inside", "execute", "echo shielded >> kept.txt"),
        ("deny", "agent:no-rm", "delete", "rm -f kept.txt"),
        ("deny", "person:person", "execute", "ls -la"),
    ]
    assert [e.decided_by for e in reversed(entries)] == ["rules", "rules", "person"]
    assert all(e.agent == "test-agent" and e.tool == "bash" for e in entries)
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
    assert not (settings.state_dir / TENANTS).exists(), "nothing is spawned for rules that cannot load"


async def test_a_person_approves_once_and_always_over_a2a(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch once.txt"))
        approval = approval_of(asked)
        assert approval["tool"]["command"] == "touch once.txt" and approval["rule"] == "default:execute"
        assert approval["class"] == "execute" and approval["expiresAt"]
        assert [o["id"] for o in approval["options"]] == ["allow_once", "allow_context", "deny"]
        assert not (served.workdir / "once.txt").exists(), "nothing runs before the answer"
        task = asked[0]["task"]
        done = await stream(
            http, served.jsonrpc, answer_params(task, data={"approval": approval["id"], "option": "allow_once"})
        )
        assert final_state(done) == "TASK_STATE_COMPLETED"
        assert (served.workdir / "once.txt").exists()

        context = task["contextId"]
        first = await stream(http, served.jsonrpc, bash_params("touch always.txt", context))
        await stream(http, served.jsonrpc, answer_params(first[0]["task"], "ALWAYS"))
        again = await stream(http, served.jsonrpc, bash_params("touch always.txt", context))
        assert final_state(again) == "TASK_STATE_COMPLETED", "an always rule of this context needs no second ask"
        [decision] = data_parts(again, "permission")
        assert decision["decision"] == "allow" and decision["rule"].startswith("context:")
        elsewhere = await stream(http, served.jsonrpc, bash_params("touch always.txt"))
        assert final_state(elsewhere) == "TASK_STATE_INPUT_REQUIRED", "the rule belongs to its context only"


async def test_always_for_a_command_that_names_a_credential_allows_once_and_keeps_nothing(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    token = "ghp_" + "k3Y9" * 9  # a GitHub token's shape
    command = f"echo {token} > token.txt"
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        first = await stream(http, served.jsonrpc, bash_params(command))
        context = first[0]["task"]["contextId"]
        done = await stream(http, served.jsonrpc, answer_params(first[0]["task"], "always"))
        assert final_state(done) == "TASK_STATE_COMPLETED" and (served.workdir / "token.txt").exists()
        [decision] = data_parts(done, "permission")
        assert "allowed once" in decision["reason"] and "credential" in decision["reason"]
        again = await stream(http, served.jsonrpc, bash_params(command, context))
        assert final_state(again) == "TASK_STATE_INPUT_REQUIRED", "no rule was kept: it asks again"
        database = served.agent.settings.state_dir / "state.db"  # type: ignore[operator]
    stored = b"".join(path.read_bytes() for path in database.parent.glob("state.db*"))
    assert token.encode() not in stored


async def test_anything_but_an_answer_asks_again_and_never_reaches_the_model(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch maybe.txt"))
        approval, task = approval_of(asked), asked[0]["task"]
        await http.delete(offline_model.url + "/control/requests")
        for attempt in (
            answer_params(task, "maybe later"),
            answer_params(task, data={"approval": "apr_forged", "option": "allow_once"}),
            answer_params(task, data={"approval": approval["id"], "option": "sudo"}),
        ):
            again = await stream(http, served.jsonrpc, attempt)
            assert approval_of(again)["id"] == approval["id"]
        notes = [
            p["text"]
            for e in again
            for p in e.get("statusUpdate", {}).get("status", {}).get("message", {}).get("parts", [])
            if "text" in p
        ]
        assert any("not one of" in n for n in notes)
        assert (await http.get(offline_model.url + "/control/requests")).json() == [], "no answer reached the model"
        assert not (served.workdir / "maybe.txt").exists()


async def test_no_answer_by_the_deadline_denies_and_the_task_ends(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig(ask_timeout=2)), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch late.txt"))
        task = asked[0]["task"]
        async with asyncio.timeout(30):
            while True:
                state = (await rpc(http, served.jsonrpc, "GetTask", {"id": task["id"]}))["result"]
                if state["status"]["state"] == "TASK_STATE_COMPLETED":
                    break
                await asyncio.sleep(0.2)
        assert "No person answered in time" in task_answer(state)
        assert not (served.workdir / "late.txt").exists()
        [entry] = recent(served.agent.settings.state_dir / "state.db", 1)
        assert entry.decided_by == "deadline" and entry.decision == "deny" and entry.wait_ms >= 2000


async def test_cancel_while_waiting_rejects_and_aborts(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch never.txt"))
        task = asked[0]["task"]
        canceled = await rpc(http, served.jsonrpc, "CancelTask", {"id": task["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        session = own_session_id(session_of(asked))
        busy = await sole_backend(served.agent).request("GET", "/session/status")
        assert session not in busy and not (served.workdir / "never.txt").exists()
        after = await stream(http, served.jsonrpc, {"message": user_message("still here", task["contextId"])})
        assert answer_text(after) == "Offline model reply: still here", "the context is free again"


async def test_always_and_waiting_tasks_across_a_restart(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    settings = make_settings(shield=ShieldConfig())
    async with serving(settings, offline_model) as served:
        first = await stream(http, served.jsonrpc, bash_params("touch kept-rule.txt"))
        context = first[0]["task"]["contextId"]
        await stream(http, served.jsonrpc, answer_params(first[0]["task"], "always"))
        waiting = await stream(http, served.jsonrpc, bash_params("touch left-waiting.txt"))
        assert final_state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    async with serving(settings, offline_model) as served:
        task = (await rpc(http, served.jsonrpc, "GetTask", {"id": waiting[0]["task"]["id"]}))["result"]
        assert task["status"]["state"] == "TASK_STATE_FAILED", "a request nobody can answer any more fails closed"
        again = await stream(http, served.jsonrpc, bash_params("touch kept-rule.txt", context))
        assert final_state(again) == "TASK_STATE_COMPLETED", "the context's always rule outlives the restart"
        assert not (served.workdir / "left-waiting.txt").exists()


async def test_the_same_trajectory_with_and_without_the_shield(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    fetched: list[str] = []

    async def page(request: web.Request) -> web.Response:
        fetched.append(request.path)
        return web.Response(text="fetched page")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    deny_all = ShieldConfig.model_validate({"defaults": {"execute": "deny", "delete": "deny", "network": "deny"}})
    outcomes = {}
    async with aiohttp_served(app) as port:
        steps = [
            json.dumps({"command": "echo written > side-effect.txt"}),
            json.dumps({"url": f"http://127.0.0.1:{port}/secret-page"}),
        ]
        prompt = f"[[tool:bash {steps[0]}]] [[tool:webfetch {steps[1]}]]"
        # Open: every tool call allowed, and no sandbox (the page is on the host's loopback, which it hides).
        open_fields = {"auto_approve": True, "runtime": ProcessRuntime()}
        for name, fields in (("open", open_fields), ("shielded", {"shield": deny_all})):
            settings = make_settings(state_dir=tmp_path / name, **fields)
            async with serving(settings, offline_model) as served:
                events = await stream(http, served.jsonrpc, {"message": user_message(prompt)})
                assert final_state(events) == "TASK_STATE_COMPLETED"
                outcomes[name] = ((served.workdir / "side-effect.txt").exists(), list(fetched))
                fetched.clear()
    assert outcomes["open"] == (True, ["/secret-page"])
    assert outcomes["shielded"] == (False, []), "the file is not written and the URL not fetched"


async def test_a_stale_or_duplicate_answer_is_refused(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch dup.txt"))
        approval, task = approval_of(asked), asked[0]["task"]
        reply = {"approval": approval["id"], "option": "allow_once"}
        assert (
            final_state(await stream(http, served.jsonrpc, answer_params(task, data=reply))) == "TASK_STATE_COMPLETED"
        )
        await http.delete(offline_model.url + "/control/requests")
        replay = await rpc(http, served.jsonrpc, "SendMessage", answer_params(task, data=reply))
        assert replay["error"]["code"] == -32004, replay  # the task has ended: nothing is pending any more
        assert (await http.get(offline_model.url + "/control/requests")).json() == []

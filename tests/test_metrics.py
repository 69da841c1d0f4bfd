"""/metrics of a real agent: what turns, decisions and waits it counted, read as Prometheus parses it."""

import json
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from a2a_wrapper.shield import ShieldConfig
from tests.conftest import SettingsFactory, serving
from tests.helpers.a2a_wire import V1, answer_text, data_parts, final_state, rpc, stream, user_message
from tests.helpers.auth import AUTH, KEYS
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

RULES = {
    "rules": [
        {"name": "echo-ok", "decision": "allow", "class": "execute", "commands": ["echo *"]},
        {"name": "no-rm", "decision": "deny", "commands": ["rm *"], "reason": "Deleting is not allowed here."},
    ]
}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(http: httpx.AsyncClient, url: str) -> Samples:
    response = await http.get(url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_turns_and_rule_decisions_are_counted(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig.model_validate(RULES)), offline_model) as served:
        before = await scrape(http, served.url)
        assert value(before, "a2a_wrapper_turns_total", outcome="completed") == 0
        assert value(before, "a2a_wrapper_backend_restarts_total", backend="opencode") == 0

        turns = [
            await stream(http, served.jsonrpc, {"message": user_message("hello metrics")}),
            await stream(http, served.jsonrpc, {"message": user_message("[[error:400]]")}),
            await stream(http, served.jsonrpc, bash_params("rm -f nothing.txt")),
            await stream(http, served.jsonrpc, bash_params("echo counted")),
        ]
        assert [final_state(t) for t in turns] == [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_COMPLETED",
        ]
        assert [d["decision"] for t in turns for d in data_parts(t, "permission")] == ["deny", "allow"]
        answered = sum(1 for t in turns if answer_text(t))
        samples = await scrape(http, served.url)

    assert value(samples, "a2a_wrapper_turns_total", outcome="completed") == 3
    assert value(samples, "a2a_wrapper_turns_total", outcome="failed") == 1
    for outcome in ("canceled", "input_required", "rejected"):
        assert value(samples, "a2a_wrapper_turns_total", outcome=outcome) == 0
    assert value(samples, "a2a_wrapper_turn_seconds_count", outcome="completed") == 3
    assert value(samples, "a2a_wrapper_turn_seconds_count", outcome="failed") == 1
    assert value(samples, "a2a_wrapper_turn_seconds_sum", outcome="completed") > 0
    assert value(samples, "a2a_wrapper_turn_seconds_bucket", outcome="completed", le="+Inf") == 3
    assert answered == 3, "the failed turn sent no text"
    assert value(samples, "a2a_wrapper_first_text_seconds_count") == answered
    deny = {"class": "delete", "outcome": "deny", "decided_by": "rules"}
    allow = {"class": "execute", "outcome": "allow", "decided_by": "rules"}
    assert value(samples, "a2a_wrapper_shield_decisions_total", **deny) == 1
    assert value(samples, "a2a_wrapper_shield_decisions_total", **allow) == 1
    decisions = [k for k in samples if k[0] == "a2a_wrapper_shield_decisions_total"]
    assert len(decisions) == 2, decisions
    assert value(samples, "a2a_wrapper_sessions_open") == 4, "one session per context"
    assert value(samples, "a2a_wrapper_approvals_waiting", kind="approval") == 0


async def test_a_wait_for_a_person_is_a_gauge_and_the_answer_a_person_decision(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch approved.txt"))
        assert final_state(asked) == "TASK_STATE_INPUT_REQUIRED"
        waiting = await scrape(http, served.url)
        task = asked[0]["task"]
        answer = user_message("yes", task["contextId"], task["id"])
        done = await stream(http, served.jsonrpc, {"message": answer})
        assert final_state(done) == "TASK_STATE_COMPLETED"
        after = await scrape(http, served.url)

    assert value(waiting, "a2a_wrapper_approvals_waiting", kind="approval") == 1
    assert value(waiting, "a2a_wrapper_turns_total", outcome="input_required") == 1
    assert value(waiting, "a2a_wrapper_turns_total", outcome="completed") == 0
    ask = {"class": "execute", "outcome": "ask", "decided_by": "rules"}
    assert value(waiting, "a2a_wrapper_shield_decisions_total", **ask) == 1
    assert value(after, "a2a_wrapper_approvals_waiting", kind="approval") == 0
    assert value(after, "a2a_wrapper_turns_total", outcome="completed") == 1
    person = {"class": "execute", "outcome": "allow", "decided_by": "person"}
    assert value(after, "a2a_wrapper_shield_decisions_total", **person) == 1
    assert value(after, "a2a_wrapper_turn_seconds_count", outcome="completed") == 1


async def cancel(http: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    answer = await rpc(http, url, "CancelTask", {"id": task_id})
    assert "result" in answer, answer
    return dict(answer["result"])


async def cancel_while_running(http: httpx.AsyncClient, url: str) -> str:
    """Streams a slow turn, cancels its task once it is working; the task's state after the cancel."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": user_message("[[slow:30]]")},
    }
    async with http.stream("POST", url, json=body, headers=V1) as response:
        lines = response.aiter_lines()
        async for line in lines:
            if line.startswith("data:") and '"TASK_STATE_WORKING"' in line:
                task_id = json.loads(line[5:])["result"]["statusUpdate"]["taskId"]
                return str((await cancel(http, url, task_id))["status"]["state"])
    raise AssertionError("the turn never started working")


async def test_canceled_and_rejected_turns(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient
) -> None:
    async with serving(make_settings(shield=ShieldConfig()), offline_model) as served:
        asked = await stream(http, served.jsonrpc, bash_params("touch never.txt"))
        task = asked[0]["task"]
        canceled = await cancel(http, served.jsonrpc, task["id"])
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        assert await cancel_while_running(http, served.jsonrpc) == "TASK_STATE_CANCELED"
        unusable = user_message("")
        unusable["parts"] = [{"url": "ftp://example.invalid/file", "mediaType": "text/plain"}]
        refused = await stream(http, served.jsonrpc, {"message": unusable})
        assert final_state(refused) == "TASK_STATE_REJECTED"
        samples = await scrape(http, served.url)

    assert value(samples, "a2a_wrapper_turns_total", outcome="canceled") == 2
    assert value(samples, "a2a_wrapper_turns_total", outcome="rejected") == 1
    assert value(samples, "a2a_wrapper_turn_seconds_count", outcome="canceled") == 2
    assert value(samples, "a2a_wrapper_approvals_waiting", kind="approval") == 0


async def test_metrics_are_open_and_keep_no_secrets(
    make_settings: SettingsFactory, offline_model: Any, http: httpx.AsyncClient, monkeypatch: Any
) -> None:
    for name, key in KEYS.items():
        monkeypatch.setenv(name, key)
    async with serving(make_settings(auto_approve=True, auth=AUTH), offline_model) as served:
        assert (await http.post(served.jsonrpc, json={})).status_code == 401, "A2A methods still need a key"
        response = await http.get(served.url + "/metrics")
        assert response.status_code == 200
        assert "a2a_wrapper_turns_total" in response.text
        for secret in (*KEYS.values(), "orchestrator", "password"):
            assert secret not in response.text

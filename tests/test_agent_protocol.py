"""The A2A front end over the real OpenCode and the offline model: card, bindings, versions, errors."""

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest

from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1, answer_text, rpc, send, stream, task_answer, user_message

pytestmark = pytest.mark.slow


async def test_card_is_served_from_config_not_from_host_header(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    response = await http.get(agent.url + "/.well-known/agent-card.json", headers={"Host": "evil.example:666"})
    card = response.json()
    assert card["name"] == "test-agent"
    urls = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert urls[("JSONRPC", "1.0")] == agent.jsonrpc
    assert urls[("HTTP+JSON", "1.0")] == agent.rest
    assert ("JSONRPC", "0.3") in urls
    assert card["capabilities"]["streaming"] is True
    assert "evil" not in response.text


async def test_health_reports_frontend_and_backend(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    health = (await http.get(agent.url + "/health")).json()
    assert health["frontend"] == "ok"
    assert health["backend"]["healthy"] is True
    assert health["backend"]["version"] == "1.18.33"


async def test_jsonrpc_1_0_send(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    task = await send(http, agent.jsonrpc, "hello world")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task_answer(task) == "Offline model reply: hello world"


async def test_jsonrpc_0_3_send(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-03",
                "role": "user",
                "parts": [{"kind": "text", "text": "old client"}],
            }
        },
    }
    result = (await http.post(agent.jsonrpc, json=body)).json()["result"]
    assert result["kind"] == "task"
    assert result["status"]["state"] == "completed"
    texts = [p["text"] for a in result["artifacts"] for p in a["parts"] if p.get("kind") == "text"]
    assert "".join(texts) == "Offline model reply: old client"


async def test_rest_send_and_get(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    response = await http.post(agent.rest + "/message:send", json={"message": user_message("over rest")}, headers=V1)
    assert response.status_code == 200, response.text
    task = response.json()["task"]
    assert task_answer(task) == "Offline model reply: over rest"
    fetched = await http.get(f"{agent.rest}/tasks/{task['id']}", headers=V1)
    assert fetched.json()["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.alone  # how finely the answer arrives depends on the machine having time for it
async def test_streaming_order_and_exact_assembly(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    events = await stream(http, agent.jsonrpc, {"message": user_message("[[long:60]] [[slow:1.5]]")})
    expected = " ".join(f"word{i}" for i in range(1, 61))
    assert list(events[0]) == ["task"]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert len(chunks) > 10, "the answer must arrive in many chunks, not at the end"
    assert answer_text(events) == expected
    assert chunks[-1]["lastChunk"] is True and not any(c.get("lastChunk") for c in chunks[:-1])
    assert all(p.get("text") != expected for c in chunks for p in c["artifact"]["parts"])
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    stored = (await rpc(http, agent.jsonrpc, "GetTask", {"id": events[0]["task"]["id"]}))["result"]
    assert task_answer(stored) == expected


async def test_reasoning_is_kept_out_of_the_answer(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    events = await stream(http, agent.jsonrpc, {"message": user_message("[[think:secret plan]] visible")})
    assert answer_text(events) == "Offline model reply: visible"
    thoughts = [
        e["statusUpdate"]["metadata"]["a2a-wrapper"]["thought"]
        for e in events
        if "thought" in e.get("statusUpdate", {}).get("metadata", {}).get("a2a-wrapper", {})
    ]
    assert thoughts == ["secret plan"]


async def test_usage_in_final_status_metadata(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    events = await stream(http, agent.jsonrpc, {"message": user_message("count me")})
    usage = events[-1]["statusUpdate"]["metadata"]["a2a-wrapper"]["usage"]
    assert usage["outputTokens"] > 0 and usage["inputTokens"] > 0


async def test_malformed_jsonrpc_and_unknown_method(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    broken = await http.post(agent.jsonrpc, content=b"{not json", headers={**V1, "Content-Type": "application/json"})
    assert broken.json()["error"]["code"] == -32700
    unknown = await rpc(http, agent.jsonrpc, "NoSuchMethod", {})
    assert unknown["error"]["code"] == -32601
    no_task = await rpc(http, agent.jsonrpc, "GetTask", {"id": "does-not-exist"})
    assert no_task["error"]["code"] == -32001


async def test_a_served_path_asked_with_another_method_gets_405_and_what_it_allows(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    asked = {
        ("GET", agent.jsonrpc): "POST",
        ("PUT", agent.rest + "/tasks/some-task"): "GET, HEAD",
        ("DELETE", agent.rest + "/message:send"): "POST",
        ("POST", agent.url + "/health"): "GET, HEAD",
        ("POST", agent.url + "/.well-known/agent-card.json"): "GET, HEAD",
    }
    for (method, url), allowed in asked.items():
        response = await http.request(method, url, headers=V1)
        assert (response.status_code, response.headers.get("allow")) == (405, allowed), (method, url)
    unknown = await http.post(agent.url + "/no/such/path", headers=V1)
    assert unknown.status_code == 404 and "location" not in unknown.headers, "no redirect to a slashed path"
    tenant = await http.delete(agent.url + "/some-tenant/tasks", headers=V1)
    assert tenant.status_code == 404


async def test_oversize_body_is_refused_not_truncated(make_settings, offline_model, http: httpx.AsyncClient) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import serving

    settings = make_settings(server={"max_body_bytes": 2048})
    async with serving(settings, offline_model) as served:
        big = user_message("x" * 5000)
        response = await http.post(
            served.jsonrpc,
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": big}},
            headers=V1,
        )
        assert response.status_code == 413
        assert "limit" in response.json()["error"]["message"]
        requests = (await http.get(offline_model.url + "/control/requests")).json()
        assert not any("x" * 5000 in str(r) for r in requests)


async def test_a2a_sdk_client_streams_a_task(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    # the tests' client (60 s): the SDK's own default read timeout is 5 s, short for a turn on a loaded machine
    client = await create_client(agent.url, client_config=ClientConfig(streaming=True, httpx_client=http))
    async with client:
        request = SendMessageRequest(message=new_text_message("from the sdk", role=Role.ROLE_USER))
        kinds, text = [], ""
        async for event in client.send_message(request):
            kinds.append(event.WhichOneof("payload"))
            if event.HasField("artifact_update"):
                text += "".join(p.text for p in event.artifact_update.artifact.parts)
    assert kinds[0] == "task" and "artifact_update" in kinds
    assert text == "Offline model reply: from the sdk"


async def test_a_trailing_slash_reaches_the_same_method_on_every_binding(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    over_jsonrpc = await rpc(http, agent.jsonrpc + "/", "SendMessage", {"message": user_message("slash")})
    assert task_answer(over_jsonrpc["result"]["task"]) == "Offline model reply: slash"
    task_id = over_jsonrpc["result"]["task"]["id"]
    fetched = await http.get(f"{agent.rest}/tasks/{task_id}/", headers=V1)
    assert fetched.status_code == 200 and fetched.json()["id"] == task_id
    sent = await http.post(agent.rest + "/message:send/", json={"message": user_message("rest slash")}, headers=V1)
    assert sent.status_code == 200 and task_answer(sent.json()["task"]) == "Offline model reply: rest slash"
    card = await http.get(agent.url + "/.well-known/agent-card.json/")
    assert card.status_code == 200 and card.json()["name"] == "test-agent"


async def test_the_card_says_how_long_to_keep_it_and_when_it_changed(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    first = await http.get(agent.url + "/.well-known/agent-card.json")
    assert first.headers["Cache-Control"] == "public, max-age=300"
    assert first.headers["ETag"] and parsedate_to_datetime(first.headers["Last-Modified"]) <= datetime.now(UTC)
    again = await http.get(agent.url + "/.well-known/agent-card.json", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.headers["Last-Modified"] == first.headers["Last-Modified"]

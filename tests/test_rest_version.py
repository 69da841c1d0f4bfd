"""A REST request whose A2A version does not fit its path (1.0's paths, 0.3's `/v1/` ones) is told what to change,
and never reaches the agent; the right pairs are served as before."""

import uuid
from typing import Any

import httpx
import pytest

from a2a_wrapper.frontend.card import REST_PATH
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1, user_message

V03 = {"A2A-Version": "0.3"}


def refusal(response: httpx.Response) -> tuple[int, str, list[str], str]:
    error = response.json()["error"]
    return response.status_code, error["status"], [detail["reason"] for detail in error["details"]], error["message"]


def v03_message(text: str) -> dict[str, Any]:
    """A message as A2A 0.3's REST binding writes it (its proto's JSON: `content`, not `parts`)."""
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": [{"text": text}]}


@pytest.mark.slow  # a real agent and OpenCode
async def test_a_1_0_path_without_the_header_is_told_to_send_it(
    agent: ServedAgent, http: httpx.AsyncClient, offline_model: OfflineModel
) -> None:
    prompt = f"unversioned-{uuid.uuid4().hex[:8]}"
    sent = await http.post(f"{agent.rest}/message:send", json={"message": user_message(prompt)})
    status, canonical, reasons, sentence = refusal(sent)
    assert (status, canonical, reasons) == (400, "FAILED_PRECONDITION", ["VERSION_NOT_SUPPORTED"])
    assert sentence.startswith(f"POST {REST_PATH}/message:send is an A2A 1.0 REST path: send the header")
    listed = await http.get(f"{agent.rest}/tasks")
    assert "`A2A-Version: 1.0`" in refusal(listed)[3]
    requests = (await http.get(offline_model.url + "/control/requests")).json()
    assert not any(prompt in str(request) for request in requests), "the refused message never reached the model"


@pytest.mark.slow  # a real agent and OpenCode
async def test_a_0_3_path_sent_as_1_0_is_told_the_1_0_path(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    cases = {
        ("POST", "/v1/message:send"): "/message:send",
        ("GET", "/v1/tasks/some-task"): "/tasks/some-task",
        ("POST", "/v1/tasks/some-task:cancel"): "/tasks/some-task:cancel",
        ("GET", "/v1/card"): "/extendedAgentCard",
    }
    for (method, path), path_1_0 in cases.items():
        body = {"message": v03_message("x")} if method == "POST" else None
        response = await http.request(method, agent.rest + path, json=body, headers=V1)
        status, _, reasons, sentence = refusal(response)
        assert (status, reasons) == (400, ["VERSION_NOT_SUPPORTED"]), (method, path)
        assert f"call {method} {REST_PATH}{path_1_0} (A2A 1.0)" in sentence, sentence


@pytest.mark.slow  # a real agent and OpenCode
async def test_each_path_with_its_own_version_is_served(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    as_1_0 = await http.post(f"{agent.rest}/message:send", json={"message": user_message("hello")}, headers=V1)
    assert as_1_0.status_code == 200 and as_1_0.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for headers in ({}, V03):
        as_0_3 = await http.post(f"{agent.rest}/v1/message:send", json={"message": v03_message("hi")}, headers=headers)
        assert as_0_3.status_code == 200 and as_0_3.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED", headers
    unknown = await http.get(f"{agent.rest}/tasks/no-such-task", headers=V1)
    assert refusal(unknown)[:3] == (404, "NOT_FOUND", ["TASK_NOT_FOUND"]), "the SDK answers what it serves"

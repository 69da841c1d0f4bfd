"""Small wire-level A2A helpers for tests: JSON-RPC calls and SSE streams over a real HTTP client."""

import json
import uuid
from typing import Any

import httpx

V1 = {"A2A-Version": "1.0"}


def user_message(text: str, context_id: str | None = None, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}
    if context_id:
        message["contextId"] = context_id
    if task_id:
        message["taskId"] = task_id
    return message


async def rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    response = await http.post(url, json=body, headers=V1)
    return dict(response.json())


async def send(http: httpx.AsyncClient, url: str, text: str, context_id: str | None = None) -> dict[str, Any]:
    """SendMessage, returning the task (the call blocks until the task ends)."""
    answer = await rpc(http, url, "SendMessage", {"message": user_message(text, context_id)})
    assert "result" in answer, answer
    return dict(answer["result"]["task"])


async def stream(http: httpx.AsyncClient, url: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """SendStreamingMessage; every `result` of the SSE stream, in order."""
    return await streamed(http, url, "SendStreamingMessage", params)


async def subscription(http: httpx.AsyncClient, url: str, task_id: str) -> list[dict[str, Any]]:
    """SubscribeToTask; every `result` until the stream ends: what a caller watching the task sees."""
    return await streamed(http, url, "SubscribeToTask", {"id": task_id})


async def streamed(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """A streaming JSON-RPC method's `result`s, in order, until the server ends the stream."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    events: list[dict[str, Any]] = []
    async with http.stream("POST", url, json=body, headers=V1) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                payload = json.loads(line[5:])
                assert "result" in payload, payload
                events.append(payload["result"])
    return events


def _stated(event: dict[str, Any]) -> dict[str, Any]:
    """What in a stream's `result` holds a status and metadata: the task itself, or a status update (else {})."""
    return dict(event.get("task") or event.get("statusUpdate") or {})


def state_of(event: dict[str, Any]) -> str | None:
    """The state a stream's `result` reports: a task's or a status update's; None for an artifact update."""
    return _stated(event).get("status", {}).get("state")


def session_of(events: list[dict[str, Any]]) -> str:
    """The backend session a streamed turn reported at its start: in the task's metadata when the turn started at
    once, else in its `working` update."""
    for event in events:
        found = _stated(event).get("metadata", {}).get("a2a-wrapper", {})
        if "session" in found:
            return str(found["session"])
    raise AssertionError(f"no event names the session: {events}")


def answer_text(events: list[dict[str, Any]]) -> str:
    return "".join(
        part.get("text", "")
        for event in events
        if "artifactUpdate" in event and event["artifactUpdate"]["artifact"].get("name") == "response"
        for part in event["artifactUpdate"]["artifact"]["parts"]
    )


def task_answer(task: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for artifact in task.get("artifacts", [])
        if artifact.get("name") == "response"
        for part in artifact["parts"]
    )


def final_state(events: list[dict[str, Any]]) -> str:
    states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
    return states[-1]


def status_text(status: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in (status.get("message") or {}).get("parts", []))


def data_parts(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    found = []
    for event in events:
        message = event.get("statusUpdate", {}).get("status", {}).get("message") or {}
        for part in message.get("parts", []):
            if isinstance(part.get("data"), dict) and part["data"].get("type") == kind:
                found.append(part["data"])
    return found


def approval_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The approval the stream's last status (input required) asks a person for."""
    status = events[-1]["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    return dict(next(p["data"]["approval"] for p in status["message"]["parts"] if "data" in p))

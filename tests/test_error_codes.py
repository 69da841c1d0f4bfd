"""Each A2A error a caller can cause answers with the codes of A2A §5.4's table, on JSON-RPC, HTTP+JSON and gRPC,
with the `google.rpc.ErrorInfo` reason that tells errors of one status apart.

The table is 1.0.1's (unchanged on the spec's main branch since): A2A #1627 made every HTTP status the one
`google.rpc.Code` maps its gRPC status to, so TaskNotCancelable is 400 / FAILED_PRECONDITION (1.0.0's table said
409) and UnsupportedOperation and VersionNotSupported FAILED_PRECONDITION (1.0.0: UNIMPLEMENTED). a2a-sdk 1.3.0
answers by this table; this holds the agent to it, whatever layer answers.
"""

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    a2a_pb2_grpc,
)
from google.rpc import error_details_pb2, status_pb2

from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.helpers.a2a_wire import V1, rpc, send, user_message

pytestmark = pytest.mark.slow

# A2A §5.4 (1.0.1): error -> (JSON-RPC code, gRPC status, HTTP status), and the ErrorInfo reason
TABLE = {
    "TASK_NOT_FOUND": (-32001, grpc.StatusCode.NOT_FOUND, 404),
    "TASK_NOT_CANCELABLE": (-32002, grpc.StatusCode.FAILED_PRECONDITION, 400),
    "PUSH_NOTIFICATION_NOT_SUPPORTED": (-32003, grpc.StatusCode.FAILED_PRECONDITION, 400),
    "UNSUPPORTED_OPERATION": (-32004, grpc.StatusCode.FAILED_PRECONDITION, 400),
    "VERSION_NOT_SUPPORTED": (-32009, grpc.StatusCode.FAILED_PRECONDITION, 400),
}
V1_METADATA = (("a2a-version", "1.0"),)


class Calls:
    """One mistake per error, made on each binding against the same agent and its one ended task."""

    def __init__(self, served: ServedAgent, http: httpx.AsyncClient, stub: a2a_pb2_grpc.A2AServiceStub, ended: str):
        self.served, self.http, self.stub, self.ended = served, http, stub, ended

    def jsonrpc(self, reason: str) -> Awaitable[dict[str, Any]]:
        url, ended = self.served.jsonrpc, self.ended
        return {
            "TASK_NOT_FOUND": lambda: rpc(self.http, url, "GetTask", {"id": "no-such-task"}),
            "TASK_NOT_CANCELABLE": lambda: rpc(self.http, url, "CancelTask", {"id": ended}),
            "PUSH_NOTIFICATION_NOT_SUPPORTED": lambda: rpc(
                self.http, url, "CreateTaskPushNotificationConfig", {"taskId": ended, "url": "https://x.example/h"}
            ),
            "UNSUPPORTED_OPERATION": lambda: rpc(
                self.http, url, "SendMessage", {"message": user_message("more", task_id=ended)}
            ),
            "VERSION_NOT_SUPPORTED": lambda: self._json(
                self.http.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": ended}},
                    headers={"A2A-Version": "99.0"},
                )
            ),
        }[reason]()

    def rest(self, reason: str) -> Awaitable[httpx.Response]:
        base, ended = self.served.rest, self.ended
        return {
            "TASK_NOT_FOUND": lambda: self.http.get(f"{base}/tasks/no-such-task", headers=V1),
            "TASK_NOT_CANCELABLE": lambda: self.http.post(f"{base}/tasks/{ended}:cancel", headers=V1),
            "PUSH_NOTIFICATION_NOT_SUPPORTED": lambda: self.http.post(
                f"{base}/tasks/{ended}/pushNotificationConfigs", json={"url": "https://x.example/h"}, headers=V1
            ),
            "UNSUPPORTED_OPERATION": lambda: self.http.post(
                f"{base}/message:send", json={"message": user_message("more", task_id=ended)}, headers=V1
            ),
            "VERSION_NOT_SUPPORTED": lambda: self.http.get(f"{base}/tasks/{ended}", headers={"A2A-Version": "99.0"}),
        }[reason]()

    def grpc(self, reason: str) -> Awaitable[Any]:
        ended, stub = self.ended, self.stub
        later = Message(message_id="later", role=Role.ROLE_USER, task_id=ended, parts=[Part(text="more")])
        return {
            "TASK_NOT_FOUND": lambda: stub.GetTask(GetTaskRequest(id="no-such-task"), metadata=V1_METADATA),
            "TASK_NOT_CANCELABLE": lambda: stub.CancelTask(CancelTaskRequest(id=ended), metadata=V1_METADATA),
            "PUSH_NOTIFICATION_NOT_SUPPORTED": lambda: stub.CreateTaskPushNotificationConfig(
                TaskPushNotificationConfig(task_id=ended, url="https://x.example/h"), metadata=V1_METADATA
            ),
            "UNSUPPORTED_OPERATION": lambda: stub.SendMessage(SendMessageRequest(message=later), metadata=V1_METADATA),
            "VERSION_NOT_SUPPORTED": lambda: stub.GetTask(
                GetTaskRequest(id=ended), metadata=(("a2a-version", "99.0"),)
            ),
        }[reason]()

    @staticmethod
    async def _json(response: Awaitable[httpx.Response]) -> dict[str, Any]:
        return dict((await response).json())


@pytest.fixture
async def calls(
    make_settings: SettingsFactory, offline_model: OfflineModel, http: httpx.AsyncClient
) -> AsyncIterator[Calls]:
    settings = make_settings(auto_approve=True, push={"enabled": False}, server={"grpc_port": 0})
    async with serving(settings, offline_model) as served:
        card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
        [target] = {i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"}
        ended = (await send(http, served.jsonrpc, "done"))["id"]
        async with grpc.aio.insecure_channel(target) as channel:
            yield Calls(served, http, a2a_pb2_grpc.A2AServiceStub(channel), ended)


def _reasons(details: list[dict[str, Any]]) -> list[str]:
    return [d["reason"] for d in details if d.get("@type", "").endswith("google.rpc.ErrorInfo")]


async def _grpc_refusal(call: Awaitable[Any]) -> tuple[grpc.StatusCode, list[str]]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    trailing = dict(refused.value.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailing.get("grpc-status-details-bin", b""))
    reasons = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            reasons.append(info.reason)
    return refused.value.code(), reasons


async def test_every_binding_answers_each_error_as_the_spec_table_says(calls: Calls) -> None:
    seen = {}
    for reason in TABLE:
        over_jsonrpc = (await calls.jsonrpc(reason))["error"]
        over_rest = await calls.rest(reason)
        grpc_code, grpc_reasons = await _grpc_refusal(calls.grpc(reason))
        rest_error = over_rest.json()["error"]
        seen[reason] = (
            (over_jsonrpc["code"], grpc_code, over_rest.status_code),
            (_reasons(over_jsonrpc.get("data") or []), grpc_reasons, _reasons(rest_error["details"])),
            rest_error["status"],
        )
    for reason, (codes, reasons, rest_status) in seen.items():
        assert codes == TABLE[reason], (reason, codes)
        assert reasons == ([reason], [reason], [reason]), (reason, reasons)
        assert rest_status == TABLE[reason][1].name, "the REST body's status is the gRPC status's name"

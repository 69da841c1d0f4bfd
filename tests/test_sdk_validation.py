"""a2a-sdk's REQUIRED-field check walks by a plan per message type (compat/sdk_validation.py): for valid requests
and broken ones, at the top and deep inside (repeated fields, maps), it finds what the SDK's own walk finds, in
its order, and a request that breaks the rules is still refused on the wire with the SDK's error."""

from typing import Any

import pytest
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils import proto_utils
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import ParseDict
from google.protobuf.message import Message

from a2a_wrapper.frontend.compat.sdk_validation import SDK_CHECK, missing_required_fields, use_planned_validation

MESSAGE = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
CASES: list[tuple[type[Message], dict[str, Any]]] = [
    (SendMessageRequest, {"message": MESSAGE, "configuration": {"historyLength": 3}}),
    (SendMessageRequest, {}),
    (SendMessageRequest, {"message": {"parts": [{"text": "no id, no role"}]}}),
    (SendMessageRequest, {"message": {"messageId": "m", "role": "ROLE_USER"}}),
    (SendMessageRequest, {"message": {**MESSAGE, "parts": [{"text": "a"}, {}, {"url": ""}]}}),
    (
        Task,
        {
            "id": "t",
            "status": {"state": "TASK_STATE_WORKING", "message": {"parts": []}},
            "history": [MESSAGE, {"role": "ROLE_AGENT"}],
            "artifacts": [{"parts": [{"text": "x"}]}, {"artifactId": "a"}],
        },
    ),
    (Task, {}),
    (TaskPushNotificationConfig, {"taskId": "t"}),
    (CancelTaskRequest, {}),
    (ListTasksRequest, {"pageSize": 5}),
    (
        AgentCard,
        {
            "name": "c",
            "securitySchemes": {
                "o": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"scopes": {"read": "r"}}}}},
                "k": {"apiKeySecurityScheme": {}},
            },
            "skills": [{"id": "s"}, {}],
            "supportedInterfaces": [{"url": "http://x"}],
        },
    ),
]


def the_sdks(message: Message, monkeypatch: pytest.MonkeyPatch) -> list[proto_utils.ValidationDetail]:
    with monkeypatch.context() as patched:  # the SDK's walk recurses through the module's name: its own, here
        patched.setattr(proto_utils, "_validate_proto_required_fields_internal", SDK_CHECK)
        return SDK_CHECK(message)


def ours(message: Message, monkeypatch: pytest.MonkeyPatch) -> list[proto_utils.ValidationDetail]:
    with monkeypatch.context() as patched:
        patched.setattr(proto_utils, "_validate_proto_required_fields_internal", missing_required_fields)
        return missing_required_fields(message)


@pytest.mark.parametrize(("kind", "value"), CASES)
def test_the_planned_walk_finds_what_the_sdks_finds(
    kind: type[Message], value: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    message = ParseDict(value, kind())
    assert ours(message, monkeypatch) == the_sdks(message, monkeypatch)


def test_the_cases_hold_violations_at_every_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [d["field"] for kind, value in CASES for d in the_sdks(ParseDict(value, kind()), monkeypatch)]
    assert "message" in found and "message.message_id" in found and "history[1].message_id" in found
    assert any(field.startswith("security_schemes[") for field in found)


def test_installed_a_broken_request_is_refused_with_the_sdks_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proto_utils, "_validate_proto_required_fields_internal", SDK_CHECK)
    use_planned_validation()
    assert proto_utils._validate_proto_required_fields_internal is missing_required_fields
    broken = ParseDict({"message": {"parts": [{"text": "x"}]}}, SendMessageRequest())
    with pytest.raises(InvalidParamsError) as raised:
        proto_utils.validate_proto_required_fields(broken)
    assert raised.value.data == {"errors": the_sdks(broken, monkeypatch)}
    proto_utils.validate_proto_required_fields(ParseDict({"message": MESSAGE}, SendMessageRequest()))

"""The Copilot SDK's session events with their data as the CLI sent it (backends/copilot/light_events.py): the same
envelope as the SDK's parser gives, the same `to_dict()`, and typed data for every event the SDK itself reads."""

import inspect
import re
import uuid
from typing import Any

import pytest
from copilot import client
from copilot.generated import session_events
from copilot.generated.session_events import RawSessionEventData, SessionEvent, SessionEventType
from copilot.session import CopilotSession

from a2a_wrapper.backends.copilot.light_events import SDK_READS, light_events, light_first

SDK_PARSE = session_events.session_event_from_dict


def wire(kind: str, data: Any, **envelope: Any) -> dict[str, Any]:
    return {"type": kind, "id": str(uuid.uuid4()), "timestamp": "2026-12-06T10:00:00.123Z", "data": data, **envelope}


AS_THE_CLI_SENDS = [
    wire(
        "assistant.message_delta",
        {"messageId": "m1", "deltaContent": "hel"},
        ephemeral=True,
        parentId=str(uuid.uuid4()),
    ),
    wire("assistant.message", {"messageId": "m1", "content": "hello", "toolRequests": []}, parentId=str(uuid.uuid4())),
    wire("session.idle", {}, agentId="sub-agent"),
    wire("hook.start", {"hookInvocationId": "h1", "hookType": "preToolUse", "input": {"toolName": "bash"}}),
    wire("assistant.usage", {"model": "offline", "inputTokens": 12, "outputTokens": 3, "cost": 1.5}),
    wire("tool.execution_start", {"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "ls"}}),
    wire("a.type.no.sdk.knows", {"anything": [1, 2]}),
]


@pytest.mark.parametrize("event", AS_THE_CLI_SENDS, ids=lambda event: event["type"])
def test_an_event_is_what_the_sdk_parses_with_its_data_as_sent(event: dict[str, Any]) -> None:
    light, typed = light_first(SDK_PARSE)(event), SDK_PARSE(event)
    assert isinstance(light.data, RawSessionEventData)
    assert light.data.to_dict() == event["data"] == typed.data.to_dict()
    for field in ("id", "timestamp", "type", "agent_id", "ephemeral", "parent_id", "raw_type"):
        assert getattr(light, field) == getattr(typed, field), field
    assert light.to_dict() == typed.to_dict()


def test_an_unknown_type_keeps_its_name() -> None:
    light = light_first(SDK_PARSE)(AS_THE_CLI_SENDS[-1])
    assert light.type is SessionEventType.UNKNOWN
    assert light.raw_type == "a.type.no.sdk.knows"


def test_the_events_the_sdk_answers_itself_are_typed() -> None:
    """Every data class Session._handle_broadcast_event matches on is the data of a type in SDK_READS, and those
    are parsed by the SDK."""
    matched = set(re.findall(r"case (\w+Data)\(\)", inspect.getsource(CopilotSession._handle_broadcast_event)))
    assert matched, "the SDK's broadcast handling names no data class: read it again"
    type_of = {
        data_class: getattr(SessionEventType, name).value
        for name, data_class in re.findall(
            r"case SessionEventType\.(\w+): data = (\w+Data)\.from_dict", inspect.getsource(SessionEvent.from_dict)
        )
    }
    assert len(type_of) > 100, "the SDK's parser names no data classes: read it again"
    assert {type_of[data_class] for data_class in matched} <= SDK_READS
    parse = light_first(lambda event: ("typed by the SDK", event["type"]))
    for kind in SDK_READS:
        assert parse(wire(kind, {"requestId": "r1"})) == ("typed by the SDK", kind)


def test_what_is_not_an_event_goes_to_the_sdk_and_keeps_its_errors() -> None:
    with pytest.raises(AssertionError):
        light_first(SDK_PARSE)(["not", "an", "event"])


def test_installed_once_where_the_client_parses_notifications() -> None:
    light_events()
    installed = client.session_event_from_dict
    light_events()
    assert client.session_event_from_dict is installed
    assert installed.sdk_parse is SDK_PARSE  # type: ignore[attr-defined]

"""The process's JSON printer (compat/wire_printer.py) prints what protobuf's own printer prints, for every A2A type
and every kind of field, under both naming styles, errors included; only faster, and whole numbers as integers."""

import math
from typing import Any

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    AgentCard,
    Artifact,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import descriptor_pb2, json_format
from google.protobuf.json_format import ParseDict
from google.protobuf.message import Message as Proto
from google.protobuf.struct_pb2 import Struct, Value

from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.frontend.compat.wire_printer import _STOCK, WirePrinter


def both(message: Proto, **options: Any) -> tuple[Any, Any]:
    """What the stock printer and this one make of `message`, with the same options."""
    return _STOCK(**options)._MessageToJsonObject(message), WirePrinter(**options)._MessageToJsonObject(message)


def a_task() -> Task:
    asked = Message(
        message_id="m-1",
        context_id="c-1",
        task_id="t-1",
        role=Role.ROLE_USER,
        parts=[
            new_text_part("hello"),
            Part(raw=b"\x00\xffbytes", filename="a.bin", media_type="application/octet-stream"),
            Part(url="https://example.com/x"),
            new_data_part({"n": 5, "f": 2.5, "big": 2.0**60, "ok": True, "none": None, "list": [1, "two", [3.5, {}]]}),
        ],
        extensions=["urn:x"],
        reference_task_ids=["t-0"],
    )
    task = Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=asked),
        history=[asked, Message(message_id="m-2", role=Role.ROLE_AGENT)],
        artifacts=[
            Artifact(artifact_id="a-1", name="response", description="d", parts=[new_text_part("answer")]),
            Artifact(artifact_id="a-2"),
        ],
    )
    task.status.timestamp.FromNanoseconds(1_796_301_298_425_742_100)
    task.metadata.update({"a2a-wrapper": {"usage": {"inputTokens": 2468, "cost": 0.0}, "session": "ses_1"}})
    task.artifacts[0].metadata.update({"empty": {}, "nested": {"deep": [[]]}})
    return task


def corpus() -> list[Proto]:
    task = a_task()
    card = build_card(AgentSettings(card=CardSettings(name="printer")))  # the maps: in `oauth`
    oauth = ParseDict(
        {
            "name": "oauth",
            "securitySchemes": {
                "o": {
                    "oauth2SecurityScheme": {
                        "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {"read": "r", "write": "w"}}}
                    }
                }
            },
            "securityRequirements": [{"schemes": {"o": {"list": ["read"]}}}],
        },
        AgentCard(),
    )
    file = descriptor_pb2.FileDescriptorProto()
    Task.DESCRIPTOR.file.CopyToProto(file)  # enums, bools, int32s, nested repeated messages, options
    option = descriptor_pb2.UninterpretedOption(
        identifier_value="x",
        positive_int_value=2**63,
        negative_int_value=-(2**62),
        double_value=0.1,
        string_value=b"\x01",
    )
    unnamed = Task(id="t-2")
    unnamed.status.state = 42  # type: ignore[assignment]  # an open enum's number without a name
    return [
        task,
        card,
        oauth,
        file,
        option,
        descriptor_pb2.UninterpretedOption(double_value=math.inf),
        unnamed,
        StreamResponse(task=task),
        StreamResponse(message=task.history[0]),
        StreamResponse(status_update=TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=task.status)),
        StreamResponse(
            artifact_update=TaskArtifactUpdateEvent(
                task_id="t-1", context_id="c-1", artifact=task.artifacts[0], append=True, last_chunk=False
            )
        ),
        ListTasksResponse(tasks=[task, Task(id="t-3")], next_page_token="n", page_size=50, total_size=2),
        ParseDict(
            {"message": {"messageId": "m", "parts": [{"text": "x"}]}, "configuration": {"historyLength": 3}},
            SendMessageRequest(),
        ),
        ParseDict(
            {"taskId": "t-1", "url": "https://hook", "authentication": {"scheme": "Bearer", "credentials": "c"}},
            TaskPushNotificationConfig(),
        ),
        Task(),
        Struct(),
        Value(),
    ]


@pytest.mark.parametrize("by_proto_name", [False, True])
def test_every_a2a_message_prints_as_protobuf_prints_it(by_proto_name: bool) -> None:
    for message in corpus():
        stock, ours = both(message, preserving_proto_field_name=by_proto_name)
        assert ours == stock, type(message).__name__


def test_the_printers_other_options_take_the_stock_path() -> None:
    for options in ({"always_print_fields_with_no_presence": True}, {"use_integers_for_enums": True}):
        for message in corpus():
            stock, ours = both(message, **options)
            assert ours == stock


def test_whole_numbers_are_integers_and_fractions_stay_fractions() -> None:
    data = WirePrinter()._MessageToJsonObject(a_task())["history"][0]["parts"][3]["data"]
    assert (type(data["n"]), type(data["f"]), type(data["big"])) == (int, float, float)
    assert data["list"] == [1, "two", [3.5, {}]] and type(data["list"][0]) is int


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan])
def test_a_number_json_cannot_hold_fails_as_the_stock_printer_fails(number: float) -> None:
    task = Task(id="t")
    task.metadata.update({"x": {"y": number}})
    errors = []
    for printer in (_STOCK(), WirePrinter()):
        with pytest.raises(json_format.SerializeToJsonError) as raised:
            printer._MessageToJsonObject(task)
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "metadata" in errors[0]


def test_it_is_what_message_to_dict_uses_once_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2a_wrapper.frontend.compat import wire_printer

    monkeypatch.setattr(json_format, "_Printer", _STOCK)
    wire_printer.install()
    assert json_format._Printer is WirePrinter
    assert json_format.MessageToDict(a_task()) == _STOCK()._MessageToJsonObject(a_task())

"""The pure parts of the wire's shape: answers joined into one part, whole numbers printed as integers, and which
of a2a-sdk's log records are a caller's mistake."""

import json
import logging
from typing import Any

import pytest
from a2a.types import Task
from google.protobuf.json_format import MessageToDict, MessageToJson, ParseDict
from google.protobuf.struct_pb2 import Struct

from a2a_wrapper.frontend.compat import wire_printer
from a2a_wrapper.frontend.sdk_logs import CallerErrorsAtDebug, lower_caller_errors
from a2a_wrapper.state.whole_answers import whole_answers

DIFF = {"text": "@@ -1 +1 @@", "mediaType": "text/x-diff"}


def task_of(*artifacts: list[dict[str, Any]]) -> Task:
    return ParseDict(
        {"id": "t", "artifacts": [{"artifactId": f"a{i}", "parts": parts} for i, parts in enumerate(artifacts)]}, Task()
    )


@pytest.mark.parametrize(
    ("parts", "joined"),
    [
        ([{"text": "a "}, {"text": "b"}, {"text": ""}], [{"text": "a b"}]),  # chunks and the closing empty one
        ([{"text": ""}], [{"text": ""}]),  # an empty answer keeps its one part
        ([{"text": "whole"}], [{"text": "whole"}]),
        (
            [{"text": "a"}, {"data": {"k": 1}}, {"text": "b"}, {"text": "c"}],
            [{"text": "a"}, {"data": {"k": 1}}, {"text": "bc"}],
        ),
        ([{"text": "a"}, DIFF], [{"text": "a"}, DIFF]),  # another media type is another part
        ([{"text": "a", "metadata": {"m": 1}}, {"text": "b"}], [{"text": "a", "metadata": {"m": 1}}, {"text": "b"}]),
        ([{"url": "http://x/1"}, {"url": "http://x/2"}], [{"url": "http://x/1"}, {"url": "http://x/2"}]),
    ],
)
def test_adjacent_alike_text_parts_become_one(parts: list[dict[str, Any]], joined: list[dict[str, Any]]) -> None:
    task = task_of(parts, [DIFF])
    shown = MessageToDict(whole_answers(task))
    assert [artifact["parts"] for artifact in shown["artifacts"]] == [joined, [DIFF]]


def test_a_task_already_whole_is_returned_as_it_is_and_the_original_never_changes() -> None:
    whole = task_of([{"text": "all"}])
    assert whole_answers(whole) is whole
    split = task_of([{"text": "a"}, {"text": "b"}])
    assert whole_answers(split) is not split and len(split.artifacts[0].parts) == 2


@pytest.mark.parametrize(
    ("value", "printed"),
    [(5, "5"), (0, "0"), (-3, "-3"), (2.5, "2.5"), (2**53, "9007199254740992"), (2.0**60, "1.152921504606847e+18")],
)
def test_whole_numbers_in_a_struct_print_as_integers(value: float, printed: str) -> None:
    wire_printer.install()
    struct = ParseDict({"n": value, "nested": [{"n": value}]}, Struct())
    assert json.dumps(MessageToDict(struct), sort_keys=True) == f'{{"n": {printed}, "nested": [{{"n": {printed}}}]}}'
    assert json.loads(MessageToJson(struct))["n"] == json.loads(printed)


def test_typed_fields_print_as_before() -> None:
    wire_printer.install()
    task = ParseDict(
        {"id": "t", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"}}, Task()
    )
    assert MessageToDict(task)["status"] == {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"}


REQUEST_ERROR = "Request Error (ID: %s): Code=%s, Message='%s'%s"


@pytest.mark.parametrize(
    ("logger", "template", "level", "shown"),
    [
        ("a2a.server.routes.jsonrpc_dispatcher", REQUEST_ERROR, logging.WARNING, logging.DEBUG),  # -32001 …
        ("a2a.server.routes.jsonrpc_dispatcher", REQUEST_ERROR, logging.ERROR, logging.ERROR),  # -32603 stays
        ("a2a.server.routes.jsonrpc_dispatcher", "Failed to parse request params", logging.ERROR, logging.DEBUG),
        ("a2a.server.routes.jsonrpc_dispatcher", "Unhandled exception", logging.ERROR, logging.ERROR),
        ("a2a.utils.error_handlers", "Request error: Code=%s, Message='%s'%s", logging.WARNING, logging.DEBUG),
        ("a2a.utils.error_handlers", "Unknown error occurred", logging.ERROR, logging.ERROR),
        ("a2a.utils.version_validator", "Version mismatch: actual='%s', expected='%s'", logging.WARNING, logging.DEBUG),
        (
            "a2a.compat.v0_3.jsonrpc_adapter",
            "Failed to validate base JSON-RPC request for v0.3",
            logging.ERROR,
            logging.DEBUG,
        ),
    ],
)
def test_only_a_callers_mistakes_are_lowered_to_debug(logger: str, template: str, level: int, shown: int) -> None:
    lower_caller_errors()
    lower_caller_errors()  # once is enough, twice is harmless
    filters = [f for f in logging.getLogger(logger).filters if isinstance(f, CallerErrorsAtDebug)]
    assert len(filters) == 1
    record = logging.LogRecord(logger, level, __file__, 1, template, ("x",) * template.count("%s"), None)
    logging.getLogger(logger).setLevel(logging.DEBUG)
    try:
        assert filters[0].filter(record) is True
    finally:
        logging.getLogger(logger).setLevel(logging.NOTSET)
    assert (record.levelno, record.levelname) == (shown, logging.getLevelName(shown))


def test_a_lowered_record_is_dropped_when_debug_is_off() -> None:
    lower_caller_errors()
    (lowering,) = [
        f for f in logging.getLogger("a2a.utils.error_handlers").filters if isinstance(f, CallerErrorsAtDebug)
    ]
    record = logging.LogRecord(
        "a2a.utils.error_handlers", logging.WARNING, __file__, 1, "Parse error: %s", ("x",), None
    )
    logging.getLogger("a2a.utils.error_handlers").setLevel(logging.INFO)
    try:
        assert lowering.filter(record) is False
    finally:
        logging.getLogger("a2a.utils.error_handlers").setLevel(logging.NOTSET)

"""OpenCode event shapes (as recorded from 1.18.33) → StreamEvents: a pure table of sequences."""

from typing import Any

import pytest

from a2a_wrapper.backends.opencode.event_stream import session_of
from a2a_wrapper.backends.opencode.translate import Translator, tool_kind
from a2a_wrapper.events import Done, Permission, Question, StreamEvent, Text, Thought, ToolCall, ToolResult, Usage


def message(mid: str, role: str) -> dict[str, Any]:
    return {"type": "message.updated", "properties": {"info": {"id": mid, "role": role, "sessionID": "s"}}}


def part(pid: str, mid: str, kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message.part.updated",
        "properties": {"part": {"id": pid, "messageID": mid, "sessionID": "s", "type": kind, **extra}},
    }


def delta(pid: str, text: str) -> dict[str, Any]:
    return {
        "type": "message.part.delta",
        "properties": {"sessionID": "s", "partID": pid, "field": "text", "delta": text},
    }


IDLE = {"type": "session.idle", "properties": {"sessionID": "s"}}


def run(events: list[dict[str, Any]]) -> list[StreamEvent]:
    translator = Translator()
    return [out for event in events for out in translator.feed(event)]


CASES = {
    "answer deltas, user echo ignored": (
        [
            message("u", "user"),
            part("pu", "u", "text", text="the prompt"),
            message("a", "assistant"),
            part("pa", "a", "text", text=""),
            delta("pa", "Hel"),
            delta("pa", "lo"),
            IDLE,
        ],
        [Text(delta="Hel"), Text(delta="lo"), Done(outcome="completed")],
    ),
    "deltas before their part are held, then released in order": (
        [message("a", "assistant"), delta("pa", "early "), delta("pa", "bird"), part("pa", "a", "text", text=""), IDLE],
        [Text(delta="early "), Text(delta="bird"), Done(outcome="completed")],
    ),
    "reasoning is a thought, not text": (
        [
            message("a", "assistant"),
            part("pr", "a", "reasoning", text=""),
            delta("pr", "hmm"),
            part("pt", "a", "text", text=""),
            delta("pt", "ok"),
            IDLE,
        ],
        [Thought(delta="hmm"), Text(delta="ok"), Done(outcome="completed")],
    ),
    "a final part completes missing deltas without repeating": (
        [
            message("a", "assistant"),
            part("pa", "a", "text", text=""),
            delta("pa", "abc"),
            part("pa", "a", "text", text="abcdef", time={"start": 1, "end": 2}),
            part("pa", "a", "text", text="abcdef", time={"start": 1, "end": 2}),
            IDLE,
        ],
        [Text(delta="abc"), Text(delta="def"), Done(outcome="completed")],
    ),
    "tool pending without input is skipped, running and completed reported": (
        [
            message("a", "assistant"),
            part("t", "a", "tool", tool="bash", callID="c1", state={"status": "pending"}),
            part(
                "t",
                "a",
                "tool",
                tool="bash",
                callID="c1",
                state={"status": "running", "input": {"command": "ls"}, "title": "ls"},
            ),
            part(
                "t",
                "a",
                "tool",
                tool="bash",
                callID="c1",
                state={"status": "completed", "input": {"command": "ls"}, "output": "a\nb", "metadata": {}},
            ),
            IDLE,
        ],
        [
            ToolCall(id="c1", tool="bash", kind="execute", status="running", title="ls", arguments={"command": "ls"}),
            ToolResult(id="c1", tool="bash", kind="execute", status="completed", output="a\nb"),
            Done(outcome="completed"),
        ],
    ),
    "usage from step-finish": (
        [message("a", "assistant"), part("f", "a", "step-finish", tokens={"input": 10, "output": 3}, cost=0.5), IDLE],
        [Usage(input_tokens=10, output_tokens=3, reasoning_tokens=0, cost=0.5), Done(outcome="completed")],
    ),
    "a model error fails with its sentence": (
        [
            {
                "type": "session.error",
                "properties": {
                    "sessionID": "s",
                    "error": {"name": "APIError", "data": {"message": "Bad request", "statusCode": 400}},
                },
            },
            IDLE,
        ],
        [Done(outcome="failed", sentence="OpenCode reported APIError: Bad request")],
    ),
    "an abort is canceled": (
        [
            {
                "type": "session.error",
                "properties": {
                    "sessionID": "s",
                    "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}},
                },
            },
            IDLE,
        ],
        [Done(outcome="canceled", sentence="The turn was aborted.")],
    ),
    "child session text is not the answer, its tools are shown": (
        [
            message("a", "assistant"),
            {**part("ct", "cm", "text", text="child says"), "child": True},
            {
                **part(
                    "tt",
                    "cm",
                    "tool",
                    tool="read",
                    callID="c9",
                    state={"status": "running", "input": {"filePath": "/w/x.py"}},
                ),
                "child": True,
            },
            IDLE,
        ],
        [
            ToolCall(
                id="c9",
                tool="read",
                kind="read",
                status="running",
                title="read",
                arguments={"filePath": "/w/x.py"},
                locations=("/w/x.py",),
            ),
            Done(outcome="completed"),
        ],
    ),
}


@pytest.mark.parametrize("events, expected", CASES.values(), ids=CASES.keys())
def test_translation(events: list[dict[str, Any]], expected: list[StreamEvent]) -> None:
    assert run(events) == expected


def test_permission_request_shapes() -> None:
    bash = {
        "type": "permission.asked",
        "properties": {
            "id": "per_1",
            "sessionID": "s",
            "permission": "bash",
            "patterns": ["rm -rf x"],
            "metadata": {"command": "rm -rf x"},
            "always": ["rm *"],
        },
    }
    edit = {
        "type": "permission.asked",
        "properties": {
            "id": "per_2",
            "sessionID": "s",
            "permission": "edit",
            "patterns": ["a.txt"],
            "metadata": {"filepath": "/w/a.txt", "diff": "..."},
        },
    }
    [first], [second] = run([bash]), run([edit])
    assert isinstance(first, Permission) and first.command == "rm -rf x" and first.kind == "execute"
    assert isinstance(second, Permission) and second.paths == ("/w/a.txt",) and second.kind == "edit"


def test_question_shape() -> None:
    asked = {
        "type": "question.asked",
        "properties": {
            "id": "que_1",
            "sessionID": "s",
            "questions": [
                {"question": "Which color?", "header": "Color", "options": [{"label": "Red"}, {"label": "Blue"}]}
            ],
        },
    }
    assert run([asked]) == [Question(id="que_1", text="Which color?", options=("Red", "Blue"))]


def test_unknown_tool_kind_is_other() -> None:
    assert tool_kind("mcp_server_frobnicate") == "other"


def test_recover_after_a_gap_emits_only_what_was_missed() -> None:
    translator = Translator()
    seen = [
        out
        for e in [
            message("u", "user"),
            message("a", "assistant"),
            part("pa", "a", "text", text=""),
            delta("pa", "Hello "),
        ]
        for out in translator.feed(e)
    ]
    stored = [
        {"info": {"id": "u", "role": "user"}, "parts": []},
        {
            "info": {"id": "a", "role": "assistant", "parentID": "u"},
            "parts": [
                {"id": "pa", "messageID": "a", "type": "text", "text": "Hello world", "time": {"start": 1, "end": 2}}
            ],
        },
    ]
    assert seen == [Text(delta="Hello ")]
    assert translator.recover(stored) == [Text(delta="world"), Done(outcome="completed")]


@pytest.mark.parametrize(
    "event, expected",
    [
        ({"type": "message.part.delta", "properties": {"sessionID": "a"}}, "a"),
        ({"type": "message.part.updated", "properties": {"part": {"sessionID": "b"}}}, "b"),
        ({"type": "message.updated", "properties": {"info": {"sessionID": "c"}}}, "c"),
        ({"type": "session.created", "properties": {"info": {"id": "d"}}}, "d"),
        ({"type": "server.heartbeat", "properties": {}}, None),
    ],
)
def test_session_of(event: dict[str, Any], expected: str | None) -> None:
    assert session_of(event) == expected

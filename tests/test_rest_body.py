"""A REST body nested past the JSON depth limit, or holding a number no double holds, gets 400 in the REST binding's
error shape, as JSON-RPC refuses them with its own codes; a body within both limits is parsed as before. Real HTTP
against the real agent."""

import time

import httpx
import pytest

from a2a_wrapper.frontend.edge.json_depth import MAX_DEPTH, nests_past
from tests.conftest import ServedAgent
from tests.helpers.a2a_wire import V1, user_message


def nested(depth: int) -> bytes:
    return b'{"message": ' + b'{"a": ' * (depth - 1) + b"1" + b"}" * depth


@pytest.mark.slow  # a real agent and OpenCode
async def test_a_rest_body_nested_a_thousand_deep_gets_400_not_500(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    for path in ("/message:send", "/message:stream", "/tasks/t-1:cancel"):
        sent = await http.post(
            agent.rest + path, content=nested(1000), headers={**V1, "Content-Type": "application/json"}
        )
        error = sent.json()["error"]
        assert (sent.status_code, error["status"]) == (400, "INVALID_ARGUMENT"), path
        assert error["message"] == f"Invalid Request: arrays and objects nest past {MAX_DEPTH} levels"
        assert [detail["reason"] for detail in error["details"]] == ["INVALID_REQUEST"]
    # the limit is the JSON-RPC edge's own: a body just within it is the SDK's to judge (an unknown field: 400)
    within = await http.post(agent.rest + "/message:send", content=nested(MAX_DEPTH), headers=V1)
    assert within.status_code == 400 and "nest past" not in within.json()["error"]["message"]
    answered = await http.post(agent.rest + "/message:send", json={"message": user_message("hi")}, headers=V1)
    assert answered.status_code == 200


def with_metadata_number(number: bytes) -> bytes:
    message = b'{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}], "metadata": {"n": ' + number + b"}}"
    return b'{"message": ' + message + b"}"


@pytest.mark.slow  # a real agent and OpenCode
async def test_a_number_no_double_holds_gets_400_and_never_reaches_the_task_store(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    """1e400 was read as Infinity into the stored task: the send and every later read of the task answered 500."""
    refused = {
        b"1e999999999": "the number 1e999999999 is past a double's range",
        b"-1e400": "the number -1e400 is past a double's range",
        b"7" * 10_000: "(10000 characters) is past a double's range",
        b"NaN": "NaN is not JSON",
    }
    for number, says in refused.items():
        sent = await http.post(agent.rest + "/message:send", content=with_metadata_number(number), headers=V1)
        error = sent.json()["error"]
        assert (sent.status_code, error["status"]) == (400, "INVALID_ARGUMENT"), number[:20]
        assert error["message"].startswith("Invalid Request: ") and says in error["message"]
    largest = b"1.7976931348623157e308"  # within the range: stored, and its task reads back
    sent = await http.post(agent.rest + "/message:send", content=with_metadata_number(largest), headers=V1)
    assert sent.status_code == 200, sent.text
    task = sent.json()["task"]
    read = await http.get(f"{agent.rest}/tasks/{task['id']}", headers=V1)
    assert read.status_code == 200 and read.json()["id"] == task["id"]


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert not nests_past(b'{"a": "' + b"[" * 1000 + b'"}')
    assert nests_past(b"[" * 65 + b"]" * 65) and not nests_past(b"[" * 64 + b"]" * 64)
    assert nests_past(b"[" * 1000)  # unbalanced, unparseable: refused all the same


def test_a_string_without_its_closing_quote_is_judged_in_linear_time() -> None:
    """The string pattern once backtracked exponentially on an unterminated string: 24 bytes took 3 s, 40 hours."""
    started = time.monotonic()
    assert nests_past(b'{"a": "' + b"x" * 40)  # the open object left unmatched: refused, at once
    for body in (b'"' + b"x" * 1_000_000, b'"\\"' * 300_000):
        assert not nests_past(body)
    assert time.monotonic() - started < 2.0
    assert nests_past(b"[" * 65 + b'"' + b"x" * 1000)  # brackets before the open string still count

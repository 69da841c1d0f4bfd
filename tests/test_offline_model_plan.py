"""The offline model's pure parts: directive parsing and reply planning (tables; no server, no fixtures)."""

from __future__ import annotations

from typing import Any

import pytest

from a2a_wrapper.offline_model.directives import Directives, ToolCall, parse_directives
from a2a_wrapper.offline_model.plan import plan_reply, split_even, split_words
from tests.helpers.chat_messages import tool_call, tool_result, user


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("hello world", Directives(text="hello world")),
        ("  spread \n over\tlines  ", Directives(text="spread over lines")),
        ("", Directives()),
        (
            '[[tool:bash {"command": "ls"}]] then',
            Directives(text="then", tools=(ToolCall("bash", '{"command": "ls"}'),)),
        ),
        (
            '[[tool:bash {"command":"echo ]] done"}]]',
            Directives(tools=(ToolCall("bash", '{"command": "echo ]] done"}'),)),
        ),
        ("[[tool:noop]]", Directives(tools=(ToolCall("noop", "{}"),))),
        (
            '[[question:{"questions": []}]]',
            Directives(tools=(ToolCall("question", '{"questions": []}'),)),
        ),
        (
            '[[tool:a {"n": 1}]] [[tool:b {"n": 2}]]',
            Directives(tools=(ToolCall("a", '{"n": 1}'), ToolCall("b", '{"n": 2}'))),
        ),
        ("[[think:deep  thought]] hi", Directives(text="hi", think="deep thought")),
        ("[[slow:1.5]]go", Directives(text="go", slow=1.5)),
        ("[[error:503]]", Directives(error=503)),
        ("[[turns]] [[long:5]] [[echo-system]]", Directives(turns=True, long=5, echo_system=True)),
        ("<current_datetime>2025-01-01T10:00Z</current_datetime>\n\nhello", Directives(text="hello")),
        ("a[[turns]]b", Directives(text="a b", turns=True)),
        ("[[[turns]]", Directives(text="[", turns=True)),
        # Not directives: left in the text as written.
        ("[[error:200]]", Directives(text="[[error:200]]")),
        ("[[tool:bash {broken]] rest", Directives(text="[[tool:bash {broken]] rest")),
        ('[[tool:bash ["list"]]]', Directives(text='[[tool:bash ["list"]]]')),
        ("a [[ b", Directives(text="a [[ b")),
        ("[[slow:soon]] [[turns]]", Directives(text="[[slow:soon]]", turns=True)),
        ("[[unknown]] x", Directives(text="[[unknown]] x")),
    ],
)
def test_parse_directives(prompt: str, expected: Directives) -> None:
    assert parse_directives(prompt) == expected


TWO_TOOLS = '[[tool:read {"filePath": "a"}]] [[tool:bash {"command": "ls"}]]'


@pytest.mark.parametrize(
    ("messages", "text", "tools"),
    [
        ([user("hi  there")], "Offline model reply: hi there", ()),
        ([user("")], "Offline model reply: (empty)", ()),
        (
            [user([{"type": "text", "text": "from"}, {"type": "text", "text": " parts"}])],
            "Offline model reply: from parts",
            (),
        ),
        ([user("<current_datetime>now</current_datetime>\n\nhey")], "Offline model reply: hey", ()),
        ([user(TWO_TOOLS)], "", (ToolCall("read", '{"filePath": "a"}'),)),
        (
            [user(TWO_TOOLS), tool_call("c1", "read"), tool_result("c1", "x")],
            "",
            (ToolCall("bash", '{"command": "ls"}'),),
        ),
        (
            [
                user(TWO_TOOLS),
                tool_call("c1", "read"),
                tool_result("c1", "x"),
                tool_call("c2", "bash"),
                tool_result("c2", " a\n b "),
            ],
            "Tool bash returned: a b",
            (),
        ),
        ([user("[[tool:bash {}]]"), tool_call("c9", "bash"), tool_result("c9", "")], "Tool bash returned: (empty)", ()),
        (
            [user("one"), user("two"), {"role": "assistant", "content": "ok"}, user("[[turns]]")],
            "This conversation holds 3 user messages.",
            (),
        ),
        ([user("[[long:4]]")], "word1 word2 word3 word4", ()),
        (
            [{"role": "system", "content": "Be\n\nterse."}, user("[[echo-system]]")],
            "System prompt starts: Be terse.",
            (),
        ),
        ([user("[[echo-system]]")], "System prompt starts: (none)", ()),
    ],
)
def test_plan_reply(messages: list[dict[str, Any]], text: str, tools: tuple[ToolCall, ...]) -> None:
    plan = plan_reply(messages)
    assert (plan.text, plan.tool_calls) == (text, tools)
    assert plan.finish_reason == ("tool_calls" if tools else "stop")


def test_tool_result_excerpt_is_capped() -> None:
    plan = plan_reply([user("[[tool:cat {}]]"), tool_call("c1", "cat"), tool_result("c1", "y" * 500)])
    assert plan.text == "Tool cat returned: " + "y" * 200


@pytest.mark.parametrize(
    ("text", "per_delta", "pieces"),
    [
        ("", 3, ()),
        ("a b c d", 3, ("a b c ", "d")),
        (" lead  and trail ", 1, (" lead  ", "and ", "trail ")),
        ("one", 3, ("one",)),
    ],
)
def test_split_words(text: str, per_delta: int, pieces: tuple[str, ...]) -> None:
    assert split_words(text, per_delta) == pieces


@pytest.mark.parametrize(
    ("text", "count", "pieces"),
    [("abcdef", 3, ("ab", "cd", "ef")), ("ab", 4, ("a", "b")), ("", 2, ()), ("abcde", 2, ("ab", "cde"))],
)
def test_split_even(text: str, count: int, pieces: tuple[str, ...]) -> None:
    assert split_even(text, count) == pieces

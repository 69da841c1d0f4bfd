"""Prompt directives: `[[tool:NAME {json}]]`, `[[think:TEXT]]`, `[[slow:S]]` and friends."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

# Copilot prefixes every prompt with the current date and time.
_DATETIME_TAG = re.compile(r"<current_datetime>.*?</current_datetime>", re.DOTALL)
_CALL = re.compile(r"(?:tool:([A-Za-z0-9_.-]+)|question:)\s*")
_VALUED = re.compile(r"(think|slow|error|long):(.*?)\]\]", re.DOTALL)
_FLAG = re.compile(r"(turns|echo-system)\]\]")
_DECODER = json.JSONDecoder()
_MAX_SLOW = 3600.0
_MAX_LONG = 100_000


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as OpenAI sends it


@dataclass(frozen=True)
class Directives:
    text: str = ""
    tools: tuple[ToolCall, ...] = ()
    think: str = ""
    slow: float = 0.0
    error: int | None = None
    turns: bool = False
    long: int | None = None
    echo_system: bool = False


@dataclass
class _Found:
    tools: list[ToolCall] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    slow: float = 0.0
    error: int | None = None
    turns: bool = False
    long: int | None = None
    echo_system: bool = False


def collapse(text: str) -> str:
    return " ".join(text.split())


def parse_directives(prompt: str) -> Directives:
    """Split a user prompt into its directives and the remaining plain text (whitespace collapsed)."""
    text = _DATETIME_TAG.sub(" ", prompt)
    found = _Found()
    plain: list[str] = []
    pos = search = 0
    while (start := text.find("[[", search)) != -1:
        end = _read_directive(text, start + 2, found)
        if end is None:
            search = start + 1
            continue
        plain.append(text[pos:start])
        pos = search = end
    plain.append(text[pos:])
    return Directives(
        text=collapse(" ".join(plain)),
        tools=tuple(found.tools),
        think=collapse(" ".join(found.thoughts)),
        slow=found.slow,
        error=found.error,
        turns=found.turns,
        long=found.long,
        echo_system=found.echo_system,
    )


def _read_directive(text: str, pos: int, found: _Found) -> int | None:
    """Read the directive whose body starts at `pos` into `found`; return its end, or None if not one."""
    if call := _CALL.match(text, pos):
        return _read_call(text, call.end(), call.group(1) or "question", found)
    if flag := _FLAG.match(text, pos):
        if flag.group(1) == "turns":
            found.turns = True
        else:
            found.echo_system = True
        return flag.end()
    if valued := _VALUED.match(text, pos):
        accepted = _apply_value(valued.group(1), valued.group(2).strip(), found)
        return valued.end() if accepted else None
    return None


def _read_call(text: str, pos: int, name: str, found: _Found) -> int | None:
    arguments: object = {}
    if not text.startswith("]]", pos):
        try:
            # raw_decode, not a regex: the JSON may hold "]]" inside its strings.
            arguments, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if not isinstance(arguments, dict) or not text.startswith("]]", pos):
        return None
    found.tools.append(ToolCall(name, json.dumps(arguments)))
    return pos + 2


def _apply_value(kind: str, value: str, found: _Found) -> bool:
    if kind == "think":
        found.thoughts.append(value)
        return True
    if kind == "slow":
        seconds = _to_float(value)
        if seconds is None or not 0 <= seconds <= _MAX_SLOW:
            return False
        found.slow = seconds
        return True
    number = int(value) if value.isdigit() else None
    if kind == "error" and number is not None and 400 <= number <= 599:
        found.error = number
        return True
    if kind == "long" and number is not None and number <= _MAX_LONG:
        found.long = number
        return True
    return False


def _to_float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None

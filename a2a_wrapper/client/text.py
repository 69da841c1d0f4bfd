"""How the live view words what the data parts carry: always text, never a repr of a dict or a list."""

import ast
from typing import Any

LIMIT = 100  # characters of a command, title or target shown on one line
OUTPUT_LINES = 20  # lines of a tool's output shown under its [done] or [failed] line
_OUTPUT_WIDTH = 200  # characters of one output line
_TEXT_KEYS = ("message", "text", "output", "content", "error", "detail", "reason")  # what a structured result says


def as_text(value: Any) -> str:
    """Text for a value a backend may send structured (ACP tool results), or as the repr of a structure."""
    if isinstance(value, str):
        parsed = _structure(value)
        return value if parsed is None else as_text(parsed)
    if isinstance(value, dict):
        said = [as_text(value[key]) for key in _TEXT_KEYS if value.get(key) not in (None, "", [], {})]
        if said:
            return "\n".join(said)
        return "\n".join(f"{key}: {as_text(item)}" for key, item in value.items() if item not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return "\n".join(as_text(item) for item in value)
    return "" if value is None else str(value)


def _structure(text: str) -> dict[Any, Any] | list[Any] | None:
    """A dict or list written as Python or JSON (what `str()` of a structured result gives), else None."""
    stripped = text.strip()
    if not (stripped[:1] in "{[" and stripped[-1:] in "}]"):
        return None
    for literal in (stripped, stripped.replace("null", "None").replace("true", "True").replace("false", "False")):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        return value if isinstance(value, dict | list) else None
    return None


def short(text: Any) -> str:
    """One line of at most LIMIT characters."""
    first = " ".join(as_text(text).split())
    return first if len(first) <= LIMIT else first[: LIMIT - 3] + "..."


def output_lines(output: Any) -> list[str]:
    """A tool's whole output: its first line after the tool's name, the rest indented, at most OUTPUT_LINES."""
    lines = [line.rstrip() for line in as_text(output).strip("\n").splitlines()]
    lines = [line if len(line) <= _OUTPUT_WIDTH else line[: _OUTPUT_WIDTH - 3] + "..." for line in lines]
    if len(lines) > OUTPUT_LINES:
        left_out = len(lines) - OUTPUT_LINES + 1
        lines = [*lines[: OUTPUT_LINES - 1], f"... ({left_out} more lines)"]
    return lines


def decided_by(rule: str) -> str:
    """Who decided, readably: a person's answer by who answered, the deadline, or a rule by its name."""
    layer, _, name = rule.partition(":")
    if layer != "person" or not name:
        return f"rule {rule}"
    if name == "deadline":
        return "no answer in time"
    return "by a person" if name == "person" else f"by {name}"

"""The live view of a task's stream: the answer's text on stdout as it arrives, everything else on stderr.

With the answer alone on stdout, `a2a-wrap send URL "..." > answer.txt` keeps just the answer. The lines on
stderr read the data parts of `working` status updates (see reporter.py): `[tool]`, `[allow]`, `[deny]`,
`[done]`, `[failed]`. With `raw`, every event is printed as one JSON line on stdout instead.

A tool's `[tool]` line always comes before its decision: a backend may report the permission request before
the call itself (they travel apart), so a decision waits for its tool's line. The two are matched by what the
tool touches (its command, URL or paths: a permission does not carry the call's id). When something else is
shown first, a waiting decision is shown with a `[tool]` line made from its own data, and the call's own line,
when it comes, is not shown again.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from a2a.helpers import get_data_parts
from a2a.types import Artifact, Part, StreamResponse, TaskState
from google.protobuf.json_format import MessageToDict

from a2a_wrapper.client.text import as_text, decided_by, output_lines, short

RESPONSE = "response"
Keys = frozenset[str]  # what a tool call touches, as a permission names it
_ARGUMENT_KEYS = ("command", "cmd", "url", "filePath", "file_path", "path", "fileName", "pattern")


@dataclass(frozen=True)
class _Decision:
    keys: Keys
    tool_line: str  # its tool's line, made from the decision, shown when the call's own line did not come
    line: str


class LiveView:
    def __init__(self, out: TextIO, err: TextIO, raw: bool = False) -> None:
        self._out = out
        self._err = err
        self._raw = raw
        self._open_line = False  # the answer's last text did not end a line
        self._answered = False  # some answer text was shown
        self._tools_seen: set[str] = set()
        self._shown: list[Keys] = []  # tools whose line is shown and whose decision is not yet
        self._announced: list[Keys] = []  # tool lines made from a decision or an ask: the call's own is not shown
        self._held: list[_Decision] = []  # decisions waiting for their tool's line

    def show(self, event: StreamResponse) -> None:
        if self._raw:
            self._write(json.dumps(MessageToDict(event), ensure_ascii=False) + "\n")
            return
        kind = event.WhichOneof("payload")
        if kind == "artifact_update":
            self._artifact(event.artifact_update.artifact, event.artifact_update.append)
        elif kind == "status_update" and event.status_update.status.state == TaskState.TASK_STATE_WORKING:
            for data in get_data_parts(event.status_update.status.message.parts):
                self._activity(data)
        elif kind == "task" and not self._answered:  # a unary reply: the whole task at once
            for artifact in event.task.artifacts:
                self._artifact(artifact, append=False)
        elif kind == "message":
            self._release()
            self._write(text_of(event.message.parts))

    def line(self, text: str) -> None:
        """One line on stderr, after the decisions still waiting for their tool's line."""
        self._release()
        self._line(text)

    def announce(self, tool: dict[str, Any]) -> None:
        """An approval is asked for this tool (`{name, command, url, paths}`): its `[tool]` line comes first."""
        keys = _keys_of(tool)
        if self._take(self._shown, keys):
            self._shown.append(keys)  # shown already: its decision comes after the answer
            return
        self.line(f"[tool] {tool.get('name', '?')}: {short(_target(tool))}")
        self._shown.append(keys)
        self._announced.append(keys)

    def close(self) -> None:
        """Ends the answer with a newline when its text did not."""
        self._release()
        if self._open_line:
            self._write("\n")

    def _artifact(self, artifact: Artifact, append: bool) -> None:
        if artifact.name == RESPONSE:
            self._release()
            self._write(text_of(artifact.parts))
            self._answered = True
        elif not append:
            self.line(f"[artifact] {artifact.name or artifact.artifact_id}")

    def _activity(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "tool_call":
            self._tool_call(data)
        elif kind == "permission":
            self._permission(data)
        elif kind == "tool_result":
            status = "done" if data.get("status") == "completed" else "failed"
            lines = output_lines(data.get("output"))
            self.line(f"[{status}] {data.get('tool', '?')}" + (f": {lines[0]}" if lines else ""))
            for line in lines[1:]:
                self._line(f"  {line}")

    def _tool_call(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("id", ""))
        if call_id in self._tools_seen:
            return
        self._tools_seen.add(call_id)
        keys = _call_keys(data)
        if self._take(self._announced, keys):
            return  # its line was made from its decision or its ask
        self._line(f"[tool] {data.get('tool', '?')}: {short(_what(data))}")
        self._shown.append(keys)
        for decision in [d for d in self._held if d.keys & keys]:
            self._held.remove(decision)
            self._take(self._shown, decision.keys)
            self._line(decision.line)

    def _permission(self, data: dict[str, Any]) -> None:
        target = _target(data)
        reason = f" {as_text(data.get('reason'))}" if data.get("decision") != "allow" and data.get("reason") else ""
        line = f"[{data.get('decision', '?')}] {data.get('tool', '?')}: {short(target)}{reason}"
        line += f" ({decided_by(str(data.get('rule') or '?'))})"
        keys = _keys_of({**data, "name": data.get("tool")})
        if self._take(self._shown, keys):
            self._line(line)
        else:
            self._held.append(_Decision(keys, f"[tool] {data.get('tool', '?')}: {short(target)}", line))

    def _release(self) -> None:
        """Something else is shown: the decisions still waiting come first, each after a line for its tool."""
        held, self._held = self._held, []
        for decision in held:
            self._line(decision.tool_line)
            self._announced.append(decision.keys)
            self._line(decision.line)

    @staticmethod
    def _take(waiting: list[Keys], keys: Keys) -> bool:
        """Removes the first entry that shares a key with `keys`; whether there was one."""
        for entry in waiting:
            if entry & keys:
                waiting.remove(entry)
                return True
        return False

    def _line(self, text: str) -> None:
        """One line on stderr, after ending the answer's line on a terminal (where both interleave)."""
        if self._open_line and self._out.isatty():
            self._write("\n")
        self._err.write(text + "\n")
        self._err.flush()

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._out.flush()
            self._open_line = not text.endswith("\n")


def text_of(parts: Sequence[Part]) -> str:
    return "".join(part.text for part in parts if part.WhichOneof("content") == "text")


def _what(data: dict[str, Any]) -> str:
    """What a tool call does, in one phrase: its command, its title, or the places it touches."""
    arguments = data.get("arguments") or {}
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return as_text(command or data.get("title") or ", ".join(data.get("locations") or []) or data.get("kind", ""))


def _target(data: dict[str, Any]) -> str:
    """What a permission or an approval's tool names: its command, its URL or its paths."""
    return as_text(data.get("command") or data.get("url") or ", ".join(data.get("paths") or []))


def _keys_of(tool: dict[str, Any]) -> Keys:
    named = [tool.get("command"), tool.get("url"), *(tool.get("paths") or [])]
    keys = {_key(value) for value in named if value}
    return frozenset(keys or {f"tool:{tool.get('name', '')}"})


def _call_keys(data: dict[str, Any]) -> Keys:
    arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
    assert isinstance(arguments, dict)
    named = [*(arguments.get(key) for key in _ARGUMENT_KEYS), data.get("title"), *(data.get("locations") or [])]
    return frozenset({_key(value) for value in named if value} | {f"tool:{data.get('tool', '')}"})


def _key(value: Any) -> str:
    return " ".join(as_text(value).split())

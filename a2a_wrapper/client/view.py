"""The live view of a task's stream: the answer's text on stdout as it arrives, everything else one line on stderr.

With the answer alone on stdout, `a2a-wrap send URL "..." > answer.txt` keeps just the answer. The lines on
stderr read the data parts of `working` status updates (see reporter.py): `[tool]`, `[allow]`, `[deny]`,
`[done]`, `[failed]`. With `raw`, every event is printed as one JSON line on stdout instead.
"""

import json
from collections.abc import Sequence
from typing import Any, TextIO

from a2a.helpers import get_data_parts
from a2a.types import Artifact, Part, StreamResponse, TaskState
from google.protobuf.json_format import MessageToDict

RESPONSE = "response"
_LIMIT = 100  # characters of a command, title or output shown on one line


class LiveView:
    def __init__(self, out: TextIO, err: TextIO, raw: bool = False) -> None:
        self._out = out
        self._err = err
        self._raw = raw
        self._open_line = False  # the answer's last text did not end a line
        self._answered = False  # some answer text was shown
        self._tools_seen: set[str] = set()

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
            self._write(text_of(event.message.parts))

    def line(self, text: str) -> None:
        """One line on stderr, after ending the answer's line on a terminal (where both interleave)."""
        if self._open_line and self._out.isatty():
            self._write("\n")
        self._err.write(text + "\n")
        self._err.flush()

    def close(self) -> None:
        """Ends the answer with a newline when its text did not."""
        if self._open_line:
            self._write("\n")

    def _artifact(self, artifact: Artifact, append: bool) -> None:
        if artifact.name == RESPONSE:
            self._write(text_of(artifact.parts))
            self._answered = True
        elif not append:
            self.line(f"[artifact] {artifact.name or artifact.artifact_id}")

    def _activity(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "tool_call" and data.get("id") not in self._tools_seen:
            self._tools_seen.add(data.get("id", ""))
            self.line(f"[tool] {data.get('tool', '?')}: {_short(_what(data))}")
        elif kind == "permission":
            reason = f" {data.get('reason')}" if data.get("decision") != "allow" and data.get("reason") else ""
            target = data.get("command") or data.get("url") or ", ".join(data.get("paths") or [])
            line = f"[{data.get('decision', '?')}] {data.get('tool', '?')}: {_short(target)}{reason}"
            self.line(f"{line} (rule {data.get('rule', '?')})")
        elif kind == "tool_result":
            status = "done" if data.get("status") == "completed" else "failed"
            lines = str(data.get("output") or "").strip().splitlines()
            output = _short(lines[0]) if lines else ""
            self.line(f"[{status}] {data.get('tool', '?')}" + (f": {output}" if output else ""))

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
    return str(command or data.get("title") or ", ".join(data.get("locations") or []) or data.get("kind", ""))


def _short(text: str) -> str:
    first = " ".join(str(text).split())
    return first if len(first) <= _LIMIT else first[: _LIMIT - 3] + "..."

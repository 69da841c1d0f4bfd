"""StreamEvents → A2A task updates, per the table in docs/design.md."""

import dataclasses
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePath
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskState

from a2a_wrapper.events import Done, FileDiff, Permission, Plan, Text, Thought, ToolCall, ToolResult, Usage
from a2a_wrapper.frontend.metrics import TurnClock
from a2a_wrapper.guard import GuardVerdict
from a2a_wrapper.guard.turn import TurnGuard
from a2a_wrapper.permissions.approvals import Pending
from a2a_wrapper.sandbox.control_files import Repair
from a2a_wrapper.shield.decision import Decision
from a2a_wrapper.workspaces import Change, WorkspaceError

log = logging.getLogger(__name__)

META = "a2a-wrapper"  # namespace of this project's metadata keys
DIFF_MEDIA_TYPE = "text/x-diff"
PATCH_MEDIA_TYPE = "text/x-patch"
INJECTION = "text shaped like a prompt injection"
_STATES = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "canceled": TaskState.TASK_STATE_CANCELED,
}


class TaskReporter:
    """Streams the answer as chunks of one `response` artifact and everything else as status updates. A new task
    (`opening`) goes first, as the task itself: `working` when its turn starts at once, else `submitted` as soon as
    the turn is known to wait (`accept`), its start then a `working` update."""

    def __init__(self, updater: TaskUpdater, guard: TurnGuard, clock: TurnClock, opening: Task | None = None) -> None:
        self._updater = updater
        self._opening = opening
        self._guard = guard
        self.clock = clock  # the turn's metrics
        self._response_id = f"response-{uuid.uuid4().hex[:12]}"
        self._plan_id = f"plan-{uuid.uuid4().hex[:12]}"
        self._answer_started = False
        self._text: list[str] = []
        self._thought: list[str] = []
        self._usage = Usage()
        self.metadata: dict[str, Any] = {}
        self.after_turn: Callable[[], Awaitable[Repair | None]] | None = None  # the workspace checked at the end
        # per-task workspace: the context's change so far, reported at the turn's end (workspaces/)
        self.workspace_change: Callable[[], Awaitable[Change | None]] | None = None
        self.workspace_folder: Path | None = None  # the copy: a tool's path in it is named as the change names it
        self._patch_id = f"patch-{uuid.uuid4().hex[:12]}"

    @property
    def unheard(self) -> bool:
        """Whether a2a-sdk has closed the task's event queue: nothing sent now reaches a caller or the store."""
        is_closed = getattr(self._updater.event_queue, "is_closed", None)  # both of the SDK's queues have it
        return bool(is_closed is not None and is_closed())

    async def accept(self) -> None:
        """The turn waits (for the context's running turn, or for its session): the caller has the task now."""
        await self._open()

    async def working(self) -> None:
        if await self._open(TaskState.TASK_STATE_WORKING):
            return
        await self._updater.update_status(
            TaskState.TASK_STATE_WORKING, metadata={META: self.metadata} if self.metadata else None
        )

    async def reject(self, sentence: str) -> None:
        await self._open()
        await self._updater.reject(self._updater.new_agent_message([new_text_part(sentence)]))

    async def _open(self, state: TaskState = TaskState.TASK_STATE_SUBMITTED) -> bool:
        """Sends the new task, in `state` with the turn's metadata, unless it went already; whether it went now."""
        task, self._opening = self._opening, None
        if task is None:
            return False
        task.status.state = state
        if state != TaskState.TASK_STATE_SUBMITTED:
            task.status.timestamp.GetCurrentTime()  # as TaskUpdater stamps the statuses after it
        if self.metadata:
            task.metadata.update({META: self.metadata})
        await self._updater.event_queue.enqueue_event(task)
        return True

    def text(self, event: Text) -> None:
        """Holds the delta until its batch ends (`batch_end`), so the deltas of one batch go as one chunk."""
        self._text.append(self._guard.text(event.delta))

    async def batch_end(self) -> None:
        """The text its batch held goes now, whichever event ended the batch (a usage count or a thought after the
        text sends nothing of its own)."""
        await self._flush_text()

    async def _flush_text(self, last: bool = False) -> None:
        if self._guard.holds_answer and not last:
            return  # the whole answer is checked before any of it leaves
        text = "".join(self._text)
        self._text = []
        if not text and not (last and self._answer_started):
            return
        await self._flush_thought()
        await self._updater.add_artifact(
            [new_text_part(text)],
            artifact_id=self._response_id,
            name="response",
            append=self._answer_started,
            last_chunk=last,
        )
        self.clock.first_text()
        self._answer_started = True

    def thought(self, event: Thought) -> None:
        self._thought.append(event.delta)

    def usage(self, event: Usage) -> None:
        self._usage = self._usage + event

    async def tool_call(self, event: ToolCall) -> None:
        await self._data_status({"type": "tool_call", **_plain(event)})

    async def tool_result(self, event: ToolResult) -> None:
        verdict = self._guard.tool_output(event.id, event.output)
        data = {"type": "tool_result", **_plain(event)}
        if verdict.findings:
            data["guard"] = verdict.metadata()
        if verdict.blocked:
            data["output"] = f"The output was withheld: it held {INJECTION} ({_phrases(verdict)})."
        await self._data_status(data)
        for diff in event.diffs:
            await self._diff_artifact(diff)

    async def _diff_artifact(self, diff: FileDiff, updater: TaskUpdater | None = None) -> None:
        """One artifact per changed path, replaced as the file changes again (the turn's end replaces a tool's diff
        of a workspace's file with its diff against the workspace's start: the same path names both)."""
        if self.workspace_folder is not None and PurePath(diff.path).is_relative_to(self.workspace_folder):
            diff = FileDiff(path=str(PurePath(diff.path).relative_to(self.workspace_folder)), diff=diff.diff)
        await (updater or self._updater).add_artifact(
            [new_text_part(self._guard.sentence(diff.diff), media_type=DIFF_MEDIA_TYPE)],
            artifact_id=f"diff-{hashlib.sha256(diff.path.encode()).hexdigest()[:16]}",
            name=f"diff {diff.path}",
            metadata={META: {"path": diff.path}},
        )

    async def plan(self, event: Plan) -> None:
        """One `plan` artifact, replaced by each new plan."""
        steps = [dataclasses.asdict(step) for step in event.steps]
        await self._updater.add_artifact(
            [new_data_part(self._guard.value({"type": "plan", "steps": steps}))],
            artifact_id=self._plan_id,
            name="plan",
        )

    async def permission(self, event: Permission, decision: Decision) -> None:
        await self._data_status(
            {
                "type": "permission",
                "id": event.id,
                "tool": event.tool,
                "kind": event.kind,
                "paths": list(event.paths),
                "command": event.command,
                "url": event.url,
                "decision": decision.outcome,
                "reason": decision.reason,
                "rule": decision.rule,
            }
        )

    def rebind(self, updater: TaskUpdater) -> None:
        """A paused turn resumed by a later request: its events go to that request's queue."""
        self._updater = updater
        self.clock.resume()

    async def ask(self, pending: Pending, note: str | None = None, caller_answers: bool = True) -> None:
        """Ends this request in `input-required`, describing what the person is asked (after `note`, if any)."""
        await self._flush_text()
        await self._flush_thought()
        asked = pending.sentence(caller_answers)
        sentence = self._guard.sentence(f"{note} {asked}" if note else asked)
        data = self._guard.value(pending.data())
        message = self._updater.new_agent_message([new_text_part(sentence), new_data_part(data)])
        await self._updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, message=message, metadata={META: data})
        self.clock.pause()

    async def workspace(self, updater: TaskUpdater | None = None) -> None:
        """The context's change against its workspace's start, before the task's last status (on `updater`, a
        cancel's, when given): a diff per changed file and one git patch of the whole change."""
        if self.workspace_change is None:
            return
        updater = updater or self._updater
        try:
            change = await self.workspace_change()
        except WorkspaceError as exc:
            log.warning("the workspace's change could not be read: %s", exc)
            self.metadata["workspace"] = {"error": str(exc)}
            return
        if change is None or not change.patch:
            return  # nothing changed since the copy was made: no artifact to read
        for file in change.files:
            await self._diff_artifact(FileDiff(path=file.path, diff=file.diff), updater)
        about: dict[str, Any] = {"branch": change.branch} if change.branch else {}
        if change.left_out:
            about["leftOut"] = list(change.left_out)  # nested repositories: not read, not in the patch
        await updater.add_artifact(
            [new_text_part(self._guard.sentence(change.patch), media_type=PATCH_MEDIA_TYPE)],
            artifact_id=self._patch_id,
            name="patch",
            metadata={META: {"files": [file.path for file in change.files], **about}},
        )
        self.metadata["workspace"] = {"changed": len(change.files), **about}

    async def finish(self, done: Done) -> None:
        await self._open()  # the task first, should its turn end before it started
        await self.workspace()
        await self._flush_thought()
        tail, verdict = self._guard.finish()
        self._text.append(tail)
        if verdict.blocked:
            self._text = []
            withheld = f"The answer was withheld: this turn met {INJECTION} ({_phrases(verdict)})."
            done = Done(outcome="failed", sentence=withheld)
        await self._flush_text(last=True)  # the held text, or an empty chunk that closes the answer
        metadata = {META: {**self.metadata, "usage": _usage(self._usage)}}
        if verdict.findings:
            metadata[META]["guard"] = verdict.metadata()
        said = [done.sentence]
        repaired = await self.after_turn() if self.after_turn is not None else None
        if repaired:
            metadata[META]["controlFiles"] = repaired.data()
            said.append(repaired.sentence())
        sentence = self._guard.sentence(" ".join(part for part in said if part))
        message = self._updater.new_agent_message([new_text_part(sentence)]) if sentence else None
        await self._updater.update_status(_STATES[done.outcome], message=message, metadata=metadata)
        self.clock.end(done.outcome)

    async def _data_status(self, data: dict[str, Any]) -> None:
        await self._flush_text()
        await self._flush_thought()
        message = self._updater.new_agent_message([new_data_part(self._guard.value(data))])
        await self._updater.update_status(TaskState.TASK_STATE_WORKING, message=message)

    async def _flush_thought(self) -> None:
        if self._thought:
            thought, self._thought = self._guard.sentence("".join(self._thought)), []
            await self._updater.update_status(TaskState.TASK_STATE_WORKING, metadata={META: {"thought": thought}})


def _phrases(verdict: GuardVerdict) -> str:
    return ", ".join(sorted({finding.phrase for finding in verdict.findings}))


def _plain(event: ToolCall | ToolResult) -> dict[str, Any]:
    data = dataclasses.asdict(event)
    data.pop("diffs", None)  # sent as diff artifacts; the status names the paths
    if isinstance(event, ToolResult) and event.diffs:
        data["changed"] = [diff.path for diff in event.diffs]
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items() if v is not None}


def _usage(usage: Usage) -> dict[str, int | float]:
    """The wire's camelCase keys; counts stay integers (compat/wire_printer.py prints them so), cost a number."""
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "reasoningTokens": usage.reasoning_tokens,
        "cost": usage.cost,
    }

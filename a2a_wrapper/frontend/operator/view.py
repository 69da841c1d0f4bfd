"""What the operator endpoint shows, in the wire's camelCase: the agent's live turns and what they wait for
(the state), and audit entries. Everything the state holds is redacted by the guard before it leaves."""

from datetime import UTC, datetime
from typing import Any

from a2a_wrapper.events import Question
from a2a_wrapper.frontend.turns import LiveTurn, Turns
from a2a_wrapper.guard import redact_value
from a2a_wrapper.permissions.approvals import Pending
from a2a_wrapper.state.audit import AuditEntry


def state(agent: str, turns: Turns) -> dict[str, Any]:
    """The live turns (working or waiting for a person) and the approvals and questions they wait on."""
    live = turns.every()
    body = {
        "agent": agent,
        "approvers": list(turns.approvers),
        "version": turns.feed.version,
        "tasks": [_task(turn) for turn in live],
        "approvals": [_waiting(turn, turn.pending) for turn in live if turn.pending is not None],
    }
    return dict(redact_value(body))


def audit_entry(entry: AuditEntry) -> dict[str, Any]:
    """One decision, as the audit keeps it (already redacted when it was written)."""
    return {
        "time": iso(entry.time),
        "agent": entry.agent,
        "contextId": entry.context_id,
        "taskId": entry.task_id,
        "caller": entry.caller,
        "tool": entry.tool,
        "class": entry.cls,
        "target": entry.target,
        "decision": entry.decision,
        "rule": entry.rule,
        "decidedBy": entry.decided_by,
        "waitMs": entry.wait_ms,
    }


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def _task(turn: LiveTurn) -> dict[str, Any]:
    return {
        **_of(turn),
        "state": "working" if turn.pending is None else "input-required",
        "activity": turn.activity,
        "startedAt": iso(turn.started_at),
        "updatedAt": iso(turn.updated_at),
    }


def _waiting(turn: LiveTurn, pending: Pending) -> dict[str, Any]:
    """An approval as the caller's input-required data part describes it, with its task and times."""
    asked = {"id": pending.id, **_of(turn), "askedAt": iso(pending.asked_at), "expiresAt": iso(pending.expires_at)}
    data = pending.data()
    if isinstance(pending.request, Question):
        options = [{"id": option, "label": option} for option in data["question"]["options"]]
        return {**asked, "type": "question", "text": data["question"]["text"], "options": options}
    approval = data["approval"]
    described = {key: approval[key] for key in ("tool", "class", "rule", "reason", "options")}
    return {**asked, "type": "approval", **described}


def _of(turn: LiveTurn) -> dict[str, str]:
    return {"taskId": turn.task_id, "contextId": turn.scope.context_id, "caller": turn.scope.caller}

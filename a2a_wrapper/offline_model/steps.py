"""Scripted steps queued by tests through `POST /control/script`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from a2a_wrapper.offline_model.directives import ToolCall
from a2a_wrapper.offline_model.plan import ReplyPlan, error_message, split_even, split_words


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Step(BaseModel):
    """One scripted model step; `delay` seconds are spread over its deltas (or waited before an error)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    reasoning: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    status: int | None = Field(default=None, ge=400, le=599)
    error: str | None = None
    delay: float = Field(default=0.0, ge=0, le=3600)
    chunks: int | None = Field(default=None, ge=1)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[Step]


def plan_step(step: Step) -> ReplyPlan:
    """Turn a scripted step into the reply plan the model streams."""
    if step.status is not None or step.error is not None:
        status = step.status or 500
        message = step.error or error_message(status)
        return ReplyPlan(duration=step.delay, error_status=status, error_message=message)
    text = step.text or ""
    return ReplyPlan(
        content=split_even(text, step.chunks) if step.chunks else split_words(text),
        reasoning=split_words(step.reasoning or ""),
        tool_calls=tuple(ToolCall(c.name, json.dumps(c.arguments)) for c in step.tool_calls),
        duration=step.delay,
    )

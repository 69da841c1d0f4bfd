"""The Backend contract: what the front end may ask of any coding agent."""

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from a2a_wrapper.events import StreamEvent


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    created: bool  # False when an existing backend session was resumed


@dataclass(frozen=True, slots=True)
class PromptFile:
    media_type: str
    url: str  # http(s) or data: URL
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    files: tuple[PromptFile, ...] = ()


BURST_SLICE = 0.002  # seconds a consumer may hold events back to send them together


class Batching:
    """Whether a turn tells its consumer more is ready (so it may batch): only while events wait, and never for
    longer than BURST_SLICE since the last hand-over; the first event goes at once. A steady stream faster than
    the consumer would otherwise be held until it ends."""

    def __init__(self) -> None:
        self._handed_over = float("-inf")

    def more_ready(self, waiting: bool) -> bool:
        now = time.monotonic()
        if waiting and now - self._handed_over < BURST_SLICE:
            return True
        self._handed_over = now
        return False


class Turn(Protocol):
    """One backend turn: iterate it for StreamEvents; it ends with a `Done` event."""

    more_ready: bool  # another event is already waiting: a consumer may batch instead of sending now

    def __aiter__(self) -> AsyncIterator[StreamEvent]: ...

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None: ...

    async def answer(self, question_id: str, text: str | None) -> None:
        """Answer a question; `None` rejects it."""

    async def abort(self) -> None: ...


class Backend(Protocol):
    kind: str
    restarts: int  # times the backend process was started again after it died

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def health(self) -> dict[str, Any]:
        """`{"healthy": bool, ...}`; never raises."""

    async def open_session(self, context_key: str, resume: str | None = None) -> Session: ...

    async def close_session(self, session_id: str) -> None: ...

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Rejects permission requests of these sessions left waiting by an earlier run (fail closed)."""

    def turn(self, session: Session, prompt: Prompt) -> Turn: ...

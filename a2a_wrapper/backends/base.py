"""The Backend contract: what the front end may ask of any coding agent."""

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


BURST_SLICE = 0.002  # seconds a turn may collect ready events into one batch before it hands them over
Batch = tuple[StreamEvent, ...]  # events that were ready together: a consumer may send them as one


class Turn(Protocol):
    """One backend turn: iterate it for batches of StreamEvents; the last batch ends with a `Done` event."""

    def __aiter__(self) -> AsyncIterator[Batch]: ...

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None: ...

    async def answer(self, question_id: str, text: str | None) -> None:
        """Answer a question; `None` rejects it."""

    async def abort(self) -> None: ...


class Backend(Protocol):
    kind: str

    @property
    def restarts(self) -> int:
        """Times the backend process was started again after it died."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def health(self) -> dict[str, Any]:
        """`{"healthy": bool, ...}`; never raises."""

    async def open_session(self, context_key: str, resume: str | None = None) -> Session: ...

    async def close_session(self, session_id: str) -> None: ...

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Rejects permission requests of these sessions left waiting by an earlier run (fail closed)."""

    def turn(self, session: Session, prompt: Prompt) -> Turn: ...


async def events_of(turn: Turn) -> AsyncIterator[tuple[StreamEvent, bool]]:
    """Each event of the turn's batches, with whether more of its batch follow (so a consumer may hold it back
    and send them together). A consumer that stops at one event (to wait for a person) resumes at the next."""
    async for batch in turn:
        for index, event in enumerate(batch):
            yield event, index < len(batch) - 1

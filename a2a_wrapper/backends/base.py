"""The Backend contract: what the front end may ask of any coding agent."""

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, Required, TypedDict

from a2a_wrapper.events import StreamEvent


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    created: bool  # False when an existing backend session was resumed
    directory: Path | None = None  # the session's own workspace (workspaces/); None: the backend's workdir


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
# Seconds a reader of a backend's stream may keep the loop in a burst: an event sent on goes through a2a-sdk's
# queues, dispatchers and SSE writer, ~6 tasks that each wait for the loop; at BURST_SLICE per wait the first text
# of a 300-delta answer reached the caller ~7 ms after it was read, at this ~2 ms.
READ_SLICE = 0.0005
Batch = tuple[StreamEvent, ...]  # events that were ready together: a consumer may send them as one


class Turn(Protocol):
    """One backend turn: iterate it for batches of StreamEvents; the last batch ends with a `Done` event."""

    def __aiter__(self) -> AsyncIterator[Batch]: ...

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None: ...

    async def answer(self, question_id: str, text: str | None) -> None:
        """Answer a question; `None` rejects it."""

    async def abort(self) -> None: ...


class Identity(TypedDict, total=False):
    """Which backend process a health answer is about."""

    kind: Required[str]
    restarts: Required[int]
    pid: int | str | None  # the backend process (a container's short id); none when attached to one
    agent: str  # an ACP agent's name and version, as it said in `initialize`
    model: str  # the model the backend says it runs, where it says (an ACP agent's `model` option)
    tenant: str  # which caller's backend, as the short id of its folder (backends/tenants/)


class Health(Identity, total=False):
    """A backend's health as /health shows it (JSON as it is): whether it can run a turn now, and if not, why."""

    healthy: Required[bool]
    version: str | None  # the backend's own version, as its health call answers
    error: str  # why it is not healthy
    tenants: "Tenants"  # one backend per caller (backends/tenants/): how many run, and each one's health


class Tenants(TypedDict):
    running: int  # callers' backends running now
    starting: int  # being started (or stopped to make room) now; their health is not waited for
    limit: int  # tenants.max_running
    idle: float  # tenants.idle_stop: seconds before an idle one is stopped
    backends: list[Health]  # each running one's, its `tenant` an id, never the caller's name (/health is open)


def unhealthy(status: Identity, error: str) -> Health:
    return {**status, "healthy": False, "error": error}


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an adapter can do that not every one can, declared once by each."""

    questions: bool  # the agent can ask the person a question (a `Question` event)
    deny_reason: bool  # the model reads the shield's sentence when a call is denied
    resume: bool  # a context's session is found again after the wrapper restarts (ACP: if the agent can load one)


class Backend(Protocol):
    kind: str
    capabilities: Capabilities

    @property
    def restarts(self) -> int:
        """Times the backend process was started again after it died."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def health(self) -> Health:
        """What the wrapper knows of its backend at once (its process runs, it is not being restarted), never a
        call to it: a busy backend answers late and is not down, and /health must stay fast under load. Never
        raises."""

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        """The context's session, resumed or new, working in `directory` (its own workspace) when given."""

    async def close_session(self, session_id: str) -> None: ...

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Rejects permission requests of these sessions left waiting by an earlier run (fail closed)."""

    def turn(self, session: Session, prompt: Prompt) -> Turn: ...


async def events_of(turn: Turn) -> AsyncGenerator[tuple[StreamEvent, bool]]:
    """Each event of the turn's batches, with whether more of its batch follow (so a consumer may hold it back
    and send them together). A consumer that stops at one event (to wait for a person) resumes at the next.
    Closing it closes the turn's own iterator: the turn's clean-up runs then, not when the collector finds it."""
    batches = aiter(turn)
    try:
        async for batch in batches:
            for index, event in enumerate(batch):
                yield event, index < len(batch) - 1
    finally:
        close = getattr(batches, "aclose", None)
        if close is not None:
            await close()

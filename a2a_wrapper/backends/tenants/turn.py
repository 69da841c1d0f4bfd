"""A turn in a caller's own backend: the backend is found (started again if it was stopped) when the turn starts,
and kept from an idle stop until the turn's events are closed."""

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol

from a2a_wrapper.backends.base import Backend, Batch, Prompt, Session, Turn
from a2a_wrapper.errors import SessionGone
from a2a_wrapper.events import Done

ABORTED_EARLY = "The turn was aborted before it started."


class Tenants(Protocol):
    def using(self, tenant: str) -> AbstractAsyncContextManager[Backend]: ...


class TenantTurn:
    def __init__(self, tenants: Tenants, tenant: str | None, session: Session, prompt: Prompt) -> None:
        """`session` is the backend's own; `tenant` None: a session id no backend of the pool made."""
        self._tenants = tenants
        self._tenant = tenant
        self._session = session
        self._prompt = prompt
        self._inner: Turn | None = None
        self._aborted = False

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[Batch]:
        if self._tenant is None:  # raised before anything is sent: the front end opens a new session, once
            raise SessionGone(f"session {self._session.id} was made before each caller had a backend of its own")
        async with self._tenants.using(self._tenant) as backend:
            if self._aborted:
                yield (Done(outcome="canceled", sentence=ABORTED_EARLY),)
                return
            self._inner = backend.turn(self._session, self._prompt)
            batches = aiter(self._inner)
            try:
                async for batch in batches:
                    yield batch
            finally:
                close = getattr(batches, "aclose", None)
                if close is not None:
                    await close()

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        await self._started().reply(permission_id, decision, reason)

    async def answer(self, question_id: str, text: str | None) -> None:
        await self._started().answer(question_id, text)

    async def abort(self) -> None:
        if self._inner is None:
            self._aborted = True
            return
        await self._inner.abort()

    def _started(self) -> Turn:
        assert self._inner is not None, "a request reaches a turn only through its events"
        return self._inner

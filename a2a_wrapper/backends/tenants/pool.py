"""The tenant pool: the Backend contract over one backend per caller, each started on demand, stopped when idle.

A caller's backend (its sandbox, its folder, its process and password) is launched on the caller's first need of
it, from `<state_dir>/tenants/<id>` (folders.py), so a stopped one starts again with its sessions. Every
operation goes to the backend of the caller it is about: `open_session` by its context key, the others by the
tenant its qualified session id names. At most `tenants.max_running` run at once; a new caller past that stops
the longest-idle one, and is refused (`CallerLimit`) when none is idle. Idle means: no pool call or turn in it,
and nothing of its caller's held by the front end (a running turn, one waiting for a person, a message queued).

A tenant's state: starting (`ready` not done), running, stopping (`stopping` set, the folder still in use: a new
start for the same caller waits for the stop to end). Only the running count towards /health's answers.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from a2a_wrapper.backends import capabilities_of
from a2a_wrapper.backends.base import Backend, Capabilities, Health, Prompt, Session, Tenants
from a2a_wrapper.backends.tenants.folders import qualified, split, tenant_id, tenant_settings
from a2a_wrapper.backends.tenants.turn import TenantTurn
from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import BackendError, BackendUnavailable, CallerLimit, WrapperError
from a2a_wrapper.state.sessions import caller_of_key

log = logging.getLogger(__name__)

# A caller's backend, started on entry (its sandbox first) and stopped on exit: given that caller's settings.
Launcher = Callable[[AgentSettings], AbstractAsyncContextManager[Backend]]


@dataclass(eq=False)
class _Tenant:
    id: str
    ready: "asyncio.Task[Backend]" = field(init=False)  # the start; every user awaits it
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    uses: int = 0  # pool calls and turns running in it now
    idle_since: float = 0.0
    stopping: "asyncio.Task[None] | None" = None

    @property
    def backend(self) -> Backend | None:
        """The started backend, while it runs."""
        if self.stopping is not None or not self.ready.done() or self.ready.cancelled():
            return None
        return None if self.ready.exception() is not None else self.ready.result()


class TenantPool:
    def __init__(
        self,
        settings: AgentSettings,
        launch: Launcher,
        busy: Callable[[], Iterable[str]],
        warm: Collection[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`busy` names the callers the front end holds something of (a turn, an approval, a queued message);
        `warm` the callers whose backends start with the pool (the anonymous caller, when auth is off)."""
        self.kind: str = settings.backend.kind
        self.capabilities: Capabilities = capabilities_of(self.kind)
        self._settings = settings
        self._name = settings.card.name
        self._limit = settings.tenants.max_running
        self._idle_stop = settings.tenants.idle_stop
        self._launch = launch
        self._busy = busy
        self._warm = warm
        self._clock = clock
        self._tenants: dict[str, _Tenant] = {}
        self._stops: set[asyncio.Task[None]] = set()
        self._past_restarts = 0  # of backends stopped since
        self._reaper: asyncio.Task[None] | None = None

    # lifecycle

    async def start(self) -> None:
        for caller in self._warm:  # a failure stops the agent's start with its own error, as a single backend's did
            try:
                await self.admit(caller)
            except BackendUnavailable as exc:
                if isinstance(exc.__cause__, WrapperError):
                    raise exc.__cause__ from None
                raise
        self._reaper = asyncio.create_task(self._reap(), name=f"{self._name}-tenant-reaper")

    async def stop(self) -> None:
        if self._reaper is not None:
            await cancel_and_wait(self._reaper)
        for tenant in list(self._tenants.values()):
            if tenant.stopping is None:
                self._begin_stop(tenant, "the agent is stopping")
        await asyncio.gather(*self._stops)

    @property
    def restarts(self) -> int:
        running = (tenant.backend for tenant in self._tenants.values())
        return self._past_restarts + sum(backend.restarts for backend in running if backend is not None)

    def count(self) -> int:
        """Callers' backends running now."""
        return sum(tenant.backend is not None for tenant in self._tenants.values())

    def running(self, caller: str) -> bool:
        """Whether the caller's backend runs now (a turn of theirs starts without waiting for it)."""
        return self.backend_of(caller) is not None

    def backend_of(self, caller: str) -> Backend | None:
        """The caller's backend while it runs (for a look behind the contract: diagnostics, tests)."""
        tenant = self._tenants.get(tenant_id(caller))
        return tenant.backend if tenant is not None else None

    async def admit(self, caller: str) -> None:
        """The caller's backend running, started if need be; raises `CallerLimit` past `tenants.max_running`."""
        async with self.using(tenant_id(caller)):
            pass

    # the Backend contract, each call in its caller's backend

    async def health(self) -> Health:
        """The running backends' health, asked at once; one still starting is counted, never waited for."""
        running = [tenant for tenant in self._tenants.values() if tenant.backend is not None]
        answers = await asyncio.gather(*(self._health_of(tenant) for tenant in running))
        tenants: Tenants = {
            "running": len(running),
            "starting": len(self._tenants) - len(running),
            "limit": self._limit,
            "idle": self._idle_stop,
            "backends": list(answers),
        }
        status: Health = {"kind": self.kind, "restarts": self.restarts, "healthy": True, "tenants": tenants}
        if len(answers) == 1:  # one caller's backend (always so without auth): its process, as a single one showed
            for key in ("pid", "version", "agent", "model"):
                if key in answers[0]:
                    status[key] = answers[0][key]  # type: ignore[literal-required]
        failing = [answer for answer in answers if not answer["healthy"]]
        if failing:
            status["healthy"] = False
            status["error"] = "; ".join(f"the backend of tenant {a['tenant']}: {a.get('error')}" for a in failing)
        return status

    async def open_session(self, context_key: str, resume: str | None = None, directory: Path | None = None) -> Session:
        tenant = tenant_id(caller_of_key(context_key))
        owner, own_id = split(resume) if resume else (None, "")
        async with self.using(tenant) as backend:  # an id another backend made is never handed to this one
            own = own_id if owner == tenant else None
            if directory is None:
                session = await backend.open_session(context_key, own)
            else:
                session = await backend.open_session(context_key, own, directory)
        return Session(qualified(tenant, session.id), session.created, directory)

    async def close_session(self, session_id: str) -> None:
        tenant, own_id = split(session_id)
        if tenant is None:
            log.info("[%s] session %s was made by an older version; nothing of it runs here", self._name, session_id)
            return
        async with self.using(tenant) as backend:
            await backend.close_session(own_id)

    async def reject_pending(self, session_ids: set[str], reason: str) -> int:
        """Only a running backend can hold a request: one the pool starts later is a new process that has none."""
        rejected = 0
        for tenant in [tenant for tenant in self._tenants.values() if tenant.backend is not None]:
            own = {own_id for owner, own_id in map(split, session_ids) if owner == tenant.id}
            if own:
                async with self.using(tenant.id) as backend:
                    rejected += await backend.reject_pending(own, reason)
        return rejected

    def turn(self, session: Session, prompt: Prompt) -> TenantTurn:
        tenant, own_id = split(session.id)
        return TenantTurn(self, tenant, Session(own_id, session.created, session.directory), prompt)

    # the tenants

    @asynccontextmanager
    async def using(self, tenant: str) -> AsyncIterator[Backend]:
        """The tenant's backend, started if need be, kept from an idle stop until the exit."""
        entered = await self._enter(tenant)
        try:
            yield await _started(entered)
        finally:
            entered.uses -= 1
            entered.idle_since = self._clock()

    async def _enter(self, tenant_id_: str) -> _Tenant:
        while True:
            tenant = self._tenants.get(tenant_id_)
            if tenant is None:
                break
            if tenant.stopping is None:
                tenant.uses += 1
                return tenant
            await asyncio.shield(tenant.stopping)  # its folder is free once it has stopped
        room = self._make_room()  # no await from the check above to the entry below: no other entry in between
        tenant = _Tenant(tenant_id_)
        tenant.ready = asyncio.create_task(self._start(tenant, room), name=f"tenant-{tenant_id_}")
        tenant.uses += 1
        self._tenants[tenant_id_] = tenant
        return tenant

    def _make_room(self) -> "asyncio.Task[None] | None":
        """The stop of the longest-idle backend when a new one would pass the limit; `CallerLimit` if none is idle."""
        live = [tenant for tenant in self._tenants.values() if tenant.stopping is None]
        if len(live) < self._limit:
            return None
        idle = sorted((tenant for tenant in live if self._idle(tenant, self._busy_tenants())), key=_idle_since)
        if not idle:
            raise CallerLimit(
                f"The agent is at its caller limit: it runs a backend for at most {self._limit} callers at once "
                "(tenants.max_running), and each of them has a turn running or waiting. Nothing was run; send the "
                "message again once one of them is done."
            )
        return self._begin_stop(idle[0], "to make room for another caller")

    async def _start(self, tenant: _Tenant, room: "asyncio.Task[None] | None") -> Backend:
        if room is not None:
            await asyncio.shield(room)
        settings = tenant_settings(self._settings, tenant.id)
        try:
            backend = await tenant.stack.enter_async_context(self._launch(settings))
        except BaseException as exc:
            if tenant.stopping is None:  # else its stop lets the folder go, once whatever started has stopped
                self._forget(tenant)
            if isinstance(exc, WrapperError) and not isinstance(exc, BackendError):
                raise BackendUnavailable(f"The backend for this caller could not be started: {exc}") from exc
            raise
        tenant.idle_since = self._clock()
        log.info("[%s] started the backend of tenant %s in %s", self._name, tenant.id, settings.state_dir)
        return backend

    def _begin_stop(self, tenant: _Tenant, why: str) -> "asyncio.Task[None]":
        stopping = asyncio.create_task(self._stop(tenant, why), name=f"tenant-{tenant.id}-stop")
        tenant.stopping = stopping
        self._stops.add(stopping)
        stopping.add_done_callback(self._stops.discard)
        return stopping

    async def _stop(self, tenant: _Tenant, why: str) -> None:
        tenant.ready.cancel()  # a start still under way ends here (and cleans up after itself)
        await asyncio.wait([tenant.ready])
        started = not tenant.ready.cancelled() and tenant.ready.exception() is None
        try:
            if started:
                self._past_restarts += tenant.ready.result().restarts
            await tenant.stack.aclose()  # whatever of it started
            if started:
                log.info("[%s] stopped the backend of tenant %s: %s", self._name, tenant.id, why)
        except Exception:  # a boundary: one backend's failed stop must not keep the others running
            log.exception("[%s] the backend of tenant %s did not stop cleanly", self._name, tenant.id)
        finally:
            self._forget(tenant)

    def _forget(self, tenant: _Tenant) -> None:
        if self._tenants.get(tenant.id) is tenant:
            del self._tenants[tenant.id]

    def _busy_tenants(self) -> set[str]:
        return {tenant_id(caller) for caller in self._busy()}

    def _idle(self, tenant: _Tenant, busy: set[str]) -> bool:
        return tenant.backend is not None and tenant.uses == 0 and tenant.id not in busy

    async def _reap(self) -> None:
        """Stops the backends idle for `tenants.idle_stop`; idleness counts from the last use the pool saw."""
        while True:
            await asyncio.sleep(min(max(self._idle_stop / 4, 0.25), 30.0))
            now, busy = self._clock(), self._busy_tenants()
            for tenant in list(self._tenants.values()):
                if tenant.stopping is not None:
                    continue
                if tenant.id in busy:
                    tenant.idle_since = now  # held by the front end: idle only from when it lets go
                elif self._idle(tenant, busy) and now - tenant.idle_since >= self._idle_stop:
                    self._begin_stop(tenant, f"idle for {self._idle_stop:g} s")

    async def _health_of(self, tenant: _Tenant) -> Health:
        backend = tenant.backend
        assert backend is not None
        return {**await backend.health(), "tenant": tenant.id}


async def _started(tenant: _Tenant) -> Backend:
    """The tenant's backend once started (the start goes on if this waiter is cancelled)."""
    try:
        return await asyncio.shield(tenant.ready)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not tenant.ready.cancelled() or (current is not None and current.cancelling()):
            raise
        raise BackendUnavailable("The caller's backend was stopped while it was starting.") from None


def _idle_since(tenant: _Tenant) -> float:
    return tenant.idle_since

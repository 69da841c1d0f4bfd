"""One agent: backend, state, executor and front end, started and stopped as pairs."""

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from a2a.server.cluster import VersionedTaskStore
from a2a.server.tasks import DatabaseTaskStore, TaskStore
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp

from a2a_wrapper.backends import Backend, create_backend
from a2a_wrapper.backends.copilot.launch import TOKEN_ENV
from a2a_wrapper.backends.tenants import TenantPool
from a2a_wrapper.backends.tenants.folders import tenant_settings
from a2a_wrapper.background import cancel_and_wait
from a2a_wrapper.config.runtimes import ProcessRuntime, SandboxRuntime, SidecarRuntime
from a2a_wrapper.config.secrets import secret_values
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import ConfigError, StateUnavailable
from a2a_wrapper.frontend.app import build_app, request_handler
from a2a_wrapper.frontend.card import CARD_PATH, build_card
from a2a_wrapper.frontend.edge.quiet_server import QuietServer
from a2a_wrapper.frontend.edge.server_config import uvicorn_config
from a2a_wrapper.frontend.executor import TurnExecutor
from a2a_wrapper.frontend.grpc_binding import grpc_port, with_grpc_port
from a2a_wrapper.frontend.handler.message_limits import MessageLimits
from a2a_wrapper.frontend.metrics import AgentMetrics
from a2a_wrapper.frontend.operator.routes import operator_routes
from a2a_wrapper.frontend.turns import ContextLocks, Turns
from a2a_wrapper.guard.known import remember_secrets
from a2a_wrapper.permissions.gate import PermissionGate
from a2a_wrapper.permissions.policy import Policy, build_policy
from a2a_wrapper.ports import bind_port
from a2a_wrapper.push import push_service
from a2a_wrapper.sandbox import Sandbox, describe_runtime
from a2a_wrapper.sandbox.beside import SidecarBoundary
from a2a_wrapper.sandbox.control_watch import ControlWatch
from a2a_wrapper.sandbox.relayed_provider import backend_settings
from a2a_wrapper.shield.decision import PermissionPolicy
from a2a_wrapper.state.audit import AuditLog
from a2a_wrapper.state.context_rules import ContextRules
from a2a_wrapper.state.engines import StateDatabase, open_state, replica_name, state_database
from a2a_wrapper.state.event_journal import EventJournal, LocalJournal, SharedJournal
from a2a_wrapper.state.leases import ContextLeases, Replica, leased_contexts, release_all
from a2a_wrapper.state.lock import SERVING, FolderBusy, FolderLock
from a2a_wrapper.state.message_ledger import MessageLedger
from a2a_wrapper.state.migrations import migrate
from a2a_wrapper.state.orphans import OrphanSweep
from a2a_wrapper.state.outage import StateOutage
from a2a_wrapper.state.readiness import StateCheck
from a2a_wrapper.state.recovery import INTERRUPTED, fail_interrupted_tasks, fail_orphaned_tasks, lost_with
from a2a_wrapper.state.sdk_tables import stored_tasks, task_ids, tasks_of_context
from a2a_wrapper.state.sessions import ContextKey, SessionMap
from a2a_wrapper.state.shared_tasks import SharedTaskStore, shared_events
from a2a_wrapper.state.task_listing import listing_off_the_loop
from a2a_wrapper.state.task_store import WriteBehindTaskStore
from a2a_wrapper.state.unavailable import reaching
from a2a_wrapper.state.write_behind import Writer
from a2a_wrapper.workspaces import WorkspaceError, Workspaces, served_settings

log = logging.getLogger(__name__)


@dataclass
class RunningAgent:
    settings: AgentSettings
    app: ASGIApp
    backend: Backend
    sessions: SessionMap
    end_turns: Callable[[], Awaitable[None]]  # running turns end with their sentence (their streams close)

    @property
    def card_url(self) -> str:
        return self.settings.advertised_url + CARD_PATH


@asynccontextmanager
async def running_agent(settings: AgentSettings) -> AsyncIterator[RunningAgent]:
    """The backend started, state opened and the app built; all torn down in reverse on exit."""
    assert settings.state_dir is not None
    policy = build_policy(settings)  # bad rules stop the start before anything is spawned
    unanswerable = settings.console_unkeyed()
    if unanswerable is not None:
        raise ConfigError(f"agent {settings.card.name!r}: {unanswerable}")
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings = served_settings(settings)  # per-task workspaces: the backend works in their folder, not the source
    workspaces = _workspaces(settings)
    # the guard catches this agent's own secrets in any common encoding, in answers, logs and the audit
    remember_secrets([*secret_values(settings), *filter(None, map(os.environ.get, TOKEN_ENV))])
    async with AsyncExitStack() as stack:
        grpc_server = await stack.enter_async_context(grpc_port(settings))  # taken first: a clash stops the start now
        database = state_database(settings)
        async with reaching(database):  # the first connection: a database down is one sentence, not a traceback
            engine = open_state(database)
            stack.push_async_callback(engine.dispose)
            await migrate(engine)
        log.info("[%s] state in %s", settings.card.name, database)
        audit = AuditLog(engine, str(database))
        await audit.initialize()
        metrics = AgentMetrics()
        # The backends' provider is the wrapper's model relay (up until the backends have stopped): no key inside.
        started = await stack.enter_async_context(backend_settings(settings))
        locks = _LeasedLocks()
        backend, tenants = await stack.enter_async_context(
            agent_backend(started, _Launch(hosts_policy(policy), audit, metrics), locks.callers)
        )
        outage = StateOutage(engine, str(database), settings.state.outage_wait) if database.shared else None
        tasks = await stack.enter_async_context(agent_tasks(database, engine, replica_name(settings), outage))
        leases = None
        if database.shared:
            leases = await stack.enter_async_context(context_leases(settings, engine, tasks, locks, outage))
        sessions = SessionMap(
            engine,
            backend,
            settings.sessions,
            busy=locks.busy,
            lease=leases.take if leases else None,
            folders=workspaces,
        )
        await sessions.initialize()
        rejected = await backend.reject_pending(await sessions.known_sessions(), INTERRUPTED)
        if rejected:
            log.warning("rejected %d permission request(s) left waiting by the last run", rejected)
        stack.push_async_callback(sessions.save_last_used)
        expiry = asyncio.create_task(sessions.run_expiry(), name="session-expiry")
        stack.push_async_callback(cancel_and_wait, expiry)
        context_rules = ContextRules(engine)
        await context_rules.initialize()
        gate = PermissionGate(policy, context_rules, audit, metrics.decided, settings.card.name)
        watch = control_watch(settings, audit) if workspaces is None else None  # in place only: see docs
        turns = Turns(
            backend, sessions, gate, locks, settings.timeouts.turn, settings.approvers, watch, tenants, workspaces
        )
        metrics.watch(backend, sessions, turns.waiting, tenants.count if tenants is not None else None)
        card = build_card(with_grpc_port(settings, grpc_server))  # gRPC port 0: the free one bound
        # Stops after the handler; pushes at once the ends the last run owed (recovery has failed its lost turns).
        push = await stack.enter_async_context(push_service(settings.push, engine, tasks.readable))
        ledger = MessageLedger(engine, tasks.writer, outage)
        await ledger.initialize()
        stack.callback(ledger.close)
        executor = TurnExecutor(turns, settings.guard, metrics)
        limits = MessageLimits.from_settings(settings.server)
        handler = request_handler(card, executor, tasks.served, push, ledger, limits, tasks.events)
        stack.push_async_callback(handler.aclose)  # after the turns: a turn's last words go through it
        stack.push_async_callback(turns.shutdown)
        if grpc_server is not None:  # stops first: no new call, the turns end, the streams close with their last event
            await stack.enter_async_context(grpc_server.serving(handler, turns.shutdown))
        app = build_app(
            card,
            handler,
            backend,
            settings.server.max_body_bytes,
            auth=settings.auth,
            metrics=metrics,
            runtime=await asyncio.to_thread(describe_backends, started),
            body_timeout=settings.server.body_timeout,
            limits=limits,
            operator=operator_routes(settings.card.name, turns, settings.console, database),
            state=StateCheck(engine, database),
        )
        yield RunningAgent(settings, app, backend, sessions, turns.shutdown)


def _workspaces(settings: AgentSettings) -> Workspaces | None:
    """Per-task mode: the workspaces, their source checked (a bad one stops the start with its sentence)."""
    if settings.workspace.mode != "per_task":
        if len(settings.auth.callers) > 1:  # each caller still has a backend of its own, but not a tree of its own
            log.warning(
                "[%s] works in place with %d callers: their tools share %s, so one caller's tool can read and "
                "change what another's wrote there (workspace.mode: per_task gives each context its own copy)",
                settings.card.name,
                len(settings.auth.callers),
                settings.backend.workdir,
            )
        return None
    workspaces = Workspaces(settings)
    try:
        workspaces.check()
    except WorkspaceError as exc:
        raise ConfigError(f"agent {settings.card.name!r}: {exc}") from exc
    return workspaces


@dataclass(frozen=True)
class AgentTasks:
    served: TaskStore | VersionedTaskStore  # what the request handler reads and writes
    readable: TaskStore  # the same tasks, read by the push service
    events: EventJournal  # every task's events in order, to resume streams from; shared state: on every replica
    writer: Writer | None  # SQLite: the writer behind the turn, which other stores' rows ride with


@asynccontextmanager
async def agent_tasks(
    database: StateDatabase, engine: AsyncEngine, replica: str, outage: StateOutage | None = None
) -> AsyncIterator[AgentTasks]:
    """The A2A task store, tasks a stopped run left unfinished failed first. SQLite: written behind the turn and
    listed off the loop. Shared state: a2a-sdk's cluster mode, its tasks failed only when no other replica holds
    them; the leases still in this replica's name are its last run's, let go once their tasks are failed; an
    outage of its database (`outage`) waited out, and what it owes written when the database is back."""
    if database.shared:
        assert outage is not None, "shared state needs its outage watch"
        store = SharedTaskStore(engine, outage)
        await store.initialize()
        held = await leased_contexts(engine, other_than=replica)
        await fail_orphaned_tasks(
            store, [task for task in await stored_tasks(engine) if ContextKey(task.owner, task.context_id) not in held]
        )
        await release_all(engine, replica)
        watching = asyncio.create_task(outage.run(store.mend), name="state-outage")
        try:
            yield AgentTasks(store, store.as_task_store, SharedJournal(engine, shared_events(engine)), None)
        finally:
            await cancel_and_wait(watching)
        return
    assert database.path is not None
    database_store = DatabaseTaskStore(engine)
    await database_store.initialize()
    await fail_interrupted_tasks(engine, database_store)
    task_store = WriteBehindTaskStore(database_store, engine, await task_ids(engine))
    writer = asyncio.create_task(task_store.run(), name="task-writer")
    try:
        async with listing_off_the_loop(task_store, database.path) as listed:
            yield AgentTasks(listed, task_store, LocalJournal(), task_store)
    finally:
        await cancel_and_wait(writer)
        await task_store.close()


class _LeasedLocks(ContextLocks):
    """Context locks whose last release lets the context's lease go, on shared state."""

    leases: ContextLeases | None = None

    def release(self, key: ContextKey) -> None:
        super().release(key)
        if self.leases is not None and not self.busy(key):
            self.leases.release(key)


@asynccontextmanager
async def context_leases(
    settings: AgentSettings,
    engine: AsyncEngine,
    tasks: AgentTasks,
    locks: _LeasedLocks,
    outage: StateOutage | None = None,
) -> AsyncIterator[ContextLeases]:
    """This replica's leases on the contexts it runs, renewed until the exit, then let go; meanwhile the tasks of
    expired leases (dead replicas') are swept."""
    assert isinstance(tasks.served, VersionedTaskStore)
    store = tasks.served

    async def taken_over(key: ContextKey, holder: str) -> int:
        left = await tasks_of_context(engine, key.caller, key.context_id)
        return await fail_orphaned_tasks(store, left, submitted_before=0.0, sentence=lost_with(holder))

    replica = Replica(replica_name(settings), settings.advertised_url)
    leases = ContextLeases(engine, replica, settings.state.lease, locks.busy, taken_over, outage)
    locks.leases = leases
    renewing = asyncio.create_task(leases.run(), name="lease-renewal")
    sweep = OrphanSweep(engine, store, settings.state.lease, replica.name)
    sweeping = asyncio.create_task(sweep.run(), name="orphan-sweep")
    log.info("[%s] replica %s: contexts leased for %g s", settings.card.name, replica.name, settings.state.lease)
    try:
        yield leases
    finally:
        await cancel_and_wait(sweeping)
        await cancel_and_wait(renewing)
        await leases.close()


@dataclass(frozen=True)
class _Launch:
    """What starts one backend: its sandbox's host rules, the audit its egress decisions go to, the metrics."""

    host_rules: PermissionPolicy | None
    audit: AuditLog
    metrics: AgentMetrics

    @asynccontextmanager
    async def __call__(self, settings: AgentSettings) -> AsyncIterator[Backend]:
        """A backend started in its own sandbox (if the runtime is one); stopped, then its sandbox, on exit."""
        async with agent_sandbox(settings, self.host_rules, self.audit, self.metrics) as sandbox:
            backend = create_backend(settings, sandbox)
            try:
                await backend.start()
                yield backend
            finally:
                await backend.stop()


@asynccontextmanager
async def agent_backend(
    settings: AgentSettings, launch: _Launch, busy: Callable[[], Iterable[str]]
) -> AsyncIterator[tuple[Backend, TenantPool | None]]:
    """The agent's backend and, but for an attached one, the pool behind it: one backend per caller
    (backends/tenants/), the anonymous caller's started now when auth is off (it is the only caller then)."""
    if getattr(settings.backend, "base_url", None):
        if settings.auth.callers:
            log.warning(
                "[%s] backend.base_url: the one OpenCode the wrapper attaches to serves every caller; their "
                "conversations are not kept apart there",
                settings.card.name,
            )
        async with launch(settings) as attached:
            yield attached, None
        return
    pool = TenantPool(settings, launch, busy, warm=() if settings.auth.callers else ("",))
    try:
        await pool.start()
        yield pool, pool
    finally:
        await pool.stop()


def describe_backends(settings: AgentSettings) -> dict[str, Any]:
    """Where each caller's backend runs and what bounds it (as for any one of them), for /health and `check`."""
    if getattr(settings.backend, "base_url", None):
        return describe_runtime(settings, None)
    described = describe_runtime(tenant_settings(settings, "<tenant>"), None)
    described["tenants"] = {
        "per_caller": "each caller's own backend process, sandbox, data folder and password",
        "folders": str(tenant_settings(settings, "<tenant>").state_dir),
        "max_running": settings.tenants.max_running,
        "idle_stop": settings.tenants.idle_stop,
    }
    return described


@asynccontextmanager
async def agent_sandbox(
    settings: AgentSettings, host_rules: PermissionPolicy | None, audit: AuditLog, metrics: AgentMetrics
) -> AsyncIterator[Sandbox | None]:
    """The sandbox the backend runs in (its egress proxy up until the backend has stopped), or None without one."""
    if not isinstance(settings.runtime, SandboxRuntime | SidecarRuntime) or getattr(settings.backend, "base_url", None):
        if isinstance(settings.runtime, ProcessRuntime):
            log.warning(
                "[%s] runtime.kind is process: the backend runs unsandboxed, with the user's rights on this machine; "
                "only the shield's rules stand between it and your files and network, and one caller's tools can "
                "read another caller's backend folder",
                settings.card.name,
            )
        yield None
        return
    boundary = SidecarBoundary if isinstance(settings.runtime, SidecarRuntime) else Sandbox
    sandbox = boundary(settings, host_rules, audit, metrics.egress)
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


def control_watch(settings: AgentSettings, audit: AuditLog) -> ControlWatch | None:
    """The workspace's control files checked after each turn: the agent works in place, in its owner's folder.
    None for an OpenCode the wrapper did not start (its workspace is where that server runs)."""
    if getattr(settings.backend, "base_url", None):
        return None
    return ControlWatch(settings.backend.workdir.resolve(), settings.card.name, audit)


def hosts_policy(policy: Policy) -> PermissionPolicy | None:
    """What decides the sandbox's hosts: the shield itself, whose network rules it reads; none under autoApprove,
    which allows tool calls, never hosts."""
    return policy.shield if policy.rules_decide else None


class _Server(QuietServer):
    """uvicorn without its own signal handling: `serve` records signals and tears the agent down itself. At a
    stop the running turns end first, each with its sentence: their streams then close by themselves instead of
    being cut when uvicorn's grace runs out."""

    def __init__(self, config: uvicorn.Config, end_turns: Callable[[], Awaitable[None]]) -> None:
        super().__init__(config)
        self._end_turns = end_turns

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connection while the turns end
        if not self.force_exit:
            await self._end_turns()
        await super().shutdown(sockets)


async def serve(settings: AgentSettings) -> None:
    """Run one agent until SIGINT or SIGTERM; a second signal forces the exit. The backend always stops."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    server: _Server | None = None
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if server is None:
            main.cancel()  # still starting: unwind what has started
            return
        server.should_exit = True
        server.force_exit = signals > 1

    with _claimed(settings) as listener:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            async with running_agent(settings) as agent:
                config = uvicorn_config(agent.app, settings.server, timeout_graceful_shutdown=10)
                server = _Server(config, agent.end_turns)
                log.info("agent %r serving; card at %s", settings.card.name, agent.card_url)
                await server.serve(sockets=[listener])
        except asyncio.CancelledError:
            if not signals:
                raise
            log.info("agent %r stopped during start-up", settings.card.name)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


@contextlib.contextmanager
def _claimed(settings: AgentSettings) -> Iterator[socket.socket]:
    """The state folder and the port, both taken before anything slow starts (a clash is one sentence at once)."""
    serving = _own_state_folder(settings)
    try:
        with bind_port(settings.server.host, settings.server.port, f"agent {settings.card.name!r}") as listener:
            yield listener
    finally:
        serving.release()


def _own_state_folder(settings: AgentSettings) -> FolderLock:
    """One `serve` per state folder: a second would share its SQLite file, sessions and backend home."""
    assert settings.state_dir is not None
    lock = FolderLock(settings.state_dir, SERVING)
    try:
        lock.acquire()
    except FolderBusy as exc:
        raise FolderBusy(exc.folder, f"{exc.holder}; agent {settings.card.name!r} runs once per state folder") from None
    except OSError as exc:  # a folder that cannot be made or written: nothing of the agent could be kept
        reason = exc.strerror or str(exc)
        raise StateUnavailable(f"state_dir {settings.state_dir}: the state folder cannot be used: {reason}") from exc
    return lock

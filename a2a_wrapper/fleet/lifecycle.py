"""Running a fleet (agents, registry, reload watcher) or a registry alone, until SIGINT or SIGTERM.

Before anything starts, the fleet claims each agent's state folder (see ownership: a second fleet or demo on
the same agents is refused naming the first) and checks that each agent's port is free, so that a taken
port is one sentence rather than an agent crash-looping on "address already in use".

The signal handlers only record the signal: the first stops everything gracefully (each agent gets
SIGTERM and the restart policy's grace before SIGKILL); a second one kills every agent at once.
"""

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import httpx

from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.fleet.console.access import Gate
from a2a_wrapper.fleet.console.hub import Hub
from a2a_wrapper.fleet.console.links import SIGN_IN_PATH
from a2a_wrapper.fleet.console.operators import Operators
from a2a_wrapper.fleet.console.routes import ConsoleRoutes
from a2a_wrapper.fleet.fleet_file import RegistrySettings
from a2a_wrapper.fleet.ownership import StateLocks
from a2a_wrapper.fleet.registry import CONSOLE_PATH, Listed, build_registry_app
from a2a_wrapper.fleet.reload import watch_fleet
from a2a_wrapper.fleet.remote import RemoteAgent
from a2a_wrapper.fleet.spec import CONSOLE_KEY_ENV, AgentSpec, Fleet, RemoteSpec
from a2a_wrapper.fleet.supervisor import OnRunning, SupervisedAgent, Supervisor
from a2a_wrapper.frontend.edge.quiet_server import QuietServer
from a2a_wrapper.frontend.edge.server_config import uvicorn_config
from a2a_wrapper.ports import bind_port

log = logging.getLogger(__name__)

Announce = Callable[[str], None]  # a line for the person at the terminal (the CLI's stdout)


class Signals:
    """SIGINT/SIGTERM recorded: `stop` on the first, `force` on the second."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.force = asyncio.Event()

    def _record(self, sig: signal.Signals) -> None:
        if self.stop.is_set():
            log.warning("second %s: killing every agent now", sig.name)
            self.force.set()
        else:
            log.info("%s: stopping (a second one kills at once)", sig.name)
            self.stop.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator["Signals"]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._record, sig)
        try:
            yield self
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


class _RegistryServer(QuietServer):
    """uvicorn without its own signal handling: the fleet's handlers decide when it stops."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(settings: RegistrySettings) -> socket.socket:
    """Bound here, so that a taken port is a sentence rather than uvicorn's exit."""
    return bind_port(settings.host, settings.port, "registry")


def check_ports(agents: Sequence[AgentSpec]) -> None:
    for spec in agents:
        bind_port(spec.settings.server.host, spec.port, f"agent {spec.name!r} ({spec.config})").close()


@contextlib.asynccontextmanager
async def _registry(
    settings: RegistrySettings,
    listing: Callable[[], Sequence[Listed]],
    http: httpx.AsyncClient,
    announce: Announce,
) -> AsyncIterator[None]:
    """The registry app and its console served and every agent's health polled, all stopped on exit. `announce`
    shows a person at the terminal the console's one-time sign-in link, when it has no operators."""
    sock = _bind(settings)
    limits = ServerSettings(host=settings.host, port=settings.port)  # an agent's default limits
    hub, gate = Hub(listing), Gate(Operators.from_settings(settings.operators))
    app = build_registry_app(listing, ConsoleRoutes(hub, gate).routes())
    server = _RegistryServer(uvicorn_config(app, limits, timeout_graceful_shutdown=5))
    async with hub.running():
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="registry")
        polling = asyncio.create_task(_poll_health(listing, http, settings.health_interval), name="health")
        log.info("registry at http://%s:%d/agents", settings.host, settings.port)
        _log_console(settings, gate)
        try:
            with _sign_in_links(gate, _console_url(settings), announce):
                yield
        finally:
            polling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await polling
            hub.close()  # the browsers' event streams end, so that the server stops without waiting on them
            server.should_exit = True
            await serving
            sock.close()


def _console_url(settings: RegistrySettings) -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}{CONSOLE_PATH}"


def _log_console(settings: RegistrySettings, gate: Gate) -> None:
    url = _console_url(settings)
    if gate.links is not None:
        log.info(
            "console at %s: no operators in the fleet file (registry.operators: [{name, key_env}]), so it signs in "
            "with the one-time link printed on stdout",
            url,
        )
    else:
        log.info("console at %s (%d operators sign in with their keys)", url, len(settings.operators))


@contextlib.contextmanager
def _sign_in_links(gate: Gate, console: str, announce: Announce) -> Iterator[None]:
    """A console without operators: its first one-time link shown now, and a new one at each SIGUSR1.

    The link goes to `announce` (the CLI's stdout), never to the log: the log may be kept in a file, and the link
    is a credential until it is used."""
    links = gate.links
    if links is None:
        yield
        return

    def show() -> None:
        minutes = links.lifetime / 60
        again = f"`kill -USR1 {os.getpid()}` prints another"
        announce(f"console sign-in: {console}{SIGN_IN_PATH}?token={links.issue()}   (once, {minutes:.0f} min; {again})")

    loop = asyncio.get_running_loop()
    show()
    loop.add_signal_handler(signal.SIGUSR1, show)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)


def console_key() -> str:
    """The key every supervised agent's operator endpoint takes: the registry's A2A_WRAP_CONSOLE_KEY, else one
    made for this run (the agents get it in their environment; it is never written down)."""
    return os.environ.get(CONSOLE_KEY_ENV) or secrets.token_urlsafe(32)


async def _poll_health(listing: Callable[[], Sequence[Listed]], http: httpx.AsyncClient, interval: float) -> None:
    while True:
        agents = listing()
        results = await asyncio.gather(*(agent.refresh(http) for agent in agents), return_exceptions=True)
        for agent, result in zip(agents, results, strict=True):
            if isinstance(result, Exception):  # a boundary per agent: log it, keep polling the others
                log.error("[%s] health poll failed", agent.name, exc_info=result)
        await asyncio.sleep(interval)


async def run_fleet(fleet: Fleet, announce: Announce, on_running: OnRunning | None = None) -> None:
    """Supervise every agent, serve the registry and (when loaded from paths) apply config changes, until signalled.

    `announce` shows the console's sign-in link; `on_running` is called each time an agent's /health first
    answers."""
    locks = StateLocks()
    try:
        for spec in fleet.agents:
            locks.claim(spec)
        check_ports(fleet.agents)
        await _run_claimed(fleet, locks, announce, on_running)
    finally:
        locks.release_all()


async def _run_claimed(fleet: Fleet, locks: StateLocks, announce: Announce, on_running: OnRunning | None) -> None:
    with Signals().installed() as signals:
        async with httpx.AsyncClient(timeout=10) as http:
            running = _noting_all_running(fleet, on_running)
            supervisor = Supervisor(fleet.restart, http, running, console_key())
            remotes = [RemoteAgent(spec) for spec in fleet.remotes]

            def listing() -> list[Listed]:
                return [*supervisor.agents(), *remotes]

            async with _registry(fleet.registry, listing, http, announce):
                for spec in fleet.agents:
                    supervisor.start(spec)
                watching = watch_fleet(fleet, supervisor, locks, signals.stop) if fleet.sources else None
                watcher = asyncio.create_task(watching) if watching is not None else None
                try:
                    await signals.stop.wait()
                finally:
                    signals.stop.set()
                    await _stop_agents(supervisor, watcher, signals.force)


def _noting_all_running(fleet: Fleet, on_running: OnRunning | None) -> OnRunning:
    """`on_running`, and one log line once every agent the fleet started with has answered."""
    waiting = {spec.config for spec in fleet.agents}

    def running(agent: SupervisedAgent) -> None:
        if on_running is not None:
            on_running(agent)
        if agent.spec.config in waiting:
            waiting.discard(agent.spec.config)
            if not waiting:
                registry = f"http://{fleet.registry.host}:{fleet.registry.port}/agents"
                count = f"all {len(fleet.agents)} agents" if len(fleet.agents) > 1 else "1 agent"
                log.info("%s running (registry at %s)", count, registry)

    return running


async def _stop_agents(supervisor: Supervisor, watcher: asyncio.Task[None] | None, force: asyncio.Event) -> None:
    """Graceful, unless `force` is set meanwhile: then every agent is killed at once."""

    async def graceful() -> None:
        if watcher is not None:
            await watcher  # it ends on the stop event, after the reload under way, if any
        await supervisor.stop_all()

    stopping = asyncio.create_task(graceful(), name="stop-agents")
    forcing = asyncio.create_task(force.wait(), name="force")
    await asyncio.wait({stopping, forcing}, return_when=asyncio.FIRST_COMPLETED)
    if forcing.done():
        supervisor.kill_all()  # the graceful stops under way then end at once
    forcing.cancel()
    await stopping
    log.info("fleet stopped")


async def run_registry(remotes: Sequence[RemoteSpec], settings: RegistrySettings, announce: Announce) -> None:
    """A registry of agents run elsewhere (docker compose: one container per agent), until signalled."""
    agents = [RemoteAgent(spec) for spec in remotes]
    with Signals().installed() as signals:
        async with httpx.AsyncClient(timeout=10) as http, _registry(settings, lambda: agents, http, announce):
            await signals.stop.wait()

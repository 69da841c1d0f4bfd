"""One agent's sandbox: the egress proxy it owns, and every backend command wrapped to run inside bubblewrap.

Started before the backend (the proxy must answer its first connection) and stopped after it. A backend asks
`wrap` for the command line and environment of each process it starts, naming its own folders (writable), the
programs it runs (readable) and the config it was given (read-only, on top); the rest comes from the agent's
config: its workspace, the endpoints it names
(model provider, MCP servers: allowed and, on loopback, forwarded to the same port inside), the paths the
shield denies (masked or read-only) and `runtime.read` / `runtime.write`.
"""

import asyncio
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2a_wrapper.config.runtimes import SandboxRuntime, SidecarRuntime
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.errors import ConfigError, SandboxUnavailable
from a2a_wrapper.sandbox.bubblewrap import checked_bwrap
from a2a_wrapper.sandbox.egress import Destination, EgressDecision, EgressPolicy, EgressProxy, endpoint
from a2a_wrapper.sandbox.masks import denied_paths
from a2a_wrapper.sandbox.plan import EGRESS_SOCKET, PROXY_PORT, SOCKETS_INSIDE, Forward, SandboxPlan
from a2a_wrapper.shield.decision import PermissionPolicy
from a2a_wrapper.shield.hosts import BadUrl
from a2a_wrapper.state.audit import AuditEntry, AuditLog

log = logging.getLogger(__name__)

_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_URL = re.compile(r"https?://[^\s\"'<>\\]+")
# Folders a config may point the backend at in backend.env: the backend's own, so writable inside.
_FOLDER_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "TMPDIR",
    "COPILOT_HOME",
)
_SOCKET_PATH_ROOM = 100  # of the 107 bytes, with room for a longer socket name than opencode.sock
GITHUB_HOSTS = ("api.githubcopilot.com", "api.github.com", "github.com", "copilot-proxy.githubusercontent.com")


@dataclass(frozen=True)
class Wrapped:
    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()  # handed over to the child (ChildProcess closes the wrapper's copies)


class Sandbox:
    def __init__(
        self,
        settings: AgentSettings,
        host_rules: PermissionPolicy | None,  # the shield deciding hosts; None under autoApprove (none let through)
        audit: AuditLog | None,
        counter: Callable[[str], None] | None = None,
    ) -> None:
        assert isinstance(settings.runtime, SandboxRuntime | SidecarRuntime) and settings.state_dir is not None
        self._settings = settings
        self._runtime = settings.runtime
        self._audit = audit
        self._counter = counter  # called with each egress decision's outcome, for the metrics
        self._endpoints = set(endpoints_of(settings))
        loopback = {d.port: d for d in sorted(self._endpoints, key=str, reverse=True) if d.host in _LOOPBACK}
        self._forwards = [Forward(port, str(d)) for port, d in sorted(loopback.items())]  # one per port inside
        self._sockets = settings.state_dir / "sandbox"  # until start(), which may pick a shorter one
        self._egress = EgressPolicy(self._endpoints, host_rules, self._runtime.hosts)
        self._proxy: EgressProxy | None = None
        self._bwrap: Path | None = None
        self._masked: list[Path] = []
        self._read_only: list[Path] = []

    async def start(self) -> None:
        self._bwrap = await asyncio.to_thread(checked_bwrap)
        workdir = self._settings.backend.workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self._masked, self._read_only = self._denied()
        self._sockets = _sockets_folder(self._sockets)
        for folder in (self._sockets / "wrapper", self._sockets / "backend"):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.chmod(0o700)  # no other user of this machine may use them
        self._proxy = EgressProxy(self.wrapper_socket(EGRESS_SOCKET), self._egress, self._record, busy=self._busy)
        await self._proxy.start()
        log.info(
            "[%s] sandbox: %s writable; endpoints %s; every other host through the egress proxy",
            self._settings.card.name,
            workdir,
            ", ".join(sorted(map(str, self._endpoints))) or "none",
        )

    async def stop(self) -> None:
        if self._proxy is not None:
            await self._proxy.stop()
        if self._sockets.parent == Path(tempfile.gettempdir()):
            shutil.rmtree(self._sockets, ignore_errors=True)

    def wrapper_socket(self, name: str) -> Path:
        """Where the wrapper serves socket `name` for the backend: a folder the sandbox shows read-only at
        `inside(name)`, so nothing inside can unlink, replace or rename the socket."""
        return self._sockets / "wrapper" / name

    def inside(self, name: str) -> Path:
        """A socket of `wrapper_socket` as the backend sees it (a short path, whatever the state folder's)."""
        return SOCKETS_INSIDE / name

    def programs_root(self) -> Path | None:
        """Where a backend's program unpacked by the wrapper goes when the backend cannot read the default place
        (None: the default, which a sandbox shows read-only)."""
        return None

    @property
    def shares_network(self) -> bool:
        """Whether the backend is on the wrapper's own network (a port there is dialled directly, not served)."""
        return False

    def served_socket(self, name: str) -> Path:
        """Where the wrapper reaches a port inside that `wrap`'s `serve` names: a folder never shown inside."""
        return self._sockets / "backend" / name

    def wrap(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        own: Iterable[Path],
        programs: Iterable[Path] = (),
        given: Iterable[tuple[Path, Path]] = (),
        serve: Iterable[tuple[str, int]] = (),
        new_session: bool = False,
    ) -> Wrapped:
        """`argv` inside the sandbox: `own` (the backend's folders) writable, `programs` readable, each
        `(source, path)` of `given` (config the wrapper made for it) read-only at `path`, over its own folders,
        and each `(name, port)` of `serve` a port inside reached at `served_socket(name)`."""
        assert self._bwrap is not None and self._proxy is not None, "start() first"
        # What exists now, not at the agent's start: a renamed folder must not leave a bind with no source.
        self._masked, self._read_only = self._denied()
        plan = self.plan(own, programs)
        for path in plan.writable:
            path.mkdir(parents=True, exist_ok=True)  # a bind needs its source
        plan.overlays = [(Path(source), Path(path)) for source, path in given]
        listening = [(listening_socket(self.served_socket(name)), port) for name, port in serve]
        plan.serve = [(held.detach(), port) for held, port in listening]
        argv = plan.command(self._bwrap, argv, new_session=new_session)
        return Wrapped(argv, {**env, **plan.environment()}, tuple(descriptor for descriptor, _ in plan.serve))

    def _denied(self) -> tuple[list[Path], list[Path]]:
        """(masked, read-only) in the workdir as it is now; its control files only when the agent works in place
        (per task, the workdir is the folder of the copies: see workspaces/)."""
        in_place = self._settings.workspace.mode == "in_place"
        return denied_paths(self._settings.shield, self._settings.backend.workdir, controls=in_place)

    def plan(self, own: Iterable[Path], programs: Iterable[Path] = ()) -> SandboxPlan:
        assert isinstance(self._runtime, SandboxRuntime), "bubblewrap's plan"
        workdir = self._settings.backend.workdir.resolve()
        writable = [*own, *self._runtime.write, *self._env_folders()]
        readable = [*self._runtime.read, *programs, *self._mcp_programs()]
        for path in [*writable, *readable, workdir]:
            self._refuse_exposure(Path(path))
        return SandboxPlan(
            workdir=workdir,
            writable=[Path(p).resolve() for p in writable],
            readable=[Path(p).resolve() for p in readable if Path(p).exists()],
            masked=self._masked,
            read_only=self._read_only,
            sockets=self._sockets / "wrapper",
            forwards=self._forwards,
        )

    def describe(self) -> dict[str, Any]:
        """What the backend can touch, for /health and `a2a-wrap check` (which calls it before any start)."""
        masked, read_only = self._masked, self._read_only
        if self._bwrap is None:  # not started: what a start would find
            masked, read_only = self._denied()
            try:
                mechanism = f"bubblewrap at {checked_bwrap()}, checked on this machine"
            except SandboxUnavailable as exc:
                mechanism = f"unavailable here, so the agent will not start: {exc}"
        else:
            mechanism = f"bubblewrap at {self._bwrap}"
        plan = self.plan([self._settings.state_dir / self._settings.backend.kind])  # type: ignore[operator]
        return {
            "kind": "sandbox",
            "mechanism": mechanism,
            "writable": [str(p) for p in dict.fromkeys([plan.workdir, *plan.writable])] + ["/tmp (private)"],
            "readable": [
                "system folders (secrets masked)",
                "the backend's program, its MCP servers' and the wrapper's Python",
                *map(str, plan.readable),
            ],
            "hidden": ["your home folder", "the wrapper's state", *map(str, masked)],
            "read_only": [
                "the backend's config folder and files, made anew by the wrapper at each start",
                f"the sockets the wrapper serves ({SOCKETS_INSIDE})",
            ],
            "read_only_in_workspace": [str(p) for p in read_only],
            "network": {
                "direct": "none (own network namespace)",
                "allowed": sorted(map(str, self._endpoints)) + self._runtime.hosts,
                "other_hosts": "decided by the shield's network rules at the egress proxy; ask is a deny there",
                "proxy": f"http://127.0.0.1:{PROXY_PORT} inside",
            },
        }

    def _env_folders(self) -> list[Path]:
        env = self._settings.backend.env
        return [Path(env[name]) for name in _FOLDER_VARIABLES if env.get(name, "").startswith("/")]

    def _mcp_programs(self) -> list[Path]:
        programs: list[Path] = []
        for server in self._settings.backend.mcp_servers.values():
            if server.command:
                programs += program_paths(server.command)
        return programs

    def _refuse_exposure(self, path: Path) -> None:
        """No bound path may reveal the user's home or the wrapper's state as a whole."""
        resolved = path.resolve()
        state = self._settings.state_dir.resolve()  # type: ignore[union-attr]
        for guarded, what in ((Path.home().resolve(), "your home folder"), (state, "the agent's state folder")):
            if resolved == guarded or resolved in guarded.parents or resolved == Path("/"):
                raise ConfigError(
                    f"runtime.kind is sandbox, but {path} would show {what} to the backend; "
                    "point backend.workdir, backend.env folders and runtime.read/write at folders of their own"
                )

    def _busy(self) -> None:
        """A connection refused because the egress proxy had its cap open: counted, never audited (a flood
        would flood the audit)."""
        if self._counter is not None:
            self._counter("busy")

    async def _record(self, decision: EgressDecision, wait_ms: float) -> None:
        if self._counter is not None:
            self._counter(decision.outcome)
        await self._audit_network("egress", decision.target, decision.allowed, decision.rule, wait_ms)

    async def _audit_network(self, tool: str, target: str, allowed: bool, rule: str, wait_ms: float = 0.0) -> None:
        """One audit row of the sandbox's own: a connection it let through or refused."""
        if self._audit is None:
            return
        entry = AuditEntry(
            time=time.time(),
            agent=self._settings.card.name,
            context_id="",
            task_id="",
            caller="",
            tool=tool,
            cls="network",
            target=target,
            decision="allow" if allowed else "deny",
            rule=rule,
            decided_by="sandbox",
            wait_ms=wait_ms,
        )
        await self._audit.record(entry)


def program_paths(command: list[str]) -> list[Path]:
    """What running `command` reads beyond the system folders: its program's folder and any file it names."""
    paths = []
    program = shutil.which(command[0]) or command[0]
    if os.path.isabs(program):
        paths.append(Path(os.path.realpath(program)).parent)
    paths += [Path(arg) for arg in command[1:] if os.path.isabs(arg) and os.path.exists(arg)]
    return paths


def endpoints_of(settings: AgentSettings) -> list[Destination]:
    """Hosts the config itself names for the backend: its provider, its MCP servers, URLs in backend.env."""
    backend = settings.backend
    urls = [server.url for server in backend.mcp_servers.values() if server.url]
    provider = getattr(backend, "provider", None)
    if provider is not None:
        urls.append(provider.base_url)
    elif backend.kind == "copilot":
        urls += [f"https://{host}/" for host in GITHUB_HOSTS]
    for value in backend.env.values():
        urls += _URL.findall(value)
    found = []
    for url in urls:
        try:
            found.append(endpoint(url))
        except (BadUrl, ValueError):
            log.warning("sandbox: %r names no host that can be allowed; ignored", url)
    return found


def describe_runtime(settings: AgentSettings, sandbox: Sandbox | None) -> dict[str, Any]:
    """Where the backend runs and what bounds it, whatever the runtime."""
    if sandbox is not None:
        return sandbox.describe()
    if getattr(settings.backend, "base_url", None):
        return {
            "kind": "attached",
            "warning": "an OpenCode the wrapper did not start: it is bounded by nothing of ours",
        }
    if settings.runtime.kind == "docker":
        return {"kind": "docker", "image": settings.runtime.image, "network": settings.runtime.network}
    if settings.runtime.kind == "sidecar":
        from a2a_wrapper.sandbox.beside import SidecarBoundary  # here: it builds on this module

        return SidecarBoundary(settings, None, None).describe()
    if settings.runtime.kind == "process":
        return {"kind": "process", "warning": "unsandboxed: the backend has the user's rights; only rules bound it"}
    return Sandbox(settings, None, None).describe()


def listening_socket(path: Path) -> socket.socket:
    """A Unix socket listening at `path` (one an earlier start left is replaced), inheritable for the bridge."""
    path.unlink(missing_ok=True)
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listening.bind(str(path))
        listening.listen(128)
        listening.set_inheritable(True)
    except BaseException:
        listening.close()
        raise
    return listening


def _sockets_folder(preferred: Path) -> Path:
    """`preferred`, unless its sockets' paths would pass the 107 bytes a Unix socket path may hold: then a new
    private folder under the temp folder (mode 0700), removed at stop. Called once, at start."""
    if len(os.fsencode(preferred / "backend" / "opencode.sock")) <= _SOCKET_PATH_ROOM:
        return preferred
    return Path(tempfile.mkdtemp(prefix="a2a-wrap-"))

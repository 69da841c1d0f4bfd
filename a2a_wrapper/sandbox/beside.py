"""The boundary of `runtime.kind: sidecar`: the backend in a container of its own beside the wrapper's.

The two containers share three folders at the same paths: the wrapper's sockets (`runtime.sockets`: the egress
proxy, the tool hook; read-only in the backend's container, so nothing there can be replaced), the backend's own
folders (`runtime.folders`) and the workspace. The wrapper's state folder, its environment and its processes are
in its own container: no process of the backend's can see them (a PID namespace of its own), read them or reach
them by a path.

Each backend process the wrapper starts is a stand-in here (stand_in.py), which has the sidecar start the real
command there, under the same bridge a sandbox uses. With `runtime.network: none` (compose) the backend's
container has loopback only, as the host sandbox's namespace: every connection goes through the egress proxy,
loopback endpoints are forwarded through it, and a port the backend serves (OpenCode's) is reached through a
listening socket the wrapper makes in its sockets folder and hands over as a descriptor. With `shared` (a pod) a
process that ignores the proxy reaches what the pod's network lets it (the NetworkPolicy rendered with the pod).
What a container cannot give that bubblewrap does is said in `describe`.
"""

import asyncio
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.ports import free_port
from a2a_wrapper.sandbox import bridge
from a2a_wrapper.sandbox.apart import PodChannels
from a2a_wrapper.sandbox.boundary import Sandbox, Wrapped, listening_socket
from a2a_wrapper.sandbox.channel import Refusal
from a2a_wrapper.sandbox.egress import EgressProxy
from a2a_wrapper.sandbox.plan import EGRESS_SOCKET, proxy_environment
from a2a_wrapper.sandbox.sidecar import socket_path
from a2a_wrapper.sandbox.trees import copy_anew

# Run as a script (never imported: it imports its sibling `frames` as a top-level module).
STAND_IN = Path(__file__).with_name("stand_in.py")
SERVED = "served"  # in the sockets folder: the listening sockets through which the wrapper reaches ports inside
GIVEN = "given"  # in the sockets folder: what the wrapper made for the backend to read, read-only there
PROGRAMS = "programs"  # in the sockets folder: programs the wrapper unpacked for the backend (Copilot's package)


class SidecarBoundary(Sandbox):
    """A Sandbox to the backends (the same `wrap`, sockets and egress proxy), whose processes run in the sidecar."""

    _channels: PodChannels | None = None  # with runtime.network apart: the backend is in a pod of its own

    @property
    def _sidecar(self) -> SidecarRuntime:
        assert isinstance(self._runtime, SidecarRuntime)
        return self._runtime

    async def start(self) -> None:
        self._sockets = self._sidecar.sockets
        self._sockets.mkdir(mode=0o755, parents=True, exist_ok=True)
        self._sidecar.folders.mkdir(parents=True, exist_ok=True)
        self._settings.backend.workdir.mkdir(parents=True, exist_ok=True)
        self._proxy = EgressProxy(self.wrapper_socket(EGRESS_SOCKET), self._egress, self._record, busy=self._busy)
        await self._proxy.start()
        os.chmod(self.wrapper_socket(EGRESS_SOCKET), 0o666)  # connectable whichever user the backend runs as
        if self._sidecar.network == "apart":
            self._auditing: set[asyncio.Task[None]] = set()
            self._channels = PodChannels(self._sidecar, self._gate_refused)
            await self._channels.start()

    async def stop(self) -> None:
        if self._channels is not None:
            await self._channels.stop()
            await asyncio.gather(*self._auditing)  # the refusals' rows written before the audit closes
        if self._proxy is not None:
            await self._proxy.stop()

    def _gate_refused(self, refusal: Refusal) -> None:
        """A connection to the wrapper's gate refused (a tool's dial without the token): in the audit."""
        target = f"{refusal.peer} {refusal.name or '(no channel named)'}"
        if refusal.unreported:
            target += f" (and {refusal.unreported} more since the last)"
        writing = asyncio.get_running_loop().create_task(self._audit_network("channel", target, False, refusal.reason))
        self._auditing.add(writing)
        writing.add_done_callback(self._auditing.discard)

    def wrapper_socket(self, name: str) -> Path:
        """In the sockets folder, which the backend's container mounts read-only at the same path."""
        return self._sidecar.sockets / name

    def inside(self, name: str) -> Path:
        return self.wrapper_socket(name)

    def served_socket(self, name: str) -> Path:
        """In the sockets folder: read-only in the backend's container, so nothing there replaces it (a tool that
        connects reaches its own backend's port, as it does inside)."""
        return self._sidecar.sockets / SERVED / name

    @property
    def shares_network(self) -> bool:
        return self._sidecar.network == "shared"

    def programs_root(self) -> Path:
        """Read-only in the backend's container, at the same path."""
        return self._shown / PROGRAMS

    @property
    def _shown(self) -> Path:
        """Where what the wrapper makes for the backend to read goes: the sockets folder, which the backend's
        container mounts read-only; apart, the sockets folder is the wrapper's alone and `runtime.shown` is it."""
        return self._sidecar.shown or self._sidecar.sockets

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
        """`argv` as a stand-in that has the sidecar run it under the bridge. `own` folders are created here (the
        volume is shared); each `given` (source, place) is copied to its place anew, as the wrapper made it: no
        mount can show it there, and nothing of the last run is running to change it before the backend reads it."""
        assert self._proxy is not None, "start() first"
        for folder in own:
            folder.mkdir(parents=True, exist_ok=True)
        given = list(given)
        for source, place in given:
            copy_anew(source, place)
        env = self._read_only_config(env, programs)
        port = free_port()  # a pod's network is one: a port of this start's own for the bridge's proxy
        spec: dict[str, Any] = {"egress": str(self.wrapper_socket(EGRESS_SOCKET)), "proxy_port": port}
        handed: list[int] = []
        if not self.shares_network:  # loopback only there: endpoints forwarded, served ports handed over
            spec["forward"] = [[forward.port, forward.target] for forward in self._forwards]
            (self._sidecar.sockets / SERVED).mkdir(mode=0o755, exist_ok=True)
            listening = [(listening_socket(self.served_socket(name)), inside) for name, inside in serve]
            if self._channels is not None:  # in another pod: reached through its gate
                for served, inside in listening:
                    self._channels.serve(served, inside)
            else:
                spec["serve"] = [[served.detach(), inside] for served, inside in listening]
                handed = [descriptor for descriptor, _ in spec["serve"]]
        inner = [os.path.realpath(sys.executable), "-I", "-S", bridge.__file__, json.dumps(spec), "--", *argv]
        stand_in = {
            "socket": str(self._channels.sidecar_socket if self._channels else socket_path(self._sidecar.folders)),
            "timeout": self._sidecar.connect_timeout,
            "network": self._sidecar.network,
            "fds": handed,
            "watch": [str(place) for _, place in given],  # the backend's to write: watched while it runs
        }
        outer = [os.path.realpath(sys.executable), "-I", "-S", str(STAND_IN), json.dumps(stand_in), "--", *inner]
        return Wrapped(outer, {**env, **proxy_environment(port)}, tuple(handed))

    def _read_only_config(self, env: dict[str, str], programs: Iterable[Path]) -> dict[str, str]:
        """Each folder the wrapper made for the backend among `programs` (its config, in the backend's folders,
        which the backend's container can write) copied anew into the sockets folder, read-only there, and the
        variables naming it pointed at the copy: nothing a tool writes is loaded from it, in this run or the next."""
        folders = self._sidecar.folders
        for made in programs:
            if made.is_dir() and folders in made.parents:
                shown = self._shown / GIVEN / made.relative_to(folders)
                copy_anew(made, shown)
                env = {name: _moved(value, made, shown) for name, value in env.items()}
        return env

    def describe(self) -> dict[str, Any]:
        runtime = self._sidecar
        return {
            "kind": "sidecar",
            "mechanism": f"a container of its own, `a2a-wrap sidecar` at {socket_path(runtime.folders)}",
            "writable": [str(self._settings.backend.workdir), str(runtime.folders)],
            "read_only": [f"the sockets the wrapper serves ({runtime.sockets})"],
            "hidden": ["the wrapper's state, environment and processes (another container)"],
            "not_applied": [
                "the shield's masks and read-only paths in the workspace (the rules still decide each tool call)"
            ],
            "network": self._network(),
        }

    def _network(self) -> dict[str, Any]:
        allowed = sorted(map(str, self._endpoints)) + self._sidecar.hosts
        if self._sidecar.network == "apart":
            return {
                "own": "a pod of its own, whose NetworkPolicy admits only the channels to the wrapper's pod",
                "allowed": allowed,
                "other_hosts": "decided at the egress proxy, reached through the wrapper's gate (the only way out, "
                "where the cluster enforces NetworkPolicy)",
            }
        if self.shares_network:
            return {
                "shared": "the wrapper's container's (as a pod's containers share it)",
                "allowed": allowed,
                "other_hosts": "decided at the egress proxy for clients that use it (HTTP_PROXY); the pod's "
                "NetworkPolicy bounds the rest",
            }
        return {
            "own": "loopback only (the backend's container has no network)",
            "allowed": allowed,
            "other_hosts": "decided at the egress proxy, the only way out",
        }


def _moved(value: str, old: Path, new: Path) -> str:
    """`value` naming `old` or a path in it, as naming the same under `new`; any other value as it is."""
    if value == str(old) or value.startswith(f"{old}/"):
        return str(new) + value[len(str(old)) :]
    return value

"""The wrapper's end of the channels to a backend in a pod of its own (runtime.network: apart; channel.py).

The wrapper's gate serves the backend's pod exactly WRAPPER_CHANNELS (the egress proxy, the tool hook) out of the
wrapper's sockets folder, which in this mode is the wrapper's alone. Toward the backend's pod, a Unix socket of the
wrapper's sockets folder stands for each thing there it reaches: the sidecar (where stand-ins connect) and each
port the backend serves (where the backend's adapter connects, as it does to the socket a bridge serves).
"""

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path

from a2a_wrapper.addresses import host_port
from a2a_wrapper.config.runtimes import SidecarRuntime
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.sandbox.channel import Forward, Gate, Refusal, read_token, unix_opener
from a2a_wrapper.sandbox.plan import WRAPPER_CHANNELS
from a2a_wrapper.sandbox.pod_channels import PORT_PREFIX, SIDECAR

TO_BACKEND = "to-backend"  # in the sockets folder: the forwards into the backend's pod


class PodChannels:
    def __init__(self, runtime: SidecarRuntime, refused: Callable[[Refusal], None]) -> None:
        assert runtime.network == "apart" and runtime.token_file is not None and runtime.backend_gate is not None
        self._runtime = runtime
        self._refused = refused  # a connection to the wrapper's gate refused
        self._token = b""
        self._backend = host_port(runtime.backend_gate)
        self._gate: Gate | None = None
        self._forwards: dict[Path, Forward] = {}  # by the socket each listens on: a backend's restart replaces its own
        self._starting: set[asyncio.Task[None]] = set()

    @property
    def sidecar_socket(self) -> Path:
        return self._runtime.sockets / TO_BACKEND / f"{SIDECAR}.sock"

    async def start(self) -> None:
        """The token (a start without a usable one is refused naming the key), the gate, the sidecar's forward."""
        assert self._runtime.token_file is not None
        try:
            self._token = read_token(self._runtime.token_file)
        except ValueError as exc:
            raise ConfigError(f"runtime.token_file: {exc}") from exc
        sockets = self._runtime.sockets
        openers = {name: unix_opener(sockets / name) for name in WRAPPER_CHANNELS}
        self._gate = Gate(*host_port(self._runtime.gate), self._token, openers.get, self._refused)
        await self._gate.start()
        self.sidecar_socket.parent.mkdir(mode=0o700, exist_ok=True)
        forward = Forward(self.sidecar_socket, *self._backend, SIDECAR, self._token)
        await forward.start(mode=0o600)
        self._forwards[self.sidecar_socket] = forward

    async def stop(self) -> None:
        for task in self._starting:
            task.cancel()
        for forward in self._forwards.values():
            await forward.stop()
        if self._gate is not None:
            await self._gate.stop()

    def serve(self, listening: socket.socket, port: int) -> None:
        """Each connection to `listening` (a socket the backend's adapter connects to) reaches `port` in the
        backend's pod. Called while a backend starts, from the event loop."""
        path = Path(listening.getsockname())
        forward = Forward(path, *self._backend, f"{PORT_PREFIX}{port}", self._token)
        if (earlier := self._forwards.pop(path, None)) is not None:
            self._track(asyncio.get_running_loop().create_task(earlier.stop()))
        self._forwards[path] = forward
        self._track(asyncio.get_running_loop().create_task(forward.serve_on(listening)))

    def _track(self, task: "asyncio.Task[None]") -> None:
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

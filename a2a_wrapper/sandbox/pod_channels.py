"""`a2a-wrap channel`: the backend pod's end of its channels to the wrapper's pod (channel.py).

It runs in the backend pod's `channel` container, the only one there that mounts the channel's Secret. It serves:
- a gate for the wrapper: `sidecar` (the sidecar's socket in the backend's folders, how the wrapper's stand-ins
  start backends) and `port/N` (port N on the pod's loopback: a port the backend serves, OpenCode's);
- for each name the wrapper's gate serves (`egress.sock`, `hook.sock`), a Unix socket of the same name in
  `sockets`, an emptyDir the backend's container mounts read-only at the wrapper's sockets path: the bridge and
  the hook plugin find them where they would beside the wrapper, and nothing there can replace them.
"""

import asyncio
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from a2a_wrapper.addresses import host_port
from a2a_wrapper.sandbox.channel import Forward, Gate, Opener, loopback_opener, unix_opener

SIDECAR = "sidecar"
PORT_PREFIX = "port/"


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> "Address":
        return cls(*host_port(text))


@dataclass(frozen=True)
class NameResolver:
    """What a name the wrapper asks for opens in the backend's pod; anything else is refused."""

    sidecar_socket: Path

    def __call__(self, name: str) -> Opener | None:
        if name == SIDECAR:
            return unix_opener(self.sidecar_socket)
        number = name.removeprefix(PORT_PREFIX)
        if name.startswith(PORT_PREFIX) and number.isdigit() and 0 < int(number) <= 65535:
            return loopback_opener(int(number))
        return None


async def serve_backend_side(
    token: bytes, listen: Address, sidecar_socket: Path, wrapper: Address, sockets: Path, names: Sequence[str]
) -> None:
    """The gate and the forwards (in `sockets`, an existing folder) until SIGTERM or SIGINT."""
    gate = Gate(listen.host, listen.port, token, NameResolver(sidecar_socket))
    forwards = [Forward(sockets / name, wrapper.host, wrapper.port, name, token) for name in names]
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stopping.set)
    await gate.start()
    try:
        for forward in forwards:
            await forward.start()
        await stopping.wait()
    finally:
        for forward in forwards:
            await forward.stop()
        await gate.stop()

"""Runs inside the sandbox, in front of the backend: the sandbox's loopback joined to the wrapper's Unix sockets.

The sandbox has its own network namespace with nothing but `lo`. This helper, started by bubblewrap, listens
there and starts the backend as its child:
- `proxy`: 127.0.0.1:PORT, the HTTP proxy that HTTP(S)_PROXY names, piped as is to the wrapper's egress socket;
- `forward`: 127.0.0.1:PORT of a loopback service the config names (the offline model, an MCP server): each
  connection is a CONNECT to that address through the egress socket, so the wrapper decides and audits it too;
- `serve`: a listening Unix socket the wrapper made outside and handed over as a file descriptor, piped to a port
  the backend listens on inside (OpenCode's `serve`): how the wrapper reaches a server in a namespace it cannot
  dial. No path inside names that socket, so nothing inside can replace it or listen in its place; the descriptor
  is not passed on to the backend, and the bridge makes itself non-dumpable, so no process of the same user
  inside can take it over (ptrace, pidfd_getfd) or read its memory.

Only the standard library: it runs with `python -I -S`, before and apart from the wrapper's packages. It exits
with the backend's exit code; SIGTERM and SIGINT are passed on to the backend.
"""

import asyncio
import ctypes
import json
import os
import signal
import socket
import sys

_CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    try:
        await asyncio.gather(_pipe(a[0], b[1]), _pipe(b[0], a[1]))
    finally:
        a[1].close()
        b[1].close()


async def _connect(egress: str, target: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection through the egress socket: raw, or already CONNECT-ed to `target` (raises when refused)."""
    reader, writer = await asyncio.open_unix_connection(egress)
    if target is None:
        return reader, writer
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if head.split(b" ", 2)[1:2] != [b"200"]:
        writer.close()
        raise ConnectionRefusedError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
    return reader, writer


def _to_egress(egress: str, target: str | None):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await _connect(egress, target)
        except (OSError, asyncio.IncompleteReadError) as exc:
            print(f"sandbox bridge: {target or 'proxy'}: {exc}", file=sys.stderr, flush=True)
            writer.close()
            return
        await splice((reader, writer), upstream)

    return handle


def _to_port(port: int):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()  # the backend is not listening (yet, or any more)
            return
        await splice((reader, writer), upstream)

    return handle


async def _listen(spec: dict) -> list[asyncio.Server]:  # type: ignore[type-arg]
    egress = spec["egress"]
    servers = [await asyncio.start_server(_to_egress(egress, None), "127.0.0.1", spec["proxy_port"])]
    for port, target in spec.get("forward", []):
        servers.append(await asyncio.start_server(_to_egress(egress, target), "127.0.0.1", port))
    for descriptor, port in spec.get("serve", []):
        os.set_inheritable(descriptor, False)  # the bridge's alone: not the backend's, nor its tools'
        listening = socket.socket(fileno=descriptor)
        servers.append(await asyncio.start_unix_server(_to_port(port), sock=listening))
    return servers


def _not_dumpable() -> None:
    """No process inside may attach to the bridge or read its memory and descriptors (prctl PR_SET_DUMPABLE 0)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


async def _run(spec: dict, argv: list[str]) -> int:  # type: ignore[type-arg]
    _not_dumpable()
    servers = await _listen(spec)
    child = await asyncio.create_subprocess_exec(*argv)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, _pass_on, child, sig)
    code = await child.wait()
    for server in servers:
        server.close()
    return code if code >= 0 else 128 - code


def _pass_on(child: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    if child.returncode is None:
        child.send_signal(sig)


def main() -> None:
    spec, separator, *argv = sys.argv[1:]
    assert separator == "--" and argv, "usage: bridge.py SPEC_JSON -- COMMAND..."
    sys.exit(asyncio.run(_run(json.loads(spec), argv)))


if __name__ == "__main__":
    main()

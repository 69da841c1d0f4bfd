"""A TCP server on 127.0.0.1 standing for a service on the host (the model, the wrapper's own port) that counts
what reaches it, and one request through an egress proxy's Unix socket."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path


@contextlib.asynccontextmanager
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """Its port, and the first bytes of every connection it accepted (each is answered `pong` and closed)."""
    accepted: list[bytes] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(await reader.read(1000))
        writer.write(b"pong")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], accepted
    finally:
        server.close()
        await server.wait_closed()


async def through(proxy_socket: Path, request: bytes) -> bytes:
    """Everything the proxy answers `request` until it closes the connection."""
    reader, writer = await asyncio.open_unix_connection(proxy_socket)
    writer.write(request)
    try:
        return await asyncio.wait_for(reader.read(), 15)
    finally:
        writer.close()

"""An aiohttp application served on 127.0.0.1 until the block ends."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def aiohttp_served(app: web.Application, port: int = 0) -> AsyncIterator[int]:
    """Serves `app` on `port` (0: one the system chooses); yields the port."""
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()

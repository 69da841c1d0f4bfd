"""An ASGI app on a real uvicorn port, with the agent's own uvicorn configuration (its limits included)."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.types import ASGIApp

from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.frontend.edge.quiet_server import QuietServer
from a2a_wrapper.frontend.edge.server_config import uvicorn_config


@asynccontextmanager
async def served_app(app: ASGIApp, server: ServerSettings) -> AsyncIterator[None]:
    """`app` served on `server.host`:`server.port` until the block ends."""
    uvicorn_server = QuietServer(uvicorn_config(app, server))
    serving = asyncio.create_task(uvicorn_server.serve())
    try:
        async with asyncio.timeout(10):
            while not uvicorn_server.started:  # noqa: ASYNC110 (uvicorn offers no started event)
                await asyncio.sleep(0.02)
        yield
    finally:
        uvicorn_server.should_exit = True
        await serving

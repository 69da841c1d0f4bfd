"""The one uvicorn configuration an agent is served with (the fleet's registry too, with default limits), so
that tests run with the limits production has."""

from typing import Any

import uvicorn
from starlette.types import ASGIApp

from a2a_wrapper.config.settings import ServerSettings
from a2a_wrapper.frontend.edge.connection_limits import ConnectionLimits, limited_protocol


def uvicorn_config(app: ASGIApp, server: ServerSettings, **options: Any) -> uvicorn.Config:
    """`app` on `server`'s host and port within its connection limits; `options` are further uvicorn settings
    (the graceful-shutdown grace)."""
    limits = ConnectionLimits(server.header_timeout, server.body_timeout, server.max_connections, server.peer_share)
    return uvicorn.Config(
        app,
        host=server.host,
        port=server.port,
        http=limited_protocol(limits),
        ws="none",  # no route takes a WebSocket: an upgrade request is plain HTTP to the app
        timeout_keep_alive=server.idle_timeout,  # type: ignore[arg-type]  # annotated int; used as call_later's float
        log_config=None,
        lifespan="off",
        # uvicorn's default believes X-Forwarded-For and -Proto from 127.0.0.1: any local peer could name any address
        proxy_headers=False,
        **options,
    )

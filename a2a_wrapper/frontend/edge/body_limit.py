"""The whole request body, read before the app sees it, within a size and a time.

A body over the size is refused with 413, never truncated. A body that has not all arrived within the deadline
of its headers (a client trickling it, or one that stopped sending) is refused with 408 and its connection
closed: a slow client cannot hold a request, or the handler behind it, open. A client gone mid-body gets
nothing, and the handler never runs on part of a body.
"""

import asyncio
import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.frontend.edge.http_edge import replay
from a2a_wrapper.frontend.edge.refusal import TOO_LARGE, TOO_SLOW, client_name, refuse

log = logging.getLogger(__name__)


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int, timeout: float) -> None:
        self._app = app
        self._limit = limit
        self._timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await self._refuse_size(scope, send)
            return
        try:
            async with asyncio.timeout(self._timeout):
                body = await self._read_all(receive)
        except TimeoutError:
            who = client_name(scope.get("client"))
            log.debug("refused a request to %s from %s: body not whole within %s s", scope["path"], who, self._timeout)
            text = f"Request body not received whole within {self._timeout:g} seconds; nothing was processed."
            await refuse(scope, send, TOO_SLOW, text, close=True)
            return
        except ClientDisconnect:
            return  # nobody to answer
        if body is None:
            await self._refuse_size(scope, send)
            return
        await self._app(scope, replay(body, receive), send)

    async def _read_all(self, receive: Receive) -> bytes | None:
        """The body, or None past the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientDisconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _refuse_size(self, scope: Scope, send: Send) -> None:
        text = f"Request body larger than the limit of {self._limit} bytes; nothing was processed."
        await refuse(scope, send, TOO_LARGE, text)

"""Small ASGI layers at the HTTP edge, before any route: one spelling of every path, the card's dates, and the
reading and replay of a body a layer looks at before the app.

- A trailing slash names the same route (`POST /a2a/jsonrpc/` is `POST /a2a/jsonrpc`): a client that joins "/"
  to an interface URL, as the conformance suite does, must not get a 404 or a redirect a POST cannot follow.
- The card says when it last changed (`Last-Modified`, the agent's start: a card changes only with a restart on
  a new config), beside the ETag and Cache-Control a2a-sdk sends.
"""

from email.utils import formatdate

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class SlashFree:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            raw: bytes = scope.get("raw_path") or path.encode()
            scope = {**scope, "path": path.rstrip("/") or "/", "raw_path": raw.rstrip(b"/") or b"/"}
        await self._app(scope, receive, send)


class LastModified:
    def __init__(self, app: ASGIApp, path: str, since: float) -> None:
        self._app = app
        self._path = path
        self._header = (b"last-modified", formatdate(since, usegmt=True).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self._path:
            await self._app(scope, receive, send)
            return

        async def dated(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") in (200, 304):
                message = {**message, "headers": [*message.get("headers", []), self._header]}
            await send(message)

        await self._app(scope, receive, dated)


async def read_body(receive: Receive) -> bytes:
    """The request's whole body (what came of it, if the client went away first)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app after a layer has read the whole body: the body once, then the client's own messages
    (its disconnect, as the server would report it)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed

"""The request's A2A version, as every edge reads it; and the `A2A-Version` request parameter: "Clients MAY
provide the A2A-Version as a request parameter instead of a header" (A2A §3.6.1, `GET /tasks/task-123?A2A-Version=1.0`).
a2a-sdk reads only the header, so this layer, before every route, turns the parameter into the header when the
request has none; a header the client sent wins.
"""

from urllib.parse import parse_qsl

from a2a.utils.constants import VERSION_HEADER
from starlette.types import ASGIApp, Receive, Scope, Send

HEADER = VERSION_HEADER.lower().encode()


class VersionParam:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query: bytes = scope.get("query_string", b"")
        if scope["type"] == "http" and VERSION_HEADER.encode() in query:
            version = version_parameter(query)
            headers = scope.get("headers") or []
            if version is not None and not any(name == HEADER for name, _ in headers):
                scope = {**scope, "headers": [*headers, (HEADER, version.encode())]}
        await self._app(scope, receive, send)


def version_parameter(query: bytes) -> str | None:
    """The first `A2A-Version` parameter of a query string, or None."""
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if name == VERSION_HEADER:
            return value
    return None


def version_header(scope: Scope) -> str:
    """The request's `A2A-Version` header (a parameter has become one by then), "" without one."""
    values = (value for name, value in scope.get("headers") or [] if name == HEADER)
    return next(values, b"").decode("latin-1").strip()


def is_0_x(version: str) -> bool:
    """Whether a version a request names is one a2a-sdk reads as 0.3 (any 0.x)."""
    return version.split(".")[0] == "0"

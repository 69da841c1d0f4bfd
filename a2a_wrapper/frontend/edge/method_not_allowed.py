"""405, with `Allow`, for a path the agent serves asked with a method it does not take.

Starlette answers 405 only when no other route takes the path whole, and a2a-sdk's REST routes end in a mount of
every `/{tenant}/…` path: `GET /a2a/jsonrpc` or `DELETE /a2a/rest/tasks/{id}` fell through to that mount and got
404. This is the app's 404 handler: it runs only on a 404, and turns one whose path a route of the agent's own
takes (with other methods) into 405. Tenant paths are not looked at: they stay 404.
"""

from collections.abc import Awaitable, Callable, Iterable
from re import Pattern

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, compile_path

NotFoundHandler = Callable[[Request, Exception], Awaitable[Response]]


def method_not_allowed(routes: Iterable[BaseRoute]) -> NotFoundHandler:
    """The 404 handler for an app serving `routes` (mounts looked into, but for those with path parameters)."""
    served = list(_patterns(routes, ""))

    async def not_found(request: Request, exc: Exception) -> Response:
        detail, headers = "Not Found", None
        if isinstance(exc, HTTPException):
            detail, headers = exc.detail, exc.headers
        path = request.url.path
        allowed = {method for pattern, methods in served if pattern.match(path) for method in methods}
        if allowed and request.method not in allowed:
            return PlainTextResponse("Method Not Allowed", 405, headers={"Allow": ", ".join(sorted(allowed))})
        return PlainTextResponse(detail, 404, headers=headers)

    return not_found


def _patterns(routes: Iterable[BaseRoute], prefix: str) -> Iterable[tuple[Pattern[str], set[str]]]:
    """Each route's path (as Starlette matches it) and methods."""
    for route in routes:
        if isinstance(route, Route):
            yield compile_path(prefix + route.path)[0], route.methods or set()
        elif isinstance(route, Mount) and "{" not in route.path:  # a tenant's mount takes any path at all
            yield from _patterns(route.routes, prefix + route.path)

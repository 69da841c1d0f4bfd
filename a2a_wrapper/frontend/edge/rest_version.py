"""A REST request whose A2A version does not fit its path is told what to change, before a2a-sdk sees it.

a2a-sdk serves A2A 1.0's REST binding under `/a2a/rest/…` and 0.3's under `/a2a/rest/v1/…`, and reads a request
without `A2A-Version` as 0.3. Both mismatches got its generic sentence: "A2A version '0.3' is not supported by
this handler. Expected version '1.0'." (a 1.0 path without the header) or "A2A version '1.0' is not supported"
(a 0.3 path with it), which reads as if the agent did not speak 1.0. Here, as jsonrpc_edge does for methods:

- a 1.0 path without `A2A-Version`: 400, VERSION_NOT_SUPPORTED, saying to send the header;
- a 0.3 path with an `A2A-Version` other than 0.x: 400, VERSION_NOT_SUPPORTED, naming the 1.0 path to call,
  or saying to drop the header.

Only a path and method that a route serves is looked at; anything else goes on as it came (the SDK still refuses,
with its own sentence, a version neither binding speaks).
"""

from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import VersionNotSupportedError
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.frontend.edge.version_param import is_0_x, version_header

V03 = "/v1/"  # after the REST base path: A2A 0.3's paths
NEEDS_VERSION = (
    "{method} {path} is an A2A 1.0 REST path: send the header `A2A-Version: 1.0` with it (a request without the "
    "header is read as A2A 0.3, whose REST paths start {base}/v1/)"
)
NEEDS_NO_VERSION = (
    "{method} {path} is an A2A 0.3 REST path, but the request says `A2A-Version: {version}`: call {method} "
    "{path_1_0} (A2A 1.0) with that header, or send this one without the header (read as A2A 0.3)"
)
RENAMED_1_0 = {"card": "extendedAgentCard"}  # 0.3 REST names that 1.0 changed; the others only lost /v1


class RestVersionEdge:
    def __init__(self, app: ASGIApp, base: str, routes: list[BaseRoute]) -> None:
        self._app = app
        self._base = base
        self._routes = [route for route in routes if isinstance(route, Route) and route.path.startswith(base)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(self._base + "/") and self._served(scope):
            sentence = self._mismatch(scope, path)
            if sentence is not None:
                body = build_rest_error_payload(VersionNotSupportedError(message=sentence))
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def _served(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] is Match.FULL for route in self._routes)

    def _mismatch(self, scope: Scope, path: str) -> str | None:
        version_text = version_header(scope)
        method, rest = scope["method"], path[len(self._base) :]
        if not rest.startswith(V03):
            return None if version_text else NEEDS_VERSION.format(method=method, path=path, base=self._base)
        if not version_text or is_0_x(version_text):
            return None
        name, _, tail = rest[len(V03) :].partition("/")
        path_1_0 = f"{self._base}/{RENAMED_1_0.get(name, name)}" + (f"/{tail}" if tail else "")
        return NEEDS_NO_VERSION.format(method=method, path=path, version=version_text, path_1_0=path_1_0)

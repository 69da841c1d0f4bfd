"""Who may use the operator endpoint: the fleet's console, with the key read from `console.key_env` at start.

The key comes as `Authorization: Bearer <key>`, compared in constant time (frontend/auth.py's `Callers`). The
check runs before anything reads the request's body. Without a key configured the endpoint is closed: every call
is refused with 403 and a sentence naming the variable.
"""

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_wrapper.config.settings import ConsoleSettings
from a2a_wrapper.frontend.auth import Callers, bearer_token

CONSOLE = "console"


class ConsoleKey:
    """ASGI middleware letting through only requests that carry the console's key."""

    def __init__(self, app: ASGIApp, console: ConsoleSettings) -> None:
        self._app = app
        key = console.key()
        self._keys = Callers({CONSOLE: key}) if key else None
        self._closed = (
            f"The operator endpoint is closed: the environment variable {console.key_env} (console.key_env) "
            "holds no key for the console."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        refusal = self._refusal(Headers(scope=scope))
        if refusal is None:
            await self._app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

    def _refusal(self, headers: Headers) -> JSONResponse | None:
        if self._keys is None:
            return JSONResponse({"error": self._closed}, status_code=403)
        token = bearer_token(headers)
        if token is None:
            return _unauthorized("The operator endpoint needs the console's key: send `Authorization: Bearer <key>`.")
        if self._keys.identify(token) is None:
            return _unauthorized("The key given is not the console's key.")
        return None


def _unauthorized(sentence: str) -> JSONResponse:
    return JSONResponse({"error": sentence}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

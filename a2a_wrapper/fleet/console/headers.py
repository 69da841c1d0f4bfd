"""The headers every console response carries: a content security policy that allows only the console's own
files (no inline script or style, no other origin, no framing), no MIME sniffing, no referrer, no caching."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_RAW = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]


class SecurityHeaders:
    """ASGI middleware: SECURITY_HEADERS on every response under `prefix`, errors and 404s included."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                ours = {name for name, _ in _RAW}
                kept = [(name, value) for name, value in message.get("headers", []) if name.lower() not in ours]
                message = {**message, "headers": kept + _RAW}
            await send(message)

        await self.app(scope, receive, send_secured)

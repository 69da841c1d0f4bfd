"""Who may use the console, checked on every request.

With operators configured, the page and the API need a signed-in session. Without operators, nobody signs in:
only a loopback peer is served (as operator "local"), and only under a loopback host name, so that a web page
elsewhere cannot reach it through DNS rebinding. Every action (a POST) needs, besides, the session's CSRF token
(the X-CSRF-Token header, or a form's `csrf` field) and, when the browser sends an Origin, one matching the Host.
"""

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from a2a_wrapper.fleet.console.operators import LOCAL_OPERATOR, Operators, Sessions

SESSION_COOKIE = "a2a_console"
CSRF_HEADER = "x-csrf-token"
LOOPBACK_NAMES = ("localhost",)
SAME_SITE = ("same-origin", "none")  # Sec-Fetch-Site of the console's own page, and of what the user typed


@dataclass(frozen=True)
class Visitor:
    """Who a request comes from: the operator and the CSRF token its actions must carry."""

    operator: str
    csrf: str


class Gate:
    def __init__(self, operators: Operators, sessions: Sessions | None = None) -> None:
        self.operators = operators
        self.sessions = sessions or Sessions()
        self._local = Visitor(LOCAL_OPERATOR, secrets.token_urlsafe(32))

    @property
    def loopback_only(self) -> bool:
        return not self.operators.configured

    def refusal(self, request: Request) -> str | None:
        """Why this request may not reach the console at all; None when it may."""
        if not self.loopback_only:
            return None
        peer = request.client.host if request.client else ""
        if not is_loopback_address(peer):
            return (
                "this console has no operators (registry.operators in the fleet file), so it answers only "
                "on the registry's own machine, over loopback"
            )
        if not is_loopback_host(request.headers.get("host", "")):
            return "this console has no operators, so it answers only under a loopback name (127.0.0.1, localhost)"
        return None

    def visitor(self, request: Request) -> Visitor | None:
        """The operator behind this request; None when nobody is signed in."""
        if self.loopback_only:
            return self._local
        session = self.sessions.find(request.cookies.get(SESSION_COOKIE))
        return Visitor(session.operator, session.csrf) if session is not None else None

    def action_refusal(self, request: Request, visitor: Visitor, token: str | None) -> str | None:
        """Why this action is refused (a foreign Origin, a missing or wrong CSRF token); None when it may go on."""
        origin_refusal = foreign_origin(request)
        if origin_refusal is not None:
            return origin_refusal
        if not token or not hmac.compare_digest(token.encode(), visitor.csrf.encode()):
            return "the page's CSRF token is missing or wrong: reload the console and try again"
        return None


def foreign_origin(request: Request) -> str | None:
    """A sentence when the browser says the request comes from a page elsewhere.

    The console's own pages send no referrer, so a browser names their POSTs' Origin "null"; it still says
    where they come from in Sec-Fetch-Site. A "null" Origin without a same-origin Sec-Fetch-Site is refused."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if site is not None and site not in SAME_SITE:
        return f"a request from another site ({site}) is not one from this console's own page"
    if origin is None:
        return None
    if origin == "null":
        return None if site == "same-origin" else "a request of unknown origin is not one from this console's page"
    if urlsplit(origin).netloc.casefold() != request.headers.get("host", "").casefold():
        return f"a request from {origin!r} is not one from this console's own page"
    return None


def is_loopback_address(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_host(host_header: str) -> bool:
    """The Host header names this machine: 127.0.0.1, [::1] or localhost, with any port."""
    hostname = urlsplit("//" + host_header).hostname or ""
    return hostname in LOOPBACK_NAMES or is_loopback_address(hostname)

"""Who may use the console, checked on every request: a signed-in session, always.

No peer is trusted for its address: a request from loopback is as anonymous as one from elsewhere (an agent's
tool whose egress reached the registry's port comes from loopback too). An operator signs in with a name and a
key (registry.operators in the fleet file); with no operators configured, the fleet prints a one-time sign-in
link on its terminal (links.py), and whoever opens it signs in as operator "owner". Either way the browser then
holds a session cookie (HttpOnly, SameSite=Strict, Secure over TLS).

Every action (a POST) needs, besides, the session's CSRF token (the X-CSRF-Token header, or a form's `csrf`
field) and, when the browser sends an Origin, one matching the Host.
"""

import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from a2a_wrapper.fleet.console.links import SignInLinks
from a2a_wrapper.fleet.console.operators import Operators, Sessions

SESSION_COOKIE = "a2a_console"
CSRF_HEADER = "x-csrf-token"
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
        # No operators: the only way in is a one-time link the fleet prints; with operators, there is none.
        self.links = None if operators.configured else SignInLinks()

    def visitor(self, request: Request) -> Visitor | None:
        """The operator behind this request; None when nobody is signed in."""
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

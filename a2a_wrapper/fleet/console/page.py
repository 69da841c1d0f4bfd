"""The console's HTML: the page (with the session's CSRF token in a meta tag) and the two ways to sign in (an
operator's form, the one-time link's page), from the templates in static/, every value put in escaped. The page's
script and style are files of their own: the content security policy allows no inline ones."""

import html
import re
from functools import cache
from importlib import resources

from starlette.responses import HTMLResponse, Response

STATIC_TYPES = {"console.js": "text/javascript", "console.css": "text/css"}  # the files a browser may fetch
LINK_BANNER = (
    "No operators are configured (registry.operators in the fleet file): you signed in with the fleet's one-time "
    "link, and your decisions are recorded as operator “owner”."
)
SIGN_IN_SLOT = "<!-- how to sign in -->"  # in signin.html, where one way to sign in goes
_SLOT = re.compile(r"\{\{(\w+)\}\}")


@cache
def _text(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _render(template: str, **values: str) -> str:
    return _SLOT.sub(lambda match: html.escape(values[match[1]]), _text(template))


def console_page(operator: str, csrf: str, signed_in_by_link: bool) -> HTMLResponse:
    banner = LINK_BANNER if signed_in_by_link else ""
    return HTMLResponse(_render("console.html", operator=operator, csrf=csrf, banner=banner))


def sign_in_form(message: str = "", status_code: int = 200) -> HTMLResponse:
    """An operator's name and key, posted to /console/login."""
    return _sign_in_page("signin-key.html", message, status_code)


def link_sign_in(message: str = "", status_code: int = 200) -> HTMLResponse:
    """How to sign in to a console without operators: with the link the fleet printed (and how to get another)."""
    return _sign_in_page("signin-link.html", message, status_code)


def _sign_in_page(way: str, message: str, status_code: int) -> HTMLResponse:
    page = _text("signin.html").replace(SIGN_IN_SLOT, _render(way, message=message))
    return HTMLResponse(page, status_code=status_code)


def static_file(name: str) -> Response:
    if name not in STATIC_TYPES:
        return Response("no such file", status_code=404, media_type="text/plain")
    return Response(_text(name), media_type=STATIC_TYPES[name])

"""The console's HTML: the page (with the session's CSRF token in a meta tag) and the sign-in form, from the
templates in static/, every value put in escaped. The page's script and style are files of their own: the
content security policy allows no inline ones."""

import html
import re
from functools import cache
from importlib import resources

from starlette.responses import HTMLResponse, Response

STATIC_TYPES = {"console.js": "text/javascript", "console.css": "text/css"}  # the files a browser may fetch
LOOPBACK_BANNER = (
    "No operators are configured (registry.operators in the fleet file): this console answers only on this "
    "machine, over loopback, without sign-in; decisions are made as operator “local”."
)
_SLOT = re.compile(r"\{\{(\w+)\}\}")


@cache
def _text(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _render(template: str, **values: str) -> str:
    return _SLOT.sub(lambda match: html.escape(values[match[1]]), _text(template))


def console_page(operator: str, csrf: str, loopback_only: bool) -> HTMLResponse:
    banner = LOOPBACK_BANNER if loopback_only else ""
    return HTMLResponse(_render("console.html", operator=operator, csrf=csrf, banner=banner))


def sign_in_form(message: str = "", status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(_render("signin.html", message=message), status_code=status_code)


def static_file(name: str) -> Response:
    if name not in STATIC_TYPES:
        return Response("no such file", status_code=404, media_type="text/plain")
    return Response(_text(name), media_type=STATIC_TYPES[name])

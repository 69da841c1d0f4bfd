"""The card's endpoint: each generation of clients gets the card it reads, chosen by the request's A2A-Version.

- `1.x` gets the 1.0 card: valid against the 1.0 AgentCard schema, nothing at its top level but 1.0 fields (the
  0.3 interfaces stay in `supportedInterfaces`, marked `protocolVersion: "0.3"`). The 1.0 SDKs' clients ask so
  (@a2a-js/sdk's resolver, a2a-sdk's ClientFactory).
- No version, or `0.x`, gets the card 0.3 clients read: the 1.0 fields plus 0.3's `url`, `preferredTransport`,
  `protocolVersion` and `additionalInterfaces` (a2a-sdk's compatible card). The spec reads an empty A2A-Version as
  0.3 (§3.6.2), and 0.3 clients send none; a2a-sdk 1.x's bare A2ACardResolver sends none and reads this shape too.
- Any other version is VersionNotSupported: HTTP 400 with the protocol's error body.

Both bodies are built once, at start: each has its own ETag (`If-None-Match` gets a 304), and `Vary: A2A-Version`
keeps a shared cache from handing one generation's card to the other. The version may also come as the
`A2A-Version` query parameter (see version_param).
"""

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Literal

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCard
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import VersionNotSupportedError
from google.protobuf.json_format import MessageToDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Generation = Literal["1.0", "0.3"]
VERSION = re.compile(r"(\d+)(?:\.\d+){0,2}")  # Major[.Minor[.Patch]]; a patch never matters (§3.6)
VARY = {"Vary": VERSION_HEADER}


@dataclass(frozen=True)
class CardBody:
    json: bytes
    etag: str

    @classmethod
    def of(cls, card: dict[str, object]) -> "CardBody":
        body = json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode()
        return cls(body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')  # strong: the bytes never vary


def card_routes(card: AgentCard, path: str, cache_control: str) -> list[Route]:
    """The GET route serving `card` at `path` in the shape the caller's A2A-Version asks for."""
    bodies: dict[Generation, CardBody] = {
        "1.0": CardBody.of(MessageToDict(card)),
        "0.3": CardBody.of(agent_card_to_dict(card)),
    }

    async def serve_card(request: Request) -> Response:
        try:
            body = bodies[generation(request.headers.get(VERSION_HEADER, ""))]
        except VersionNotSupportedError as error:
            return JSONResponse(build_rest_error_payload(error), status_code=400, headers=VARY)
        headers = {"ETag": body.etag, "Cache-Control": cache_control, **VARY}
        if matches(request.headers.get("if-none-match", ""), body.etag):
            return Response(status_code=304, headers=headers)
        return Response(body.json, media_type="application/json", headers=headers)

    return [Route(path, serve_card, methods=["GET"])]


def generation(version: str) -> Generation:
    """The card a request's A2A-Version reads: 1.0 for 1.x, 0.3 for 0.x or none."""
    value = version.strip()
    found = VERSION.fullmatch(value)
    major = found.group(1) if found else None
    if not value or major == "0":
        return "0.3"
    if major == "1":
        return "1.0"
    raise VersionNotSupportedError(
        message=f"A2A-Version {value!r} is not supported: this agent speaks A2A 1.0 (send A2A-Version: 1.0) "
        "and 0.3 (send 0.3, or no version)."
    )


def matches(if_none_match: str, etag: str) -> bool:
    """Whether If-None-Match names this body; the comparison is weak (RFC 9110 §13.1.2)."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag.removeprefix("W/") in tags

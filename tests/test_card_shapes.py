"""The card each client generation reads, chosen by A2A-Version (header or request parameter), over HTTP in process."""

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.types import AgentCard
from starlette.applications import Starlette

from a2a_wrapper.config.settings import AgentSettings, CardSettings
from a2a_wrapper.frontend.card import build_card
from a2a_wrapper.frontend.card_route import card_routes
from a2a_wrapper.frontend.edge.version_param import VersionParam
from tests.fixtures.a2a_card_schema import schema_errors
from tests.helpers.auth import AUTH, KEYS

CARD = "/.well-known/agent-card.json"
CACHE = "public, max-age=300"
LEGACY_FIELDS = {"url", "protocolVersion", "preferredTransport", "additionalInterfaces"}
BASE = "http://agent.test:8000"


def settings(**fields: Any) -> AgentSettings:
    return AgentSettings(card=CardSettings(name="shapes"), server={"advertise_url": BASE}, **fields)


@asynccontextmanager
async def served(card: AgentCard) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the card's route behind the version layer, in process."""
    app = VersionParam(Starlette(routes=card_routes(card, CARD, CACHE)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=10) as client:
        yield client


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with served(build_card(settings())) as client:
        yield client


ASKED = {  # how the request names its version: the card it gets
    "no version (a 0.3 client, a2a-sdk 1.x's resolver)": ({}, "", "0.3"),
    "0.3": ({"A2A-Version": "0.3"}, "", "0.3"),
    "0.3.0, patch ignored": ({"A2A-Version": "0.3.0"}, "", "0.3"),
    "1.0 (@a2a-js/sdk's resolver)": ({"A2A-Version": "1.0"}, "", "1.0"),
    "1": ({"A2A-Version": "1"}, "", "1.0"),
    "1.1, a later minor": ({"A2A-Version": "1.1"}, "", "1.0"),
    "1.0 as the request parameter": ({}, "?A2A-Version=1.0", "1.0"),
    "the header wins over the parameter": ({"A2A-Version": "0.3"}, "?A2A-Version=1.0", "0.3"),
}


@pytest.mark.parametrize(("headers", "query", "shape"), ASKED.values(), ids=ASKED.keys())
async def test_the_version_asked_picks_the_card(
    http: httpx.AsyncClient, headers: dict[str, str], query: str, shape: str
) -> None:
    response = await http.get(CARD + query, headers=headers)
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    assert response.headers["Vary"] == "A2A-Version" and response.headers["Cache-Control"] == CACHE
    card = response.json()
    assert card["name"] == "shapes"
    if shape == "1.0":
        assert not LEGACY_FIELDS & card.keys(), "no 0.3 field at the top of the 1.0 card"
        assert schema_errors(card) == []
    else:
        assert (card["url"], card["preferredTransport"], card["protocolVersion"]) == (
            f"{BASE}/a2a/jsonrpc",
            "JSONRPC",
            "0.3",
        )
        assert card["additionalInterfaces"] == [{"transport": "HTTP+JSON", "url": f"{BASE}/a2a/rest"}]


async def test_the_1_0_card_keeps_the_0_3_interfaces_in_supported_interfaces(http: httpx.AsyncClient) -> None:
    card = (await http.get(CARD, headers={"A2A-Version": "1.0"})).json()
    listed = {(i["protocolBinding"], i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]}
    assert listed == {
        (binding, version, f"{BASE}{path}")
        for version in ("1.0", "0.3")
        for binding, path in (("JSONRPC", "/a2a/jsonrpc"), ("HTTP+JSON", "/a2a/rest"))
    }


async def test_the_schema_refuses_the_0_3_card(http: httpx.AsyncClient) -> None:
    """The check has teeth: the card 0.3 clients read is what the 1.0 schema calls version drift."""
    errors = schema_errors((await http.get(CARD)).json())
    assert len(errors) == 1 and all(f"'{field}'" in errors[0] for field in LEGACY_FIELDS), errors


async def test_a2a_sdk_rebuilds_the_same_card_from_either_shape(http: httpx.AsyncClient) -> None:
    legacy = (await http.get(CARD)).json()
    current = (await http.get(CARD, headers={"A2A-Version": "1.0"})).json()
    assert parse_agent_card(copy.deepcopy(legacy)) == parse_agent_card(current) == build_card(settings())


async def test_a_guarded_cards_1_0_shape_is_schema_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Security schemes are where 0.3's fields would otherwise leak into the 1.0 card (`type`, `in`, `scheme`)."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    async with served(build_card(settings(auth=AUTH))) as client:
        card = (await client.get(CARD, headers={"A2A-Version": "1.0"})).json()
    assert set(card["securitySchemes"]) == {"bearer", "apiKey"} and schema_errors(card) == []


REFUSED = ["2.0", "10.0", "v1.0", "banana", "1.0; drop table"]


@pytest.mark.parametrize("version", REFUSED)
async def test_an_unsupported_version_is_version_not_supported(http: httpx.AsyncClient, version: str) -> None:
    for response in (
        await http.get(CARD, headers={"A2A-Version": version}),
        await http.get(CARD, params={"A2A-Version": version}),
    ):
        assert response.status_code == 400 and response.headers["Vary"] == "A2A-Version"
        error = response.json()["error"]
        assert (error["code"], error["status"]) == (400, "FAILED_PRECONDITION")
        assert error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
        assert f"A2A-Version {version!r} is not supported" in error["message"]
        assert "1.0" in error["message"] and "0.3" in error["message"]


async def test_each_version_has_its_own_etag(http: httpx.AsyncClient) -> None:
    legacy = await http.get(CARD)
    current = await http.get(CARD, headers={"A2A-Version": "1.0"})
    assert legacy.headers["ETag"] != current.headers["ETag"]
    for response, version in ((legacy, "0.3"), (current, "1.0")):
        again = await http.get(CARD, headers={"A2A-Version": version, "If-None-Match": response.headers["ETag"]})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["ETag"] == response.headers["ETag"] and again.headers["Vary"] == "A2A-Version"
    crossed = await http.get(CARD, headers={"A2A-Version": "1.0", "If-None-Match": legacy.headers["ETag"]})
    assert crossed.status_code == 200 and crossed.json() == current.json(), "a 0.3 tag never revalidates 1.0"
    listed = await http.get(CARD, headers={"If-None-Match": f'"other", W/{legacy.headers["ETag"]}'})
    assert listed.status_code == 304, "one of several tags, weakly compared"

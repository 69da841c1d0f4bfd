"""The fleet as an AI Catalog (the AI Catalog draft, `application/ai-catalog+json`): one entry per agent, pointing at
its A2A card, for discovery tools that read catalogs rather than the registry's own /agents.

An entry names its agent by a URN of the agent's name (names are unique in a fleet), says what it is by the A2A
card's media type, and carries the card's description, its skills' ids and tags, and its version when the card is
known (an agent not reached yet is listed by name and card URL only).
"""

from typing import Any

CATALOG_PATH = "/.well-known/ai-catalog.json"
CATALOG_MEDIA_TYPE = "application/ai-catalog+json"
SPEC_VERSION = "1.0"
AGENT_CARD = "application/a2a-agent-card+json"
HOST = {"displayName": "a2a-wrap fleet registry"}


def ai_catalog(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The catalog of the registry's entries (as `describe_agent` builds them)."""
    return {"specVersion": SPEC_VERSION, "host": HOST, "entries": [_entry(entry) for entry in entries]}


def _entry(agent: dict[str, Any]) -> dict[str, Any]:
    tags = sorted({str(tag) for skill in agent["skills"] for tag in [skill["id"], *skill["tags"]] if tag})
    entry: dict[str, Any] = {
        "identifier": f"urn:a2a-wrapper:agent:{agent['name']}",
        "displayName": agent["name"],
        "mediaType": AGENT_CARD,
        "url": agent["card_url"],
    }
    optional = {"description": agent.get("description"), "version": agent.get("version"), "tags": tags}
    entry |= {key: value for key, value in optional.items() if value}
    return entry | {"metadata": {"a2a-wrapper": {"state": agent["state"], "url": agent["url"]}}}

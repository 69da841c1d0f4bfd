"""The Copilot SDK's session events with their `data` left as the CLI sent it, unless the SDK itself reads it typed.

github-copilot-sdk 1.0.27 turns every `session.event` notification into a `SessionEvent` whose `data` is one of
~200 generated classes: a `match` over every event type in turn, then the class's `from_dict` down to each nested
field (uuids, enums, timestamps). The wrapper reads `event.type` and `event.data.to_dict()`, the wire form again;
the SDK reads typed `data` only for the events it answers itself (`Session._handle_broadcast_event`: external
tools, permission requests, MCP sign-ins, commands, elicitations, canvases, capabilities). So those are parsed as
the SDK parses them, and every other event gets the SDK's own `RawSessionEventData`, which holds the wire form and
gives it back from `to_dict()`; the envelope (type, id, timestamp, agent, parent) is read as the SDK reads it.
"""

from collections.abc import Callable
from typing import Any

from copilot import client
from copilot.generated import session_events as sdk
from copilot.generated.session_events import RawSessionEventData, SessionEvent, SessionEventType

# The types whose data the SDK matches on (Session._handle_broadcast_event): tests/test_copilot_light_events.py
# reads that method's source and fails on a type it handles that is missing here.
SDK_READS = frozenset(
    {
        "capabilities.changed",
        "command.execute",
        "elicitation.requested",
        "external_tool.completed",
        "external_tool.requested",
        "mcp.oauth_required",
        "permission.requested",
        "session.canvas.closed",
        "session.canvas.opened",
    }
)
Parse = Callable[[Any], SessionEvent]


def light_first(sdk_parse: Parse) -> Parse:
    def parse(wire: Any) -> SessionEvent:
        kind = wire.get("type") if isinstance(wire, dict) else None
        if not isinstance(kind, str) or kind in SDK_READS:
            return sdk_parse(wire)
        return _raw(wire, kind)

    parse.sdk_parse = sdk_parse  # type: ignore[attr-defined]  # what it falls back to, and marks it installed
    return parse


def _raw(wire: dict[str, Any], kind: str) -> SessionEvent:
    """`SessionEvent.from_dict`'s envelope, field by field with its parsers, around the data as it came."""
    event_type = SessionEventType(kind)
    return SessionEvent(
        data=RawSessionEventData(wire.get("data")),
        id=sdk.from_uuid(wire.get("id")),
        timestamp=sdk.from_datetime(wire.get("timestamp")),
        type=event_type,
        agent_id=sdk.from_union([sdk.from_none, sdk.from_str], wire.get("agentId")),
        ephemeral=sdk.from_union([sdk.from_none, sdk.from_bool], wire.get("ephemeral")),
        parent_id=sdk.from_union([sdk.from_none, sdk.from_uuid], wire.get("parentId")),
        raw_type=kind if event_type is SessionEventType.UNKNOWN else None,
    )


def light_events() -> None:
    """Install `light_first` where the SDK's client parses session events, once."""
    if not hasattr(client.session_event_from_dict, "sdk_parse"):
        client.session_event_from_dict = light_first(client.session_event_from_dict)  # type: ignore[assignment]

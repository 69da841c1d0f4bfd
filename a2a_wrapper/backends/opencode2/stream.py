"""OpenCode 2's event stream in the shape the shared event stream routes (opencode/event_stream.py): one stream,
`/api/event`, for every directory; each event's `data` read as its `properties`, where its `sessionID` is."""

from typing import Any

from a2a_wrapper.backends.opencode.event_stream import Dialect
from a2a_wrapper.backends.opencode2.translate import TRANSLATED


def shaped(event: dict[str, Any]) -> dict[str, Any]:
    """`{type, data}` as `{type, properties}`; a form's session and a new session's parent where routing looks
    for them (`sessionID`, `info`)."""
    data = event.get("data") if isinstance(event.get("data"), dict) else {}
    assert isinstance(data, dict)
    kind = str(event.get("type") or "")
    form = data.get("form")
    if isinstance(form, dict) and "sessionID" not in data:  # a form names its session inside
        data = {**data, "sessionID": form.get("sessionID")}
    if kind == "session.created":
        info = data.get("info") if isinstance(data.get("info"), dict) else data
        assert isinstance(info, dict)
        if info.get("parentID") and info.get("id"):
            data = {**data, "info": {"id": info["id"], "parentID": info["parentID"]}}
    return {"type": kind, "properties": data}


DIALECT = Dialect("/api/event", TRANSLATED, shaped)

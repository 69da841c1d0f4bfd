"""The Copilot SDK's timestamps parsed by the standard library, not by dateutil.

github-copilot-sdk 1.0.27's generated models (`copilot.generated.session_events` and `.rpc`, whose parser
`copilot.client` imports by name) parse every timestamp with `dateutil.parser.parse`, ~53 µs each. Every session
event carries one and every session lifecycle event two: ~50 in a trivial turn, which cost the wrapper's event
loop 7 ms of CPU (A/B in one process, 2026-12-02). The CLI writes ISO 8601 (`2026-12-02T03:40:00.123Z`), which
`datetime.fromisoformat` reads (Python 3.11 and later) in ~0.3 µs into the same instant; anything it does not read
still goes to the SDK's own parser, which keeps its errors.
"""

from collections.abc import Callable
from datetime import datetime
from types import ModuleType
from typing import Any

from copilot import client
from copilot.generated import rpc, session_events

# each calls `from_datetime` by its module-level name (tests/test_copilot_timestamps.py checks there are no others)
SDK_MODULES: tuple[ModuleType, ...] = (session_events, rpc, client)
Parse = Callable[[Any], datetime]


def iso_first(sdk_parse: Parse) -> Parse:
    """`sdk_parse` behind `datetime.fromisoformat`: ISO 8601 text parses fast, the rest as the SDK parses it."""

    def parse(value: Any) -> datetime:
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                pass
        return sdk_parse(value)

    parse.sdk_parse = sdk_parse  # type: ignore[attr-defined]  # what it falls back to, and marks it installed
    return parse


def fast_timestamps() -> None:
    """Install `iso_first` in the SDK's generated modules, once."""
    for module in SDK_MODULES:
        if not hasattr(module.from_datetime, "sdk_parse"):
            module.from_datetime = iso_first(module.from_datetime)  # type: ignore[attr-defined]

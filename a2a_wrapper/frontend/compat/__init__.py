"""Every change the agent makes to another library's code, in one place, each for the exact version it was written
against.

Each module here replaces a name inside a2a-sdk, protobuf's JSON printer or sse-starlette with the agent's own
(the module says what, why, and what it was measured to buy). Nothing is replaced at import: `install()` does it,
when an agent builds its app and request handler (frontend/app.py), and bench/sdk_floor.py measures the SDK with
and without them. Before replacing anything, each override checks the installed version of every library it
reaches into; on any other version it is skipped with one warning, and that library's own code runs.
tests/test_compat.py is the tripwire: it fails when a pin moves without the override being looked at again.
"""

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Override:
    module: str  # the module of this package that holds it
    function: str  # the module's function that installs it
    written_for: tuple[tuple[str, str], ...]  # (distribution, exact version) for each library it reaches into
    replaces: tuple[str, ...]  # "module:name" of each object it replaces, for the tripwire


A2A_SDK = ("a2a-sdk", "1.3.0")
OVERRIDES = (
    Override("sdk_json", "use_fast_json", (A2A_SDK,), ("a2a.utils.json_utils:dumps",)),
    Override(
        "sdk_queues",
        "use_loop_queues",
        (A2A_SDK,),
        (
            "a2a.utils._async_queue_compat:create_async_queue",
            "a2a.server.events.event_queue:create_async_queue",
            "a2a.server.events.event_queue_v2:create_async_queue",
            "a2a.server.agent_execution.active_task:create_async_queue",
        ),
    ),
    Override(
        "sdk_dispatch", "use_direct_dispatch", (A2A_SDK,), ("a2a.server.agent_execution.active_task:EventQueueSource",)
    ),
    Override(
        "sdk_validation",
        "use_planned_validation",
        (A2A_SDK, ("protobuf", "7.36.2")),
        ("a2a.utils.proto_utils:_validate_proto_required_fields_internal",),
    ),
    Override(
        "sdk_v03_final",
        "use_v03_final_at_pauses",
        (A2A_SDK,),
        ("a2a.compat.v0_3.conversions:to_compat_task_status_update_event",),
    ),
    Override("wire_printer", "install", (("protobuf", "7.36.2"),), ("google.protobuf.json_format:_Printer",)),
    Override(
        "event_stream_response",
        "use_event_streams",
        (A2A_SDK, ("sse-starlette", "3.7.1")),
        ("a2a.server.routes.common:EventSourceResponse",),
    ),
)


@cache  # a process's installed versions do not change; the app and the request handler both install
def installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def mismatches(override: Override, installed: Callable[[str], str | None] = installed_version) -> list[str]:
    """What differs from the versions the override was written for, each as a phrase; empty when none does."""
    return [
        f"{name} is {installed(name) or 'not installed'}, not {wanted}"
        for name, wanted in override.written_for
        if installed(name) != wanted
    ]


_warned: set[str] = set()


def install(installed: Callable[[str], str | None] = installed_version) -> None:
    """Installs each override whose libraries are at the versions it was written for; safe to call again."""
    for override in OVERRIDES:
        if differs := mismatches(override, installed):
            if override.module not in _warned:
                _warned.add(override.module)
                log.warning(
                    "%s: the library's own code runs instead of frontend/compat/%s.py (%s)",
                    ", ".join(differs),
                    override.module,
                    "; ".join(override.replaces),
                )
            continue
        getattr(importlib.import_module(f"{__name__}.{override.module}"), override.function)()

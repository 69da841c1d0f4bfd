"""a2a-sdk's tracing: off unless the operator turns it on, and while off, at no cost.

a2a-sdk wraps each method of its handler, queues and dispatchers in an OpenTelemetry span (`trace_class`,
`trace_function`). OpenTelemetry's API comes with the SDK's own dependency google-api-core, so that is a span
per internal call even with no tracer configured. With the SDK's switch off (OTEL_INSTRUMENTATION_A2A_SDK_ENABLED
=false) it is still a wrapper per call that makes a no-op span and logs at DEBUG: 87 calls and ~0.8 ms of CPU per
trivial turn, measured. So the switch is off unless the operator sets it, and while it is off the two decorators
are replaced, before the SDK's modules apply them, by ones that leave each method as it is.
"""

import os
from collections.abc import Callable
from typing import Any, TypeVar

SWITCH = "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"
Traced = TypeVar("Traced")


def untraced_sdk() -> None:
    """Call before the SDK's server modules are imported (a2a_wrapper/__init__.py does)."""
    os.environ.setdefault(SWITCH, "false")
    from a2a.utils import telemetry  # after the switch: the SDK reads it when this module is imported

    if telemetry.otel_installed and telemetry.otel_enabled:
        return  # the operator wants the SDK's spans
    telemetry.trace_function = _function_as_it_is  # type: ignore[assignment]
    telemetry.trace_class = _class_as_it_is


def _function_as_it_is(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    """`@trace_function` and `@trace_function(span_name=…)` alike."""
    return func if func is not None else _as_it_is


def _class_as_it_is(*_lists: Any, **_options: Any) -> Callable[[Traced], Traced]:
    return _as_it_is


def _as_it_is(decorated: Traced) -> Traced:
    return decorated

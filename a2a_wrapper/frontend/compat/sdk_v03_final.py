"""A2A 0.3's status updates say `final: true` when the task pauses for input or authentication, as 0.3 means it.

In A2A 0.3 a TaskStatusUpdateEvent's `final` says "this is the final event in the stream for this interaction",
and a stream ends when its task reaches input-required (or auth-required) as at its end: the caller answers with a
new message, on a new stream. a2a-sdk 1.3.0 ends such a stream there too, but builds 0.3's events from 1.0's
(which have no `final`) in `conversions.to_compat_task_status_update_event`, marking only the four terminal states
final: a 0.3 caller that waits for `final` before answering waited on a stream that had already ended. Every 0.3
binding (JSON-RPC, REST, gRPC) converts through that one function, called by its module name (a2a-sdk 1.3.0;
tests/test_v03_final.py holds each binding to it): it is wrapped here, once per process.
"""

from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as types_v03
from a2a.types import TaskStatusUpdateEvent

INTERRUPTED = frozenset({types_v03.TaskState.input_required, types_v03.TaskState.auth_required})
_SDK_CONVERSION = conversions.to_compat_task_status_update_event


def compat_status_update(core_event: TaskStatusUpdateEvent) -> types_v03.TaskStatusUpdateEvent:
    """The SDK's 0.3 event, final at an interrupted state too."""
    compat = _SDK_CONVERSION(core_event)
    if compat.status.state in INTERRUPTED:
        compat.final = True
    return compat


def use_v03_final_at_pauses() -> None:
    conversions.to_compat_task_status_update_event = compat_status_update

"""a2a-sdk's tracing (a2a_wrapper/sdk_tracing.py): off by default, and then its methods are called unwrapped;
an operator who turns it on gets the SDK's spans. Each case is a fresh interpreter: the choice is made on import."""

import os
import subprocess
import sys

import pytest

# Counts the SDK's methods (its server's handler, queues, dispatchers, task manager) wrapped by its tracing.
COUNT_TRACED = """
import inspect, sys, os
import a2a_wrapper
import a2a.server.request_handlers, a2a.server.routes, a2a.server.events, a2a.server.tasks.task_manager
def traced(value):
    function = getattr(value, "__func__", value)
    return inspect.isfunction(function) and function.__code__.co_filename.endswith("telemetry.py")
found = 0
for name, module in list(sys.modules.items()):
    if name.startswith("a2a.") and name != "a2a.utils.telemetry" and module is not None:
        for value in list(vars(module).values()):
            found += traced(value)
            if isinstance(value, type):
                found += sum(traced(member) for member in vars(value).values())
print(found, os.environ["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"])
"""


def traced_methods(switch: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"}
    if switch is not None:
        env["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"] = switch
    out = subprocess.run([sys.executable, "-c", COUNT_TRACED], env=env, capture_output=True, text=True, check=True)
    count, seen = out.stdout.split()
    return int(count), seen


@pytest.mark.parametrize("switch", [None, "false"], ids=["unset", "off"])
def test_with_tracing_off_the_sdk_methods_run_unwrapped(switch: str | None) -> None:
    assert traced_methods(switch) == (0, "false")


def test_an_operator_who_turns_tracing_on_gets_the_sdk_spans() -> None:
    count, seen = traced_methods("true")
    assert seen == "true"
    assert count > 100  # every method of the handler, queues and dispatchers (403 in a2a-sdk 1.3.0)

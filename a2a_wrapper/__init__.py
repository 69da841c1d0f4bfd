"""a2a-wrapper: coding agents (OpenCode, Copilot, any ACP agent) as A2A agents."""

__version__ = "0.1.0"

import os

# a2a-sdk wraps every internal call in an OpenTelemetry span, measured at about a third of the wrapper's
# CPU per streamed event even with no tracer configured. Off unless the operator asks for it.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

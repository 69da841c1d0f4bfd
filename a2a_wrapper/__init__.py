"""a2a-wrapper: coding agents (OpenCode, Copilot, any ACP agent) as A2A agents."""

__version__ = "0.1.0"

from a2a_wrapper.sdk_tracing import untraced_sdk

untraced_sdk()  # before any of a2a-sdk's server modules is imported

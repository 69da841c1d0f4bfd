"""The OS boundary under the rules: bubblewrap around every backend process, an egress proxy as its only way out."""

from a2a_wrapper.sandbox.boundary import Sandbox, Wrapped, describe_runtime, program_paths

__all__ = ["Sandbox", "Wrapped", "describe_runtime", "program_paths"]

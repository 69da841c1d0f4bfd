"""`a2a-wrap send`: a small A2A client with a live view, answering approvals at the terminal."""

from a2a_wrapper.client.send import send

__all__ = ["send"]

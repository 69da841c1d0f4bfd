"""The HTTP edge: the uvicorn config and the ASGI layers every request crosses before a2a-sdk's routes — connection
deadlines and cap, body limit and deadline, one spelling of each path, the version parameter, JSON-RPC's own
error codes, the message-size pre-check, the 0.3 REST streams' refusals, and the refusal bodies they share."""

"""Chat-completions messages as agents send them to the offline model: a user's, an assistant's tool call, a result."""

from typing import Any


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def tool_call(call_id: str, name: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def tool_result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}

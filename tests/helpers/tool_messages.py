"""What a test sends to have the offline model call bash, and to answer an agent's question, in the form each test
needs: the bash call as (tool, arguments), as a `[[tool:bash {...}]]` directive, as SendMessage params; an answer to
a task as SendMessage params. `description` is the bash argument some backends' tools take; none is sent unless given.
"""

import json
from typing import Any

from tests.helpers.a2a_wire import user_message


def bash_call(command: str, description: str | None = None) -> tuple[str, dict[str, Any]]:
    """The bash tool and its arguments, as the offline model's `[[tool:NAME ARGS]]` directive takes them."""
    arguments = {"command": command}
    if description is not None:
        arguments["description"] = description
    return "bash", arguments


def bash_directive(command: str, description: str | None = None) -> str:
    """The text that has the offline model call bash with `command`."""
    tool, arguments = bash_call(command, description)
    return f"[[tool:{tool} {json.dumps(arguments)}]]"


def bash_params(command: str, context_id: str | None = None, description: str | None = None) -> dict[str, Any]:
    """SendMessage params whose message has the offline model call bash with `command`."""
    return {"message": user_message(bash_directive(command, description), context_id)}


def answer_params(task: dict[str, Any], text: str | None = None, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """SendMessage params answering `task` (its context and id): a text, or a data part instead."""
    message = user_message(text or "", task["contextId"], task["id"])
    if data is not None:
        message["parts"] = [{"data": data}]
    return {"message": message}

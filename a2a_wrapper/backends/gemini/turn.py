"""One Gemini CLI turn: the ACP turn, its shell permission requests read with their command.

Gemini CLI asks before a shell command with no `rawInput` (and no `tool_call` before it): the command is the
request's title, which its shell tool sets to the command as given, whole (`getDisplayTitle()` of
`run_shell_command`, read in the 0.61.0 bundle). Without it the shield would see a shell call with no command.
"""

from dataclasses import replace

from a2a_wrapper.backends.acp.turn import AcpTurn
from a2a_wrapper.events import Permission, StreamEvent


class GeminiTurn(AcpTurn):
    async def _translate(self, item: StreamEvent | object) -> list[StreamEvent]:
        return [_with_command(event) for event in await super()._translate(item)]


def _with_command(event: StreamEvent) -> StreamEvent:
    if not isinstance(event, Permission) or event.kind != "execute" or event.command is not None:
        return event
    title = event.raw.get("title")
    return replace(event, command=title) if isinstance(title, str) and title.strip() else event

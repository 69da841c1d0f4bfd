"""One OpenCode 2 turn: the 1.x turn's loop (opencode/turn.py: subscribe, hook gate, send, translate until the end)
with 2.x's routes and events: the prompt is posted to `/api/session/{id}/prompt` (it returns at once), the turn
ends with `session.execution.*`, a permission is answered with `{decision, message}`, a question is a form.
"""

from typing import TYPE_CHECKING, Any, Literal

from a2a_wrapper.backends.base import Prompt, Session
from a2a_wrapper.backends.opencode.event_stream import BACKEND_EXITED, RECONNECTED, EventQueue
from a2a_wrapper.backends.opencode.hook import HOOK_PREFIX
from a2a_wrapper.backends.opencode.turn import OpenCodeTurn
from a2a_wrapper.backends.opencode2.translate import Translator
from a2a_wrapper.errors import BackendError
from a2a_wrapper.events import Done, Permission, StreamEvent

if TYPE_CHECKING:
    from a2a_wrapper.backends.opencode2.backend import OpenCode2Backend

STOPPED = (
    "The OpenCode backend stopped during the turn (exit code {code}); it is being restarted. Send the message again."
)
LOST = "The OpenCode event stream was lost while the turn ran; its answer may be incomplete."
FILES_REFUSED = "The OpenCode 2 backend does not take files with a message yet; nothing was sent. Send the text alone."
_ENDED = ("session.execution.succeeded", "session.execution.failed", "session.execution.interrupted")


class OpenCode2Turn(OpenCodeTurn):
    """One prompt and its events until the session's execution ends."""

    def __init__(self, backend: "OpenCode2Backend", session: Session, prompt: Prompt) -> None:
        super().__init__(backend, session, prompt)
        self._requests: dict[str, str] = {}  # permission or form id -> the session (a subagent's) that asked
        self._fields: dict[str, str] = {}  # form id -> the key of the field an answer fills

    def _translator(self) -> Translator:
        return Translator()

    async def _send(self) -> None:
        if self._prompt.files:  # refused, never dropped
            raise BackendError(FILES_REFUSED)
        await self._request("POST", f"/api/session/{self._session.id}/prompt", {"text": self._prompt.text})

    async def _translate(self, translator: Translator, event: dict[str, Any]) -> list[StreamEvent]:  # type: ignore[override]
        """As 1.x's, but a gap in the stream is not recovered from stored messages: a turn that ended meanwhile
        fails with a sentence, never hangs."""
        if event["type"] == RECONNECTED:
            return [] if await self._busy() else [Done(outcome="failed", sentence=LOST)]
        if event["type"] in ("permission.asked", "form.created"):
            self._remember(event["properties"])
        return await super()._translate(translator, event)  # type: ignore[arg-type]

    def _remember(self, props: dict[str, Any]) -> None:
        """Which session asked (a subagent's may) and, for a form, which field an answer fills."""
        request_id = str(props.get("id") or (props.get("form") or {}).get("id"))
        self._requests[request_id] = str(props.get("sessionID") or self._session.id)
        fields = (props.get("form") or {}).get("fields") or [{}]
        self._fields[request_id] = str(fields[0].get("key") or "q0")

    @staticmethod
    def _call_of(request: Permission) -> tuple[object, object]:
        return request.raw.get("sessionID"), (request.raw.get("source") or {}).get("id")

    async def _allow(self, permission_id: str) -> None:
        await self._reply(permission_id, {"decision": "once"})

    async def _busy(self) -> bool:
        active = await self._request("GET", "/api/session/active")
        return self._session.id in ((active or {}).get("data") or {})

    def _asker(self, request_id: str) -> str:
        return self._requests.get(request_id, self._session.id)

    async def _reply(self, permission_id: str, body: dict[str, Any]) -> None:
        await self._request("POST", f"/api/session/{self._asker(permission_id)}/permission/{permission_id}/reply", body)

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if permission_id.startswith(HOOK_PREFIX):  # a call the hook holds: the plugin gets the answer
            if self._gate is not None:
                self._gate.settle(permission_id, decision == "allow", reason)
        elif decision == "allow":
            await self._allow(permission_id)
        else:  # 2.x carries the sentence to the model with the refusal
            await self._reply(permission_id, {"decision": "reject", "message": reason})

    async def answer(self, question_id: str, text: str | None) -> None:
        path = f"/api/session/{self._asker(question_id)}/form/{question_id}"
        if text is None:
            await self._request("DELETE", path)
        else:
            await self._request("POST", f"{path}/reply", {"answer": {self._fields.get(question_id, "q0"): text}})

    async def _interrupt(self) -> None:
        await self._request("POST", f"/api/session/{self._session.id}/interrupt", {})

    @staticmethod
    async def _stopped(queue: EventQueue) -> None:
        """Until the session's events say its execution ended (or its OpenCode died)."""
        while (await queue.get())["type"] not in (*_ENDED, BACKEND_EXITED):
            pass

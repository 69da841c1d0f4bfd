"""One ACP prompt turn: `session/prompt`, the session's updates as StreamEvents, and its stop reason.

A permission request waits for `reply`; ACP carries no reason with a reject, so the model never sees
the shield's sentence. `abort` sends `session/cancel`, answers waiting requests `cancelled` and waits
(bounded) for the prompt to return.
"""

import asyncio
import base64
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Literal

from acp import RequestError, image_block, resource_block, resource_link_block, text_block
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from a2a_wrapper.backends.acp.client import PROMPT_ENDED, Channel
from a2a_wrapper.backends.acp.translate import ending
from a2a_wrapper.backends.base import Batch, Prompt, PromptFile, Session
from a2a_wrapper.backends.kit.abort import wait_stopped
from a2a_wrapper.backends.kit.prompt_files import UnsendableFile, content_of, is_inline, name_of
from a2a_wrapper.backends.kit.stream import batches
from a2a_wrapper.errors import BackendError, SessionGone
from a2a_wrapper.events import Done, StreamEvent

if TYPE_CHECKING:
    from a2a_wrapper.backends.acp.backend import AcpBackend

log = logging.getLogger(__name__)

AGENT_STOPPED = "The ACP agent stopped during the turn; it is being restarted. Send the message again."

Block = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock


class AcpTurn:
    def __init__(self, backend: "AcpBackend", session: Session, prompt: Prompt) -> None:
        self._backend = backend
        self._session = session
        self._prompt = prompt
        self._channel: Channel | None = None
        self._request: asyncio.Task[PromptResponse] | None = None

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._run()

    async def _run(self) -> AsyncIterator[Batch]:
        try:
            await self._backend.ensure_loaded(self._session.id)  # SessionGone: nothing was sent yet
            blocks = self._blocks()
        except UnsendableFile as exc:
            yield (Done(outcome="failed", sentence=str(exc)),)
            return
        except SessionGone:
            raise
        except BackendError as exc:
            yield (Done(outcome="failed", sentence=str(exc)),)
            return
        channel = self._start(blocks)
        try:
            async with aclosing(batches(channel.queue, self._translate)) as stream:
                async for batch in stream:
                    yield batch
        finally:
            if self._request is not None and not self._request.done():
                await self._cancel()  # the consumer stopped early (timeout, shutdown): stop the agent's turn too

    def _start(self, blocks: list[Block]) -> Channel:
        agent = self._backend.agent
        channel = agent.client.open(self._session.id)
        request = asyncio.create_task(agent.conn.prompt(session_id=self._session.id, prompt=blocks))
        request.add_done_callback(lambda _: channel.queue.put_nowait(PROMPT_ENDED))
        request.add_done_callback(lambda _: agent.client.close(self._session.id, channel))
        self._channel, self._request = channel, request
        return channel

    async def _translate(self, item: StreamEvent | object) -> list[StreamEvent]:
        """The client translated the updates already; the prompt's result ends the turn."""
        if item is PROMPT_ENDED:
            assert self._channel is not None
            return self._ending(self._channel)
        assert isinstance(item, StreamEvent)
        return [item]

    def _ending(self, channel: Channel) -> list[StreamEvent]:
        assert self._request is not None
        try:
            return ending(self._request.result(), channel.cost)
        except ConnectionError:
            return [Done(outcome="failed", sentence=AGENT_STOPPED)]
        except RequestError as exc:
            failed = f"{self._backend.agent_name} failed the turn: {exc} (code {exc.code})"
            return [Done(outcome="failed", sentence=failed)]
        except asyncio.CancelledError:
            return [Done(outcome="canceled", sentence="The turn was canceled.")]

    def _blocks(self) -> list[Block]:
        text = self._prompt.text
        system = self._backend.take_first_prompt(self._session.id)
        if system:
            text = f"{system}\n\n{text}" if text else system
        blocks: list[Block] = [text_block(text)] if text else []
        return blocks + [self._file_block(file) for file in self._prompt.files]

    def _file_block(self, file: PromptFile) -> Block:
        name = name_of(file)
        if not is_inline(file):
            return resource_link_block(name, file.url, mime_type=file.media_type)
        data = content_of(file)
        capabilities = self._backend.agent.prompt_capabilities
        if file.media_type.startswith("image/"):
            if not capabilities.image:
                raise UnsendableFile(f"{self._backend.agent_name} does not accept images; {name} was not sent.")
            return image_block(base64.b64encode(data).decode(), file.media_type)
        if not capabilities.embedded_context:
            raise UnsendableFile(
                f"{self._backend.agent_name} does not accept attached files; send {name} as text or a link."
            )
        uri = f"attachment:///{name}"
        if file.media_type.startswith("text/"):
            return resource_block(
                TextResourceContents(uri=uri, text=data.decode(errors="replace"), mime_type=file.media_type)
            )
        return resource_block(
            BlobResourceContents(uri=uri, blob=base64.b64encode(data).decode(), mime_type=file.media_type)
        )

    async def reply(self, permission_id: str, decision: Literal["allow", "deny"], reason: str) -> None:
        if self._channel is not None:
            self._channel.waiting.settle(permission_id, decision)

    async def answer(self, question_id: str, text: str | None) -> None:
        """ACP has no question request; nothing can be waiting for an answer."""

    async def abort(self) -> None:
        await self._cancel()

    async def _cancel(self) -> None:
        request = self._request
        if request is None or request.done():
            return
        if self._channel is not None:
            self._channel.cancel_waiting()
        try:
            await self._backend.agent.conn.cancel(session_id=self._session.id)
            await wait_stopped(asyncio.shield(request), self._session.id)
        except (BackendError, ConnectionError, RequestError) as exc:
            log.info("session %s: cancel ended with %s", self._session.id, exc)

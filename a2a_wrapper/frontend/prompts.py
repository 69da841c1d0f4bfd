"""An A2A message's parts → the backend's prompt: text as is, data as JSON text, files as attachments."""

import base64
import json

from a2a.types import Message
from google.protobuf.json_format import MessageToDict

from a2a_wrapper.backends.base import Prompt, PromptFile

_ALLOWED_SCHEMES = ("http://", "https://", "data:")


class UnusableMessage(ValueError):
    """The message cannot become a prompt; the text says why, for the caller."""


def prompt_from_message(message: Message) -> Prompt:
    texts: list[str] = []
    files: list[PromptFile] = []
    for index, part in enumerate(message.parts):
        content = part.WhichOneof("content")
        if content == "text":
            texts.append(part.text)
        elif content == "data":
            data = MessageToDict(part.data)
            texts.append("```json\n" + json.dumps(data, indent=2, ensure_ascii=False) + "\n```")
        elif content == "url":
            if not part.url.startswith(_ALLOWED_SCHEMES):
                raise UnusableMessage(f"part {index}: only http(s) and data: file URLs are accepted, got {part.url!r}")
            files.append(PromptFile(part.media_type or "application/octet-stream", part.url, part.filename or None))
        elif content == "raw":
            media_type = part.media_type or "application/octet-stream"
            encoded = base64.b64encode(part.raw).decode()
            files.append(PromptFile(media_type, f"data:{media_type};base64,{encoded}", part.filename or None))
    text = "\n\n".join(t for t in texts if t)
    if not text and not files:
        raise UnusableMessage("the message has no text, data or file parts")
    return Prompt(text=text, files=tuple(files))

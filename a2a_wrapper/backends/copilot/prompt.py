"""Our Prompt → what `session.send` takes: text files inline in the text, other inline files as blobs, links named."""

import base64
import binascii
from typing import Any
from urllib.parse import unquote_to_bytes

from a2a_wrapper.backends.base import Prompt, PromptFile

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")


def message_of(prompt: Prompt) -> tuple[str, list[dict[str, Any]]]:
    texts = [prompt.text] if prompt.text else []
    blobs: list[dict[str, Any]] = []
    for file in prompt.files:
        name = file.filename or "attachment"
        if not file.url.startswith("data:"):
            texts.append(f"Attached file {name} ({file.media_type}): {file.url}")
            continue
        body = _data_url_bytes(file)
        if file.media_type.startswith(_TEXT_TYPES):
            texts.append(f'<file name="{name}" type="{file.media_type}">\n{body.decode(errors="replace")}\n</file>')
        else:
            data = base64.b64encode(body).decode()
            blobs.append({"type": "blob", "data": data, "mimeType": file.media_type, "displayName": name})
    return "\n\n".join(texts), blobs


def _data_url_bytes(file: PromptFile) -> bytes:
    header, _, payload = file.url.partition(",")
    if header.endswith(";base64"):
        try:
            return base64.b64decode(payload, validate=False)
        except binascii.Error:
            return payload.encode()
    return unquote_to_bytes(payload)

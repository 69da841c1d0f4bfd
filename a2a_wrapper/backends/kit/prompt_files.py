"""A prompt's files as a backend sends them: a link stays a link, a data: URL is decoded here, once, for all."""

import base64
import binascii
from urllib.parse import unquote_to_bytes

from a2a_wrapper.backends.base import PromptFile


class UnsendableFile(ValueError):
    """A file the backend cannot take; the text says why, for the caller."""


def name_of(file: PromptFile) -> str:
    return file.filename or "attachment"


def is_inline(file: PromptFile) -> bool:
    """The file's content travels in its URL (data:), rather than a link to it."""
    return file.url.startswith("data:")


def content_of(file: PromptFile) -> bytes:
    """The bytes of an inline file; a data: URL whose base64 is broken is refused rather than sent garbled."""
    header, _, payload = file.url.partition(",")
    if not header.endswith(";base64"):
        return unquote_to_bytes(payload)
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise UnsendableFile(f"the data: URL of {name_of(file)} is not valid base64 ({exc})") from exc

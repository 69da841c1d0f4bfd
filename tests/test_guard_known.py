"""The process's own secrets: redacted by value in every common encoding, whole and streamed; other text kept."""

import base64
import urllib.parse
from collections.abc import Callable, Iterator

import pytest

from a2a_wrapper.guard import StreamRedactor, redact
from a2a_wrapper.guard.known import forget_secrets, remember_secrets
from a2a_wrapper.guard.secrets import MAX_HOLD, active
from tests.helpers.secrets import marker

# A token of no shape the table knows (a console key, a caller's key), and a long provider key
CONSOLE_KEY = "Zq7" + "vXw2pLr9TbN4mKc8HsJd"
PROVIDER_KEY = "prov-" + "a9F3kLmN0pQrStUvWxYz" * 4
KNOWN = marker("known-secret")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda key: key,
    "base64": lambda key: b64(key),
    "base64 after 1 byte": lambda key: b64("u" + key),
    "base64 after 2 bytes": lambda key: b64("u:" + key),
    "base64 of user:key (docker, basic auth)": lambda key: b64("x-access-token:" + key),
    "base64url": lambda key: b64url(key),
    "base64url after 1 byte": lambda key: b64url(">" + key),
    "base64url after 2 bytes": lambda key: b64url("?>" + key),
    "base64 of a JSON document": lambda key: b64('{"auths": {"h": {"password": "' + key + '"}}}'),
    "hex": lambda key: key.encode().hex(),
    "HEX": lambda key: key.encode().hex().upper(),
    "percent-encoded": lambda key: urllib.parse.quote("pw: " + key + "!", safe=""),
    "form-encoded": lambda key: urllib.parse.quote_plus(key + " & more"),
}


@pytest.fixture(autouse=True)
def known() -> Iterator[None]:
    remember_secrets([CONSOLE_KEY, PROVIDER_KEY, "short"])
    yield
    forget_secrets()


@pytest.mark.parametrize("key", [CONSOLE_KEY, PROVIDER_KEY], ids=["20 characters", "105 characters"])
@pytest.mark.parametrize("encode", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_a_known_secret_is_redacted_in_any_common_encoding(encode: Callable[[str], str], key: str) -> None:
    text = f"printenv | base64 said: {encode(key)} (done)"
    redacted, findings = redact(text)
    assert KNOWN in redacted and [f.kind for f in findings] == ["known-secret"]
    assert redacted.endswith(" (done)")
    # what is left is what encodes the text around the key, and at most the few edge characters it shares
    leftover = redacted.removeprefix("printenv | base64 said: ").removesuffix(" (done)").replace(KNOWN, "")
    assert len(leftover) <= len(encode("")) + 4


@pytest.mark.parametrize("encode", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_a_known_secret_streamed_one_character_at_a_time_is_redacted_alike(encode: Callable[[str], str]) -> None:
    text = f"value={encode(PROVIDER_KEY)}\nnext"
    redactor = StreamRedactor()
    out = [redactor.feed(char) for char in text]
    assert all(len(redactor.pending) <= MAX_HOLD for _ in out)
    assert "".join(out) + redactor.flush() == redact(text)[0]


NEAR_MISSES = [
    CONSOLE_KEY[:-1],  # all but its last character
    CONSOLE_KEY[1:],
    b64(CONSOLE_KEY[:-2]),  # the encoding of less than the key
    CONSOLE_KEY.swapcase(),  # tokens are case-sensitive
    b64("short"),
    "short is a word of ordinary text, too short to be kept secret",
    b64("something else entirely, of the same length"),
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_text_that_is_not_the_secret_is_kept(text: str) -> None:
    assert redact(text) == (text, [])


def test_forgotten_secrets_are_ordinary_text_again() -> None:
    forget_secrets()
    assert redact(b64(CONSOLE_KEY))[1] == []
    assert all(secret.kind != "known-secret" for secret in active().table)


def test_a_stream_keeps_the_rules_it_started_with() -> None:
    redactor = StreamRedactor()
    forget_secrets()
    assert redactor.feed(f"key {CONSOLE_KEY} ") == f"key {KNOWN} "

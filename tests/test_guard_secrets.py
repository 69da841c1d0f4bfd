"""Credential redaction: a table of what is redacted and what is not, data and log records, linear time."""

import io
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from a2a_wrapper.guard import RedactingFilter, redact, redact_value
from a2a_wrapper.guard.secrets import MAX_HOLD, SECRETS
from tests.helpers.secrets import ADVERSARIAL, AWS_ID, GITHUB, GUTTERS, KEPT, OPENSSH, REDACTED, marker, numbered


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_credentials_are_replaced_by_a_marker(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize("gutter", GUTTERS.values(), ids=GUTTERS.keys())
def test_a_key_in_a_numbered_listing_is_redacted_whole(gutter: Callable[[int], str]) -> None:
    listing = f"<content>\n{numbered(gutter, OPENSSH)}\n\n(End of file - total 6 lines)\n</content>"
    expected = f"<content>\n{gutter(1)}{marker('private-key')}\n\n(End of file - total 6 lines)\n</content>"
    assert redact(listing)[0] == expected


@pytest.mark.parametrize("gutter", GUTTERS.values(), ids=GUTTERS.keys())
def test_a_key_listing_cut_before_its_end_is_redacted_to_the_end(gutter: Callable[[int], str]) -> None:
    listing = f"{numbered(gutter, OPENSSH[:3])}\n\n(Output capped at 50 KB. Showing lines 1-3.)\n</content>"
    assert redact(listing)[0] == gutter(1) + marker("private-key")  # what follows an open key may be key


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_and_code_are_kept(text: str) -> None:
    assert redact(text) == (text, [])


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_redacting_twice_changes_nothing_more(text: str, expected: str) -> None:
    assert redact(expected)[0] == expected


def test_every_kind_in_the_table_has_a_case() -> None:
    kinds = {f.kind for text, _ in REDACTED for f in redact(text)[1]}
    assert kinds == {s.kind for s in SECRETS}


def test_findings_name_the_kind_and_where_the_value_was_never_the_value() -> None:
    text = f"a={AWS_ID} and https://me:pw@h"
    findings = redact(text)[1]
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [("aws-access-key", AWS_ID), ("url-password", "pw")]
    assert AWS_ID not in repr(findings)


def test_the_leftmost_credential_wins_and_matches_never_overlap() -> None:
    text, findings = redact(f"password={GITHUB} {GITHUB}")
    assert text == f"password={marker('credential')} {marker('github-token')}"
    assert [f.kind for f in findings] == ["credential", "github-token"]


def test_data_parts_and_metadata_are_redacted_in_depth() -> None:
    data: dict[str, Any] = {
        "env": {"GITHUB_TOKEN": "plain-looking", "HOME": "/root", "apiKey": "abc"},
        "args": ["--token", f"{AWS_ID}", ("x", f"Bearer {'a1' * 10}")],
        "headers": {"Authorization": "Basic abc"},
        "max_tokens": 5,
        "token_type": "bearer",
        "password": "",
    }
    assert redact_value(data) == {
        "env": {"GITHUB_TOKEN": marker("credential"), "HOME": "/root", "apiKey": marker("credential")},
        "args": ["--token", marker("aws-access-key"), ("x", f"Bearer {marker('bearer-token')}")],
        "headers": {"Authorization": marker("credential")},
        "max_tokens": 5,
        "token_type": "bearer",
        "password": "",
    }
    assert data["env"]["GITHUB_TOKEN"] == "plain-looking"  # a copy, the input is left alone


def logged(message: str, *args: object, exc: BaseException | None = None) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test_guard_secrets")
    logger.addHandler(handler)
    try:
        logger.warning(message, *args, exc_info=exc)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_log_records_are_redacted_in_message_and_arguments() -> None:
    assert logged("token %s for %s", GITHUB, "alice") == f"token {marker('github-token')} for alice\n"
    assert logged(f"calling https://bob:{'pw9'}@api") == f"calling https://bob:{marker('url-password')}@api\n"


def test_log_tracebacks_are_redacted() -> None:
    try:
        raise RuntimeError(f"bad key {AWS_ID}")
    except RuntimeError as exc:
        text = logged("failed", exc=exc)
    assert AWS_ID not in text and marker("aws-access-key") in text and "Traceback" in text


def test_a_broken_log_format_is_still_redacted() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s %s", (GITHUB,), None)
    RedactingFilter().filter(record)
    assert GITHUB not in json.dumps([record.msg, record.args])


def test_the_stream_holds_back_at_most_200_characters() -> None:
    assert MAX_HOLD <= 200


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_megabyte_of_adversarial_text_is_redacted_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 2.0

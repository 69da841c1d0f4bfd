"""`logging.format: json`: one JSON object per line, with the same redaction as the text format, tracebacks
included (a JSON formatter formats a traceback anew from the exception unless the guard's filter has taken it)."""

import json
import logging
from collections.abc import Iterator

import pytest

from a2a_wrapper.cli import setup_logging
from a2a_wrapper.config.settings import LoggingSettings
from tests.helpers.secrets import GITHUB, OPENAI


@pytest.fixture
def root_restored() -> Iterator[None]:
    """The root logger as it was, after a test that set up the log."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


def records(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_json_lines_carry_time_level_logger_and_message_redacted(
    root_restored: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("INFO", log_format="json")
    logging.getLogger("a2a_wrapper.test").info("the token is %s", GITHUB)
    try:
        raise RuntimeError(f"the model key {OPENAI} was refused")
    except RuntimeError:
        logging.getLogger("a2a_wrapper.test").exception("a call failed")

    written = capsys.readouterr().err
    first, second = records(written)
    assert first["level"] == "INFO" and first["logger"] == "a2a_wrapper.test"
    assert str(first["time"]).endswith("+0000") and "T" in str(first["time"])
    assert str(first["message"]).startswith("the token is [REDACTED:")
    assert second["level"] == "ERROR" and "RuntimeError" in str(second["exc_info"])
    assert GITHUB not in written and OPENAI not in written


def test_the_text_format_still_shows_a_redacted_traceback(
    root_restored: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("INFO", log_format="text")
    try:
        raise RuntimeError(f"the model key {OPENAI} was refused")
    except RuntimeError:
        logging.getLogger("a2a_wrapper.test").exception("a call failed")
    text = capsys.readouterr().err
    assert "Traceback" in text and "RuntimeError" in text and OPENAI not in text
    with pytest.raises(json.JSONDecodeError):
        records(text)


def test_the_format_is_text_or_json_and_a_wrong_one_is_named() -> None:
    assert LoggingSettings().format == "text"
    with pytest.raises(ValueError, match="format"):
        LoggingSettings.model_validate({"format": "xml"})

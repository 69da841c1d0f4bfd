"""The Copilot SDK's timestamps through the standard library (backends/copilot/timestamps.py): the same instants as
the SDK's dateutil parser gives, its errors for what is not a timestamp, and every SDK module that parses one
covered."""

from datetime import UTC, datetime, timedelta

import copilot
import dateutil.parser
import pytest
from copilot.generated.session_events import session_event_from_dict

from a2a_wrapper.backends.copilot.timestamps import SDK_MODULES, fast_timestamps, iso_first
from tests.helpers.package_source import modules_naming

AS_THE_CLI_WRITES = [
    "2026-12-02T03:40:00.123Z",
    "2026-12-02T03:40:00Z",
    "2026-12-02T03:40:00.123456Z",
    "2026-12-02T05:40:00.5+02:00",
    "2026-12-02T03:40:00",  # no zone: naive, as dateutil reads it
]


@pytest.mark.parametrize("text", AS_THE_CLI_WRITES)
def test_iso_text_parses_to_the_instant_dateutil_reads(text: str) -> None:
    parsed = iso_first(dateutil.parser.parse)(text)
    expected = dateutil.parser.parse(text)
    assert parsed == expected
    assert parsed.utcoffset() == expected.utcoffset()


def test_what_is_not_iso_goes_to_the_sdk_parser() -> None:
    seen: list[object] = []

    def sdk_parse(value: object) -> datetime:
        seen.append(value)
        return dateutil.parser.parse(str(value))

    parse = iso_first(sdk_parse)
    assert parse("Wed, 02 Dec 2026 03:40:00 GMT") == datetime(2026, 12, 2, 3, 40, tzinfo=UTC)
    assert seen == ["Wed, 02 Dec 2026 03:40:00 GMT"]
    assert parse("2026-12-02T03:40:00Z") == datetime(2026, 12, 2, 3, 40, tzinfo=UTC)
    assert seen == ["Wed, 02 Dec 2026 03:40:00 GMT"]  # ISO text never reached it


def test_the_sdk_parser_keeps_its_errors() -> None:
    parse = iso_first(dateutil.parser.parse)
    with pytest.raises(dateutil.parser.ParserError):
        parse("not a time")
    with pytest.raises(TypeError):
        parse(None)


def test_installed_once_in_every_sdk_module_that_parses_timestamps() -> None:
    assert modules_naming(copilot, "from_datetime") == {module.__name__ for module in SDK_MODULES}
    fast_timestamps()
    installed = [module.from_datetime for module in SDK_MODULES]
    fast_timestamps()
    assert [module.from_datetime for module in SDK_MODULES] == installed
    for parse in installed:
        assert parse.sdk_parse is not parse  # type: ignore[attr-defined]
        assert not hasattr(parse.sdk_parse, "sdk_parse")  # type: ignore[attr-defined]  # not wrapped twice


def test_a_session_event_from_the_cli_keeps_its_time() -> None:
    fast_timestamps()
    event = session_event_from_dict(
        {
            "id": "0c0f5a37-8f0a-4bd3-9d2a-111111111111",
            "timestamp": "2026-12-02T03:40:00.250Z",
            "parentId": None,
            "type": "assistant.message_delta",
            "data": {"messageId": "m1", "deltaContent": "hello"},
        }
    )
    assert event.timestamp == datetime(2026, 12, 2, 3, 40, tzinfo=UTC) + timedelta(milliseconds=250)
    assert event.to_dict()["timestamp"] == "2026-12-02T03:40:00.250000+00:00"

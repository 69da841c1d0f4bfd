"""The `guard:` config section."""

import pytest
from pydantic import ValidationError

from a2a_wrapper.guard import GuardSettings


def test_defaults_redact_and_warn() -> None:
    assert GuardSettings().model_dump() == {"redact": True, "injection": "warn"}


@pytest.mark.parametrize("mode", ["warn", "block", "off"])
def test_injection_modes(mode: str) -> None:
    assert GuardSettings.model_validate({"redact": False, "injection": mode}).injection == mode


@pytest.mark.parametrize(
    ("section", "named"),
    [({"injection": "shout"}, "injection"), ({"redact": "sometimes"}, "redact"), ({"redcat": True}, "redcat")],
)
def test_a_bad_section_names_the_key(section: dict[str, object], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        GuardSettings.model_validate(section)

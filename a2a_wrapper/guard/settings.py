"""The `guard:` config section. It imports nothing from the config module, so the config can import it."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GuardSettings(BaseModel):
    """What leaves through A2A: credentials redacted, injection-shaped text flagged (`warn`) or blocked."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    redact: bool = Field(True, description="Replace credentials in artifacts, status messages and logs.")
    injection: Literal["warn", "block", "off"] = Field(
        "warn",
        description="Injection-shaped text in the answer or a tool result: flag it in metadata, block it, or ignore "
        "it.",
    )

"""The base of every config section."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Section(BaseModel):
    """A config section: unknown keys are errors; snake_case and camelCase keys both accepted."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, validate_default=True)

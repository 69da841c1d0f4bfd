"""Where a served agent works: a copy of the project per task (the default), or the project itself."""

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from a2a_wrapper.sections import Section

# A branch prefix git accepts in any position: no "..", "//", "@{", control characters, spaces or `~^:?*[\`.
_PREFIX = re.compile(r"^(?!.*(\.\.|//|@\{|\.lock/|/\.))[A-Za-z0-9][A-Za-z0-9._/-]*$")


class WorkspaceSettings(Section):
    mode: Literal["per_task", "in_place"] = Field(
        "per_task",
        description="per_task: each context works in its own copy of `source`, made by the wrapper; in_place: the "
        "backend works in backend.workdir itself.",
    )
    source: Path | None = Field(None, description="The project copied for each context; default backend.workdir.")
    copy_with: Literal["clone", "copy"] | None = Field(
        None,
        alias="copy",
        description="clone: a git clone of `source` (a git work tree); copy: a plain copy of its files; default "
        "clone when `source` is a git work tree, else copy.",
    )
    branch: Literal[False] | str = Field(
        False,
        description="A prefix: after each turn the wrapper puts the context's change on branch PREFIX<context> in "
        "the source repository (clone only); false: no branch.",
    )

    @field_validator("branch")
    @classmethod
    def _branch_prefix(cls, value: Literal[False] | str) -> Literal[False] | str:
        if value is False or _PREFIX.match(value):
            return value
        raise ValueError(f"{value!r} is not a git branch prefix (letters, digits, '.', '_', '-' and '/', such as a2a/)")

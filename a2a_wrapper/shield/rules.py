"""The `shield:` section: defaults per class, rules, and how long an `ask` waits for a person.

```yaml
shield:
  defaults: {read: allow, write: ask, delete: ask, execute: ask, network: ask, mcp: ask, other: deny}
  rules:
    - name: tests-ok
      decision: allow
      class: execute                 # one class or a list
      commands: ["pytest *", "npm test", "git status", "git diff *"]
      workspace: inside              # every path the command names is inside the workspace
    - name: no-secrets
      decision: deny
      paths: ["**/.env", "**/*.pem"]
      reason: "Secrets are off limits."
    - name: docs-site
      decision: allow
      class: network
      hosts: ["docs.python.org", "*.readthedocs.io"]
    - name: github-mcp
      decision: allow
      tools: ["github_*"]           # the backend's tool name, or a kind's common name (bash, edit, ...)
  ask_timeout: 300
```

A rule matches when every matcher it has matches (it needs at least one): `class`, `tools`, `paths`,
`workspace` (inside | outside | any), `commands` (per part of a compound command), `hosts`. A `tools` pattern
matches the tool's name on its backend (events.Permission) or its kind's common name, the same on every
backend: `bash` (shell commands), `edit` (file changes), `read`, `webfetch` (see classes.COMMON_TOOL_NAMES);
so `tools: [bash]` matches OpenCode's bash, Copilot's shell and an ACP agent's execute alike. An allow rule
without `paths` or `workspace` allows only inside the workspace; say `workspace: outside` or `any` to allow
more. Among all rules that
match — the operator's, the agent's and a context's — deny beats ask beats allow; rules do not override
one another, so put the broad stance in `defaults` and the exceptions in `rules`. An allow rule is read
strictly (exact characters; every path must match), deny and ask rules loosely (case and compatibility
forms folded; any path may match). Nothing matched: the default of the request's class, and at least
`ask` when it names a path outside the workspace. Patterns are globs (see globs.py); there are no regexes.
"""

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from a2a_wrapper.errors import SENTENCE, ConfigError, describe_invalid, keyed
from a2a_wrapper.sections import Section
from a2a_wrapper.shield.classes import Class, Outcome
from a2a_wrapper.shield.globs import check_command_glob, check_path_glob
from a2a_wrapper.shield.hosts import check_host_pattern

MATCHERS = ("class_", "tools", "paths", "workspace", "commands", "hosts")
Approver = Literal["caller", "console"]  # who may answer an ask: the A2A caller, an operator in the console


class ShieldError(ConfigError):
    """Shield rules that cannot be used; the message names the rule and the key."""


class Rule(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)
    decision: Outcome
    class_: tuple[Class, ...] | None = Field(None, alias="class")
    tools: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    workspace: Literal["inside", "outside", "any"] | None = None
    commands: tuple[str, ...] | None = None
    hosts: tuple[str, ...] | None = None
    reason: str | None = Field(None, max_length=300, description="Told to the model with a deny.")

    @field_validator("class_", "tools", "paths", "commands", "hosts", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and not value:
            raise ValueError("is empty; leave the key out instead")
        return (value,) if isinstance(value, str) else value

    @field_validator("tools", "commands")
    @classmethod
    def _command_globs(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _each(check_command_glob, value)

    @field_validator("paths")
    @classmethod
    def _path_globs(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _each(check_path_glob, value)

    @field_validator("hosts")
    @classmethod
    def _host_patterns(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _each(check_host_pattern, value)

    @model_validator(mode="after")
    def _matches_something(self) -> "Rule":
        if all(getattr(self, key) is None for key in MATCHERS):
            raise ValueError("a rule needs at least one of class, tools, paths, workspace, commands, hosts")
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_rule(cls, data: Any, handler: Any) -> "Rule":
        try:
            rule: Rule = handler(data)
        except ValidationError as exc:
            name = data.get("name") if isinstance(data, dict) else None
            who = f"rule `{name}`" if isinstance(name, str) and name else "a rule without a name"
            details = "; ".join(keyed(_as_written(error["loc"]), describe_invalid(error)) for error in exc.errors())
            raise PydanticCustomError(SENTENCE, "{who}: {details}", {"who": who, "details": details}) from None
        return rule

    @property
    def matchers(self) -> dict[str, Any]:
        """The matchers this rule has, by the key written in the config."""
        return {("class" if key == "class_" else key): getattr(self, key) for key in MATCHERS if getattr(self, key)}


class Defaults(Section):
    """The decision per class when no rule matches; unset classes fall back to the operator's, then built-in."""

    read: Outcome | None = None
    write: Outcome | None = None
    delete: Outcome | None = None
    execute: Outcome | None = None
    network: Outcome | None = None
    mcp: Outcome | None = None
    other: Outcome | None = None


class ShieldConfig(Section):
    defaults: Defaults = Defaults()
    rules: tuple[Rule, ...] = ()
    ask_timeout: float = Field(300.0, gt=0, le=86_400, description="Seconds an ask waits; then it is a deny.")
    approvers: tuple[Approver, ...] | None = Field(
        None,
        description="Who may answer an ask: the caller over A2A, an operator in the fleet's console; "
        "default both when the console's key is set, else the caller.",
    )

    @field_validator("approvers")
    @classmethod
    def _someone_answers(cls, value: tuple[Approver, ...] | None) -> tuple[Approver, ...] | None:
        if value is not None and not value:
            raise ValueError("is empty: name caller, console or both (leave the key out for the default)")
        return value

    @model_validator(mode="after")
    def _unique_names(self) -> "ShieldConfig":
        names = [rule.name for rule in self.rules]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"rule `{twice[0]}`: name: used by more than one rule; rule names are unique")
        return self


def _each(check: Callable[[str], str], patterns: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if patterns is None:
        return None
    checked = []
    for pattern in patterns:
        try:
            checked.append(check(pattern))
        except ValueError as exc:
            raise ValueError(f"{pattern!r}: {exc}") from None
    return tuple(checked)


def parse_shield(data: Any, source: str) -> ShieldConfig:
    """A `shield:` section validated; ShieldError names the source, the rule and the key."""
    try:
        return ShieldConfig.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: {keyed(('shield', *e['loc']), describe_invalid(e))}" for e in exc.errors()]
        raise ShieldError("\n".join(lines)) from exc


def _as_written(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A key as the user wrote it: `class`, not the field `class_` (a Python keyword cannot be a field name)."""
    return tuple(part.rstrip("_") if isinstance(part, str) else part for part in loc)

"""Reading config files: an agent's (YAML or JSON, `${VAR}` substitution, Node configs translated, errors that name
the key) and the operator's file of shield rules."""

import os
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsError

from a2a_wrapper.config.backends import BACKEND_KINDS
from a2a_wrapper.config.node import is_node_config, translate_node_config
from a2a_wrapper.config.runtimes import SandboxRuntime
from a2a_wrapper.config.settings import ENV_PREFIX, AgentSettings
from a2a_wrapper.config.source import read_config_file
from a2a_wrapper.errors import ConfigError, describe_invalid, keyed
from a2a_wrapper.shield.rules import ShieldConfig, ShieldError, parse_shield

Origin = Callable[[Sequence[int | str]], str]  # the source of the value at a key: a file, a variable or a flag
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")  # ${NAME} or ${NAME:-default} in a string value


def load_config(
    path: Path | str, overrides: dict[str, Any] | None = None, flags: Mapping[str, str] | None = None
) -> AgentSettings:
    """Load and validate one agent's config; `overrides` (from CLI flags) win over file and environment.

    `flags` names the flag each override came from (`{"server.port": "--port"}`), so that an error in a value
    names the flag, the `A2A_WRAP_*` variable or the file it came from."""
    path = Path(path).resolve()
    raw = read_config_file(path)
    data = translate_node_config(raw) if is_node_config(raw) else raw
    data = _substitute(data, path, ())
    overrides = _by_field_name(AgentSettings, overrides or {})
    settings = _validate(_by_field_name(AgentSettings, data), overrides, path, flags or {})
    return _resolve_paths(settings, path)


def load_operator_rules(path: Path | str) -> ShieldConfig:
    """The operator's file: a YAML or JSON file holding only a `shield:` section, the floor for every agent."""
    path = Path(path)
    try:
        data = read_config_file(path)
    except ConfigError as exc:
        raise ShieldError(str(exc)) from exc
    for key in data:
        if key != "shield":
            raise ShieldError(f"{path}: {key}: unknown key; an operator file holds only a `shield:` section")
    if "shield" not in data:
        raise ShieldError(f"{path}: shield: missing; an operator file holds a `shield:` section")
    return parse_shield(data["shield"], str(path))


def _substitute(value: Any, path: Path, location: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, path, (*location, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, path, (*location, str(i))) for i, v in enumerate(value)]
    if isinstance(value, str):
        return VARIABLE.sub(lambda match: _lookup(match, path, location), value)
    return value


def _lookup(match: re.Match[str], path: Path, location: tuple[str, ...]) -> str:
    name, default = match.group(1), match.group(2)
    value = os.environ.get(name)
    if default is not None and not value:
        return default  # as in the shell, `:-` also covers a variable set to ""
    if value is not None:
        return value
    key = ".".join(location)
    raise ConfigError(f"{path}: {key}: environment variable {name} is not set (write ${{{name}:-default}})")


def _by_field_name(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """camelCase keys renamed to field names, as the environment source names them, so that sources merge key by key."""
    names = {field.alias: name for name, field in model.model_fields.items() if field.alias}
    result: dict[str, Any] = {}
    for key, value in data.items():
        name = names.get(key, key)
        field = model.model_fields.get(name)
        nested = _section_of(field.annotation) if field is not None else None
        if nested is not None and isinstance(value, dict):
            value = _by_field_name(nested, value)
        elif nested is not None and isinstance(value, list):
            value = [_by_field_name(nested, item) if isinstance(item, dict) else item for item in value]
        result[name] = value
    return result


def _section_of(annotation: Any) -> type[BaseModel] | None:
    """The section model inside `X`, `X | None` or `list[X]`; None for plain values and raw mappings."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(_section_of, typing.get_args(annotation))), None)


class _Values(PydanticBaseSettingsSource):
    """Values already read (the file, the CLI flags), passed on as they are."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = values

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return self._values


def _origin(loc: Sequence[int | str], path: Path, flags: Mapping[str, str]) -> str:
    """Where the value at `loc` came from, by precedence: the flag, then the environment variable, then the file."""
    prefixes = [loc[:end] for end in range(len(loc), 0, -1)]
    for prefix in prefixes:
        if (flag := flags.get(".".join(map(str, prefix)))) is not None:
            return f"flag {flag} for {path}"
    variables = {name.upper() for name in os.environ}
    for prefix in prefixes:
        if (name := ENV_PREFIX + "__".join(map(str, prefix)).upper()) in variables:
            return f"environment variable {name} for {path}"
    return str(path)


def _validate(data: dict[str, Any], overrides: dict[str, Any], path: Path, flags: Mapping[str, str]) -> AgentSettings:
    class FileSettings(AgentSettings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (_Values(settings_cls, overrides), env_settings, _Values(settings_cls, data))

    try:
        loaded = FileSettings()
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, partial(_origin, path=path, flags=flags))) from exc
    except SettingsError as exc:  # an A2A_WRAP_* variable whose value is not valid JSON
        found = re.search(r'field "(\w+)"', str(exc))
        field = found.group(1) if found else ""
        names = " or ".join(sorted(name for name in os.environ if name.upper().startswith(ENV_PREFIX + field.upper())))
        raise ConfigError(f"environment variable {names} for {path}: {field}: not valid JSON: {exc.__cause__}") from exc
    return AgentSettings.model_validate(loaded.model_dump(by_alias=False))


def describe_errors(exc: ValidationError, origin: Path | Origin) -> str:
    """One line per problem: where the value came from (a file, or `origin` of the key), the dotted key, what is
    wrong and the value given."""
    lines = []
    for error in exc.errors():
        loc = list(error["loc"])
        if len(loc) > 1 and loc[0] == "backend" and loc[1] in BACKEND_KINDS:
            del loc[1]  # the discriminator's tag, not a key the user wrote
        source = origin(loc) if callable(origin) else str(origin)
        lines.append(f"{source}: {keyed(loc or ['(top level)'], describe_invalid(error))}")
    return "\n".join(lines)


def _resolve_paths(settings: AgentSettings, path: Path) -> AgentSettings:
    base = path.parent
    backend = settings.backend
    updates: dict[str, Any] = {"workdir": (base / backend.workdir).resolve()}
    binary = getattr(backend, "binary", None)
    if binary is not None:
        updates["binary"] = (base / binary).resolve()
    if backend.system_prompt_file is not None:
        prompt_file = (base / backend.system_prompt_file).resolve()
        try:
            updates["system_prompt"] = prompt_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{path}: backend.system_prompt_file: cannot read {prompt_file} ({exc.strerror})"
            ) from exc
        updates["system_prompt_file"] = prompt_file
    if settings.operator_rules is not None:
        settings = settings.model_copy(update={"operator_rules": (base / settings.operator_rules).resolve()})
    if isinstance(settings.runtime, SandboxRuntime):
        extra = {key: [(base / p).resolve() for p in getattr(settings.runtime, key)] for key in ("read", "write")}
        settings = settings.model_copy(update={"runtime": settings.runtime.model_copy(update=extra)})
    source = settings.workspace.source
    workspace = settings.workspace.model_copy(update={"source": (base / source).resolve() if source else None})
    state_dir = settings.state_dir
    state_dir = (base / state_dir).resolve() if state_dir else default_state_dir(settings.card.name)
    backend = backend.model_copy(update=updates)
    return settings.model_copy(update={"backend": backend, "workspace": workspace, "state_dir": state_dir})


def default_state_dir(agent_name: str) -> Path:
    root = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    slug = re.sub(r"[^a-z0-9]+", "-", agent_name.lower()).strip("-") or "agent"
    return root / "a2a-wrapper" / slug

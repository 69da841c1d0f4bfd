"""A config file read into a mapping: YAML or JSON, `$comment` keys dropped; errors name the file."""

import json
from pathlib import Path
from typing import Any

import yaml

from a2a_wrapper.errors import ConfigError


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror})") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections, got {type(data).__name__}")
    return _drop_comments(data)


def _drop_comments(value: Any) -> Any:
    if isinstance(value, dict):
        # YAML keys may be numbers or booleans (`80:`, `yes:`); as strings validation can name them.
        return {str(k): _drop_comments(v) for k, v in value.items() if k != "$comment"}
    if isinstance(value, list):
        return [_drop_comments(v) for v in value]
    return value

"""The configuration reference (docs/config-reference.md), written from the config's own models: every key, its
type, its default and its description, so that the page cannot drift from what `a2a-wrap` accepts."""

import json
import types
import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from a2a_wrapper.config.settings import AgentSettings

HEADER = """# Configuration reference

Written by `a2a-wrap schema --markdown` from the config's own models (a test checks that this page is current).
Every key is written in snake_case here; camelCase is accepted too. Precedence, low to high: defaults, the config
file, `A2A_WRAP_*` environment variables (nested with `__`, e.g. `A2A_WRAP_SERVER__PORT=9000`), then the flags of
`a2a-wrap serve`. How the sections fit together, with examples: [Configuration](configuration.md).
"""


def reference_markdown() -> str:
    """The whole page: the top-level keys, then one section per model where it is first met (depth first)."""
    paths = _sections(AgentSettings)
    return "\n".join([HEADER, *(_section(path, model, paths) for model, path in paths.items())])


def _sections(root: type[BaseModel]) -> dict[type[BaseModel], str]:
    """Each model reachable from `root`'s fields, with the dotted path where it is first met."""
    paths: dict[type[BaseModel], str] = {}

    def walk(path: str, model: type[BaseModel]) -> None:
        if model in paths:
            return
        paths[model] = path
        for name, field in model.model_fields.items():
            for inner in _models_in(field.annotation):
                walk(_child_path(path, name, field.annotation, inner), inner)

    walk("", root)
    return paths


def _child_path(path: str, name: str, annotation: Any, model: type[BaseModel]) -> str:
    """`backend` for a plain section; `backend (kind: acp)` for one kind of a union chosen by `kind`; `[]` after a
    list's key and `.NAME` after a map's, as the file writes them."""
    child = f"{path}.{name}" if path else name
    origin = typing.get_origin(annotation)
    if origin is list:
        child += "[]"
    elif origin is dict:
        child += ".NAME"
    kind = model.model_fields.get("kind")
    if kind is not None and len(list(_models_in(annotation))) > 1:
        child += f" (kind: {kind.default})"
    return child


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """The config models an annotation holds: itself, a union's members, a list's or a map's items."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _section(path: str, model: type[BaseModel], paths: dict[type[BaseModel], str]) -> str:
    title = f"`{path}`" if path else "Top level"
    doc = (model.__doc__ or "").strip() if model.__doc__ != BaseModel.__doc__ else ""
    lines = [f"## {title}", ""]
    if doc and path:
        lines += [" ".join(doc.split()), ""]
    lines += ["| key | type | default | what it is |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        kind = _type(field.annotation, paths)
        lines.append(f"| `{name}` | {kind} | {_default(field)} | {_description(field)} |")
    return "\n".join(lines) + "\n"


def _type(annotation: Any, paths: dict[type[BaseModel], str]) -> str:
    """The annotation in words; a section is named by the path of its own table below."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{json.dumps(arg)}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(arg, paths) for arg in args)
    if origin is typing.Annotated:
        return _type(args[0], paths)
    if origin is list:
        return f"list of {_type(args[0], paths)}"
    if origin is dict:
        return f"map of {_type(args[1], paths)}"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return f"section `{paths[annotation]}`"
        if issubclass(annotation, SecretStr):
            return "secret"
        if issubclass(annotation, Path):
            return "path"
        if issubclass(annotation, Enum):
            return " \\| ".join(f"`{json.dumps(member.value)}`" for member in annotation)
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "its defaults"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, Path | Enum):
        value = str(value.value if isinstance(value, Enum) else value)
    text = json.dumps(value)
    return f"`{text}`".replace("|", "\\|")


def _description(field: FieldInfo) -> str:
    return " ".join((field.description or "").split()).replace("|", "\\|")

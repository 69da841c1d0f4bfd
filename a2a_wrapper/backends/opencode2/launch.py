"""How OpenCode 2's `opencode serve` is started: isolated folders, offline switches, a password, our provider, the
permission rules, and the tool hook plugin in the config folder the wrapper makes anew at every start."""

import json
from importlib import resources
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.opencode.launch import CODE_PLACES, HOOK_PLUGIN, Launch, api_key, merged, serve
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings

USERNAME = "opencode"  # the only user OpenCode 2's Basic auth knows

# Every tool asks, so each call OpenCode asks about reaches the wrapper's permission seam too (behind the tool hook,
# which sees every call). Code Mode's `execute` is refused outright: the JavaScript it runs may `fetch()`, which is
# neither a tool call the hook sees nor a permission request; refused, it is not even offered to the model.
# OpenCode 2 has no environment variable for permissions: they travel in the config content, merged last.
PERMISSIONS = [
    {"action": "*", "resource": "*", "effect": "ask"},
    {"action": "question", "resource": "*", "effect": "allow"},
    {"action": "execute", "resource": "*", "effect": "deny"},
]
_OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS": "1",
    "OPENCODE_DISABLE_FREE_MODELS": "1",
    # Plugins and config written into the workspace are hot-loaded by a running 2.x unless this is set (2.1.2
    # honours it): what the agent writes must never run inside OpenCode.
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
}


def prepare(
    binary: Path, backend: OpenCodeSettings, state_dir: Path, base_env: dict[str, str], listen_host: str = "127.0.0.1"
) -> Launch:
    """Folders created and seeded; the argv and environment for one `opencode serve`."""
    own = {**_OFFLINE_ENV, **backend.env, "OPENCODE_CONFIG_CONTENT": json.dumps(opencode_config(backend))}
    return serve(binary, state_dir, base_env, listen_host, config_files(), own, "OPENCODE_PASSWORD")


def opencode_config(backend: OpenCodeSettings) -> dict[str, Any]:
    """The config content, in OpenCode 2's own shape; `opencode_config` merged in, the permission rules last."""
    config: dict[str, Any] = {"model": backend.model, "update": "disable", "share": "disabled"}
    if backend.provider is not None:
        config["providers"] = {backend.provider.id: _provider(backend.provider)}
    return {**merged(config, backend.opencode_config), "permissions": PERMISSIONS}


def _provider(provider: ModelProvider) -> dict[str, Any]:
    return {
        "name": provider.name or provider.id,
        "package": "@ai-sdk/openai-compatible",
        "settings": {"baseURL": provider.base_url, "apiKey": api_key(provider)},
        "models": {model: {"name": model} for model in provider.models},
    }


def config_files() -> dict[str, str | None]:
    """OpenCode's config folder as the wrapper makes it at every start: the tool hook plugin in `plugins/`, and the
    empty places (CODE_PLACES) shown over where else OpenCode loads code from. Settings travel in the env."""
    plugin = (resources.files(__package__) / "plugin" / HOOK_PLUGIN).read_text()
    return dict.fromkeys(CODE_PLACES) | {f"opencode/plugins/{HOOK_PLUGIN}": plugin}

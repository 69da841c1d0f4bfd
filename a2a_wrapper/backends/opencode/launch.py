"""How `opencode serve` is started: isolated folders, offline switches, a password, our provider and agent."""

import json
import secrets
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.kit import mcp
from a2a_wrapper.backends.kit.isolation import (
    Files,
    config_folder,
    isolated_env,
    produce_folder,
    shown_over,
    writable_folders,
)
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.ports import free_port
from a2a_wrapper.sandbox.plan import HOOK_SOCKET

READY_LINE = r"listening on (https?://\S+)"
REPLACE_AGENT = "a2a"

# Every tool asks, so each call OpenCode chooses to ask about reaches the wrapper's permission seam too (behind the
# tool hook, which sees every call). Set through OPENCODE_PERMISSION, which OpenCode applies after every other
# config source: nothing in the workspace can loosen it.
ASK_EVERYTHING = {"*": "ask", "question": "allow"}
HOOK_SOCKET_ENV = "A2A_WRAPPER_HOOK_SOCKET"  # where the tool hook plugin reaches the wrapper
HOOK_PLUGIN = "a2a-wrapper-hook.js"

_OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    # No OPENCODE_PURE: it stops every external plugin, the wrapper's tool hook with them. Without it, OpenCode
    # 1.18.33 loads plugins from its own config folder and config, never from the workspace (project config off).
}
# Places in OpenCode's own (writable) folders it loads or runs code from: plugins from HOME's `.opencode/` (as from
# its config folder), and its ripgrep from the cache when none is on the PATH. Each is an empty folder of the
# wrapper's, shown read-only over it, so nothing a tool puts there runs in OpenCode or in its place.
CODE_PLACES = {"dot-opencode": "home/.opencode", "empty-bin": "cache/opencode/bin"}
_CONFIG_FOLDERS = ("opencode", "dot-opencode")  # XDG_CONFIG_HOME/opencode, and what HOME's .opencode/ shows
_PLUGIN_SEED = {
    "package.json": {"dependencies": {"@opencode-ai/plugin": "*"}},
    "package-lock.json": {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}},
}


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    password: str
    port: int
    home: Path  # the backend's own folders (HOME, XDG_*, TMPDIR) live under it
    given: list[tuple[Path, Path]]  # empty folders of the wrapper's, each over a place OpenCode loads code from

    @property
    def writable(self) -> list[Path]:
        return writable_folders(self.home)

    @property
    def config(self) -> Path:
        return config_folder(self.home)


def home_of(state_dir: Path) -> Path:
    return state_dir / "opencode"


def hook_socket(state_dir: Path) -> Path:
    """Where the hook is served when no sandbox serves it: a folder of its own, which a container shows read-only
    (in a sandbox the hook is among the sandbox's sockets)."""
    return home_of(state_dir) / "sockets" / HOOK_SOCKET


def prepare(
    binary: Path, backend: OpenCodeSettings, state_dir: Path, base_env: dict[str, str], listen_host: str = "127.0.0.1"
) -> Launch:
    """Folders created and seeded; the argv and environment for one `opencode serve`."""
    own = {
        **_OFFLINE_ENV,
        **backend.env,
        "OPENCODE_SERVER_USERNAME": backend.username,
        "OPENCODE_CONFIG_CONTENT": json.dumps(opencode_config(backend)),
        "OPENCODE_PERMISSION": json.dumps(ASK_EVERYTHING),
    }
    return serve(binary, state_dir, base_env, listen_host, config_files(), own, "OPENCODE_SERVER_PASSWORD")


def serve(
    binary: Path,
    state_dir: Path,
    base_env: dict[str, str],
    listen_host: str,
    files: Files,
    own: dict[str, str],
    password_env: str,
) -> Launch:
    """One `opencode serve` (either version): its folders made, the config folder holding exactly `files`, a free
    port, and its environment: the isolated one, then `own`, then a random password in `password_env`."""
    home = home_of(state_dir)
    isolated = isolated_env(home, base_env)
    produce_folder(config_folder(home), files)
    given = shown_over(config_folder(home), {name: home / place for name, place in CODE_PLACES.items()}, home)
    password = secrets.token_urlsafe(24)
    port = free_port()
    env = {**isolated, **own, password_env: password, HOOK_SOCKET_ENV: str(hook_socket(state_dir))}
    argv = [str(binary), "serve", "--port", str(port), "--hostname", listen_host]
    return Launch(argv=argv, env=env, password=password, port=port, home=home, given=given)


def opencode_config(backend: OpenCodeSettings) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": backend.model,
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "lsp": False,
        "formatter": False,
        "plugin": [],
    }
    if backend.provider is not None:
        config["enabled_providers"] = [backend.provider.id]
        config["small_model"] = backend.model
        config["provider"] = {backend.provider.id: _provider(backend.provider)}
    if backend.system_prompt_mode == "replace" and backend.system_prompt:
        config["agent"] = {REPLACE_AGENT: {"mode": "primary", "prompt": backend.system_prompt}}
    return merged(merged(config, mcp.for_opencode(backend.mcp_servers)), backend.opencode_config)


def api_key(provider: ModelProvider) -> str:
    # OpenCode's OpenAI-compatible provider sends a bearer whatever happens: a placeholder for a server without keys
    return provider.api_key.get_secret_value() if provider.api_key is not None else "not-needed"


def _provider(provider: ModelProvider) -> dict[str, Any]:
    return {
        "npm": "@ai-sdk/openai-compatible",
        "name": provider.name or provider.id,
        "options": {"baseURL": provider.base_url, "apiKey": api_key(provider)},
        "models": {
            model: {"name": model, "tool_call": True, "limit": {"context": 128000, "output": 4096}}
            for model in provider.models
        },
    }


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in, nested objects key by key."""
    result = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def config_files() -> dict[str, str | None]:
    """OpenCode's config folder as the wrapper makes it at every start: the tool hook plugin in `plugin/`, where
    OpenCode loads it, and, there and in what is shown as HOME's `.opencode/` (a config folder to OpenCode too),
    the seed that makes OpenCode skip its background `npm install` of the plugin package (offline, and 64 MB
    saved). Nothing else: every setting travels in OPENCODE_CONFIG_CONTENT."""
    plugin = (resources.files(__package__) / "plugin" / HOOK_PLUGIN).read_text()
    # OpenCode writes this .gitignore into each config folder where it is missing (a read-only folder then fails
    # every instance's start): written here as OpenCode writes it.
    ignored = "\n".join(["node_modules", "package.json", "bun.lock", ".gitignore"])
    seed = {name: json.dumps(content) for name, content in _PLUGIN_SEED.items()} | {".gitignore": ignored}
    files: dict[str, str | None] = {
        f"{folder}/{name}": text for folder in _CONFIG_FOLDERS for name, text in seed.items()
    }
    files |= {f"{folder}/node_modules": None for folder in _CONFIG_FOLDERS}
    return files | dict.fromkeys(CODE_PLACES) | {f"opencode/plugin/{HOOK_PLUGIN}": plugin}

"""`backend:` sections that run real ACP agents (`opencode acp`, `copilot --acp`) on the offline model."""

import json
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.acp.launch import agent_home
from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.backends.opencode import launch
from a2a_wrapper.config.backends import ModelProvider, OpenCodeSettings
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel
from tests.helpers.copilot_fixtures import COPILOT_CACHE
from tests.helpers.tenants import anonymous_state


def acp_opencode_backend(offline_model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    """`opencode acp` with the provider config of `opencode serve`, offline, every tool call asked."""
    provider = ModelProvider(id="offline", base_url=offline_model.base_url, models=[MODEL_ID, SMALL_MODEL_ID])
    config = launch.opencode_config(OpenCodeSettings(model=f"offline/{MODEL_ID}", provider=provider))
    return {
        "kind": "acp",
        "command": [str(find_binary("opencode")), "acp"],
        "workdir": workdir,
        "env": {
            **launch._OFFLINE_ENV,
            "OPENCODE_CONFIG_CONTENT": json.dumps(config),
            "OPENCODE_PERMISSION": json.dumps(launch.ASK_EVERYTHING),
        },
    }


def acp_copilot_backend(offline_model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    """`copilot --acp` with the offline model as its own provider (BYOK through the environment)."""
    return {
        "kind": "acp",
        "command": [str(find_binary("copilot")), "--acp"],
        "workdir": workdir,
        "env": {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": offline_model.base_url,
            "COPILOT_MODEL": MODEL_ID,
            "COPILOT_PROVIDER_API_KEY": "x",
            "COPILOT_HOME": str(agent_home(anonymous_state(state_dir)) / "copilot"),
            "XDG_CACHE_HOME": str(COPILOT_CACHE),
        },
    }


ACP_BACKENDS = {"opencode": acp_opencode_backend, "copilot": acp_copilot_backend}

"""The Copilot backend section for tests: the managed Copilot CLI on the offline model (BYOK, offline mode)."""

import os
import tempfile
from pathlib import Path
from typing import Any

from a2a_wrapper.backends.install import find_binary
from a2a_wrapper.offline_model import MODEL_ID, OfflineModel

# The CLI unpacks ~235 MB into $XDG_CACHE_HOME/copilot/pkg on its first run (10 s and more here): every test that
# runs it, through the SDK or over ACP, shares this one cache, kept between runs, apart from the user's. It holds the
# package and per-server MCP tool listings keyed by the server's config; sessions and config live in COPILOT_HOME
# (and HOME), which stay per agent, so no test sees another's sessions.
COPILOT_CACHE = Path(tempfile.gettempdir()) / f"a2a-wrapper-tests-copilot-cache-{os.getuid()}"


def copilot_backend(offline_model: OfflineModel, workdir: Path) -> dict[str, Any]:
    """The `backend:` section of AgentSettings for a Copilot agent on the offline model."""
    return {
        "kind": "copilot",
        "binary": find_binary("copilot"),
        "workdir": workdir,
        "model": MODEL_ID,
        "provider": {"type": "openai", "base_url": offline_model.base_url, "api_key": "offline"},
        "env": {"XDG_CACHE_HOME": str(COPILOT_CACHE)},
    }

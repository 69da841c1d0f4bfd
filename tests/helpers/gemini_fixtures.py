"""`backend:` sections that run Gemini CLI (`gemini --acp`, the managed install) on the offline model."""

from pathlib import Path
from typing import Any

from a2a_wrapper.offline_model import MODEL_ID, OfflineModel

# A key for the provider, so that the wrapper relays it: Gemini CLI gets the relay's URL and token, never this.
OFFLINE_KEY = "AIza-offline-not-a-secret"


def gemini_backend(offline_model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    """Gemini CLI speaking the Gemini API to the offline model (which is served at its root)."""
    return {
        "kind": "gemini",
        "workdir": workdir,
        "model": MODEL_ID,
        "provider": {"base_url": offline_model.url, "api_key": OFFLINE_KEY},
    }

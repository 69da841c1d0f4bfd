"""A deterministic, offline model server: OpenAI chat completions and Responses, Anthropic Messages and Gemini
`generateContent` (streaming and not), all answering from the same directives.

Prompt directives steer it (`[[tool:bash {"command": "ls"}]]`, `[[think:...]]`, `[[slow:2]]`,
`[[error:500]]`, `[[turns]]`, `[[long:50]]`, `[[echo-system]]`, `[[question:{...}]]`); tests can also
queue scripted steps through `POST /control/script`.
"""

from a2a_wrapper.offline_model.server import MODEL_ID, SMALL_MODEL_ID, create_app
from a2a_wrapper.offline_model.service import OfflineModel, run

__all__ = ["MODEL_ID", "SMALL_MODEL_ID", "OfflineModel", "create_app", "run"]

"""Red team, class 5: the operator's credentials, found from inside the sandbox.

The agent is configured with a provider key (and, on Copilot, a GitHub token) of marker values. One turn of the
backend's bash tool runs scripts/look_for_secrets.py, which looks everywhere a tool can: its environment, every
process's environment and command line, the backend's config and own folders, the workspace, /tmp and /run,
OpenCode's API with the password tools inherit, and the memory of the backend's processes (same user, readable).
Each place's findings land in a file of the workspace; the test searches each for the markers, raw and in the
encodings a tool would use to carry them out (base64 at each alignment, hex).
"""

import base64
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.config.backends import ModelProvider
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import serving
from tests.helpers.a2a_wire import final_state, stream
from tests.helpers.behaviour import BACKENDS
from tests.helpers.tool_messages import bash_params

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "scripts" / "look_for_secrets.py"
KEY = "sk-redteam-" + uuid.uuid4().hex
TOKEN = "ghp_" + uuid.uuid4().hex[:36]
PLACES = [
    "env.txt",
    "proc-environ.txt",
    "proc-cmdline.txt",
    "config-folder.txt",
    "own-folders.txt",
    "workspace-tmp-run.txt",
    "backend-api.txt",
    "backend-memory.txt",
]


def forms(secret: str) -> list[str]:
    """The secret as a tool could carry it out: raw, base64 at each of three alignments, hex."""
    encoded = [base64.b64encode((pad + secret).encode()).decode() for pad in ("", "a", "ab")]
    return [secret, *(text[4:-4] for text in encoded), secret.encode().hex()]


@pytest.fixture(scope="module", params=["opencode", "copilot"])
async def found(request, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, Path]]:  # type: ignore[no-untyped-def]
    async with OfflineModel() as offline_model:  # the module's own (a session one was torn down between modules)
        backend = next(b for b in BACKENDS if b.name == request.param)
        tmp = tmp_path_factory.mktemp(f"secrets-{backend.name}")
        workdir = tmp / "state" / "workspace"
        workdir.mkdir(parents=True)
        shutil.copy(SCRIPT, workdir / "look.py")
        state = tmp / "state"
        section = backend.section(offline_model, workdir, state)
        provider = section["provider"]
        if isinstance(provider, ModelProvider):
            section["provider"] = provider.model_copy(update={"api_key": SecretStr(KEY)})
        else:
            section["provider"] = {**provider, "api_key": KEY}
        if backend.name == "copilot":
            section["github_token"] = TOKEN
        settings = AgentSettings(
            card=CardSettings(name=f"secrets-{backend.name}"),
            server=ServerSettings(port=free_port()),
            backend=section,
            state_dir=state,
            auto_approve=True,
        )
        async with httpx.AsyncClient(timeout=120) as http, serving(settings, offline_model) as served:
            events = await stream(http, served.jsonrpc, bash_params("python3 look.py rt-found", description="look"))
            assert final_state(events) == "TASK_STATE_COMPLETED", events[-1]
        yield backend.name, workdir / "rt-found"


@pytest.mark.parametrize("place", PLACES)
def test_no_credential_of_the_operators_is_found_inside(found: tuple[str, Path], place: str) -> None:
    """On main before branch relay, seven places held one: OPENCODE_CONFIG_CONTENT (env, /proc environ), OpenCode's
    API and memory; Copilot's COPILOT_SDK_AUTH_TOKEN (env, /proc environ) and memory."""
    backend, folder = found
    text = (folder / place).read_text(errors="replace")
    secrets = {"provider key": KEY, **({"GitHub token": TOKEN} if backend == "copilot" else {})}
    leaked = {name for name, secret in secrets.items() for form in forms(secret) if form in text}
    assert not leaked, f"{backend}: {sorted(leaked)} in {place}"

"""`a2a-wrap demo`: the offline model and one OpenCode agent on it, no key needed."""

from collections.abc import Callable
from pathlib import Path

from a2a_wrapper.agent import serve
from a2a_wrapper.config import AgentSettings, CardSettings, ModelProvider, OpenCodeBackend, ServerSettings, Skill
from a2a_wrapper.config_file import default_state_dir
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel


def demo_settings(model_url: str, port: int, state_dir: Path) -> AgentSettings:
    return AgentSettings(
        card=CardSettings(
            name="demo",
            description="A demo coding agent: OpenCode on the offline model.",
            skills=[Skill(id="coding", name="Coding", description="Answers and edits files.", tags=["coding"])],
        ),
        server=ServerSettings(port=port),
        backend=OpenCodeBackend(
            model=f"offline/{MODEL_ID}",
            workdir=state_dir / "workspace",
            provider=ModelProvider(id="offline", base_url=model_url, models=[MODEL_ID, SMALL_MODEL_ID]),
        ),
        auto_approve=True,
        state_dir=state_dir,
    )


async def run_demo(port: int, state_dir: Path | None, announce: Callable[[str], None]) -> None:
    """Runs until interrupted; `announce` shows the user where things are."""
    state_dir = (state_dir or default_state_dir("demo")).resolve()
    async with OfflineModel() as model:
        settings = demo_settings(model.base_url, port, state_dir)
        url = settings.advertised_url
        announce(f"offline model: {model.base_url}")
        announce(f"agent card:    {url}/.well-known/agent-card.json")
        announce("try:")
        announce(
            f"  curl -sN {url}/a2a/jsonrpc -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' "
            """-d '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":"""
            """{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'"""
        )
        await serve(settings)

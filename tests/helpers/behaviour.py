"""The behaviour suite's backends: each backend's config section, what its adapter declares it cannot do (and why),
and the harness that serves it on the offline model with a test's settings."""

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from a2a_wrapper.backends.acp.backend import AcpBackend
from a2a_wrapper.backends.base import Capabilities
from a2a_wrapper.backends.claude.backend import ClaudeBackend
from a2a_wrapper.backends.copilot.backend import CopilotBackend
from a2a_wrapper.backends.gemini.backend import GeminiBackend
from a2a_wrapper.backends.opencode.backend import OpenCodeBackend
from a2a_wrapper.backends.opencode.launch import free_port
from a2a_wrapper.backends.opencode2.backend import OpenCode2Backend
from a2a_wrapper.config.backends import ModelProvider
from a2a_wrapper.config.settings import AgentSettings, CardSettings, ServerSettings
from a2a_wrapper.offline_model import MODEL_ID, SMALL_MODEL_ID, OfflineModel
from tests.conftest import ServedAgent, serving

SectionBuilder = Callable[[OfflineModel, Path, Path], dict[str, Any]]


def opencode_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from a2a_wrapper.backends.install import find_binary

    provider = ModelProvider(id="offline", base_url=model.base_url, models=[MODEL_ID, SMALL_MODEL_ID])
    return {
        "kind": "opencode",
        "binary": find_binary("opencode"),
        "workdir": workdir,
        "model": f"offline/{MODEL_ID}",
        "provider": provider,
    }


def opencode2_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    return {**opencode_section(model, workdir, state_dir), "kind": "opencode2", "binary": None}


def copilot_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.copilot_fixtures import copilot_backend

    return copilot_backend(model, workdir)


def acp_opencode_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.acp_fixtures import acp_opencode_backend

    return acp_opencode_backend(model, workdir, state_dir)


def acp_copilot_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.acp_fixtures import acp_copilot_backend

    return acp_copilot_backend(model, workdir, state_dir)


def claude_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.claude_fixtures import claude_backend

    return claude_backend(model, workdir, state_dir)


def gemini_section(model: OfflineModel, workdir: Path, state_dir: Path) -> dict[str, Any]:
    from tests.helpers.gemini_fixtures import gemini_backend

    return gemini_backend(model, workdir, state_dir)


NO_ACP_QUESTION = "ACP has no request for a question to the user; the agent cannot ask one over ACP"
NO_ACP_REASON = "ACP's reject_once option carries no message: the agent's model never sees the shield's sentence"
# What each behaviour needs of an adapter's declared Capabilities, and why an adapter without it cannot do it.
NO_RESUME = "the agent cannot load a session its previous process made, so a context starts anew after a restart"
NEEDS = {
    "question": ("questions", NO_ACP_QUESTION),
    "deny-reason": ("deny_reason", NO_ACP_REASON),
    "resume": ("resume", NO_RESUME),
}


@dataclass(frozen=True)
class BackendUnderTest:
    name: str
    section: SectionBuilder
    capabilities: Capabilities  # as the adapter declares them: a wrong declaration fails its strict xfail
    quirks: dict[str, str] = field(default_factory=dict)  # behaviour -> why this agent (not its adapter) cannot

    @property
    def cannot(self) -> dict[str, str]:
        """behaviour -> why this backend cannot do it."""
        lacking = {b: why for b, (capability, why) in NEEDS.items() if not getattr(self.capabilities, capability)}
        return {**lacking, **self.quirks}


BACKENDS = [
    BackendUnderTest("opencode", opencode_section, OpenCodeBackend.capabilities),
    BackendUnderTest("opencode2", opencode2_section, OpenCode2Backend.capabilities),
    BackendUnderTest("copilot", copilot_section, CopilotBackend.capabilities),
    BackendUnderTest("acp-opencode", acp_opencode_section, AcpBackend.capabilities),
    BackendUnderTest(
        "acp-copilot",
        acp_copilot_section,
        AcpBackend.capabilities,
        {
            "error": "copilot --acp ends a turn whose model call failed with end_turn and the error as answer text, "
            "so the task completes with that text instead of failing",
        },
    ),
    BackendUnderTest("claude", claude_section, ClaudeBackend.capabilities),
    BackendUnderTest("gemini", gemini_section, GeminiBackend.capabilities),
]


@dataclass
class Harness:
    backend: BackendUnderTest
    model: OfflineModel
    tmp_path: Path
    node: pytest.Item

    def expect(self, behaviour: str) -> None:
        """This backend cannot do the behaviour: the test still runs, and must fail (strict xfail, reason shown)."""
        if behaviour in self.backend.cannot:
            self.node.add_marker(pytest.mark.xfail(reason=self.backend.cannot[behaviour], strict=True))

    def settings(self, **fields: Any) -> AgentSettings:
        state = self.tmp_path / "state"
        return AgentSettings(
            card=CardSettings(name=f"behaviour-{self.backend.name}"),
            server=ServerSettings(port=free_port()),
            backend=self.backend.section(self.model, state / "workspace", state),
            state_dir=state,
            **fields,
        )

    @asynccontextmanager
    async def serving(self, **fields: Any) -> AsyncIterator[ServedAgent]:
        async with serving(self.settings(**fields), self.model) as served:
            yield served

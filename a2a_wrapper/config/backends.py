"""The `backend:` section: what every backend kind shares, and each kind's own keys (opencode, copilot, claude,
gemini, acp)."""

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, model_validator

from a2a_wrapper.sections import Section


class ModelProvider(Section):
    """A custom OpenAI-compatible provider (the offline model, a local server, a proxy)."""

    id: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    name: str | None = None
    base_url: str = Field(pattern=r"^https?://")
    api_key: SecretStr | None = Field(None, description="Sent as the bearer; none for a server without keys.")
    models: list[str] = Field(min_length=1)


MODEL_PATTERN = r"^[A-Za-z0-9_.-]+/.+$"


class McpServer(Section):
    """One MCP server, written once and mapped to each backend's own format: a stdio command or an HTTP URL."""

    command: list[str] | None = Field(None, min_length=1, description="stdio server: the program and its arguments.")
    url: str | None = Field(None, pattern=r"^https?://", description="HTTP (streamable) server.")
    env: dict[str, str] = Field({}, description="Environment of a stdio server.")
    headers: dict[str, str] = Field({}, description="Headers sent to an HTTP server.")
    tools: list[str] = Field(["*"], description="Tools of this server the agent may see.")
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server has exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and self.env:
            raise ValueError("`env` applies to a stdio server (`command`); an HTTP server takes `headers`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` apply to an HTTP server (`url`); a stdio server takes `env`")
        return self


class BackendSettings(Section):
    """What every backend kind shares: workspace, instructions, environment, MCP servers, start-up bound."""

    workdir: Path = Field(
        Path("workspace"), description="The agent's workspace, created if missing; relative to the config file."
    )
    system_prompt: str | None = None
    system_prompt_file: Path | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"
    env: dict[str, str] = {}
    mcp_servers: dict[str, McpServer] = Field({}, description="MCP servers by name (stdio `command` or HTTP `url`).")
    startup_timeout: float = Field(60.0, gt=0)

    @property
    def enabled_mcp_servers(self) -> list[str]:
        """The names of the MCP servers the backend is given (its tools' names start with them)."""
        return [name for name, server in self.mcp_servers.items() if server.enabled]


class OpenCodeSettings(BackendSettings):
    kind: Literal["opencode"] = "opencode"
    binary: Path | None = Field(None, description="opencode binary; default: the managed install.")
    base_url: str | None = Field(
        None, pattern=r"^https?://", description="Attach to a running `opencode serve` instead of spawning."
    )
    username: str = "opencode"
    password: SecretStr | None = None
    model: str = Field("offline/offline-model", pattern=MODEL_PATTERN, description="provider/model")
    agent: str | None = None
    provider: ModelProvider | None = None
    opencode_config: dict[str, Any] = Field({}, description="Raw OpenCode config merged in last.")


class OpenCode2Settings(OpenCodeSettings):
    """OpenCode 2 (`@opencode/cli` 2.x): the same keys; `opencode_config` is in 2.x's own config shape."""

    kind: Literal["opencode2"] = "opencode2"  # type: ignore[assignment]

    @model_validator(mode="after")
    def _supported(self) -> "OpenCode2Settings":
        # Not mapped to 2.x's config yet: refused rather than silently dropped.
        if self.system_prompt or self.system_prompt_file:
            raise ValueError("backend.system_prompt: the opencode2 backend does not take a system prompt yet")
        if self.mcp_servers:
            raise ValueError(f"backend.mcp_servers {list(self.mcp_servers)}: the opencode2 backend takes none yet")
        if self.username != "opencode":
            raise ValueError(f"backend.username {self.username!r}: OpenCode 2 knows only the user `opencode`")
        return self


class CopilotProvider(Section):
    """A provider of the user's own (BYOK) for Copilot: sent on every session."""

    type: Literal["openai", "azure", "anthropic"] = "openai"
    base_url: str = Field(pattern=r"^https?://")
    api_key: SecretStr | None = None
    bearer_token: SecretStr | None = None
    wire_api: Literal["completions", "responses"] | None = None
    azure_api_version: str | None = None


class CopilotSettings(BackendSettings):
    kind: Literal["copilot"] = "copilot"
    binary: Path | None = Field(None, description="Copilot CLI binary; default: the managed install.")
    model: str | None = Field(None, description="Model id; required with a provider.")
    provider: CopilotProvider | None = Field(None, description="Your own model provider instead of GitHub's.")
    github_token: SecretStr | None = Field(
        None, description="GitHub token; default COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN from the environment."
    )
    reasoning_effort: Literal["low", "medium", "high", "xhigh"] | None = None


class AcpProvider(Section):
    """The agent's model provider, handed to it in two environment variables of its own (its URL and its key), so
    that the wrapper can relay it: the agent then gets the relay's URL and a token, never the key."""

    type: Literal["openai", "azure", "anthropic", "gemini"] = "openai"
    base_url: str = Field(pattern=r"^https?://")
    api_key: SecretStr | None = None
    url_env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Variable the agent reads its URL from.")
    key_env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Variable the agent reads its key from.")


class AcpSettings(BackendSettings):
    kind: Literal["acp"] = "acp"
    command: list[str] = Field(min_length=1, description="The ACP agent's program and arguments (stdio).")
    provider: AcpProvider | None = Field(None, description="The agent's provider, relayed: no key in its env.")
    model: str | None = Field(
        None,
        description="The model the agent's own configuration (its env or arguments) picks, shown by status and "
        "/health when the agent does not name one itself; the wrapper does not choose the agent's model.",
    )


class ClaudeProvider(AcpProvider):
    """Claude Code's Anthropic Messages API provider, relayed as an ACP agent's is (its key stays in the wrapper)."""

    type: Literal["openai", "azure", "anthropic"] = "anthropic"
    url_env: str = Field("ANTHROPIC_BASE_URL", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    key_env: str = Field("ANTHROPIC_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class ClaudeSettings(BackendSettings):
    kind: Literal["claude"] = "claude"
    command: list[str] | None = Field(
        None, min_length=1, description="claude-agent-acp's program and arguments; default: the managed install."
    )
    provider: ClaudeProvider | None = Field(
        None, description="An Anthropic Messages API endpoint (the offline model, a proxy), relayed: no key inside."
    )
    model: str | None = Field(None, description="The model Claude Code asks for (ANTHROPIC_MODEL).")
    claude_settings: dict[str, Any] = Field(
        {}, description="Claude Code settings.json keys; the wrapper's permission mode and tool hook win over them."
    )


class GeminiProvider(AcpProvider):
    """Gemini CLI's Gemini API provider (`GOOGLE_GEMINI_BASE_URL`), relayed as an ACP agent's is: its key stays in
    the wrapper, which sends it as `x-goog-api-key`."""

    type: Literal["openai", "azure", "anthropic", "gemini"] = "gemini"
    url_env: str = Field("GOOGLE_GEMINI_BASE_URL", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    key_env: str = Field("GEMINI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class GeminiSettings(BackendSettings):
    kind: Literal["gemini"] = "gemini"
    command: list[str] | None = Field(
        None,
        min_length=1,
        description="Gemini CLI's program and arguments (`--acp` added); default: the managed install.",
    )
    provider: GeminiProvider | None = Field(
        None, description="A Gemini API endpoint (the offline model, a proxy), relayed: no key inside."
    )
    model: str | None = Field(None, description="The model Gemini CLI asks for (its `--model`).")


Backend = Annotated[
    OpenCodeSettings | OpenCode2Settings | CopilotSettings | ClaudeSettings | GeminiSettings | AcpSettings,
    Field(discriminator="kind"),
]
BACKEND_KINDS = ("opencode", "opencode2", "copilot", "claude", "gemini", "acp")

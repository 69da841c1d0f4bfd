"""Which agents get a model relay, and the settings their backend is started with: the provider is the relay.

An agent whose provider carries a credential (`api_key`, Copilot's `bearer_token`; an ACP agent's provider is
handed to it in the environment variables it names) gets a relay for as long as
it runs; its backend, sandbox included, sees settings in which the provider's URL is the relay's and its key is
the relay's token. The operator's key stays in the wrapper. The real provider's host is then no endpoint of
the backend's at all: only the wrapper reaches it.

Not relayed: a provider without a credential (nothing to keep out), an OpenCode the wrapper attaches to (its
config is its own), and `runtime: docker` (a container on a bridge network cannot dial the host's loopback).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import SecretStr

from a2a_wrapper.config.backends import AcpProvider, CopilotProvider, ModelProvider
from a2a_wrapper.config.settings import AgentSettings
from a2a_wrapper.sandbox import model_relay
from a2a_wrapper.sandbox.model_relay import ModelRelay, Upstream


def upstream_of(settings: AgentSettings) -> Upstream | None:
    """The provider a relay should stand in front of, or None when this agent's backend gets none."""
    backend = settings.backend
    provider = getattr(backend, "provider", None)
    if provider is None or getattr(backend, "base_url", None) or settings.runtime.kind == "docker":
        return None
    if isinstance(provider, CopilotProvider):
        upstream = Upstream(provider.type, provider.base_url, provider.api_key, provider.bearer_token)
    elif isinstance(provider, AcpProvider):
        upstream = Upstream(provider.type, provider.base_url, provider.api_key)
    else:
        assert isinstance(provider, ModelProvider)
        upstream = Upstream("openai", provider.base_url, provider.api_key)  # OpenCode's is OpenAI-compatible
    return upstream if upstream.credential() is not None else None


def relayed(settings: AgentSettings, relay: ModelRelay) -> AgentSettings:
    """`settings` as the backend sees them: the provider's URL the relay's, its key the relay's token."""
    provider = getattr(settings.backend, "provider", None)
    assert provider is not None
    update: dict[str, object] = {"base_url": relay.url, "api_key": SecretStr(relay.token)}
    if isinstance(provider, CopilotProvider):
        update["bearer_token"] = None
    backend = settings.backend.model_copy(update={"provider": provider.model_copy(update=update)})
    return settings.model_copy(update={"backend": backend})


@asynccontextmanager
async def backend_settings(settings: AgentSettings) -> AsyncIterator[AgentSettings]:
    """The settings to start the backend with: relayed while the relay runs, or `settings` as they are."""
    upstream = upstream_of(settings)
    if upstream is None:
        yield settings
        return
    async with model_relay.serving(upstream) as relay:
        yield relayed(settings, relay)

"""The agent card, from the config; interface URLs from the advertised URL, never from a request."""

from urllib.parse import urlsplit

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from a2a_wrapper.config.settings import AgentSettings, Skill
from a2a_wrapper.frontend.card_signing import sign_card
from a2a_wrapper.permissions.approvals import EXTENSION_DESCRIPTION, EXTENSION_URI

JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"
CARD_PATH = "/.well-known/agent-card.json"
API_KEY_HEADER = "X-API-Key"

# Either scheme carries the same caller's key; each requirement alone satisfies the card.
SECURITY_SCHEMES = {
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="Bearer", description="A caller's key as a bearer token: `Authorization: Bearer <key>`."
        )
    ),
    "apiKey": SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(
            location="header", name=API_KEY_HEADER, description=f"A caller's key in the `{API_KEY_HEADER}` header."
        )
    ),
}


def build_card(settings: AgentSettings) -> AgentCard:
    card = settings.card
    base = settings.advertised_url
    interfaces = [
        AgentInterface(url=base + path, protocol_binding=binding, protocol_version=version)
        for version in ("1.0", "0.3")
        for path, binding in ((JSONRPC_PATH, "JSONRPC"), (REST_PATH, "HTTP+JSON"))
    ]
    if settings.server.grpc_port:  # port 0 (a free one) is listed once bound: the agent passes the port it got
        interfaces += [
            AgentInterface(url=grpc_target(settings), protocol_binding="GRPC", protocol_version=version)
            for version in ("1.0", "0.3")
        ]
    skills = card.skills or [Skill(id="coding", name="Coding", description=card.description, tags=["coding"])]
    result = AgentCard(
        name=card.name,
        description=card.description,
        version=card.version,
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=settings.push.enabled,
            extensions=[AgentExtension(uri=EXTENSION_URI, description=EXTENSION_DESCRIPTION, required=False)],
        ),
        default_input_modes=card.default_input_modes,
        default_output_modes=card.default_output_modes,
        skills=[
            AgentSkill(id=s.id, name=s.name, description=s.description or s.name, tags=s.tags, examples=s.examples)
            for s in skills
        ],
    )
    if card.provider is not None:
        result.provider.CopyFrom(AgentProvider(organization=card.provider.organization, url=card.provider.url))
    if card.documentation_url:
        result.documentation_url = card.documentation_url
    if settings.auth.callers:
        for name, scheme in SECURITY_SCHEMES.items():
            result.security_schemes[name].CopyFrom(scheme)
            result.security_requirements.append(SecurityRequirement(schemes={name: StringList()}))
    return sign_card(result, card.signing) if card.signing else result


def grpc_target(settings: AgentSettings) -> str:
    """The gRPC interface's URL: `host:port`, no scheme, as gRPC channels and a2a-sdk's gRPC client take it; the
    host is the advertised URL's."""
    host = urlsplit(settings.advertised_url).hostname or "127.0.0.1"
    port = settings.server.grpc_port
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

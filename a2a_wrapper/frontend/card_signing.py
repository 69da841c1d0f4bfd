"""Signed cards (A2A §8.4): the card carries a JWS made with a PEM private key read from the environment at start.

A verifier signs nothing; it rebuilds the card it received, canonicalizes it and checks the JWS over those bytes.
The two generations of clients rebuild different cards from the same JSON:

- a 1.0 client (a2a-sdk 1.x, either served shape) rebuilds the 1.0 card, whose canonical form is the SDK's: the
  RFC 8785 form without `signatures` and empty values. The SDK's signer makes the first JWS over it.
- a 0.3 client (a2a-sdk 0.3) rebuilds a 0.3 card from the 0.3 fields and canonicalizes that: sorted-key JSON of the
  model without defaults, `signatures` and empty values. The second JWS covers those bytes.

Each verifier needs one valid signature and passes over the other (§8.4.3 lets a card carry several).
"""

import json
from typing import Any, cast

from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.types import AgentCard, AgentCardSignature
from a2a.utils.signing import ProtectedHeader, create_agent_card_signer
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from jwt import api_jws

from a2a_wrapper.config.settings import CardSigning
from a2a_wrapper.errors import ConfigError

# What each algorithm signs with, for the check at start and its sentence.
KEYS: dict[str, tuple[tuple[type, ...], str | None, str]] = {
    "ES256": ((ec.EllipticCurvePrivateKey,), "secp256r1", "an EC key on P-256"),
    "ES384": ((ec.EllipticCurvePrivateKey,), "secp384r1", "an EC key on P-384"),
    "RS256": ((rsa.RSAPrivateKey,), None, "an RSA key"),
    "PS256": ((rsa.RSAPrivateKey,), None, "an RSA key"),
    "EdDSA": ((ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey), None, "an Ed25519 or Ed448 key"),
}


def sign_card(card: AgentCard, signing: CardSigning) -> AgentCard:
    """Appends the JWS for 1.0 clients, then the one for 0.3 clients, to `card`. A key that cannot sign with the
    configured algorithm raises ConfigError naming card.signing.key_env (never the key)."""
    pem = signing.key()
    check_key(pem, signing)
    header = protected_header(signing)
    for_legacy = legacy_signature(card, pem, header)  # over a form that never includes signatures
    create_agent_card_signer(pem, cast(ProtectedHeader, header))(card)
    card.signatures.append(for_legacy)
    return card


def check_key(pem: str, signing: CardSigning) -> None:
    where = f"card.signing.key_env: the key in ${signing.key_env}"
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"{where} is not a PEM private key without a passphrase") from exc
    types, curve, needs = KEYS[signing.algorithm]
    fits = isinstance(key, types) and (curve is None or cast(ec.EllipticCurvePrivateKey, key).curve.name == curve)
    if not fits:
        raise ConfigError(f"{where} cannot sign {signing.algorithm}, which needs {needs}")


def protected_header(signing: CardSigning) -> dict[str, str]:
    header = {"alg": signing.algorithm, "typ": "JOSE", "kid": signing.key_id}
    if signing.jku:
        header["jku"] = signing.jku
    return header


def legacy_signature(card: AgentCard, pem: str, header: dict[str, str]) -> AgentCardSignature:
    token = api_jws.encode(legacy_canonical_form(card), key=pem, algorithm=header["alg"], headers=header)
    protected, _, signature = token.split(".")
    return AgentCardSignature(protected=protected, signature=signature)


def legacy_canonical_form(card: AgentCard) -> bytes:
    """The bytes a 0.3 verifier checks (a2a-sdk 0.3's `canonicalize_agent_card`, over the 0.3 card)."""
    legacy = to_compat_agent_card(card).model_dump(
        exclude={"signatures"}, exclude_defaults=True, exclude_none=True, by_alias=True
    )
    return json.dumps(without_empty(legacy), separators=(",", ":"), sort_keys=True).encode()


def without_empty(value: Any) -> Any:
    """`value` without empty strings, lists and objects, at any depth (None when nothing is left)."""
    if isinstance(value, dict):
        kept = {key: inner for key, item in value.items() if (inner := without_empty(item)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [inner for item in value if (inner := without_empty(item)) is not None]
        return items or None
    return None if value == "" else value

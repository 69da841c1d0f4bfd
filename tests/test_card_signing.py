"""Signed cards (A2A §8.4): what each client generation rebuilds from the card it is served verifies; a tampered
card does not; a key that cannot sign stops the start."""

import base64
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3.types import AgentCard as LegacyAgentCard
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from google.protobuf.json_format import MessageToDict
from jwt import api_jws
from jwt.exceptions import InvalidSignatureError

from a2a_wrapper.config.settings import AgentSettings, CardSettings, CardSigning
from a2a_wrapper.errors import ConfigError
from a2a_wrapper.frontend.card import build_card
from tests.fixtures.a2a_card_schema import schema_errors

KEY_ENV = "TEST_CARD_SIGNING_KEY"
JKU = "https://agent.test/.well-known/jwks.json"

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


def pem(key: PrivateKey) -> str:
    encoding, private = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    return key.private_bytes(encoding, private, serialization.NoEncryption()).decode()


@pytest.fixture(scope="module")
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def signed_settings(monkeypatch: pytest.MonkeyPatch, key_pem: str, **signing: Any) -> AgentSettings:
    monkeypatch.setenv(KEY_ENV, key_pem)
    card = CardSettings(name="signed", signing=CardSigning(key_env=KEY_ENV, key_id="card-key-1", **signing))
    return AgentSettings(card=card)


def served_shapes(settings: AgentSettings) -> dict[str, dict[str, Any]]:
    """The two bodies the card route serves (see test_card_shapes for the route itself)."""
    card = build_card(settings)
    return {"1.0": MessageToDict(card), "0.3": agent_card_to_dict(card)}


def verifier(key: ec.EllipticCurvePrivateKey) -> Callable[[Any], None]:
    """a2a-sdk's verifier, its key found by the `kid` the card's JWS names."""

    def find(kid: str | None, jku: str | None) -> Any:
        assert (kid, jku) == ("card-key-1", JKU)
        return key.public_key()

    return create_signature_verifier(find, ["ES256"])


@pytest.mark.parametrize("shape", ["1.0", "0.3"])
def test_what_a_1_0_client_rebuilds_from_either_shape_verifies(
    monkeypatch: pytest.MonkeyPatch, key: ec.EllipticCurvePrivateKey, shape: str
) -> None:
    """a2a-sdk 1.x's resolver asks with no A2A-Version (the 0.3 shape); @a2a-js/sdk's asks for 1.0."""
    served = served_shapes(signed_settings(monkeypatch, pem(key), jku=JKU))[shape]
    verifier(key)(parse_agent_card(copy.deepcopy(served)))
    tampered = copy.deepcopy(served) | {"description": "A different agent."}
    with pytest.raises(InvalidSignaturesError):
        verifier(key)(parse_agent_card(tampered))


def test_the_signed_1_0_card_is_schema_valid_and_its_header_names_the_key(
    monkeypatch: pytest.MonkeyPatch, key: ec.EllipticCurvePrivateKey
) -> None:
    served = served_shapes(signed_settings(monkeypatch, pem(key), jku=JKU))["1.0"]
    assert schema_errors(served) == []
    headers = [json.loads(base64.urlsafe_b64decode(s["protected"] + "==")) for s in served["signatures"]]
    assert headers == [{"alg": "ES256", "typ": "JOSE", "kid": "card-key-1", "jku": JKU}] * 2


def legacy_canonical_form(card: LegacyAgentCard) -> bytes:
    """a2a-sdk 0.3.26's `canonicalize_agent_card` (a2a/utils/helpers.py), transcribed: what a 0.3 verifier checks."""

    def clean_empty(d: Any) -> Any:
        if isinstance(d, dict):
            cleaned = {k: v for k, item in d.items() if (v := clean_empty(item)) is not None}
            return cleaned or None
        if isinstance(d, list):
            items = [v for item in d if (v := clean_empty(item)) is not None]
            return items or None
        if isinstance(d, str) and not d:
            return None
        return d

    dumped = card.model_dump(exclude={"signatures"}, exclude_defaults=True, exclude_none=True, by_alias=True)
    return json.dumps(clean_empty(dumped), separators=(",", ":"), sort_keys=True).encode()


def verifies_for_0_3(served: dict[str, Any], key: ec.EllipticCurvePrivateKey) -> bool:
    """a2a-sdk 0.3's verifier: the card rebuilt with the 0.3 model, one signature over its canonical form."""
    card = LegacyAgentCard.model_validate(served)
    payload = base64.urlsafe_b64encode(legacy_canonical_form(card)).rstrip(b"=").decode()
    for signature in card.signatures or []:
        try:
            api_jws.decode(f"{signature.protected}.{payload}.{signature.signature}", key.public_key(), ["ES256"])
        except InvalidSignatureError:
            continue
        return True
    return False


def test_what_a_0_3_client_rebuilds_verifies(monkeypatch: pytest.MonkeyPatch, key: ec.EllipticCurvePrivateKey) -> None:
    served = served_shapes(signed_settings(monkeypatch, pem(key)))["0.3"]
    assert verifies_for_0_3(copy.deepcopy(served), key)
    assert not verifies_for_0_3(served | {"url": "http://elsewhere.test/a2a/jsonrpc"}, key)


BAD_KEYS: dict[str, tuple[Callable[[], str], str, str]] = {  # the key: the algorithm, what the sentence says
    "not PEM": (lambda: "not a key", "ES256", "is not a PEM private key"),
    "a public key": (
        lambda: (
            ec.generate_private_key(ec.SECP256R1())
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        ),
        "ES256",
        "is not a PEM private key",
    ),
    "RSA for ES256": (lambda: pem(rsa.generate_private_key(65537, 2048)), "ES256", "cannot sign ES256"),
    "P-384 for ES256": (lambda: pem(ec.generate_private_key(ec.SECP384R1())), "ES256", "needs an EC key on P-256"),
    "EC for RS256": (lambda: pem(ec.generate_private_key(ec.SECP256R1())), "RS256", "needs an RSA key"),
    "Ed25519 for ES384": (lambda: pem(ed25519.Ed25519PrivateKey.generate()), "ES384", "cannot sign ES384"),
}


@pytest.mark.parametrize(("make_key", "algorithm", "says"), BAD_KEYS.values(), ids=BAD_KEYS.keys())
def test_a_key_that_cannot_sign_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, make_key: Callable[[], str], algorithm: str, says: str
) -> None:
    key_pem = make_key()
    settings = signed_settings(monkeypatch, key_pem, algorithm=algorithm)
    with pytest.raises(ConfigError) as refused:
        build_card(settings)
    assert str(refused.value).startswith(f"card.signing.key_env: the key in ${KEY_ENV} ")
    assert says in str(refused.value) and key_pem not in str(refused.value)


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "EdDSA", "ES384"])
def test_every_algorithm_signs_with_its_key(monkeypatch: pytest.MonkeyPatch, algorithm: str) -> None:
    private = {
        "RS256": lambda: rsa.generate_private_key(65537, 2048),
        "PS256": lambda: rsa.generate_private_key(65537, 2048),
        "EdDSA": ed25519.Ed25519PrivateKey.generate,
        "ES384": lambda: ec.generate_private_key(ec.SECP384R1()),
    }[algorithm]()
    served = served_shapes(signed_settings(monkeypatch, pem(private), algorithm=algorithm))["0.3"]
    check = create_signature_verifier(lambda kid, jku: private.public_key(), [algorithm])
    check(parse_agent_card(served))

"""The card and A2A-Version on the real agent (OpenCode and the offline model) on a loopback port."""

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest
from a2a.utils.signing import create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from a2a_wrapper.config.settings import CardSettings, CardSigning
from a2a_wrapper.offline_model import OfflineModel
from tests.conftest import ServedAgent, SettingsFactory, serving
from tests.fixtures.a2a_card_schema import schema_errors
from tests.helpers.a2a_wire import V1, task_answer, user_message

pytestmark = pytest.mark.slow

CARD = "/.well-known/agent-card.json"


async def test_each_generation_gets_its_card_with_its_own_validators(
    agent: ServedAgent, http: httpx.AsyncClient
) -> None:
    current = await http.get(agent.url + CARD, headers={"A2A-Version": "1.0"})
    legacy = await http.get(agent.url + CARD)
    assert schema_errors(current.json()) == []
    assert legacy.json()["url"] == agent.jsonrpc and legacy.json()["protocolVersion"] == "0.3"
    assert current.headers["ETag"] != legacy.headers["ETag"]
    for response, version in ((current, "1.0"), (legacy, "0.3")):
        assert response.headers["Vary"] == "A2A-Version"
        assert response.headers["Cache-Control"] == "public, max-age=300" and response.headers["Last-Modified"]
        again = await http.get(
            agent.url + CARD, headers={"A2A-Version": version, "If-None-Match": response.headers["ETag"]}
        )
        assert again.status_code == 304 and again.headers["Last-Modified"] == response.headers["Last-Modified"]
    refused = await http.get(agent.url + CARD, params={"A2A-Version": "2.0"})
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "FAILED_PRECONDITION"


async def test_the_version_parameter_counts_for_every_binding(agent: ServedAgent, http: httpx.AsyncClient) -> None:
    """`?A2A-Version=1.0` instead of the header (A2A §3.6.1); without either, a 1.0 method is refused as 0.3."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("by parameter")}}
    unversioned = (await http.post(agent.jsonrpc, json=body)).json()
    assert unversioned["error"]["code"] == -32009
    sent = (await http.post(agent.jsonrpc, params={"A2A-Version": "1.0"}, json=body)).json()
    assert task_answer(sent["result"]["task"]) == "Offline model reply: by parameter"
    task_id = sent["result"]["task"]["id"]
    fetched = await http.get(f"{agent.rest}/tasks/{task_id}", params={"A2A-Version": "1.0"})
    assert fetched.status_code == 200 and fetched.json()["id"] == task_id
    too_new = (await http.post(agent.jsonrpc, params={"A2A-Version": "2.0"}, json=body)).json()
    assert too_new["error"]["code"] == -32009 and "'2.0'" in too_new["error"]["message"]


async def test_a2a_sdk_verifies_the_signed_card_and_talks_to_the_agent(
    make_settings: SettingsFactory, offline_model: OfflineModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    monkeypatch.setenv("TEST_CARD_KEY", private.decode())
    signing = CardSigning(key_env="TEST_CARD_KEY", key_id="served-key")
    settings = make_settings(auto_approve=True)
    settings = settings.model_copy(update={"card": CardSettings(name="signed-agent", signing=signing)})
    verify = create_signature_verifier(lambda kid, jku: key.public_key(), ["ES256"])
    async with serving(settings, offline_model) as served, httpx.AsyncClient(timeout=60) as http:
        resolver = A2ACardResolver(http, served.url)  # asks with no A2A-Version: the 0.3 shape
        card = await resolver.get_agent_card(signature_verifier=verify)
        as_1_0 = await resolver.get_agent_card(http_kwargs={"headers": V1}, signature_verifier=verify)
        assert card == as_1_0 and card.name == "signed-agent" and len(card.signatures) == 2
        client = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=http))
        async with client:
            request = SendMessageRequest(message=new_text_message("signed", role=Role.ROLE_USER))
            events = [event async for event in client.send_message(request)]
    answer = "".join(part.text for artifact in events[-1].task.artifacts for part in artifact.parts)
    assert answer == "Offline model reply: signed"

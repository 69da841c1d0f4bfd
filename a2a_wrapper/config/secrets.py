"""The secrets an agent's settings hold: its `SecretStr` fields and the keys it reads from the environment."""

from pydantic import BaseModel, SecretStr

from a2a_wrapper.config.settings import AgentSettings


def secret_fields(model: BaseModel, location: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], SecretStr]]:
    """Each `SecretStr` that `model` holds, set, with its key path (`("backend", "provider", "api_key")`)."""
    found: list[tuple[tuple[str, ...], SecretStr]] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            found.append(((*location, name), value))
        elif isinstance(value, BaseModel):
            found += secret_fields(value, (*location, name))
    return found


def secret_values(settings: AgentSettings) -> list[str]:
    """Every secret value the agent holds: its config's secrets, its callers' keys, its console's key."""
    values = [secret.get_secret_value() for _, secret in secret_fields(settings)]
    values += [caller.key() for caller in settings.auth.callers]
    values.append(settings.console.key())
    return [value for value in values if value]

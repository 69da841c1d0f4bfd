"""`a2a-wrap`: run an agent, the demo, the offline model; check configs; install backends."""

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import click
from google.protobuf.json_format import MessageToDict

from a2a_wrapper import installer
from a2a_wrapper.card import build_card
from a2a_wrapper.config import AgentSettings
from a2a_wrapper.config_file import load_config
from a2a_wrapper.errors import WrapperError
from a2a_wrapper.guard import RedactingFilter, redact_value
from a2a_wrapper.shield import Shield, format_table

CONFIG_OPTION = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="The agent's config file."
)


def _overrides(**flags: Any) -> dict[str, Any]:
    """Only the flags the user typed, nested as the config's sections."""
    sections = {"port": "server", "host": "server", "advertise_url": "server", "log_level": "logging"}
    names = {"log_level": "level"}
    result: dict[str, Any] = {}
    for key, value in flags.items():
        if value is None:
            continue
        if key in sections:
            result.setdefault(sections[key], {})[names.get(key, key)] = value
        else:
            result[key] = value
    return result


def serve_options(function: Any) -> Any:
    for option in reversed(
        [
            CONFIG_OPTION,
            click.option("--port", type=int, help="Port to listen on (overrides server.port)."),
            click.option("--host", help="Address to bind (overrides server.host)."),
            click.option("--advertise-url", help="Base URL written into the agent card."),
            click.option(
                "--state-dir",
                type=click.Path(file_okay=False, resolve_path=True, path_type=Path),  # relative to here, not the file
                help="State folder.",
            ),
            click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False)),
        ]
    ):
        function = option(function)
    return function


def setup_logging(level: str) -> None:
    """Logs go to stderr with credentials redacted (the guard's filter sits on the handler)."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", stream=sys.stderr, force=True
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())


def _load(config_path: Path | None, **flags: Any) -> AgentSettings:
    if config_path is None:
        raise click.UsageError("--config is required (a YAML or JSON agent config)")
    try:
        return load_config(config_path, _overrides(**flags))
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


def _run(coroutine: Any) -> None:
    try:
        asyncio.run(coroutine)
    except KeyboardInterrupt:
        pass
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@serve_options
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, **flags: Any) -> None:
    """Run coding agents (OpenCode; Copilot and ACP agents to come) as A2A agents."""
    if ctx.invoked_subcommand is None:
        if config_path is None:
            click.echo(ctx.get_help())
            ctx.exit(2)
        ctx.invoke(serve, config_path=config_path, **flags)


@main.command()
@serve_options
def serve(config_path: Path | None, **flags: Any) -> None:
    """Run one agent from its config."""
    from a2a_wrapper.agent import serve as serve_agent

    settings = _load(config_path, **flags)
    setup_logging(settings.logging.level)
    _run(serve_agent(settings))


@main.command()
@CONFIG_OPTION
def check(config_path: Path | None) -> None:
    """Validate a config; print the effective config (secrets masked) and the agent card."""
    settings = _load(config_path)
    click.echo("# effective config")
    effective = settings.model_dump(mode="json")  # SecretStr fields print masked
    for raw in ("env", "opencode_config"):  # free-form sections: credentials in them are redacted
        effective["backend"][raw] = redact_value(effective["backend"][raw])
    click.echo(json.dumps(effective, indent=2))
    click.echo("# agent card")
    click.echo(json.dumps(MessageToDict(build_card(settings)), indent=2))
    policy = _policy(settings)
    click.echo("# permission rules")
    if isinstance(policy, Shield):
        for layer in ("operator", "agent"):
            rules = [rule for rule_layer, rule in policy.rules if rule_layer == layer]
            if rules:
                click.echo(format_table(rules, layer=layer))
        click.echo(format_table([], defaults=policy.defaults))
    else:
        stance = "on: every tool call allowed" if settings.auto_approve else "off: every tool call denied"
        click.echo(f"no shield section; autoApprove is {stance}")


@main.group()
def shield() -> None:
    """The shield's rules: what they decide, and why."""


@shield.command("explain")
@CONFIG_OPTION
@click.option("--tool", required=True, help="The backend's tool or permission name, e.g. bash, edit, webfetch.")
@click.option("--kind", help="The tool kind (execute, edit, read, fetch, ...); default: OpenCode's kind of --tool.")
@click.option("--command", "command_line", help="The command a shell tool would run.")
@click.option("--path", "paths", multiple=True, help="A path the tool touches (repeatable).")
@click.option("--url", help="The URL a network tool would fetch.")
def shield_explain(
    config_path: Path | None,
    tool: str,
    kind: str | None,
    command_line: str | None,
    paths: tuple[str, ...],
    url: str | None,
) -> None:
    """Print the decision for one tool call and the rule that made it."""
    from a2a_wrapper.backends.opencode.translate import tool_kind
    from a2a_wrapper.events import Permission
    from a2a_wrapper.shield import explain, format_explanation

    settings = _load(config_path)
    policy = _policy(settings)
    request = Permission("explain", kind or tool_kind(tool), tool, paths, command_line, url)
    if isinstance(policy, Shield):
        click.echo(format_explanation(explain(policy, request)))
    else:
        decision = policy.decide(request)
        click.echo(f"{decision.outcome}: {decision.reason} (rule {decision.rule})")


def _policy(settings: AgentSettings) -> Any:
    from a2a_wrapper.policy import build_policy

    try:
        return build_policy(settings)
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


@main.command()
@CONFIG_OPTION
@click.option("--limit", type=click.IntRange(1, 100000), default=50, show_default=True)
def audit(config_path: Path | None, limit: int) -> None:
    """Show the agent's recent permission decisions, newest first."""
    from datetime import UTC, datetime

    from a2a_wrapper.audit import recent
    from a2a_wrapper.text_table import text_table

    settings = _load(config_path)
    assert settings.state_dir is not None
    entries = recent(settings.state_dir / "state.db", limit)
    if not entries:
        click.echo(f"no decisions recorded in {settings.state_dir / 'state.db'}")
        return
    rows = [("time", "context", "task", "caller", "tool", "class", "decision", "rule", "by", "ms", "target")]
    for e in entries:
        when = datetime.fromtimestamp(e.time, UTC).strftime("%Y-%m-%d %H:%M:%S")
        target = e.target if len(e.target) <= 60 else e.target[:57] + "..."
        rows.append(
            (
                when,
                e.context_id[:8],
                e.task_id[:8],
                e.caller or "-",
                e.tool,
                e.cls,
                e.decision,
                e.rule,
                e.answered_by,
                f"{e.wait_ms:.1f}",
                target,
            )
        )
    click.echo(text_table(rows), nl=False)


@main.command()
def schema() -> None:
    """Print the JSON Schema of the agent config file."""
    # snake_case, as the docs and examples write it; camelCase aliases are accepted too.
    click.echo(json.dumps(AgentSettings.model_json_schema(by_alias=False), indent=2))


@main.command()
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
def model(port: int, host: str) -> None:
    """Run the offline model (an OpenAI-compatible chat-completions server) alone."""
    from a2a_wrapper.offline_model import run

    setup_logging("INFO")
    run(host, port)


@main.command()
@click.option("--port", type=int, default=8000, show_default=True, help="Port of the demo agent.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), help="State folder.")
def demo(port: int, state_dir: Path | None) -> None:
    """The offline model plus one OpenCode agent; prints the card URL and a command to try."""
    from a2a_wrapper.demo import run_demo

    setup_logging("INFO")
    _run(run_demo(port, state_dir, click.echo))


@main.group()
def backends() -> None:
    """Manage the pinned backend binaries."""


@backends.command("install")
@click.argument("kinds", nargs=-1)
def backends_install(kinds: tuple[str, ...]) -> None:
    """Install the pinned backends from the npm registry (all when none named)."""
    setup_logging("INFO")
    for kind in kinds or tuple(installer.PINNED):
        if kind not in installer.PINNED:
            raise click.BadParameter(f"unknown backend {kind!r}; known: {', '.join(installer.PINNED)}")
        try:
            path = asyncio.run(installer.install(kind))
        except WrapperError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"{kind}: {path}")


@backends.command("path")
@click.argument("kind")
def backends_path(kind: str) -> None:
    """Print where the installed backend binary is."""
    if kind not in installer.PINNED:
        raise click.BadParameter(f"unknown backend {kind!r}; known: {', '.join(installer.PINNED)}")
    try:
        click.echo(installer.find_binary(kind))
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc

"""`a2a-wrap`: run an agent, the demo, the offline model; check configs; install backends."""

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from a2a_wrapper.deploy.options import DEFAULT_IMAGE, DEFAULT_NAMESPACE, DEFAULT_STATE_STORAGE, DEFAULT_STORAGE
from a2a_wrapper.errors import WrapperError
from a2a_wrapper.events import KINDS, ToolKind

if TYPE_CHECKING:
    from a2a_wrapper.config.settings import AgentSettings

# A command imports what it runs when it runs: `a2a-wrap --help`, `send` or `status` never load the agent's
# server, the backends, the guard's tables or SQLAlchemy.

CONFIG_OPTION = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="The agent's config file."
)


# Each serve flag's key in the config.
_FLAG_KEYS = {
    "port": "server.port",
    "host": "server.host",
    "advertise_url": "server.advertise_url",
    "log_level": "logging.level",
    "state_dir": "state_dir",
}


def _overrides(**flags: Any) -> dict[str, Any]:
    """Only the flags the user typed, nested as the config's sections."""
    result: dict[str, Any] = {}
    for name, value in flags.items():
        if value is None:
            continue
        *sections, key = _FLAG_KEYS.get(name, name).split(".")
        target = result
        for section in sections:
            target = target.setdefault(section, {})
        target[key] = value
    return result


def _flag_names(**flags: Any) -> dict[str, str]:
    """The config key of each flag the user typed, with the flag as typed (`{"server.port": "--port"}`)."""
    typed = (name for name, value in flags.items() if value is not None)
    return {_FLAG_KEYS.get(name, name): "--" + name.replace("_", "-") for name in typed}


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


# Per-request chatter of the libraries under us: the fleet's health polls (httpx) and every HTTP request's access
# line (uvicorn), uvicorn's start-up banner ("Press CTRL+C to quit"). Shown only at DEBUG.
_CHATTY = ("httpx", "uvicorn.access", "uvicorn.error")


def setup_logging(
    level: str | None, timestamps: bool = True, default: str = "INFO", log_format: str | None = None
) -> None:
    """Logs go to stderr with credentials redacted (the guard's filter sits on the handler). `level` is the
    command's own --log-level, else the one given before the command (`a2a-wrap --log-level debug demo`), else
    `default`. Without timestamps when a supervisor (the fleet, systemd, docker) stamps each line itself.
    `log_format` "json" writes one JSON object per line; a command without a config takes it from
    A2A_WRAP_LOGGING__FORMAT, the variable an agent's config reads it from too."""
    from a2a_wrapper.guard import RedactingFilter

    chosen = (level or _root_log_level() or default).upper()
    stamp = "%(asctime)s " if timestamps else ""
    logging.basicConfig(
        level=chosen, format=f"{stamp}%(levelname)-7s %(name)s: %(message)s", stream=sys.stderr, force=True
    )
    as_json = (log_format or os.environ.get("A2A_WRAP_LOGGING__FORMAT", "text")).lower() == "json"
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
        if as_json:
            handler.setFormatter(json_lines())
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if chosen == "DEBUG" else logging.WARNING)


def json_lines() -> logging.Formatter:
    """One JSON object per record: time (ISO 8601, UTC), level, logger, message, and exc_info when there is one."""
    from pythonjsonlogger.json import JsonFormatter

    formatter = JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
    )
    formatter.converter = time.gmtime
    return formatter


def _fleet_logging(level: str | None, default: str = "INFO") -> None:
    """The fleet's log, and its agents' level when one was given (they inherit it through A2A_WRAP_LOGGING__LEVEL;
    otherwise each logs at its config's level and the fleet shows what passes its own)."""
    chosen = level or _root_log_level()
    if chosen:
        os.environ["A2A_WRAP_LOGGING__LEVEL"] = chosen.upper()
    setup_logging(chosen, default=default)


def _root_log_level() -> str | None:
    context = click.get_current_context(silent=True)
    return context.find_root().params.get("log_level") if context is not None else None


def _load(config_path: Path | None, **flags: Any) -> "AgentSettings":
    from a2a_wrapper.config.files import load_config

    if config_path is None:
        raise click.UsageError("--config is required (a YAML or JSON agent config)")
    try:
        return load_config(config_path, _overrides(**flags), _flag_names(**flags))
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


def _run(coroutine: Any) -> None:
    from a2a_wrapper import event_loop

    try:
        event_loop.run(coroutine)
    except KeyboardInterrupt:
        pass
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@serve_options
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, **flags: Any) -> None:
    """Run coding agents (OpenCode, GitHub Copilot CLI, any ACP agent) as A2A agents, each in an OS sandbox."""
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

    settings = _load(config_path, **{**flags, "log_level": flags.get("log_level") or _root_log_level()})
    setup_logging(settings.logging.level, settings.logging.timestamps, log_format=settings.logging.format)
    _run(serve_agent(settings))


@main.command()
@CONFIG_OPTION
def check(config_path: Path | None) -> None:
    """Validate a config; print the effective config (secrets masked), the agent card, the rules and the sandbox."""
    from google.protobuf.json_format import MessageToDict

    from a2a_wrapper.agent import describe_backends
    from a2a_wrapper.frontend.card import build_card
    from a2a_wrapper.guard import redact_value
    from a2a_wrapper.shield import format_table
    from a2a_wrapper.workspaces import served_settings

    settings = _load(config_path)
    click.echo("# effective config")
    effective = settings.model_dump(mode="json")  # SecretStr fields print masked
    for raw in ("env", "opencode_config", "mcp_servers"):  # free-form sections: credentials in them are redacted
        if raw in effective["backend"]:
            effective["backend"][raw] = redact_value(effective["backend"][raw])
    click.echo(json.dumps(effective, indent=2))
    click.echo("# agent card")
    click.echo(json.dumps(MessageToDict(build_card(settings)), indent=2))
    policy = _policy(settings)
    click.echo("# permission rules")
    if policy.rules_decide:
        for layer in ("operator", "agent", "built-in"):
            rules = [rule for rule_layer, rule in policy.shield.rules if rule_layer == layer]
            if rules:
                click.echo(format_table(rules, layer=layer))
        click.echo(format_table([], defaults=policy.shield.defaults))
    else:
        stance = "on: every tool call allowed" if settings.auto_approve else "off: every tool call denied"
        click.echo(f"no shield section; autoApprove is {stance}")
    click.echo("# runtime: where the backend runs, what it can write, read and reach")
    click.echo(json.dumps(describe_backends(served_settings(settings)), indent=2))  # per task: the copies


@main.group()
def shield() -> None:
    """The shield's rules: what they decide, and why."""


@shield.command("explain")
@CONFIG_OPTION
@click.option("--tool", required=True, help="The backend's tool or permission name, e.g. bash, edit, webfetch.")
@click.option("--kind", type=click.Choice(KINDS), help="The tool kind; default: OpenCode's kind of --tool.")
@click.option("--command", "command_line", help="The command a shell tool would run.")
@click.option("--path", "paths", multiple=True, help="A path the tool touches (repeatable).")
@click.option("--url", help="The URL a network tool would fetch.")
@click.option("--workdir", help="Where the shell command runs (OpenCode's bash workdir); default: the workspace.")
def shield_explain(
    config_path: Path | None,
    tool: str,
    kind: ToolKind | None,
    command_line: str | None,
    paths: tuple[str, ...],
    url: str | None,
    workdir: str | None,
) -> None:
    """Print the decision for one tool call and the rule that made it."""
    from a2a_wrapper.backends.opencode.translate import tool_kind
    from a2a_wrapper.events import Permission
    from a2a_wrapper.shield import explain, format_explanation

    settings = _load(config_path)
    policy = _policy(settings)
    request = Permission(
        id="explain",
        kind=kind or tool_kind(tool),
        tool=tool,
        paths=paths,
        command=command_line,
        url=url,
        workdir=workdir,
    )
    if policy.rules_decide:
        click.echo(format_explanation(explain(policy.shield, request)))
    else:
        decision = policy.decide(request)
        click.echo(f"{decision.outcome}: {decision.reason} (rule {decision.rule})")


def _policy(settings: "AgentSettings") -> Any:
    from a2a_wrapper.permissions.policy import build_policy

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

    from a2a_wrapper.state.audit import recent
    from a2a_wrapper.state.engines import state_database
    from a2a_wrapper.text_table import text_table

    settings = _load(config_path)
    database = state_database(settings)
    entries = recent(database, limit)
    if not entries:
        click.echo(f"no decisions recorded in {database}")
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
                e.decided_by,
                f"{e.wait_ms:.1f}",
                target,
            )
        )
    click.echo(text_table(rows), nl=False)


@main.command()
@click.option(
    "--folders",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("/srv/a2a/backend"),
    show_default=True,
    help="The backend's folders (runtime.folders), the volume shared with the wrapper's container.",
)
@click.option(
    "--reap-strays/--no-reap-strays",
    default=False,
    help="Once no backend runs, kill every other process of this user: only in the backend's own container.",
)
def sidecar(folders: Path, reap_strays: bool) -> None:
    """Start the backends the wrapper asks for: the backend's container's command (runtime.kind: sidecar)."""
    from a2a_wrapper.sandbox.sidecar import Sidecar

    setup_logging(None)
    _run(Sidecar(folders, reap_strays).serve())


@main.command()
@click.option(
    "--token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The channel's token: the Secret's file, mounted in this container only.",
)
@click.option(
    "--listen",
    default="0.0.0.0:8791",
    show_default=True,
    help="HOST:PORT of the gate the wrapper's pod opens `sidecar` and `port/N` through.",
)
@click.option("--wrapper", required=True, help="HOST:PORT of the wrapper pod's gate (its Service).")
@click.option(
    "--folders",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("/srv/a2a/backend"),
    show_default=True,
    help="The backend's folders (runtime.folders): where the sidecar's socket is.",
)
@click.option(
    "--sockets",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("/run/a2a-wrapper"),
    show_default=True,
    help="Where the wrapper's sockets appear for the backend (read-only there).",
)
@click.option(
    "--forward",
    "names",
    multiple=True,
    help="A socket of the wrapper's to show in --sockets (repeat; default: the egress proxy and the hook).",
)
def channel(token_file: Path, listen: str, wrapper: str, folders: Path, sockets: Path, names: tuple[str, ...]) -> None:
    """The backend pod's end of its channels to the wrapper's pod (the backend in a pod of its own)."""
    from a2a_wrapper.sandbox.channel import read_token
    from a2a_wrapper.sandbox.plan import WRAPPER_CHANNELS
    from a2a_wrapper.sandbox.pod_channels import Address, serve_backend_side
    from a2a_wrapper.sandbox.sidecar import socket_path

    setup_logging(None)
    try:
        token, gate, peer = read_token(token_file), Address.parse(listen), Address.parse(wrapper)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    sockets.mkdir(parents=True, exist_ok=True)
    _run(serve_backend_side(token, gate, socket_path(folders), peer, sockets, names or WRAPPER_CHANNELS))


@main.command()
@click.option("--markdown", is_flag=True, help="The configuration reference (docs/config-reference.md) instead.")
def schema(markdown: bool) -> None:
    """Print the JSON Schema of the agent config file."""
    if markdown:
        from a2a_wrapper.config.reference import reference_markdown

        click.echo(reference_markdown(), nl=False)
        return
    from a2a_wrapper.config.settings import AgentSettings

    # snake_case, as the docs and examples write it; camelCase aliases are accepted too.
    click.echo(json.dumps(AgentSettings.model_json_schema(by_alias=False), indent=2))


@main.command()
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
def model(port: int, host: str) -> None:
    """Run the offline model alone (chat completions, Responses, Anthropic Messages, Gemini)."""
    from a2a_wrapper.offline_model import run

    setup_logging(None)
    try:
        run(host, port)
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


OPERATOR_HELP = (
    "Someone who signs in to the console at /console with the key in ENV_VAR (repeatable; none: a one-time "
    "sign-in link is printed)."
)


@main.command()
@click.option(
    "--port", type=int, default=8800, show_default=True, help="Port of the registry; the agents take the next three."
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="State folder (default: ~/.local/state/a2a-wrapper/demo, or demo-PORT for another --port).",
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Of the log on stderr: the fleet's and its agents' (default WARNING; INFO: each decision and restart).",
)
@click.option(
    "--operator",
    "operators",
    multiple=True,
    metavar="NAME:ENV_VAR",
    help=OPERATOR_HELP,
)
def demo(port: int, state_dir: Path | None, log_level: str | None, operators: tuple[str, ...]) -> None:
    """The offline model and a fleet of three agents (OpenCode, Copilot, an ACP agent) behind one registry and
    its console; prints where each agent and its workspace is, a line as each is ready, then commands to try.
    A second demo runs beside it on another --port (its own state folder)."""
    from a2a_wrapper.fleet.demo import run_demo

    named = _operator_pairs(operators)
    _fleet_logging(log_level, default="WARNING")
    _run(run_demo(port, state_dir, click.echo, named))


def _operator_pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """--operator NAME:ENV_VAR, each as (name, the variable holding the key)."""
    pairs = []
    for value in values:
        name, colon, key_env = value.partition(":")
        if not (name and colon and key_env):
            raise click.BadParameter(f"{value!r} is not NAME:ENV_VAR", param_hint="--operator")
        pairs.append((name, key_env))
    return pairs


@main.command("send")
@click.argument("url")
@click.argument("text")
@click.option("--context", "context_id", help="Continue this conversation (the contextId printed by an earlier send).")
@click.option("--key", help="A caller's key, sent as a bearer token (--key-env keeps it out of the process list).")
@click.option("--key-env", help="The environment variable holding the key.")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="Sent on every request (repeatable).")
@click.option("--json", "raw", is_flag=True, help="Print every event as one JSON line instead of the live view.")
def send_message(
    url: str,
    text: str,
    context_id: str | None,
    key: str | None,
    key_env: str | None,
    headers: tuple[str, ...],
    raw: bool,
) -> None:
    """Send TEXT to the agent at URL (its base URL or card URL) and follow the task live; approvals are asked
    here. Exit code 0 when the task completed, 1 otherwise."""
    import asyncio

    from a2a_wrapper.client import send
    from a2a_wrapper.client.connect import parse_headers

    if key and key_env:
        raise click.UsageError("give --key or --key-env, not both")
    if key_env:
        key = os.environ.get(key_env)
        if not key:
            raise click.ClickException(f"--key-env: the environment variable {key_env} is not set")
    try:
        sent = parse_headers(headers)
        code = asyncio.run(send(url, text, context_id=context_id, key=key, headers=sent, raw=raw))
    except KeyboardInterrupt:
        code = 130
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc
    sys.exit(code)


@main.group()
def backends() -> None:
    """Manage the pinned backend binaries."""


@backends.command("install")
@click.argument("kinds", nargs=-1)
def backends_install(kinds: tuple[str, ...]) -> None:
    """Install the pinned backends from the npm registry (all when none named); one already installed at its
    pinned version is kept. Progress goes to stderr; stdout gets one `KIND: BINARY` line per backend."""
    import asyncio

    from a2a_wrapper.backends import install as installer

    setup_logging(None)
    for kind in kinds or tuple(installer.PINNED):
        if kind not in installer.PINNED:
            raise click.BadParameter(f"unknown backend {kind!r}; known: {', '.join(installer.PINNED)}")
        try:
            path = asyncio.run(installer.install(kind, lambda line: click.echo(line, err=True)))
        except WrapperError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"{kind}: {path}")


@backends.command("path")
@click.argument("kind")
def backends_path(kind: str) -> None:
    """Print where the installed backend binary is."""
    from a2a_wrapper.backends import install as installer

    if kind not in installer.PINNED:
        raise click.BadParameter(f"unknown backend {kind!r}; known: {', '.join(installer.PINNED)}")
    try:
        click.echo(installer.find_binary(kind))
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--host", help="Address the registry binds (overrides the fleet file; default 127.0.0.1).")
@click.option("--port", type=int, help="Port of the registry (overrides the fleet file; default 8800).")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def fleet(paths: tuple[Path, ...], host: str | None, port: int | None, log_level: str | None) -> None:
    """Run many agents, each its own `a2a-wrap serve`, behind one registry.

    PATHS is a folder of agent folders (each with a config.yaml, .yml or .json), agent config files,
    or one fleet file (see configs/fleet.yaml). A crashed agent is restarted with backoff; an edited
    config restarts only its agent; the registry lists every agent at GET /agents. Ctrl-C stops them
    all gracefully; a second Ctrl-C kills them.
    """
    from a2a_wrapper.fleet import load_fleet, run_fleet

    _fleet_logging(log_level)
    registry = {key: value for key, value in {"host": host, "port": port}.items() if value is not None}
    try:
        loaded = load_fleet(list(paths), registry)
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc
    _run(run_fleet(loaded, click.echo))


@main.command()
@click.option("--agent", "urls", multiple=True, required=True, help="Base URL of an agent, e.g. http://reviewer:8000.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0 in a container).")
@click.option("--port", type=click.IntRange(1, 65535), default=8800, show_default=True)
@click.option("--health-interval", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds.")
@click.option("--operator", "operators", multiple=True, metavar="NAME:ENV_VAR", help=OPERATOR_HELP)
def registry(urls: tuple[str, ...], host: str, port: int, health_interval: float, operators: tuple[str, ...]) -> None:
    """List agents run elsewhere (e.g. one docker compose service each), without supervising them.

    \b
    a2a-wrap registry --agent http://code-review:8000 --agent http://docs:8000 --host 0.0.0.0 --port 8800
    \b
    Serves GET /agents (?skill=TAG_OR_ID), GET /agents/{name} and GET /health, as `a2a-wrap fleet`
    does: {"agents": [{name, url, card_url, state, backend, skills, last_health, ...}]}. Each agent
    is known by its card (GET URL/.well-known/agent-card.json) and GET URL/health, polled every
    --health-interval seconds; one not up yet is listed as unreachable until it answers.
    """
    from pydantic import ValidationError

    from a2a_wrapper.config.files import describe_errors
    from a2a_wrapper.fleet import RegistrySettings, RemoteSpec, run_registry

    setup_logging(None)
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="--agent")
    people = [{"name": name, "key_env": key_env} for name, key_env in _operator_pairs(operators)]
    try:
        settings = RegistrySettings(host=host, port=port, health_interval=health_interval, operators=people)
    except ValidationError as exc:
        raise click.ClickException(describe_errors(exc, lambda _key: "--operator")) from exc
    _run(run_registry([RemoteSpec(url.rstrip("/")) for url in urls], settings, click.echo))


@main.group()
def deploy() -> None:
    """Render the fleet's configs for a platform that runs them (Kubernetes)."""


@deploy.command("kubernetes")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("k8s"),
    show_default=True,
    help="The folder to write; refused when it holds files an earlier render did not write.",
)
@click.option(
    "--image",
    default=DEFAULT_IMAGE,
    show_default=True,
    help="The a2a-wrapper image (compose/build-image.sh builds it); push it to a registry the cluster pulls from.",
)
@click.option("--namespace", default=DEFAULT_NAMESPACE, show_default=True, help="The namespace, rendered too.")
@click.option(
    "--storage", default=DEFAULT_STORAGE, show_default=True, help="Each agent's backend's volume (workspace, its data)."
)
@click.option(
    "--state-storage", default=DEFAULT_STATE_STORAGE, show_default=True, help="Each agent's wrapper's volume (state)."
)
@click.option("--postgres-secret", help="A Secret whose key `url` is the state's Postgres URL (A2A_WRAP_STATE__URL).")
@click.option("--registry/--no-registry", default=True, show_default=True, help="Render the registry listing them.")
@click.option(
    "--backend-pod/--backend-beside",
    default=False,
    show_default=True,
    help="Each agent's backend in a pod of its own, whose network is its channels to the wrapper (needs a network "
    "plugin that enforces NetworkPolicy), or in the wrapper's pod, sharing its network.",
)
def deploy_kubernetes(paths: tuple[Path, ...], output: Path, **options: Any) -> None:
    """Write Kubernetes manifests for the agents PATHS name (as `a2a-wrap fleet` takes them): per agent a
    StatefulSet, Service, ConfigMap and NetworkPolicy; the registry; a kustomization for `kubectl apply -k`.

    The configs are loaded as the fleet loads them, so the variables they name must be set here; only their
    names are written: each agent reads them from a Secret `<agent>-keys`, listed at the end, never rendered.
    """
    from a2a_wrapper.deploy.manifests import load_deployment, render_kubernetes, summary, write_rendering
    from a2a_wrapper.deploy.options import KubernetesOptions

    try:
        settings = KubernetesOptions(**options)
        rendering = render_kubernetes(load_deployment(list(paths)), settings)
        write_rendering(rendering, output)
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(summary(rendering, output, settings))


@main.command()
@click.option("--registry", "registry_url", default="http://127.0.0.1:8800", show_default=True)
@click.option("--watch", is_flag=True, help="Redraw the table every --interval seconds until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, help="Seconds.")
def status(registry_url: str, watch: bool, interval: float) -> None:
    """Print the fleet's agents, as the registry lists them, in a table, with the approvals (and questions)
    each running agent waits on for a person."""
    from a2a_wrapper.fleet.status import show_status, watch_status

    _run(watch_status(registry_url, interval, sys.stdout) if watch else show_status(registry_url, sys.stdout))


@main.command()
@click.argument("name")
@click.option("--registry", "registry_url", default="http://127.0.0.1:8800", show_default=True)
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=50, show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until Ctrl-C.")
def logs(name: str, registry_url: str, count: int, follow: bool) -> None:
    """Print a fleet agent's recent output (and its lifecycle as the fleet saw it), from the file the fleet
    keeps for it; with --follow, go on printing the lines that come."""
    import asyncio

    from a2a_wrapper.fleet.logs import follow_log, log_of, show_recent

    try:
        path = asyncio.run(log_of(registry_url, name))
        show_recent(path, count, sys.stdout, follow)
    except WrapperError as exc:
        raise click.ClickException(str(exc)) from exc
    if follow:
        _run(follow_log(path, sys.stdout))

"""Listening sockets bound before anything slow starts, so a taken port is one sentence, not a late crash."""

import socket

from a2a_wrapper.errors import ConfigError


def bind_port(host: str, port: int, who: str) -> socket.socket:
    """A socket bound as uvicorn binds (SO_REUSEADDR); a taken port is a ConfigError naming `who`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"{who}: cannot listen on {host}:{port} ({exc.strerror})") from exc
    return sock


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the kernel's pick), for a child to listen on."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])

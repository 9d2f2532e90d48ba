"""``satchel lab``: serve the lab page on loopback and open it in a browser."""

from __future__ import annotations

import argparse
import errno
import socket
import threading
import webbrowser

from .._errors import ConfigError
from . import command
from .pack import refuse_blank

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default 127.0.0.1: only this machine can reach the lab)",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8700)")
    p.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")
    p.add_argument(
        "--model",
        metavar="SPEC",
        help="model that answers on the Ask tab: local, local:PATH.gguf or openai:NAME "
        "(default: $SATCHEL_LAB_MODEL, else no model)",
    )
    # (as satchel ablate's: the two resolve --model and --pack-model alike, resolve_pack_model)
    p.add_argument("--pack-model", help="budget for this registered model instead of the one --model implies")


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..lab.app import create_app
    except ImportError:
        from ..lab import INSTALL_HINT

        raise ConfigError(INSTALL_HINT) from None
    refuse_blank(args, "pack_model")
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a TCP port; use 1-65535 (default {DEFAULT_PORT})")
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    app = create_app(
        args.model,
        allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None,
        pack_model=args.pack_model,
    )
    # Bound here, before the URL is shown: a port in use or a host that does not resolve is
    # one clear error, and the browser never opens on whatever else answers at that URL.
    sock = _bind(args.host, args.port)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{args.port}/"
    print(f"Satchel Lab: {url}  (Ctrl+C to stop)", flush=True)
    if not args.no_browser:
        # once uvicorn has had a moment to listen; a failed open only means the user clicks the URL
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` for the lab to serve on."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise ConfigError(
            f"--host {host!r} does not resolve ({exc.strerror}); use 127.0.0.1 (this machine only) "
            "or an address of this machine"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as uvicorn binds)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is in use (another lab, or another server); pass a free one "
                f"with --port, e.g. --port {port + 1 if port < 65535 else port - 1}"
            ) from None
        raise ConfigError(
            f"cannot serve on {host} port {port}: {exc.strerror}; pick another --host or --port"
        ) from None
    return sock


command(
    "lab", "Start the Satchel Lab: a local page to see and tune how chunks are packed.", add_arguments, run
)

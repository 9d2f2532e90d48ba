"""``satchel lab``: serve the lab page on loopback and open it in a browser."""

from __future__ import annotations

import argparse
import threading
import webbrowser

from .._errors import ConfigError
from . import command

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


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..lab.app import create_app
    except ImportError:
        from ..lab import INSTALL_HINT

        raise ConfigError(INSTALL_HINT) from None
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a TCP port; use 1-65535 (default {DEFAULT_PORT})")
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    app = create_app(
        args.model, allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None
    )
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{args.port}/"
    print(f"Satchel Lab: {url}  (Ctrl+C to stop)", flush=True)
    if not args.no_browser:
        # once uvicorn has had a moment to bind; a failed open only means the user clicks the URL
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


command(
    "lab", "Start the Satchel Lab: a local page to see and tune how chunks are packed.", add_arguments, run
)

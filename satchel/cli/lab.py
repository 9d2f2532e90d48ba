"""``satchel lab``: serve the lab page on loopback and open it in a browser."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import socket
import sys
import threading
import webbrowser
from typing import Any

from .._errors import ConfigError
from . import command
from .answering import add_answering_options, client_options
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
    # (satchel ablate's options: the two build and budget for the answering model alike)
    add_answering_options(
        p.add_argument_group("answering model"),
        model_default=None,
        model_help="model that answers on the Ask tab: local, local:PATH.gguf or openai:NAME "
        "(default: $SATCHEL_LAB_MODEL, else no model)",
        n_ctx_default=4096,
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..lab.app import MODEL_ENV, create_app, lab_option
    except ImportError:
        from ..lab import INSTALL_HINT

        raise ConfigError(INSTALL_HINT) from None
    refuse_blank(args, "pack_model")
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a TCP port; use 1-65535 (default {DEFAULT_PORT})")
    address = _resolve(args.host, args.port)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    # Whether only this machine can reach the lab is read from the address bound, not from
    # how --host was spelt (127.0.0.2 is loopback; a name may be any address).
    ip = ipaddress.ip_address(address[4][0].split("%")[0])
    loopback = ip.is_loopback
    spec = args.model if args.model is not None else os.environ.get(MODEL_ENV)
    app = create_app(
        args.model,
        allowed_hosts=sorted({"127.0.0.1", "localhost", "[::1]", "::1", args.host, shown})
        if loopback
        else None,
        pack_model=args.pack_model,
        client_options=client_options(argparse.Namespace(**{**vars(args), "model": spec}), lab_option),
    )
    # Bound here, before the URL is shown: a port in use or a host that does not resolve is
    # one clear error, and the browser never opens on whatever else answers at that URL.
    sock = _bind(address, args.host, args.port)
    url = f"http://{shown}:{args.port}/"
    if not loopback:
        # (--host 0.0.0.0 served every interface without a word, and with the Host check off)
        where = "every address of this machine" if ip.is_unspecified else str(ip)
        spec = app.state.model.spec
        model = f", and make {spec} answer" if spec else ""
        print(
            f"satchel: warning: --host {args.host} serves the lab on {where}, port {args.port}: any "
            f"machine that reaches it can use its page and API{model}, and its Host-header check "
            "(against DNS rebinding) is off; leave --host out to serve this machine only (127.0.0.1)",
            file=sys.stderr,
            flush=True,
        )
    print(f"Satchel Lab: {url}  (Ctrl+C to stop)", flush=True)
    if not args.no_browser:
        # once uvicorn has had a moment to listen; a failed open only means the user clicks the URL
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _resolve(host: str, port: int) -> tuple[Any, ...]:
    """``host``:``port`` as the address the lab binds (getaddrinfo's first answer)."""
    try:
        return tuple(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0])
    except OSError as exc:
        raise ConfigError(
            f"--host {host!r} does not resolve ({exc.strerror}); use 127.0.0.1 (this machine only) "
            "or an address of this machine"
        ) from None


def _bind(resolved: tuple[Any, ...], host: str, port: int) -> socket.socket:
    """A socket bound to ``resolved`` (``host``:``port``) for the lab to serve on."""
    family, kind, proto, _, address = resolved
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

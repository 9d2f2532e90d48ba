"""The Satchel Lab: a local web page to see and tune a pack (seed 001's RAG Lab).

``satchel lab`` serves it on 127.0.0.1. The page never packs by itself: every
pack comes from :func:`satchel.pack` through the JSON API in :mod:`satchel.lab.app`,
so the page and the library give the same prompt byte for byte.

FastAPI and uvicorn are an extra (``pip install 'satchel[lab]'``); importing
this package does not load them, :func:`create_app` does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["INSTALL_HINT", "create_app"]

INSTALL_HINT = "the lab needs FastAPI and uvicorn: pip install 'satchel[lab]'"


def create_app(*args: Any, **kwargs: Any) -> Any:
    """Build the lab's FastAPI app; see :func:`satchel.lab.app.create_app`."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)

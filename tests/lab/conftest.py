"""Fixtures the lab's API and browser tests share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def stand_in_lab() -> Callable[[type], Any]:
    """``make(fake)``: the lab app answered by a server model Satchel does not know,
    qwen2.5-7b-instruct (``fake``'s answers, under that name), and packed for its stand-in,
    ``--pack-model gpt-4-32k``."""

    def make(fake: type) -> Any:
        from satchel.lab.app import create_app  # (FastAPI: imported where the lab is tested)

        qwen = type("Qwen", (fake,), {"model": "qwen2.5-7b-instruct"})
        return create_app(
            model="openai:qwen2.5-7b-instruct", client_factory=lambda spec: qwen(), pack_model="gpt-4-32k"
        )

    return make

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the benchmarks' data helpers (bench/_data.py) serve the tests too
SHARED = pathlib.Path(__import__("os").environ.get("SATCHEL_SHARED", ROOT.parent / "shared"))
SEEDS = SHARED / "seeds"


@pytest.fixture
def seed_text():
    def read(name: str) -> str:
        path = next(SEEDS.glob(f"{name}_*.txt"), None)
        if path is None:
            pytest.skip(f"seed {name} not found under {SEEDS}; put ../shared beside the repo")
        return path.read_text(encoding="utf-8")

    return read

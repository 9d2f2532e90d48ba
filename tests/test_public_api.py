from __future__ import annotations

import subprocess
import sys

import satchel


def test_all_is_sorted_and_complete():
    public = {name for name in dir(satchel) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(satchel, name)).__name__ == "module"}
    assert satchel.__all__ == sorted(satchel.__all__, key=lambda n: (not n.isupper(), n))
    assert set(satchel.__all__) == public - modules


def test_bare_import_loads_no_optional_dependency():
    code = (
        "import sys, satchel\n"
        "satchel.pack([{'id': 'a', 'text': 'x y z'}], 'q?')\n"
        "heavy = [m for m in ('tokenizers', 'fastapi', 'uvicorn', 'httpx', 'llama_cpp', 'matplotlib', "
        "'playwright', 'nupunkt') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""Instructions, not seconds: one pack against one tokenizer pass, counted by valgrind.

On a shared machine wall-clock figures move by 10-20% from one run to the next,
more than most single speed changes; an instruction count repeats to within a
fraction of a percent. This runs the speed benchmark's candidates (see
bench/speed.py: same builder, same question, ``order="edges"``, dedupe on) in
fresh processes under ``valgrind --tool=cachegrind`` and subtracts a run that
does everything but the measured work (imports, data, the rank file), so what
is left is (a) one tokenizer pass over the texts and (b) one pack, each threads
summed (pack counts tokens in a background thread). Instructions are not time:
Python's interpreter and tiktoken's native code run at different speeds per
instruction, so the ratio here is a check on work done, not the issue's target,
which bench/speed.py measures. Needs valgrind (``apt-get install valgrind``).

    python bench/instructions.py [--size 1000] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._data import command_line  # noqa: E402

#: what each child process does: build the candidates, load the encoding, then the work N times
_CHILD = """
import sys
sys.path.insert(0, {root!r})
import satchel
from bench._data import load_nq
from bench.speed import build
from satchel._tokens import TiktokenTokenizer
cands, _ = build({size}, load_nq())
TiktokenTokenizer("o200k_base").count("a")
for _ in range({runs}):
    if {what!r} == "tokenizer pass":
        count = TiktokenTokenizer("o200k_base").count
        sum(map(count, [c["text"] for c in cands]))
    else:
        satchel.pack(cands, "who got the first nobel prize in physics", model="gpt-4o", order="edges")
"""
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(what: str, size: int, runs: int) -> int:
    """Instructions of one child process doing ``what`` ``runs`` times (all threads)."""
    code = _CHILD.format(root=str(ROOT), size=size, runs=runs, what=what)
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        + [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # (the same dict layouts in every run)
    )
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed ({what}, {runs} runs):\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="candidates (default 1000)")
    parser.add_argument("--runs", type=int, default=1, help="passes and packs per process (default 1)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind (bench/speed.py times pack)")
    print(f"$ {command_line('bench/instructions.py', argv)}")
    base = instructions("pack", args.size, 0)
    tok = (instructions("tokenizer pass", args.size, args.runs) - base) / args.runs
    pack = (instructions("pack", args.size, args.runs) - base) / args.runs
    print(f"{args.size} candidates, instructions counted by valgrind (threads summed):")
    print(f"  one tokenizer pass  {tok / 1e6:8.1f}M")
    print(f"  one pack            {pack / 1e6:8.1f}M   {pack / tok:.2f}x the tokenizer pass")


if __name__ == "__main__":
    main()

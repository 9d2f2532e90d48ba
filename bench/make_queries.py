"""Build the fixed ablation query set: 100 nq-open-oracle questions with distractors.

Each query is one JSONL line in the shape ``satchel ablate`` reads: ``question``,
``candidates`` (the overlapping 80-word windows of the question's gold paragraph
plus the best BM25 passages of *other* records, every one scored by BM25 against
the question, from ``bench._data.build_candidates``), ``answers`` (the accepted
answer strings) and ``gold`` (the windows that contain an accepted answer), plus
``id`` (``nq<record>``). Questions are drawn with a fixed seed among the records
whose gold paragraph holds an answer, so the file is the same on every machine.

    python bench/make_queries.py [--n 100] [--distractors 6] [--seed 3] [--out bench/queries/nq100.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import build_candidates, load_nq, nq_index  # noqa: E402

OUT = Path(__file__).resolve().parent / "queries" / "nq100.jsonl"  # generated; not committed (data licence)
# Kept well under the 2 MB a file may take in the repository.
MAX_BYTES = 2_000_000


def build(n: int = 100, distractors: int = 6, seed: int = 3, max_windows: int = 4) -> list[dict]:
    """``n`` queries drawn with ``seed``; records with more than ``max_windows`` gold windows are skipped.

    The window cap keeps prompts short enough for a small local model's window
    (and a 20-minute run on two cores) while leaving room for several sources.
    """
    records = load_nq()
    index = nq_index(records)
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    queries = []
    for i in order:
        if len(index.gold_units(i)) > max_windows:
            continue
        candidates, gold = build_candidates(i, index, k_distractors=distractors)
        if not gold:
            continue
        rec = records[i]
        queries.append(
            {
                "id": f"nq{i}",
                "question": rec["question"],
                "candidates": candidates,
                "answers": list(rec["answers"]),
                "gold": gold,
            }
        )
        if len(queries) == n:
            break
    return queries


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="number of questions (default 100)")
    ap.add_argument("--distractors", type=int, default=6, help="BM25 distractors per question (default 6)")
    ap.add_argument(
        "--max-windows", type=int, default=4, help="skip gold paragraphs longer than this many windows"
    )
    ap.add_argument("--seed", type=int, default=3, help="seed of the question draw (default 3)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output JSONL (default {OUT})")
    args = ap.parse_args(argv)
    queries = build(args.n, args.distractors, args.seed, args.max_windows)
    text = "".join(json.dumps(q, ensure_ascii=False, sort_keys=True) + "\n" for q in queries)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    size = len(text.encode("utf-8"))
    print(f"wrote {len(queries)} queries to {args.out} ({size:,} bytes)")
    if size > MAX_BYTES:
        print(
            f"warning: {size:,} bytes is over {MAX_BYTES:,}; do not commit it, generate it at run time",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()

"""TimeQA benchmark: does the gold paragraph survive packing, and where does it land, per order?

On TimeQA's human-annotated test set (257 Wikipedia pages, 989 time-scoped
questions), each question's candidates are its page's paragraphs (id
``{page}#{i}``, ``doc_id`` the page, ``title`` the page's first paragraph),
scored by BM25 against the question (``bench._data.BM25`` over all paragraphs of
all pages). TimeQA gives no per-paragraph dates, so ``updated`` is a heuristic:
the first year between 1000 and 2099 mentioned in the paragraph, as
``{year}-01-01`` (no year: no date; the chronological order puts undated
paragraphs first).

The 159 questions without an answer (their ``para`` is 0, the page title) are
skipped: there is no gold paragraph to look for.

For every order in ``satchel.ORDERS`` (relevance, edges, chronological and any
registered later) and source budget, we report how often a gold paragraph (the
``para`` of an answer) is kept, how often the answer text itself reaches the
prompt, and where the best-ranked kept gold paragraph lands: mean/median
position (1 = first source) and relative position 0..1 (0 first, 1 last, i.e.
next to the question).

    python bench/timeqa.py [--budgets 300,600] [--n N] [--orders relevance,edges,...]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import satchel  # noqa: E402
from bench._data import BM25, answer_in, load_timeqa, publish  # noqa: E402

BUDGETS = (300, 600)
MODEL = "gpt-4o"
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


def first_year(text: str) -> str | None:
    """``"{year}-01-01"`` for the first year 1000-2099 in ``text``, else None (a heuristic)."""
    m = _YEAR.search(text)
    return f"{m.group(1)}-01-01" if m else None


def questions(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten pages into questions with their page index, gold paragraphs and answers."""
    out = []
    for p, page in enumerate(pages):
        for q, answers in page["questions"]:
            out.append(
                {
                    "page": p,
                    "question": q,
                    "gold": sorted({a["para"] for a in answers}),
                    "answers": [a["answer"] for a in answers if a.get("answer")],
                }
            )
    return out


def page_index(pages: list[dict[str, Any]]) -> BM25:
    bm25 = BM25()
    for page in pages:
        for para in page["paras"]:
            bm25.add(para)
    return bm25.freeze()


def candidates(page: dict[str, Any], question: str, bm25: BM25) -> list[dict[str, Any]]:
    name = page["link"].rsplit("/", 1)[-1]
    title = page["paras"][0].strip() if page["paras"] else name
    out = []
    for i, para in enumerate(page["paras"]):
        if not para.strip():
            continue
        c: dict[str, Any] = {
            "id": f"{name}#{i}",
            "text": para,
            "doc_id": name,
            "title": title,
            "score": bm25.score(question, para),
        }
        year = first_year(para)
        if year:
            c["updated"] = year
        out.append(c)
    return out


def run(n: int | None, budgets: list[int], orders: list[str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    pages = load_timeqa()
    bm25 = page_index(pages)
    every = questions(pages)
    # 159 questions have no answer (empty answer string, ``para`` 0 = the page title): unanswerable
    # by design, so they have no gold paragraph to look for.
    answerable = [q for q in every if q["answers"]]
    qs = answerable[:n] if n else answerable
    cases = []
    for q in qs:
        page = pages[q["page"]]
        cands = candidates(page, q["question"], bm25)
        name = page["link"].rsplit("/", 1)[-1]
        gold_ids = {f"{name}#{i}" for i in q["gold"]}
        ranked = sorted(cands, key=lambda c: -c["score"])  # stable: input order on ties
        best_gold_rank = next((r for r, c in enumerate(ranked, 1) if c["id"] in gold_ids), None)
        cases.append((q, cands, gold_ids, best_gold_rank))
    setup = time.perf_counter() - t0
    rows: dict[str, dict[str, Any]] = {}
    for budget in budgets:
        for order in orders:
            t = time.perf_counter()
            packer = satchel.Packer(model=MODEL, source_budget=budget, order=order)
            kept = ans = 0
            pos, rel, n_sources = [], [], []
            for q, cands, gold_ids, _ in cases:
                result = packer.pack(cands, q["question"])
                labels = result.labels
                n_src = len(labels)
                n_sources.append(n_src)
                where = {}
                for label, ids in labels.items():
                    for cid in [ids] if isinstance(ids, str) else ids:
                        where[cid] = int(label[1:])
                gold_entries = [e for e in result.manifest if e.id in gold_ids and e.kept]
                if gold_entries:
                    kept += 1
                    best = min(gold_entries, key=lambda e: e.rank)
                    p = where[best.id]
                    pos.append(p)
                    rel.append((p - 1) / (n_src - 1) if n_src > 1 else 0.0)
                body = satchel.unescape(result.messages[-1]["content"].split("</sources>", 1)[0])
                ans += answer_in(body, q["answers"])
            rows.setdefault(str(budget), {})[order] = {
                "gold_kept": kept / len(cases),
                "answer_in_prompt": ans / len(cases),
                "mean_position": statistics.fmean(pos) if pos else float("nan"),
                "median_position": statistics.median(pos) if pos else float("nan"),
                "mean_relative_position": statistics.fmean(rel) if rel else float("nan"),
                "median_relative_position": statistics.median(rel) if rel else float("nan"),
                "mean_sources": statistics.fmean(n_sources),
                "seconds": time.perf_counter() - t,
            }
            print(f"  budget {budget:>4} {order:<15} {time.perf_counter() - t:6.1f}s", file=sys.stderr)
    ranks = [c[3] for c in cases if c[3] is not None]
    return {
        "data": "timeqa/human_annotated_test.json",
        "questions": len(cases),
        "unanswerable_skipped": len(every) - len(answerable),
        "mean_candidates": statistics.fmean(len(c[1]) for c in cases),
        "dated_share": statistics.fmean(sum("updated" in x for x in c[1]) / len(c[1]) for c in cases),
        "gold_bm25_rank_median": statistics.median(ranks) if ranks else None,
        "gold_bm25_top1": sum(r == 1 for r in ranks) / len(cases),
        "rows": rows,
        "setup_seconds": setup,
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        f"questions: {report['questions']} answerable "
        f"({report['unanswerable_skipped']} unanswerable skipped), "
        f"mean candidates (paragraphs per page): "
        f"{report['mean_candidates']:.1f}, paragraphs with a year (updated): "
        f"{100 * report['dated_share']:.0f}%, gold ranked 1st by BM25: {100 * report['gold_bm25_top1']:.1f}% "
        f"(median gold rank {report['gold_bm25_rank_median']})",
        "",
        f"{'budget':>6}  {'order':<15} {'gold kept':>9} {'answer%':>8} {'pos mean':>8} {'pos med':>7} "
        f"{'rel mean':>8} {'rel med':>7} {'sources':>7}",
    ]
    for budget, row in report["rows"].items():
        for order, r in row.items():
            lines.append(
                f"{budget:>6}  {order:<15} {100 * r['gold_kept']:8.1f}% {100 * r['answer_in_prompt']:7.1f}% "
                f"{r['mean_position']:8.2f} {r['median_position']:7.1f} {r['mean_relative_position']:8.2f} "
                f"{r['median_relative_position']:7.2f} {r['mean_sources']:7.2f}"
            )
    lines.append(
        "(position: 1-based source position of the best-ranked kept gold paragraph; "
        "rel: 0 = first source, 1 = last, next to the question)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, help="first N answerable questions only (default: all 830)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="source budgets (default 300,600)")
    ap.add_argument(
        "--orders", default=None, help=f"subset of satchel.ORDERS (default all: {', '.join(satchel.ORDERS)})"
    )
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    orders = args.orders.split(",") if args.orders else list(satchel.ORDERS)
    report = run(args.n, [int(b) for b in args.budgets.split(",")], orders)
    footer = (
        f"(setup {report['setup_seconds']:.1f}s; satchel {satchel.__version__}, model {MODEL}, dedupe on)"
    )
    publish("bench/timeqa.py", argv, report, table(report), footer, args.json)


if __name__ == "__main__":
    main()

"""Evidence benchmark: how often the answer text reaches the prompt, per source budget.

On nq-open-oracle, each question gets a retrieval-like candidate list
(``bench._data.build_candidates``): overlapping 80-word windows of its gold
paragraph plus the 15 best BM25 passages of other records, all scored by BM25
against the question. Each variant packs the list under source budgets of 200 to
800 tokens; we count how often an accepted answer (SQuAD/NQ normalisation,
whole words) appears in the text of the sources actually sent (tags stripped,
text unescaped), the source tokens used (enclosures included) and the sources
kept.

Variants live in :data:`VARIANTS` (name -> fn(candidates, question, budget)
returning a :class:`satchel.PackResult` or ``(user_message_text, source_tokens)``);
adding a row is one line.

    python bench/evidence.py [--n 500] [--budgets 200,300,400,600,800] [--json out.json]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import satchel  # noqa: E402
from bench._data import answer_in, build_candidates, nq_index, publish  # noqa: E402
from satchel._chunk import as_chunks  # noqa: E402
from satchel._pack import rank_candidates  # noqa: E402
from satchel._render import (  # noqa: E402
    DEFAULT_METADATA,
    QUESTION_SEPARATOR,
    attributes,
    question_block,
    source_block,
    sources_block,
)
from satchel._tokens import TiktokenTokenizer, TokenCounter  # noqa: E402

BUDGETS = (200, 300, 400, 600, 800)
#: "retrieval found it" also reported as: an answer-bearing candidate among the top TOP
TOP = 5
MODEL = "gpt-4o"

Result = Any  # satchel.PackResult | tuple[str, int]
Variant = Callable[[list[dict[str, Any]], str, int], Result]


# --- variants --------------------------------------------------------------------


def satchel_default(candidates: list[dict[str, Any]], question: str, budget: int) -> Result:
    """Satchel with its default configuration (all dedupe stages, relevance order)."""
    return satchel.pack(candidates, question, model=MODEL, source_budget=budget)


def greedy(candidates: list[dict[str, Any]], question: str, budget: int) -> Result:
    """Greedy packing with the same enclosures and no dedupe: satchel with dedupe=False."""
    return satchel.pack(candidates, question, model=MODEL, source_budget=budget, dedupe=False)


_COUNT = TokenCounter(TiktokenTokenizer("o200k_base"))


def enclose(chunk: satchel.Chunk, n: int) -> str:
    """``chunk`` as source ``n`` in satchel's enclosure (tag, label, chunk id, metadata, escaped text)."""
    fields = {**chunk.metadata, "title": chunk.title, "section": chunk.section, "updated": chunk.updated}
    return source_block(n, chunk.id, attributes(fields, DEFAULT_METADATA), chunk.text)


def with_question(blocks: Sequence[str], question: str, count: TokenCounter = _COUNT) -> tuple[str, int]:
    """(user message text, source tokens) of ``blocks`` in ``<sources>`` before ``question``,
    counted with ``count`` (o200k_base, remembering every text, unless given another)."""
    tail = QUESTION_SEPARATOR + question_block(question)
    text = sources_block(list(blocks)) + tail
    return text, count(text) - count(tail)


def fill(
    chunks: Sequence[satchel.Chunk], question: str, budget: int, count: TokenCounter = _COUNT
) -> list[satchel.Chunk]:
    """The chunks the fill loop a user would write keeps: in the order given, each rendered in
    its enclosure and counted exactly, one that does not fit skipped and the next tried
    (seed 001's fill loop)."""
    kept: list[satchel.Chunk] = []
    blocks: list[str] = []
    for chunk in chunks:
        block = enclose(chunk, len(blocks) + 1)
        if with_question([*blocks, block], question, count)[1] <= budget:
            kept.append(chunk)
            blocks.append(block)
    return kept


def render(chunks: Sequence[satchel.Chunk], question: str, count: TokenCounter = _COUNT) -> tuple[str, int]:
    """(user message text, source tokens) of ``chunks`` as sources S1..Sn in the order given."""
    return with_question([enclose(c, n) for n, c in enumerate(chunks, 1)], question, count)


def greedy_by_hand(candidates: list[dict[str, Any]], question: str, budget: int) -> Result:
    """The loop a user would write: rank order, render with satchel's enclosures, exact count,
    skip a candidate that does not fit and try the next (:func:`fill`)."""
    return render(fill(rank_candidates(as_chunks(candidates)), question, budget), question)


#: name -> fn(candidates, question, budget) -> PackResult or (user message text, source tokens).
#: ``greedy-by-hand`` is a check on ``greedy`` (they should agree), not a separate row of the story.
VARIANTS: dict[str, Variant] = {
    "satchel": satchel_default,
    "greedy": greedy,
    "greedy-by-hand": greedy_by_hand,
    # issue 3: seed 003's whole policy, and its ablation without compression
    "policy": lambda c, q, b: satchel.pack(c, q, model=MODEL, source_budget=b, **satchel.EVIDENCE_POLICY),
    "policy-no-compress": lambda c, q, b: satchel.pack(
        c, q, model=MODEL, source_budget=b, **{**satchel.EVIDENCE_POLICY, "compress": False}
    ),
    "compress-only": lambda c, q, b: satchel.pack(c, q, model=MODEL, source_budget=b, compress=True),
    # the same candidates from a retriever that gives no offsets: neighbour merging cannot
    # join the gold windows, so only the sentence ledger keeps their overlap out
    "satchel-no-offsets": lambda c, q, b: satchel_default([_without_offsets(x) for x in c], q, b),
    "greedy-no-offsets": lambda c, q, b: greedy([_without_offsets(x) for x in c], q, b),
}


def _without_offsets(candidate: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in candidate.items() if k not in ("start", "end")}


# --- measuring -------------------------------------------------------------------

_SOURCE = re.compile(r'<source_(\d+) id="S\1" chunk="([^"]*)"[^>]*>\n(.*?)\n</source_\1>', re.DOTALL)


def sources_of(result: Result) -> tuple[list[tuple[str, str]], int]:
    """((chunk ids as rendered, unescaped text) per source, source tokens) of a variant's output."""
    if isinstance(result, satchel.PackResult):
        user, tokens = result.messages[-1]["content"], result.tokens.sources
    else:
        user, tokens = result
    head = user.split("</sources>", 1)[0]
    return [
        (satchel.unescape(m.group(2)), satchel.unescape(m.group(3))) for m in _SOURCE.finditer(head)
    ], tokens


def run(
    n: int,
    budgets: Sequence[int],
    variants: dict[str, Variant],
    k_distractors: int = 15,
    progress: bool = True,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    index = nq_index()
    records = index.records[:n]
    cases = []
    for i, rec in enumerate(records):
        cands, gold = build_candidates(i, index, k_distractors=k_distractors)
        bearing = [answer_in(c["text"], rec["answers"]) for c in cands]
        cases.append((rec, cands, gold, any(bearing), any(bearing[:TOP])))
    setup = time.perf_counter() - t0
    # Candidates satchel marks as conflicting (same wording, another number, name
    # or negation), with no budget cap, so every pair is seen.
    conflicts = sorted(
        {
            tuple(sorted((e.id, other)))
            for rec, cands, *_ in cases
            for e in satchel.pack(cands, rec["question"], model=MODEL).manifest
            for other in e.conflicts_with
        }
    )
    rows: dict[str, dict[str, dict[str, float]]] = {}
    kept_ids: dict[tuple[str, int], list[list[str]]] = {}
    for budget in budgets:
        for name, fn in variants.items():
            t = time.perf_counter()
            hits = hits_found = n_found = hits_top = n_top = 0
            tokens, kept, gold_first = [], [], []
            ids_per_case = []
            for rec, cands, gold, was_found, in_top in cases:
                sources, used = sources_of(fn(cands, rec["question"], budget))
                hit = any(answer_in(text, rec["answers"]) for _, text in sources)
                hits += hit
                if was_found:
                    n_found += 1
                    hits_found += hit
                if in_top:
                    n_top += 1
                    hits_top += hit
                tokens.append(used)
                kept.append(len(sources))
                ids_per_case.append([ids for ids, _ in sources])
                gold_first.append(bool(cands) and cands[0]["id"] in gold)
            kept_ids[(name, budget)] = ids_per_case
            rows.setdefault(str(budget), {})[name] = {
                "answer_in_prompt": hits / len(cases),
                "answer_in_prompt_when_found": hits_found / n_found if n_found else float("nan"),
                "answer_in_prompt_when_top": hits_top / n_top if n_top else float("nan"),
                "mean_source_tokens": statistics.fmean(tokens),
                "mean_sources": statistics.fmean(kept),
                "seconds": time.perf_counter() - t,
            }
            if progress:
                print(f"  budget {budget:>4} {name:<15} {time.perf_counter() - t:6.1f}s", file=sys.stderr)
    agreement = {}
    if "greedy" in variants and "greedy-by-hand" in variants:
        for budget in budgets:
            a, b = kept_ids[("greedy", budget)], kept_ids[("greedy-by-hand", budget)]
            agreement[str(budget)] = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    return {
        "data": "nq-open-oracle",
        "questions": len(cases),
        "found": sum(c[3] for c in cases),
        "found_top": sum(c[4] for c in cases),
        "top": TOP,
        "gold_ranked_first": sum(bool(c[1]) and c[1][0]["id"] in c[2] for c in cases),
        "mean_candidates": statistics.fmean(len(c[1]) for c in cases),
        "k_distractors": k_distractors,
        "budgets": list(budgets),
        "rows": rows,
        "greedy_agreement": agreement,
        "conflicts": [list(pair) for pair in conflicts],
        "setup_seconds": setup,
    }


def table(report: dict[str, Any]) -> str:
    names = list(next(iter(report["rows"].values())))
    lines = [
        f"questions: {report['questions']} (first N of nq-open-oracle), answer in some candidate: "
        f"{report['found']}, gold window ranked first by BM25: {report['gold_ranked_first']}, "
        f"mean candidates: {report['mean_candidates']:.1f}",
        f"answer-bearing candidate among the top {report['top']}: {report['found_top']}",
        "",
        f"{'budget':>6}  {'variant':<18} {'answer%':>8} {'ans%|found':>10} "
        f"{'ans%|top' + str(report['top']):>9} "
        f"{'tokens':>7} {'sources':>7}",
    ]
    for budget, row in report["rows"].items():
        for name in names:
            r = row[name]
            lines.append(
                f"{budget:>6}  {name:<18} {100 * r['answer_in_prompt']:7.1f}% "
                f"{100 * r['answer_in_prompt_when_found']:9.1f}% "
                f"{100 * r['answer_in_prompt_when_top']:8.1f}% "
                f"{r['mean_source_tokens']:7.1f} {r['mean_sources']:7.2f}"
            )
    if "satchel" in names and "greedy" in names:
        rows = report["rows"]
        lines += ["", "tokens greedy needs to match satchel's answer rate (smallest budget at or above it):"]
        for budget, row in rows.items():
            target, used = row["satchel"]["answer_in_prompt"], row["satchel"]["mean_source_tokens"]
            match = next((b for b, r in rows.items() if r["greedy"]["answer_in_prompt"] >= target), None)
            if match is None:
                lines.append(
                    f"  satchel {budget:>4}: {100 * target:.1f}% with {used:.0f} tokens; greedy: "
                    "not reached within these budgets"
                )
            else:
                g = rows[match]["greedy"]
                lines.append(
                    f"  satchel {budget:>4}: {100 * target:.1f}% with {used:.0f} tokens; greedy needs "
                    f"budget {match} ({100 * g['answer_in_prompt']:.1f}%, "
                    f"{g['mean_source_tokens']:.0f} tokens)"
                )
    if report["greedy_agreement"]:
        agree = ", ".join(f"{b}: {100 * v:.1f}%" for b, v in report["greedy_agreement"].items())
        lines += ["", f"greedy (satchel, dedupe=False) vs greedy-by-hand, same sources kept: {agree}"]
    pairs = report.get("conflicts", [])
    lines += [
        "",
        f"candidate pairs satchel marks as conflicting (no budget cap): {len(pairs)}"
        + (": " + ", ".join(f"{a} ~ {b}" for a, b in pairs) if pairs else ""),
    ]
    return "\n".join(lines)


def add_run_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of a run over nq-open-oracle's questions (this benchmark's and bench/peers.py's)."""
    ap.add_argument("--n", type=int, default=500, help="first N questions of nq-open-oracle (default 500)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="source budgets in tokens")
    ap.add_argument("--k", type=int, default=15, help="lexical distractors per question (default 15)")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")


def budgets_of(args: argparse.Namespace) -> list[int]:
    """The source budgets ``--budgets`` gives."""
    return [int(b) for b in args.budgets.split(",")]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(ap)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"subset of {', '.join(VARIANTS)}")
    args = ap.parse_args(argv)
    chosen = {name: VARIANTS[name] for name in args.variants.split(",")}
    report = run(args.n, budgets_of(args), chosen, k_distractors=args.k)
    footer = f"(setup {report['setup_seconds']:.1f}s; satchel {satchel.__version__}, model {MODEL})"
    publish("bench/evidence.py", argv, report, table(report), footer, args.json)


if __name__ == "__main__":
    main()

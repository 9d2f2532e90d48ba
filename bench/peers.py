"""Peer benchmark: satchel against the packing steps of Haystack, LangChain and LlamaIndex.

The same questions, candidate lists and budgets as ``bench/evidence.py`` (the
first N questions of nq-open-oracle; overlapping 80-word windows of the gold
paragraph plus 15 BM25 distractors, scored by BM25; source budgets of 200 to
800 tokens). Each row picks and orders sources from the ranked list; every
row's sources are rendered in satchel's ``<source_N id="SN" ...>`` enclosures
(as the ``greedy`` row renders them) and counted with gpt-4o's own tokenizer
(o200k_base), enclosures included, so the rows compare like for like.

Rows:

- ``satchel``, ``greedy``: the rows of ``bench/evidence.py`` (its ``VARIANTS``):
  satchel's defaults (dedupe, relevance order) and satchel with ``dedupe=False``.
- ``satchel-edges``: satchel's defaults with ``order="edges"`` (best at the edges),
  the like-for-like ordering of the three peers below.
- ``haystack-litm``: Haystack's ``LostInTheMiddleRanker(word_count_threshold=W)``
  run on the whole ranked list (``ranker.run(documents=docs)``, as its docs
  show). Its budget is in words (``str.split``), so a user converts the token
  budget with OpenAI's rule of thumb, 100 tokens ~ 75 words:
  ``W = int(0.75 * budget)``. The ranker keeps the document that reaches W (it
  may overshoot) and counts no enclosure, so its prompt can go over the token
  budget: the ``over%`` column says how often.
- ``langchain-reorder``: a user's token cut (the fill loop of ``greedy``:
  rank order, each source counted exactly in its enclosure, one that does not
  fit skipped), then LangChain's ``LongContextReorder().transform_documents``
  (``langchain_community.document_transformers``; importing it warns that
  langchain-community is being sunset, and the warning is left on stderr).
- ``llamaindex-reorder``: the same cut, then LlamaIndex's
  ``LongContextReorder().postprocess_nodes`` (``llama_index.core.postprocessor``),
  nodes scored with the candidates' BM25 scores (it sorts by score itself, so
  it orders tied scores otherwise than LangChain, which only reverses the list).
  Both reorderers put the best source first when they get an odd number of
  sources and last when they get an even number; satchel's ``edges`` puts it
  first, the second best last.

Columns: ``answer%``, how often an accepted answer is in the text of the sources
sent (as in ``bench/evidence.py``); ``tokens``, mean source tokens; ``sources``,
mean sources sent; ``over%``, packs whose source tokens exceed the budget, and
``+tok``, by how much on average when they do; ``ms/pack``, mean wall time of a
whole pack (converting to the library's documents, the user's cut, the
library's call, rendering and counting: all of a row's work; the cut counts
the whole prompt at each try, as ``greedy_by_hand`` does, and no row remembers
a count from an earlier pack); ``peer ms``, the
mean time inside the peer library's own call; ``first/mid/last``, where the first
answer-bearing source sits among the sources of the prompts that hold the answer
(a prompt of one source counts as first), which is what the reorderers are for.
Below the table, Haystack's row is set beside satchel at no more tokens than
Haystack really spent, and the two reorderers' cut is checked against ``greedy``
(it should keep the same sources).

All three peers run offline: the whole benchmark runs under ``unshare -rn``
(no network at all) with nothing downloaded at import or at run time.
Haystack's telemetry is turned off here (``HAYSTACK_TELEMETRY_ENABLED=False``
unless you set it otherwise); importing LlamaIndex's ``LongContextReorder``
loads no NLTK and writes nothing under ``$HOME``. Each peer is imported
lazily: a peer that is not installed is skipped with a one-line hint.

    pip install -e '.[peers]'
    python bench/peers.py [--n 500] [--budgets 200,300,400,600,800] [--rows ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import satchel  # noqa: E402
from bench._data import answer_in, build_candidates, nq_index, publish  # noqa: E402
from bench.evidence import (  # noqa: E402
    MODEL,
    VARIANTS,
    Result,
    add_run_arguments,
    budgets_of,
    fill,
    render,
    sources_of,
)
from satchel._chunk import as_chunks  # noqa: E402
from satchel._pack import rank_candidates  # noqa: E402
from satchel._tokens import TiktokenTokenizer, TokenCounter  # noqa: E402

INSTALL_HINT = "pip install -e '.[peers]'"
#: OpenAI's rule of thumb (100 tokens ~ 75 words): how a Haystack user turns a token budget into words
WORDS_PER_TOKEN = 0.75
#: gpt-4o's tokenizer; each peer pack counts with a fresh TokenCounter over it, so it remembers
#: no text from an earlier pack (as satchel.pack, which makes a Packer per call)
O200K = TiktokenTokenizer("o200k_base")

#: fn(candidates, question, budget) -> (the row's result, seconds inside the peer's own call or None)
Row = Callable[[list[dict[str, Any]], str, int], tuple[Result, float | None]]


# --- rows ------------------------------------------------------------------------


def ours(variant: Callable[[list[dict[str, Any]], str, int], Result]) -> Row:
    """A satchel row: no peer library is called."""
    return lambda candidates, question, budget: (variant(candidates, question, budget), None)


def words_for(budget: int) -> int:
    """The ``word_count_threshold`` a Haystack user sets for a budget of ``budget`` tokens."""
    return int(WORDS_PER_TOKEN * budget)


def haystack_litm() -> Row:
    """Haystack's LostInTheMiddleRanker over the whole ranked list, its word threshold from the budget."""
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from haystack import Document
    from haystack.components.rankers import LostInTheMiddleRanker

    def row(candidates: list[dict[str, Any]], question: str, budget: int) -> tuple[Result, float]:
        chunks = rank_candidates(as_chunks(candidates))
        by_id = {c.id: c for c in chunks}
        docs = [Document(id=c.id, content=c.text, score=c.score, meta={"title": c.title}) for c in chunks]
        ranker = LostInTheMiddleRanker(word_count_threshold=words_for(budget))
        start = time.perf_counter()
        chosen = ranker.run(documents=docs)["documents"]
        took = time.perf_counter() - start
        return render([by_id[d.id] for d in chosen], question, TokenCounter(O200K)), took

    return row


def after_the_cut(
    documents: Callable[[list[satchel.Chunk]], list[Any]],
    reorder: Callable[[list[Any]], list[Any]],
    id_of: Callable[[Any], str],
) -> Row:
    """A row of a user's token cut in rank order (``greedy``'s fill loop), then a peer's
    ``reorder`` of the ``documents`` made of the chunks kept (timed alone); ``id_of`` reads
    a chunk's id back from a document the peer returns."""

    def row(candidates: list[dict[str, Any]], question: str, budget: int) -> tuple[Result, float]:
        count = TokenCounter(O200K)
        kept = fill(rank_candidates(as_chunks(candidates)), question, budget, count)
        by_id = {c.id: c for c in kept}
        docs = documents(kept)
        start = time.perf_counter()
        chosen = reorder(docs)
        took = time.perf_counter() - start
        return render([by_id[id_of(d)] for d in chosen], question, count), took

    return row


def langchain_reorder() -> Row:
    """The user's token cut in rank order, then LangChain's LongContextReorder."""
    from langchain_community.document_transformers import LongContextReorder
    from langchain_core.documents import Document

    return after_the_cut(
        lambda kept: [Document(page_content=c.text, metadata={"id": c.id, "title": c.title}) for c in kept],
        LongContextReorder().transform_documents,
        lambda d: d.metadata["id"],
    )


def llamaindex_reorder() -> Row:
    """The user's token cut in rank order, then LlamaIndex's LongContextReorder node postprocessor."""
    from llama_index.core.postprocessor import LongContextReorder
    from llama_index.core.schema import NodeWithScore, TextNode

    return after_the_cut(
        lambda kept: [
            NodeWithScore(node=TextNode(id_=c.id, text=c.text, metadata={"title": c.title}), score=c.score)
            for c in kept
        ],
        LongContextReorder().postprocess_nodes,
        lambda n: n.node.node_id,
    )


#: name -> a loader that returns the row, importing its peer (ImportError when it is not installed)
ROWS: dict[str, Callable[[], Row]] = {
    "satchel": lambda: ours(VARIANTS["satchel"]),
    "satchel-edges": lambda: ours(
        lambda c, q, b: satchel.pack(c, q, model=MODEL, source_budget=b, order="edges")
    ),
    "greedy": lambda: ours(VARIANTS["greedy"]),
    "haystack-litm": haystack_litm,
    "langchain-reorder": langchain_reorder,
    "llamaindex-reorder": llamaindex_reorder,
}
#: the packages a peer row imports (the ``peers`` extra in pyproject.toml)
PACKAGES = {
    "haystack-litm": ("haystack-ai",),
    "langchain-reorder": ("langchain-community", "langchain-core"),
    "llamaindex-reorder": ("llama-index-core",),
}
#: rows whose cut is greedy's fill loop: the footer checks they keep greedy's sources
SAME_CUT_AS_GREEDY = ("langchain-reorder", "llamaindex-reorder")


def load(names: Sequence[str]) -> tuple[dict[str, Row], dict[str, str]]:
    """The rows that load, and for each one that does not, why (with the install hint)."""
    rows, skipped = {}, {}
    for name in names:
        try:
            rows[name] = ROWS[name]()
        except ImportError as e:
            need = " and ".join(PACKAGES.get(name, ())) or "a package"
            skipped[name] = f"no module {e.name!r} (it needs {need}): {INSTALL_HINT}"
            print(f"{name}: skipped, {skipped[name]}", file=sys.stderr)
    return rows, skipped


# --- measuring -------------------------------------------------------------------


def position(index: int, count: int) -> str:
    """Where source ``index`` (0-based) of ``count`` sits: first, middle or last (one source is first)."""
    if index == 0:
        return "first"
    return "last" if index == count - 1 else "middle"


def run(
    n: int,
    budgets: Sequence[int],
    rows: dict[str, Row],
    k_distractors: int = 15,
    progress: bool = True,
) -> dict[str, Any]:
    index = nq_index()
    cases = [(rec, build_candidates(i, index, k_distractors)[0]) for i, rec in enumerate(index.records[:n])]
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    for budget in budgets:
        kept: dict[str, list[list[str]]] = {}
        for name, row in rows.items():
            hits, tokens, sources, over, seconds, peer_seconds = 0, [], [], [], [], []
            where = {"first": 0, "middle": 0, "last": 0}
            kept[name] = []
            for rec, cands in cases:
                start = time.perf_counter()
                result, peer = row(cands, rec["question"], budget)
                seconds.append(time.perf_counter() - start)
                if peer is not None:
                    peer_seconds.append(peer)
                sent, used = sources_of(result)
                bearing = [i for i, (_, text) in enumerate(sent) if answer_in(text, rec["answers"])]
                if bearing:
                    hits += 1
                    where[position(bearing[0], len(sent))] += 1
                tokens.append(used)
                sources.append(len(sent))
                if used > budget:
                    over.append(used - budget)
                kept[name].append(sorted(ids for ids, _ in sent))
            figures.setdefault(str(budget), {})[name] = {
                "answer_in_prompt": hits / len(cases),
                "mean_source_tokens": statistics.fmean(tokens),
                "mean_sources": statistics.fmean(sources),
                "over_budget": len(over) / len(cases),
                "mean_tokens_over": statistics.fmean(over) if over else 0.0,
                "max_source_tokens": max(tokens),
                "ms_per_pack": 1000 * statistics.fmean(seconds),
                "peer_ms_per_pack": 1000 * statistics.fmean(peer_seconds) if peer_seconds else None,
                "answer_position": {k: v / hits if hits else float("nan") for k, v in where.items()},
            }
            if progress:
                print(f"  budget {budget:>4} {name:<19} {sum(seconds):6.1f}s", file=sys.stderr)
        for name in SAME_CUT_AS_GREEDY:
            if name in kept and "greedy" in kept:
                same = sum(a == b for a, b in zip(kept[name], kept["greedy"], strict=True))
                figures[str(budget)][name]["same_sources_as_greedy"] = same / len(cases)
    return {
        "data": "nq-open-oracle",
        "questions": len(cases),
        "k_distractors": k_distractors,
        "budgets": list(budgets),
        "words_per_token": WORDS_PER_TOKEN,
        "rows": figures,
    }


def table(report: dict[str, Any], skipped: dict[str, str]) -> str:
    lines = [
        f"questions: {report['questions']} (first N of nq-open-oracle), "
        f"{report['k_distractors']} BM25 distractors each; every row rendered in satchel's enclosures "
        "and counted with o200k_base (gpt-4o)",
        "",
        f"{'budget':>6}  {'row':<19} {'answer%':>7} {'tokens':>7} {'sources':>7} {'over%':>6} "
        f"{'+tok':>5} {'ms/pack':>7} {'peer ms':>7}  {'first':>5} {'mid':>5} {'last':>5}",
    ]
    for budget, figures in report["rows"].items():
        for name, r in figures.items():
            peer = "-" if r["peer_ms_per_pack"] is None else f"{r['peer_ms_per_pack']:.3f}"
            pos = r["answer_position"]
            lines.append(
                f"{budget:>6}  {name:<19} {100 * r['answer_in_prompt']:6.1f}% "
                f"{r['mean_source_tokens']:7.1f} {r['mean_sources']:7.2f} "
                f"{100 * r['over_budget']:5.1f}% {r['mean_tokens_over']:5.0f} "
                f"{r['ms_per_pack']:7.2f} {peer:>7}  "
                f"{100 * pos['first']:4.0f}% {100 * pos['middle']:4.0f}% {100 * pos['last']:4.0f}%"
            )
    lines += [
        "",
        "first/mid/last: where the first answer-bearing source sits, as a share of the prompts that "
        "hold the answer (one source counts as first)",
    ]
    if "haystack-litm" in next(iter(report["rows"].values()), {}):
        lines.append(
            f"haystack-litm: word_count_threshold = int({WORDS_PER_TOKEN} * budget) words "
            f"({', '.join(f'{b}: {words_for(b)}' for b in report['budgets'])})"
        )
    lines += at_equal_tokens(report["rows"], "haystack-litm")
    for name in SAME_CUT_AS_GREEDY:
        shares = [(b, f.get(name, {}).get("same_sources_as_greedy")) for b, f in report["rows"].items()]
        if all(s is not None for _, s in shares):
            agree = ", ".join(f"{b}: {100 * s:.1f}%" for b, s in shares)
            lines.append(f"{name}: the user's cut keeps greedy's sources in {agree} of packs")
    for name, why in skipped.items():
        lines.append(f"{name}: skipped, {why}")
    return "\n".join(lines)


def at_equal_tokens(rows: dict[str, dict[str, Any]], name: str) -> list[str]:
    """Row ``name`` at each budget beside satchel at the largest budget whose mean tokens are no
    more than the row's: a row that goes over its budget compared at the tokens it really spent."""
    if not all(name in r and "satchel" in r for r in rows.values()):
        return []
    lines = [f"{name} beside satchel at no more tokens than it spent (mean source tokens):"]
    for budget, r in rows.items():
        peer = r[name]
        fits = [
            (b, x["satchel"])
            for b, x in rows.items()
            if x["satchel"]["mean_source_tokens"] <= peer["mean_source_tokens"]
        ]
        answer, tokens = 100 * peer["answer_in_prompt"], peer["mean_source_tokens"]
        head = f"  {name} {budget:>4}: {answer:.1f}% with {tokens:.0f} tokens"
        if not fits:
            lines.append(f"{head}; satchel: no budget here spends so few")
        else:
            b, ours = max(fits, key=lambda f: f[1]["mean_source_tokens"])
            lines.append(
                f"{head}; satchel {b:>4}: {100 * ours['answer_in_prompt']:.1f}% with "
                f"{ours['mean_source_tokens']:.0f} tokens"
            )
    return lines


def peer_versions() -> dict[str, str]:
    """Installed versions of the peer packages (those installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for package in dict.fromkeys(p for ps in PACKAGES.values() for p in ps):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(ap)
    ap.add_argument("--rows", default=",".join(ROWS), help=f"subset of {', '.join(ROWS)}")
    args = ap.parse_args(argv)
    rows, skipped = load(args.rows.split(","))
    report = run(args.n, budgets_of(args), rows, k_distractors=args.k)
    report["skipped"] = skipped
    versions = ", ".join(f"{p} {v}" for p, v in peer_versions().items())
    footer = f"(satchel {satchel.__version__}, model {MODEL}; {versions or 'no peer installed'})"
    publish("bench/peers.py", argv, report, table(report, skipped), footer, args.json)


if __name__ == "__main__":
    main()

"""Shared helpers for the benchmarks: data, a lexical scorer, answer matching, candidates.

Everything here is deterministic and pure Python, so benchmark figures are
reproducible and other benchmarks (the issue-3 ablation query set, the timeqa
benchmark) can build the very same candidate lists.

Data is read from ``../shared/data`` next to the repository (override with the
environment variable ``SATCHEL_DATA``); it is never copied into the repository.

Public API
----------
- :func:`data_dir`, :func:`require` -- where the data is, or a clear exit naming the path.
- :func:`load_nq`, :func:`load_timeqa` -- the two data sets as Python objects.
- :func:`gold_paragraphs` -- nq-open-oracle's distinct gold paragraphs, in file order.
- :func:`best_time` -- the best of several timed runs, on a clock of your choice.
- :class:`BM25` -- a small Okapi BM25 index (``add``, ``freeze``, ``score``, ``top``).
- :func:`tokenize` -- the scorer's word tokenizer (lowercase ``\\w+``, stop words removed).
- :func:`normalize_answer`, :func:`answer_in` -- SQuAD/NQ-style answer matching (satchel.ablate's).
- :func:`windows` -- overlapping word windows of a text with exact character offsets.
- :class:`NQIndex`, :func:`nq_index` -- the distractor pool over all of nq-open-oracle.
- :func:`build_candidates` -- one question's candidate list: gold windows plus distractors.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from satchel import ablate as _ablate

__all__ = [
    "BM25",
    "NQIndex",
    "Unit",
    "answer_in",
    "best_time",
    "build_candidates",
    "command_line",
    "data_dir",
    "gold_paragraphs",
    "load_nq",
    "load_timeqa",
    "normalize_answer",
    "nq_index",
    "require",
    "tokenize",
    "publish",
    "windows",
]

NQ_FILE = Path("nq-open-oracle") / "nq-open-oracle.jsonl.gz"
TIMEQA_FILE = Path("timeqa") / "human_annotated_test.json"


# --- data ----------------------------------------------------------------------


def data_dir() -> Path:
    """``$SATCHEL_DATA`` if set, else ``../shared/data`` relative to the repository root."""
    env = os.environ.get("SATCHEL_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """The command that printed a benchmark's figures, to quote next to them."""
    return "python " + " ".join(
        shlex.quote(a) for a in [script, *(argv if argv is not None else sys.argv[1:])]
    )


def publish(
    script: str,
    argv: Sequence[str] | None,
    report: dict[str, Any],
    table: str,
    footer: str,
    path: Path | None,
) -> None:
    """Print a benchmark's command, table and footer; write its figures as JSON when ``--json PATH``."""
    report["command"] = command_line(script, argv)
    print(f"$ {report['command']}")
    print(table)
    print(footer)
    if path is not None:
        path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"figures written to {path}")


def require(relative: Path | str) -> Path:
    """The path of a data file, or exit with a message that names the missing path."""
    path = data_dir() / relative
    if not path.is_file():
        sys.exit(
            f"benchmark data not found: {path}\n"
            f"Put the shared data at {data_dir()} (see ../shared/data/README.md) "
            "or point SATCHEL_DATA at the directory that holds nq-open-oracle/ and timeqa/."
        )
    return path


def load_nq(path: Path | None = None) -> list[dict[str, Any]]:
    """All 2,655 nq-open-oracle records, in file order."""
    path = path or require(NQ_FILE)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def gold_paragraphs(records: Sequence[dict[str, Any]]) -> list[str]:
    """The distinct gold paragraphs (``long_answer``) of nq-open-oracle records, in their order."""
    return list(dict.fromkeys(r["nq_annotated_gold"]["long_answer"] for r in records))


def best_time(repeat: int, fn: Callable[[], Any], clock: Callable[[], float] = time.perf_counter) -> float:
    """The least time ``fn`` took in ``repeat`` runs, on ``clock`` (wall time by default;
    ``time.thread_time`` for the calling thread's own CPU)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def load_timeqa(path: Path | None = None) -> list[dict[str, Any]]:
    """The 257 TimeQA human-annotated test pages (``paras`` and ``questions``)."""
    path = path or require(TIMEQA_FILE)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# --- answers -------------------------------------------------------------------

# One scorer for the benchmarks and the ablation harness: satchel.ablate's (punctuation and
# symbols read as spaces, so "twice—in" stays two words; a decimal point kept; whole words,
# or anywhere in a script written without spaces).
normalize_answer = _ablate.normalize_answer
answer_in = _ablate.answer_correct


# --- lexical scorer ------------------------------------------------------------

_WORD = re.compile(r"\w+")
STOP_WORDS = frozenset(
    """a an and are as at be been but by can did do does for from had has have he her his how i in
    is it its of on or she that the their them they this to was were what when where which who whom
    whose why will with you""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens for the lexical scorer, stop words removed."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25:
    """Okapi BM25 (k1=1.2, b=0.75) over documents added with :meth:`add`, in pure Python.

    ``add`` every document, ``freeze`` once, then ``score`` any text (in the index
    or not: unknown documents use the index's statistics) or ``top`` the k best
    indexed documents for a query. Ties break by insertion order, so results are
    deterministic.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths: list[int] = []
        self._idf: dict[str, float] = {}
        self._avg = 0.0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index ``text``; returns its document number."""
        doc = len(self._lengths)
        words = tokenize(text)
        self._lengths.append(len(words))
        tf: dict[str, int] = {}
        for w in words:
            tf[w] = tf.get(w, 0) + 1
        for w, n in tf.items():
            self._postings.setdefault(w, []).append((doc, n))
        return doc

    def freeze(self) -> BM25:
        n = len(self._lengths)
        self._avg = (sum(self._lengths) / n) if n else 0.0
        self._idf = {w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self._postings.items()}
        return self

    def _term(self, tf: int, length: int) -> float:
        k1, b = self.k1, self.b
        return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / (self._avg or 1.0)))

    def score(self, query: str, text: str) -> float:
        """BM25 of ``text`` for ``query`` with this index's IDF and average length."""
        words = tokenize(text)
        tf: dict[str, int] = {}
        for w in words:
            tf[w] = tf.get(w, 0) + 1
        total = 0.0
        for q in set(tokenize(query)):
            if q in tf:
                total += self._idf.get(q, 0.0) * self._term(tf[q], len(words))
        return round(total, 6)

    def top(self, query: str, k: int, exclude: Callable | None = None) -> list[tuple[int, float]]:
        """The ``k`` best (document number, score) pairs, best first; ``exclude(doc)`` skips documents."""
        scores: dict[int, float] = {}
        for q in set(tokenize(query)):
            idf = self._idf.get(q)
            if idf is None:
                continue
            for doc, tf in self._postings[q]:
                scores[doc] = scores.get(doc, 0.0) + idf * self._term(tf, self._lengths[doc])
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        out = []
        for doc, s in ranked:
            if exclude is not None and exclude(doc):
                continue
            out.append((doc, round(s, 6)))
            if len(out) == k:
                break
        return out


# --- windows -------------------------------------------------------------------

_NONSPACE = re.compile(r"\S+")


def windows(text: str, size: int = 80, stride: int = 40) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of overlapping windows of ``size`` words, every ``stride`` words.

    ``text[start:end]`` starts at a word and ends at a word; the last window is
    aligned to the end of the text, so every run of up to ``size - stride + 1``
    words lies whole inside some window.
    """
    if size < 1 or not 0 < stride <= size:
        raise ValueError(f"windows(size={size}, stride={stride}): need size >= 1 and 0 < stride <= size")
    words = [(m.start(), m.end()) for m in _NONSPACE.finditer(text)]
    n = len(words)
    if n == 0:
        return []
    starts = list(range(0, max(n - size, 0) + 1, stride))
    if starts[-1] + size < n:
        starts.append(n - size)
    return [(words[s][0], words[min(s + size, n) - 1][1]) for s in starts]


# --- the nq-open-oracle distractor pool -----------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    """One retrievable passage of the pool: a window of a gold paragraph, or a ``ctxs`` passage."""

    id: str
    record: int
    text: str
    title: str
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None

    def candidate(self, score: float) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text, "score": score, "title": self.title}
        if self.doc_id is not None:
            out["doc_id"] = self.doc_id
        if self.start is not None:
            out["start"], out["end"] = self.start, self.end
        return out


@dataclass
class NQIndex:
    """All nq-open-oracle records as a retrieval pool, indexed once with :class:`BM25`.

    The pool holds, for every record ``i``: the windows of its gold paragraph
    ``nq_annotated_gold.long_answer`` (ids ``nq{i}#w{j}``, ``doc_id`` ``nq{i}``,
    character offsets into the paragraph) and its ``ctxs`` passage (id
    ``nq{i}#ctx``, no offsets: its whitespace differs from the paragraph's).
    Records that share a paragraph stay separate units, as two retrieval indexes
    holding the same page would.
    """

    records: list[dict[str, Any]]
    size: int = 80
    stride: int = 40
    units: list[Unit] = field(default_factory=list)
    bm25: BM25 = field(default_factory=BM25)
    by_record: dict[int, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i, rec in enumerate(self.records):
            gold = rec["nq_annotated_gold"]
            para = gold["long_answer"]
            for j, (s, e) in enumerate(windows(para, self.size, self.stride)):
                self._add(Unit(f"nq{i}#w{j}", i, para[s:e], gold["title"], f"nq{i}", s, e))
            for ctx in rec["ctxs"]:
                text = ctx["text"].strip()
                if text:
                    self._add(Unit(f"nq{i}#ctx", i, text, ctx["title"]))
        self.bm25.freeze()

    def _add(self, unit: Unit) -> None:
        n = self.bm25.add(unit.text)
        assert n == len(self.units)
        self.units.append(unit)
        self.by_record.setdefault(unit.record, []).append(n)

    def gold_units(self, record: int) -> list[Unit]:
        """The windows of record ``record``'s gold paragraph (not its ``ctxs`` passage)."""
        return [self.units[n] for n in self.by_record.get(record, []) if self.units[n].start is not None]


def nq_index(records: list[dict[str, Any]] | None = None, size: int = 80, stride: int = 40) -> NQIndex:
    """Build the pool over ``records`` (default: the whole file). About a second for 2,655 records."""
    return NQIndex(records if records is not None else load_nq(), size, stride)


def build_candidates(
    record: int | dict[str, Any],
    index: NQIndex,
    k_distractors: int = 15,
) -> tuple[list[dict[str, Any]], list[str]]:
    """One question's candidate list, as a retriever would return it.

    ``record`` is a record number of ``index.records`` (or the record itself).
    Candidates are the overlapping windows of the record's gold paragraph (each
    with ``doc_id`` and exact ``start``/``end`` so ``text == long_answer[start:end]``)
    plus the ``k_distractors`` best passages of *other* records by BM25 against
    the question. Every candidate gets its BM25 ``score`` against the question from
    the same index, so the gold windows are not automatically first; the list is
    sorted best first (ties by id). Returns ``(candidates, gold_ids)``, where
    ``gold_ids`` are the gold windows that contain an accepted answer
    (:func:`answer_in`), in window order. Candidates are plain dicts accepted by
    :func:`satchel.pack`.
    """
    if isinstance(record, dict):
        i = index.records.index(record)
    else:
        i = record
    rec = index.records[i]
    question = rec["question"]
    gold = index.gold_units(i)
    distractors = index.bm25.top(question, k_distractors, exclude=lambda n: index.units[n].record == i)
    cands = [u.candidate(index.bm25.score(question, u.text)) for u in gold]
    cands += [index.units[n].candidate(s) for n, s in distractors]
    cands.sort(key=lambda c: (-c["score"], c["id"]))
    gold_ids = [u.id for u in gold if answer_in(u.text, rec["answers"])]
    return cands, gold_ids


def question_of(record: dict[str, Any]) -> str:
    return record["question"]


def found(candidates: Sequence[dict[str, Any]], answers: Sequence[str]) -> bool:
    """True if retrieval found the answer: it is in at least one candidate."""
    return any(answer_in(c["text"], answers) for c in candidates)

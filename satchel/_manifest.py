"""The manifest: what happened to every candidate, and the result of a pack.

Seed 003: "the artifact worth producing is an ordered manifest: item IDs, token
counts, provenance, and the compression ratio applied to each". Every candidate
gets exactly one :class:`ManifestEntry`, kept or dropped, with its reason.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ._budget import Budget
from ._chunk import Chunk, is_gap, plain
from ._dedupe import stated_otherwise, version_groups
from ._errors import InputError, PackError
from ._models import get_model
from ._sentences import normalise, split_sentences

__all__ = [
    "ManifestEntry",
    "PackResult",
    "PackedSource",
    "TokenUsage",
    "canonical_json",
    "format_trace",
    "trace_reasons",
]


@dataclass(frozen=True, slots=True)
class PackedSource:
    """One enclosure as sent: its label, the chunk ids it holds, and its text (unescaped)."""

    label: str
    position: int
    ids: tuple[str, ...]
    text: str
    attributes: tuple[tuple[str, str], ...]
    cost: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "position": self.position,
            "ids": list(self.ids),
            "text": self.text,
            "attributes": dict(self.attributes),
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One candidate's fate.

    ``tokens`` is what the candidate's own text costs (escaped, as it would be
    sent); ``cost`` is what its source took in the prompt, enclosure included, and
    ``sent_tokens`` what its source's text took. A source merged from neighbours of
    one document is one entry's: its lead (the best-ranked member) carries the whole
    source's cost and sent tokens, and each chunk merged into it shows 0 and
    ``merged_into`` (so the costs of all entries add up to the sources' tokens, but for
    the ``<sources>`` element around them, which the trace's used line names).
    ``chunk`` is the candidate as packed, and :attr:`provenance` where it came from.

    (Packer._manifest passes the fields by position: a field added or moved here is
    added or moved there too.)
    """

    id: str
    status: str
    reason: str
    stage: str
    tokens: int
    rank: int
    cost: int = 0
    sent_tokens: int = 0
    label: str | None = None
    position: int | None = None
    score: float | None = None
    priority: str = "MEDIUM"
    role: str | None = None
    duplicate_of: str | None = None
    merged_into: str | None = None
    conflicts_with: tuple[str, ...] = ()
    sentences_removed: int = 0
    compression: Mapping[str, Any] | None = None
    chunk: Chunk | None = field(default=None, repr=False, compare=False)

    @property
    def kept(self) -> bool:
        return self.status == "kept"

    @property
    def provenance(self) -> dict[str, Any]:
        """Where the candidate came from (seed 003's manifest: "item IDs, token counts,
        provenance, and the compression ratio"): those of its PROVENANCE_FIELDS and of its
        metadata's PROVENANCE_KEYS it has, kept or dropped (a dropped candidate is in no
        source to say so)."""
        chunk = self.chunk
        if chunk is None:
            return {}
        out = {name: value for name in PROVENANCE_FIELDS if (value := getattr(chunk, name)) is not None}
        metadata = chunk.metadata
        if metadata:
            for key in PROVENANCE_KEYS:
                value = metadata.get(key)
                if not is_gap(value):  # (NaN made the log, "canonical JSON", no JSON at all)
                    out[key] = _json_ready(value)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _ENTRY_FIELDS}
        out["conflicts_with"] = list(self.conflicts_with)
        out["compression"] = dict(self.compression) if self.compression is not None else None
        out["provenance"] = self.provenance
        return out


#: the fields of a chunk that say where it came from, and the keys of its metadata that do
PROVENANCE_FIELDS = ("doc_id", "start", "end", "title", "section", "updated")
PROVENANCE_KEYS = ("source", "url", "uri", "path", "file", "page")
#: what ManifestEntry.to_dict writes of its fields (the chunk: as its provenance)
_ENTRY_FIELDS = tuple(f.name for f in fields(ManifestEntry) if f.name != "chunk")


def _json_ready(value: Any) -> Any:
    """A provenance value as JSON holds it: text and Python's numbers as they are, numpy's
    numbers as Python's (np.int64(4) came out as '4' beside a plain 4), anything else as text."""
    value = plain(value)
    return value if type(value) in (str, int, float) else str(value)


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token totals of a pack, counted on the rendered messages."""

    prompt: int
    system: int
    history: int
    question: int
    sources: int
    framing: int
    answer_reserve: int
    context_window: int
    source_budget: int
    exact: bool

    @property
    def free(self) -> int:
        """Tokens of the window nobody used (neither prompt nor answer reserve)."""
        return self.context_window - self.prompt - self.answer_reserve

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["free"] = self.free
        return out


@dataclass(frozen=True, slots=True)
class PackResult:
    """What :func:`satchel.pack` returns."""

    messages: tuple[Mapping[str, str], ...]
    text: str
    labels: Mapping[str, str | list[str]]
    manifest: tuple[ManifestEntry, ...]
    tokens: TokenUsage
    budget: Budget
    tokenizer: str
    sources: tuple[PackedSource, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    question: str = ""

    @property
    def kept(self) -> list[ManifestEntry]:
        """Kept candidates in prompt order."""
        return sorted((e for e in self.manifest if e.kept), key=lambda e: (e.position or 0, e.rank))

    @property
    def dropped(self) -> list[ManifestEntry]:
        return [e for e in self.manifest if not e.kept]

    def entry(self, chunk_id: str) -> ManifestEntry:
        """The manifest entry of the candidate ``chunk_id``."""
        for e in self.manifest:
            if e.id == chunk_id:
                return e
        known = ", ".join(repr(e.id) for e in self.manifest[:5]) + (", ..." if len(self.manifest) > 5 else "")
        raise InputError(f"no candidate {chunk_id!r} was packed here; the candidates were {known or 'none'}")

    def chat_messages(self) -> list[dict[str, str]]:
        """The messages as fresh dicts, ready for a chat API."""
        return [dict(m) for m in self.messages]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: messages, text, labels, one manifest entry per candidate, totals, budget, config."""
        return {
            "messages": self.chat_messages(),
            "text": self.text,
            "labels": {k: (list(v) if isinstance(v, list) else v) for k, v in self.labels.items()},
            "manifest": [e.to_dict() for e in self.manifest],
            "sources": [s.to_dict() for s in self.sources],
            "tokens": self.tokens.to_dict(),
            "budget": self.budget.to_dict(),
            "tokenizer": {"name": self.tokenizer, "exact": self.tokens.exact},
            "config": dict(self.config),
            "question": self.question,
            "prompt_sha256": prompt_hash(self.messages),
        }

    def trace(self) -> str:
        """A readable table of every candidate and the budget."""
        return format_trace(self.to_dict())

    def explain(self, chunk_id: str) -> str:
        """One candidate's story, for one looking for the answer it held: what happened to
        it and why (as the trace words it), then each of its sentences and where the prompt
        holds it (see :meth:`whereabouts`). The trace counts what was removed; this shows
        which text, whichever stage took it (the ledger, boilerplate, compression, no room)."""
        entry = self.entry(chunk_id)
        where = entry.label or "not sent"
        lines = [f"{entry.id}: {entry.status} at {entry.stage} ({where}): {worded_reason(self, entry)}"]
        for mark, sentence, versions in explained_sentences(self, entry):
            lines.append(f"  {mark:<6} {_shown(sentence)}")
            for other, theirs in versions:
                lines.append(f"  {'≠':<6} {other.id} ({other.label or 'not sent'}) says: {_shown(theirs)}")
        lines.append(
            "  (each sentence: the label of its own source, another source's with *, or - where "
            "the prompt does not hold it; ≠: a version it conflicts with states it otherwise)"
        )
        return "\n".join(lines)

    def whereabouts(self, chunk_id: str) -> list[tuple[str, str]]:
        """Each sentence of candidate ``chunk_id``'s text, in order, with where the prompt holds
        it: the label of its own source ("S2"), another source's label and "*" ("S1*": a copy,
        or the same sentence sent there first), or "-" (left out; its reason says why)."""
        return _whereabouts(self, self.entry(chunk_id))


def worded_reason(result: PackResult, entry: ManifestEntry) -> str:
    """``entry``'s reason as the trace shows it (see trace_reasons), without the whole dict."""
    labels = {e.id: e.label for e in result.manifest}
    return entry.reason + _conflicts_note(entry.conflicts_with, labels)


def explained_sentences(
    result: PackResult, entry: ManifestEntry
) -> list[tuple[str, str, list[tuple[ManifestEntry, str]]]]:
    """What :meth:`PackResult.explain` shows of ``entry``, for a caller that lays it out
    itself (the lab): each sentence with where the prompt holds it (see whereabouts), and
    the candidates it conflicts with that state it otherwise, each with its sentence."""
    otherwise = _stated_otherwise(result, entry)
    return [
        (where, sentence, otherwise.get(normalise(sentence), []))
        for where, sentence in _whereabouts(result, entry)
    ]


def _whereabouts(result: PackResult, entry: ManifestEntry) -> list[tuple[str, str]]:
    """:meth:`PackResult.whereabouts` of the candidate ``entry`` tells of."""
    if entry.chunk is None:
        raise InputError(f"candidate {entry.id!r} was packed without its text; it cannot be explained")
    # (matched normalised, as dedupe matches them, and without the stop at their end: a copy
    # in other case, or ending in "!", holds the sentence too; a sentence of three words or
    # more also inside one, where a window cut it)
    sent = [(source.label, normalise(source.text), _sentence_keys(source.text)) for source in result.sources]
    rows = []
    for start, end in split_sentences(entry.chunk.text):
        sentence = entry.chunk.text[start:end]
        key = _sentence_key(sentence)
        inside = key.count(" ") >= 2
        found = [label for label, text, keys in sent if key in keys or (inside and key in text)]
        rows.append((entry.label if entry.label in found else f"{found[0]}*" if found else "-", sentence))
    return rows


def _shown(sentence: str) -> str:
    """A sentence on one line of :meth:`PackResult.explain`, cut at 160 characters."""
    shown = " ".join(sentence.split())
    return shown if len(shown) <= 160 else shown[:159] + "…"


def _stated_otherwise(result: PackResult, entry: ManifestEntry) -> dict[str, list[tuple[ManifestEntry, str]]]:
    """Each normalised sentence of ``entry``'s text that a candidate it conflicts with states
    otherwise (see satchel._dedupe.stated_otherwise), with that candidate and its sentence as
    written: where two versions as a whole differ, or where they share a passage and
    disagree in one sentence of it, the sentence that tells them apart."""
    if entry.chunk is None or not entry.conflicts_with:
        return {}
    mine = {normalise(entry.chunk.text[s:e]) for s, e in split_sentences(entry.chunk.text)}
    found: dict[str, list[tuple[ManifestEntry, str]]] = {}
    for other in map(result.entry, entry.conflicts_with):
        if other.chunk is None:
            continue
        theirs = {
            normalise(other.chunk.text[s:e]): other.chunk.text[s:e]
            for s, e in split_sentences(other.chunk.text)
        }
        for group in map(set, version_groups(mine | theirs.keys())):
            # (b: a sentence of theirs alone; sorted, so that the lines come in one order every run)
            for a, b in itertools.product(group & mine, sorted(group - mine)):
                if stated_otherwise(a, b):
                    found.setdefault(a, []).append((other, theirs[b]))
    return found


def _sentence_key(sentence: str) -> str:
    """A sentence as :meth:`PackResult.explain` matches it: normalised, without its stop."""
    return normalise(sentence).rstrip(".!?;:…")


def _sentence_keys(text: str) -> set[str]:
    """The keys (see _sentence_key) of ``text``'s sentences."""
    return {_sentence_key(text[start:end]) for start, end in split_sentences(text)}


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same data always gives the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def prompt_hash(messages: Sequence[Mapping[str, str]]) -> str:
    """The SHA-256 of the messages as canonical JSON: each message's role and content apart.
    (Of the prompt as one text, "ROLE\ncontent" joined, a user message holding "\n\nASSISTANT\n"
    hashed as two messages did.)"""
    parts = [{"role": m["role"], "content": m["content"]} for m in messages]
    return "sha256:" + hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.splitlines())  # (a row stays one line)
    if not text.isprintable():
        # A control character in an id (an ANSI escape from a crawled page) would reach the
        # terminal and act there: it is shown as Python writes it ("\x1b").
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text


def trace_reasons(data: Mapping[str, Any]) -> dict[str, str]:
    """Each candidate's reason as the trace shows it (``data``: PackResult.to_dict()): with
    each version it conflicts with, and where that went (the lab shows them so too)."""
    # (where each candidate went: a version it conflicts with may not be in the prompt)
    labels = {e["id"]: e.get("label") for e in data["manifest"]}
    return {e["id"]: e["reason"] + _conflicts_note(e.get("conflicts_with"), labels) for e in data["manifest"]}


def _conflicts_note(ids: Sequence[str] | None, labels: Mapping[str, str | None]) -> str:
    """The end of a row's reason naming the versions it conflicts with, each with the label
    it went under or "not sent" (with one side left out, the prompt shows no conflict)."""
    if not ids:
        return ""
    return "; conflicts with " + ", ".join(f"{i} ({labels.get(i) or 'not sent'})" for i in ids)


def _width(text: str) -> int:
    """How many terminal columns ``text`` takes: a Chinese, Japanese or Korean character (or
    another East Asian wide one) takes two, an accent written as a mark of its own none. (With
    ``len``, a row holding an id such as "文档3" pushed every column after it out of line.)"""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def _pad(text: str, width: int) -> str:
    """``text`` filled with spaces to ``width`` columns (see _width)."""
    return text + " " * (width - _width(text))


def _beyond_input(budget: Mapping[str, Any]) -> int:
    """Tokens of the window past what the model takes as input (the window less the answer,
    past its input limit); 0 for a model without one."""
    limit = budget.get("input_limit")
    return 0 if limit is None else max(0, budget["context_window"] - budget["answer"] - limit)


def _beyond_sources(budget: Mapping[str, Any]) -> str:
    """The end of the trace's budget line: what the window holds beyond a source budget that
    the model's input limit or the user's cap kept smaller (without it, the sum on that line
    fell short of the window)."""
    parts = ("system", "question", "history", "answer", "contract", "other", "sources")
    rest = budget["context_window"] - sum(budget.get(name) or 0 for name in parts)
    limit = budget.get("input_limit")
    beyond_input = _beyond_input(budget)
    out = ""
    if beyond_input:
        out += f" + beyond the input limit {beyond_input} (the model takes {limit} tokens as input)"
        rest -= beyond_input
    cap = budget.get("cap")
    if cap is None:
        return out
    if rest > 0:
        return out + f" + beyond the source budget {rest} (source_budget={cap})"
    return out + (f" (source_budget={cap} is more than the window leaves)" if cap > budget["sources"] else "")


def _not_the_models(name: str, config: Any) -> str:
    """What the trace adds when the tokenizer counted with is not the model's own (gpt-4o
    counted with cl100k_base, "exact" read as exact for gpt-4o): its own, named."""
    model = config.get("model") if isinstance(config, Mapping) else None
    try:
        own = get_model(model).tokenizer if isinstance(model, str) else None
    except PackError:  # (a model Satchel does not know: nothing to compare with)
        return ""
    if not isinstance(own, str) or own == name or name == "?":
        return ""
    return f" for {name}, not {model}'s own {own}"


def _free(tokens: Mapping[str, Any], budget: Mapping[str, Any]) -> str:
    """The window's free tokens, as the used line shows them: of a model with an input limit,
    those the prompt could still take, and the rest apart ("free 398608" counted the 127,488
    tokens gpt-5 takes no input in)."""
    beyond = _beyond_input(budget)
    if not beyond:
        return str(tokens["free"])
    return f"{tokens['free'] - beyond} (and {beyond} beyond the input limit)"


def _around_sources(data: Mapping[str, Any]) -> str:
    """What the used line adds after "sources N of B": the part of N the cost column does not
    show, the ``<sources>`` element around the sources (without it, the costs summed short
    of N, and a first candidate was told "145 of 150 left" with nothing admitted)."""
    costs = [e.get("cost") for e in data["manifest"]]
    if not data["tokens"]["sources"] or any(c is None for c in costs):
        return ""
    listed = sum(costs)
    rest = data["tokens"]["sources"] - listed
    return f": {listed} in the costs below + {rest} for the <sources> tags" if rest > 0 else ""


def format_trace(data: Mapping[str, Any]) -> str:
    """Render a pack's dict (``PackResult.to_dict()`` or a logged one) as a table.

    A logged record may hold null where an optional field is unknown (satchel.log.read_log
    checks the rest of its shape); those show as ``?``.
    """
    tokens = data["tokens"]
    budget = data["budget"]
    lines = []
    exact = "exact" if tokens.get("exact", True) else "estimated: the budget is not a guarantee"
    lines.append(
        f"budget: window {budget['context_window']} = system {budget['system']} + question "
        f"{budget['question']} + history {budget['history']} + answer {budget['answer']}"
        + (f" + contract {budget['contract']}" if budget.get("contract") else "")
        + (f" + other {budget['other']}" if budget.get("other") else "")
        + f" + sources {budget['sources']}"
        + _beyond_sources(budget)
    )
    name = (data.get("tokenizer") or {}).get("name") or "?"
    lines.append(
        f"used:   prompt {tokens['prompt']} tokens (sources {tokens['sources']} of "
        f"{tokens['source_budget']}{_around_sources(data)}), answer reserve {tokens['answer_reserve']}, free "
        f"{_free(tokens, budget)}; tokenizer {name} ({exact}"
        + (_not_the_models(name, data.get("config")) if tokens.get("exact", True) else "")
        + ")"
    )
    rows: list[Sequence[Any]] = []
    reasons = trace_reasons(data)
    for e in data["manifest"]:
        rows.append(
            (
                e.get("position") or "-",
                e.get("label") or "-",
                e["id"],
                e["status"],
                e.get("stage") or "-",
                e.get("role") or "-",
                e["tokens"],
                e.get("cost") or ("-" if e["status"] == "dropped" else 0),
                reasons[e["id"]],
            )
        )
    rows.sort(key=lambda r: (r[0] == "-", r[0] if r[0] != "-" else 0))
    header = ("pos", "label", "id", "status", "stage", "role", "tokens", "cost", "reason")
    # Every value whole (this table is where one finds which stage lost the evidence): each
    # column as wide as its widest value, the reason last and as long as it is.
    cells = [[_cell(v) for v in row] for row in rows]
    # (widths in terminal columns: see _width)
    widths = [max([len(h), *(_width(r[k]) for r in cells)]) for k, h in enumerate(header[:-1])]
    widths.append(max([len(header[-1]), *(_width(r[-1]) for r in cells)]))
    lines.append("")
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(_pad(v, w) for v, w in zip(row, widths, strict=True)).rstrip())
    kept = sum(1 for e in data["manifest"] if e["status"] == "kept")
    lines.append("")
    lines.append(
        f"{kept} kept, {len(data['manifest']) - kept} dropped, "
        f"order {(data.get('config') or {}).get('order') or '?'}"
    )
    return "\n".join(lines)

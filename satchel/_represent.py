"""Represent: verbatim by default; compress only what overflows (seed 003, step 7).

Compression is the last resort. It touches an item only when the item is over
its role's cap or would otherwise not fit, and it never rewrites wording:

- *extractive*: whole sentences, chosen by overlap with the question, kept in
  their original order, with ``…`` marking each gap;
- *structured*: for text shaped as ``key: value`` lines or table rows, whole
  lines (fields) are kept or dropped, never cut;
- *abstractive*: only through a compressor the user supplies, only for the
  roles the user names, and marked as such in the manifest.

Protected sentences are never dropped by compression: those holding a number,
date, unit, negation, identifier (code, version, id) or name, when that detail
or the sentence's words match the question. If the protected sentences alone
exceed the cap, :func:`compress` returns ``None`` and admission keeps the item
whole or drops it with a reason.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ._chunk import check_utf8
from ._dedupe import NEGATION_PATTERN, NUMBER_WORD_PATTERN
from ._errors import CallerCode, ConfigError, InputError
from ._sentences import _code_blocks, refers_back, split_sentences
from ._tokens import cut_in

__all__ = [
    "Compressed",
    "Fit",
    "asks_about",
    "compress",
    "fit",
    "protected_spans",
    "question_terms",
    "term_weights",
]

GAP = " … "
LINE_GAP = "\n…\n"
#: each strategy's marks of what compression left out, (between kept units, before the
#: first, after the last), and what joins two units once the marks are taken out (see unmarked)
_MARKS = {"extractive": (GAP, "… ", " …", " "), "structured": (LINE_GAP, "…\n", "\n…", "\n")}

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_STOP = frozenset(
    """a an the of to in on at by for from with and or but if is are was were be been being do does did
    has have had it its this that these those what which who whom whose when where why how i you he she
    we they me him her us them my your his our their as not no into than then so such can could will
    would should may might must shall there here about over under after before up down out off""".split()
)
_DETAIL = re.compile(
    r"\d"  # numbers, dates, units with a number, versions
    rf"|(?i:{NEGATION_PATTERN})"  # negations, in any case
    rf"|(?i:{NUMBER_WORD_PATTERN})"  # numbers written as words
    r"|\b[A-Z]{2,}[-_]?\d*\b|\b\w+[-_]\d+\b"  # identifiers and codes
    r"|(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+",  # names not at a sentence start
)
_FIELD = re.compile(r"^\s*(?:[\w .()/-]{1,40}:\s+\S|\|.*\|\s*$)")


def term_weights(texts: Iterable[str], terms: frozenset[str]) -> dict[str, float]:
    """Inverse document frequency of the question's ``terms`` over ``texts`` (the candidates)."""
    texts = list(texts)
    df = dict.fromkeys(terms, 0)
    for text in texts:
        for word in {w.lower() for w in _WORD.findall(text)} & terms:
            df[word] += 1
    return {t: math.log(1 + len(texts) / (1 + n)) for t, n in df.items()}


def question_terms(question: str) -> frozenset[str]:
    """Content words of the question, lower-cased."""
    return frozenset(w.lower() for w in _WORD.findall(question) if w.lower() not in _STOP)


def asks_about(text: str, terms: frozenset[str]) -> bool:
    """Whether ``text`` holds two of the question's ``terms`` (or its only one), as written or
    with an ending ("cost" / "costs", "month" / "monthly"): what the question asks about.
    (Boilerplate stripping keeps such a piece however often it recurs: "Brightgrid Plus
    costs $3.99 a month." opening the pricing page, the FAQ and a blog post is the answer
    to "How much does Brightgrid Plus cost?", and went from all three. Stricter than
    _alike, which let "All rights reserved." count "reset".)"""
    if not terms:
        return False
    words = {w.lower() for w in _WORD.findall(text)}
    held = sum(1 for t in terms if t in words or any(_with_ending(w, t) for w in words))
    return held >= min(2, len(terms))


def _with_ending(a: str, b: str) -> bool:
    """Whether one of two words is the other with an ending (the shorter of four letters or more)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and long.startswith(short)


def _has_detail(unit: str) -> list[str]:
    return [m.group(0) for m in _DETAIL.finditer(unit)]


def _alike(word: str, term: str) -> bool:
    """Whether a word of a sentence is the question's ``term`` in another form: the same, or
    both of four letters or more and alike but for an ending of up to two letters, beyond
    four ("costs" and "cost", "pricing" and "price", "monthly" and "month", "refunds" and
    "refundable"). Loose on purpose: it only keeps a sentence with a detail from being cut."""
    if word == term:
        return True
    shorter = min(len(word), len(term))
    if shorter < 4:
        return False
    stem = max(4, shorter - 2)
    return word[:stem] == term[:stem]


def _about(words: set[str], terms: frozenset[str]) -> bool:
    """Whether the words of a sentence hold a question term, in any form (see _alike)."""
    if not words.isdisjoint(terms):
        return True
    # (a word alike but not equal to a term shares its first four letters: only those terms
    # are compared, not every word with every term, which was a third of compression's time)
    by_opening = _terms_by_opening(terms)
    if by_opening:
        for word in words:
            alike = by_opening.get(word[:4]) if len(word) >= 4 else None
            if alike is not None and any(_alike(word, term) for term in alike):
                return True
    return False


@functools.lru_cache(maxsize=256)
def _terms_by_opening(terms: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """The ``terms`` of four letters or more by their first four (see _about)."""
    out: dict[str, list[str]] = {}
    for term in sorted(terms):
        if len(term) >= 4:
            out.setdefault(term[:4], []).append(term)
    return {opening: tuple(group) for opening, group in out.items()}


def _protected(unit: str, words: set[str], about: bool, terms: frozenset[str], after: bool) -> bool:
    """Whether ``unit`` (its ``words``, lower-cased; ``about``: whether they hold a question
    term) holds a detail that matters to the question: the sentence is about the question,
    or the detail itself is asked about; ``after``: the sentence before it is about the
    question, and this one points back to it ("Plus is the premium plan. It costs $4.99 a
    month.": "It" is Plus)."""
    details = _has_detail(unit)
    topic = {d.lower() for d in details if d.istitle() and d.isalpha() and d.lower() in terms}
    if topic and not _about(words - topic, terms - topic):
        # A name the question holds is its topic, not a detail, in a sentence that meets the
        # question only there: "Every Plus user gets cloud backup." says nothing "How much
        # does Plus cost?" asks. ("Globex bought Acme." meets "Who bought Acme?" in "bought":
        # Acme stays a detail.)
        details = [d for d in details if d.lower() not in topic]
    if not details:
        return False
    return (
        about or any(d.lower() in terms for d in details) or (after and _POINTS_BACK.match(unit) is not None)
    )


#: a sentence that opens with a word pointing back at the one before it
_POINTS_BACK = re.compile(r"""["'“‘(]*(?:it|its|this|that|these|those|they|their|such)\b""", re.IGNORECASE)


#: A sentence right after a protected one that qualifies it: it opens with a word that
#: points back, or turns ("This does not apply to clearance items.", "Except on Sundays."),
#: and holds a negation or an exception. Cut, the protected fact reads wider than it is.
_QUALIFIES = re.compile(
    r"""^["'“‘(]*(?:this|that|these|those|it|they|such|however|but|except|unless)\b.*"""
    r"""(?:\b(?:not|no|never|none|cannot|except|unless|only|excluding)\b|n['’]t\b)""",
    re.IGNORECASE | re.DOTALL,
)


def _protected_units(units: Sequence[str], terms: frozenset[str]) -> list[int]:
    """Which of ``units`` compression must keep: those with a detail that matters to the
    question (see _protected), each sentence right after one that qualifies it, and the
    sentence a kept qualifier qualifies (see _QUALIFIES): cut, the qualifier reads as
    said of whatever was kept before it ("The plan also adds voice control." went, and
    "This does not apply to lamps bought before 2020." was left after the price). (A
    kept fact that only points back, "It costs $4.99 a month.", goes without the
    sentence before it: in a source about the question's topic, "It" is that topic.)"""
    out: list[int] = []
    before = False  # whether the sentence before is about the question
    for i, unit in enumerate(units):
        words = {w.lower() for w in _WORD.findall(unit)}
        about = _about(words, terms)
        if _protected(unit, words, about, terms, before) or (
            out and out[-1] == i - 1 and _QUALIFIES.search(unit)
        ):
            out.append(i)
        before = about
    kept = set(out)
    for i in out:
        while i > 0 and i - 1 not in kept and _QUALIFIES.search(units[i]):
            i -= 1  # (and on, while the one it qualifies qualifies another)
            kept.add(i)
    return sorted(kept)


#: a sentence that opens by turning on the one before it ("However, ...", "But ...")
_TURNS = re.compile(
    r"""["'“‘(]*(?:however|but|yet|nevertheless|nonetheless|instead|still|even so|in fact)\b""", re.IGNORECASE
)


def _turns(unit: str) -> bool:
    """Whether ``unit`` turns on the sentence before it: kept without it, that one reads as
    still true ("The lamp was redesigned." / "However, this was reversed.")."""
    return _TURNS.match(unit) is not None


def protected_spans(text: str, question: str) -> list[str]:
    """The sentences of ``text`` that compression must keep, for a question."""
    units = [text[s:e] for s, e in split_sentences(text)]
    return [units[i] for i in _protected_units(units, question_terms(question))]


@dataclass(frozen=True, slots=True)
class Compressed:
    """A compressed representation and what it kept."""

    text: str
    strategy: str  # "extractive", "structured" or "abstractive"
    protected: tuple[str, ...]
    units_kept: int
    units_total: int


def _units(text: str) -> tuple[str, list[tuple[int, int]]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # (not in text with code: a block of "key: value" lines, YAML say, lost lines from
    # inside it; sentence units keep each block whole)
    fields = len(lines) >= 3 and sum(1 for ln in lines if _FIELD.match(ln)) >= 0.6 * len(lines)
    if fields and not _code_blocks(text):
        spans, pos = [], 0
        for line in text.splitlines(keepends=True):
            if line.strip():
                spans.append((pos, pos + len(line.rstrip("\r\n"))))
            pos += len(line)
        return "structured", spans
    return "extractive", split_sentences(text)


def unmarked(text: str, strategy: str) -> str:
    """A text compressed by ``strategy`` without the marks of what it left out (see _MARKS),
    its kept units joined as the text held them: what the sentence ledger reads as sent.
    (Split with the marks, "… Fact one costs $4.99." was no sentence ever sent, and a later
    source sent it again.) Text of another strategy (abstractive) has no marks."""
    if strategy not in _MARKS:
        return text
    gap, lead, trail, join = _MARKS[strategy]
    return text.removeprefix(lead).removesuffix(trail).replace(gap, join)


def compress(
    text: str,
    question: str,
    cap: int,
    count: Callable[[str], int],
    weights: Mapping[str, float] | None = None,
    adds_up: bool = False,
) -> Compressed | None:
    """Keep whole sentences (or fields) of ``text`` within ``cap`` tokens; ``None`` if impossible.

    ``count`` measures the text as it will be sent (escaping included);
    ``weights`` (term -> weight, e.g. :func:`term_weights`) rank sentences by the
    question terms they hold. ``adds_up``: ``count`` of a text cut where
    :func:`satchel._tokens.cut_in` cuts is the sum of the parts' counts (both OpenAI
    encodings), so each trial is counted from the pieces it changes, not whole (a
    long text a little over its room was counted whole once for each of its
    sentences).
    """
    strategy, spans = _units(text)
    if not spans:
        return None
    terms = question_terms(question)
    units = [text[s:e] for s, e in spans]
    protected = _protected_units(units, terms)
    gap, lead, trail, _ = _MARKS[strategy]
    last = len(units) - 1

    def between(before: int, i: int) -> str:
        """What joins unit ``before`` to unit ``i`` in the kept text: the text between them,
        or the gap that marks units left out."""
        return text[spans[before][1] : spans[i][0]] if i == before + 1 else gap

    @functools.cache  # (each trial asks for the cuts around it again, for each piece it counts)
    def cut(before: int, i: int) -> int | None:
        """Where counts add up in what joins ``before`` to ``i`` (see cut_in), if ``adds_up``."""
        return cut_in(units[before], between(before, i), units[i]) if adds_up else None

    def piece(before: int | None, i: int, after: int | None) -> str:
        """Unit ``i`` as the kept text holds it between units ``before`` and ``after`` (None:
        it is first, or last), with its share of what joins it to them: the kept text is
        the sum of its pieces' counts where each cut adds up (a table's rows and lines of
        code are joined by line breaks: cut before them, each trial was counted whole)."""
        head = (lead if i > 0 else "") if before is None else between(before, i)[cut(before, i) :]
        tail = (trail if i != last else "") if after is None else between(i, after)[: cut(i, after)]
        return head + units[i] + tail

    def render(chosen: Sequence[int]) -> str:
        parts, before = [], None
        for i in sorted(chosen):
            parts.append((lead if i > 0 else "") if before is None else between(before, i))
            parts.append(units[i])
            before = i
        if before != last:
            parts.append(trail)
        return "".join(parts)

    chosen = list(protected)
    total = count(render(chosen)) if chosen else 0  # count(render(chosen)), once there is one
    if total > cap:
        return None
    weight = weights.get if weights is not None else (lambda term, default: default)

    def with_unit(i: int) -> int | None:
        """count(render(chosen + [i])) from the pieces that adding unit ``i`` changes (its
        own, and those of the units before and after it, whose share of what joins them
        changes), each counted once (every cut of render(chosen) adds up); None when a cut
        it makes does not."""
        at = bisect.bisect(chosen, i)
        before = chosen[at - 1] if at else None
        after = chosen[at] if at < len(chosen) else None
        if (before is not None and cut(before, i) is None) or (after is not None and cut(i, after) is None):
            return None
        ahead = chosen[at - 2] if at >= 2 else None  # (the unit before ``before``)
        beyond = chosen[at + 1] if at + 1 < len(chosen) else None  # (and after ``after``)
        tally = total + count(piece(before, i, after))
        if before is not None:
            tally += count(piece(ahead, before, i)) - count(piece(ahead, before, after))
        if after is not None:
            tally += count(piece(i, after, beyond)) - count(piece(before, after, beyond))
        return tally

    def counted_with(i: int) -> tuple[int, bool]:
        """count(render(chosen + [i])), and whether counts still add up at every cut with unit
        ``i`` in: from the pieces it changes while they do, else whole (and from then on)."""
        tally = with_unit(i) if adding else None
        if tally is None:
            return count(render(chosen + [i])), False
        return tally, True

    # Whether counts add up at every cut between the pieces of render(chosen).
    adding = adds_up and all(cut(a, b) is not None for a, b in zip(chosen, chosen[1:], strict=False))

    def relevance_of(i: int) -> float:
        # Question terms in the sentence, each weighted by how rare it is among the
        # candidates (inverse document frequency): a rare shared term says more.
        return sum(weight(t, 1.0) for t in {w.lower() for w in _WORD.findall(units[i])} & terms)

    relevance = sorted(
        (i for i in range(len(units)) if i not in protected), key=lambda i: (-relevance_of(i), i)
    )
    taken = set(chosen)
    for i in relevance:
        if i in taken:
            continue  # (kept with a sentence beside it, below)
        first = last_unit = i
        while first > 0 and first - 1 not in taken and (refers_back(units[first]) or _turns(units[first])):
            first -= 1
        while last_unit < last and last_unit + 1 not in taken and _turns(units[last_unit + 1]):
            last_unit += 1
        if first < i or last_unit > i:
            # A sentence that points back at the one before it ("That claim is false.") goes
            # in with it or not at all: alone, it reads as said of whatever was kept before.
            # So does one that turns on it ("However, this was reversed."): without it, the
            # one before reads as still true. (Each counted from the pieces it changes, as
            # one unit is below; undone if the group is over the cap: counted whole, a long
            # text's every "It ..." was a count of all that was kept.)
            before = (list(chosen), total, adding)
            for k in range(first, last_unit + 1):
                total, adding = counted_with(k)
                bisect.insort(chosen, k)
            if total <= cap:
                taken.update(range(first, last_unit + 1))
            else:
                chosen, total, adding = before
            continue
        tally, adds_up_with = counted_with(i)
        if tally <= cap:
            bisect.insort(chosen, i)
            taken.add(i)
            total, adding = tally, adds_up_with
    # (every unit kept is a compression too: of a text padded with blank lines, say)
    if not chosen:
        return None
    return Compressed(
        text=render(chosen),
        strategy=strategy,
        protected=tuple(units[i] for i in protected),
        units_kept=len(chosen),
        units_total=len(units),
    )


@dataclass(slots=True)  # not frozen: made for every candidate, and a frozen init costs 4x
class Fit:
    """How an item goes into the prompt, or why it cannot."""

    text: str | None  # None: drop it
    reason: str
    compression: dict[str, object] | None = None


Compressor = Callable[[str, str, int], str]
"""compressor(text, question, max_tokens) -> shorter text (abstractive, user-supplied)."""


def fit(
    text: str,
    *,
    role: str,
    cap: int | None,
    room: int,
    question: str,
    count: Callable[[str], int],
    extractive: bool,
    compressor: Compressor | None = None,
    compressor_roles: frozenset[str] = frozenset(),
    weights: Mapping[str, float] | None = None,
    adds_up: bool = False,
) -> Fit:
    """Decide the representation of one item: verbatim if it fits, else compress or drop.

    ``cap`` is the item's role cap (None: uncapped) and ``room`` the tokens its
    text may take in the budget that is left. Both are in tokens of the text as
    sent. ``adds_up``: see :func:`compress`.
    """
    size = count(text)
    limit = room if cap is None else min(cap, room)
    if size <= limit:
        return Fit(text, "verbatim")
    over_cap = cap is not None and size > cap
    if cap == 0:
        return Fit(None, f"role cap: {role} items get 0 tokens (role_caps)")
    abstractive = compressor is not None and role in compressor_roles
    if not (extractive or abstractive):
        if over_cap:
            return Fit(None, f"over the {role} cap: {size} tokens > {cap} (role_caps); compression is off")
        return Fit(None, "")  # an ordinary "does not fit", worded by admission
    info: dict[str, object] = {"cap": cap, "tokens_before": size}
    if abstractive:
        assert compressor is not None
        name = f"the compressor {getattr(compressor, '__name__', compressor)!r}"
        with CallerCode(name, f"on a text of {len(text)} characters", "fix the compressor"):
            out = compressor(text, question, limit)
        if not isinstance(out, str):  # a bug in the compressor, not its judgement: said, as its errors are
            raise ConfigError(
                f"{name} returned {type(out).__name__} {out!r:.40} on a text of {len(text)} characters; "
                "it must return text (a str); fix the compressor"
            )
        if not out.strip():
            return Fit(None, "the compressor returned no text")
        try:
            check_utf8(out, "the compressor's text")  # (the check every candidate's text gets)
        except InputError:
            return Fit(
                None, "the compressor returned text with a lone surrogate, which cannot be sent as UTF-8"
            )
        after = count(out)
        if after > limit:
            return Fit(None, f"the compressor returned {after} tokens, more than the {limit} allowed")
        info.update(strategy="abstractive", tokens_after=after, ratio=round(after / size, 3), protected=[])
        return Fit(out, f"compressed (abstractive, user compressor) {size} → {after} tokens", info)
    compressed = compress(text, question, limit, count, weights, adds_up)
    beyond = None  # the tokens over its cap an item takes for its protected details
    protected = protected_spans(text, question) if compressed is None else []
    # (only protected details take an item over its cap: without them, it is cut to the cap)
    if compressed is None and over_cap and limit < room and protected:
        # The cap yields to what must not be cut, as it does for an item kept whole over it:
        # the fewest tokens in the room that hold the protected details (a compression
        # grows with its room; the answer sat in a gold chunk whose protected sentences fit
        # the room but not the cap, and it was dropped).
        # (below its whole size: what fits whole compresses to nothing shorter)
        widest = min(room, size - 1)
        found = compress(text, question, widest, count, weights, adds_up) if widest > limit else None
        if found is not None:
            low, high = limit + 1, widest  # (``found`` is the compression at ``high``)
            while low < high:
                middle = (low + high) // 2
                trial = compress(text, question, middle, count, weights, adds_up)
                if trial is None:
                    low = middle + 1
                else:
                    high, found = middle, trial
            compressed, beyond = found, high
    if compressed is None:
        if over_cap and size <= room and protected:
            info.update(strategy="verbatim", tokens_after=size, ratio=1.0, protected=protected)
            return Fit(
                text,
                f"kept verbatim over the {role} cap of {cap}: its protected details cannot be cut to fit",
                info,
            )
        why = "protected details alone exceed" if protected else "no whole sentence fits in"
        return Fit(None, f"cannot compress: {why} the {limit} tokens available")
    after = count(compressed.text)
    info.update(
        strategy=compressed.strategy,
        tokens_after=after,
        ratio=round(after / size, 3),
        protected=list(compressed.protected),
        units_kept=compressed.units_kept,
        units_total=compressed.units_total,
    )
    why = f"over the {role} cap of {cap}" if over_cap else "would not fit whole"
    if beyond is not None:
        why += f"; its protected details need {after}"
    if compressed.units_kept == compressed.units_total:
        why += "; all of it kept but the whitespace around it"
    return Fit(compressed.text, f"compressed ({compressed.strategy}, {why}) {size} → {after} tokens", info)

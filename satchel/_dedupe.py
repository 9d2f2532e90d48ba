"""Dedupe: exact copies, near-duplicates, conflicts, repeated sentences, neighbours.

Two passes, because two kinds of repetition need two views:

- :func:`find_duplicates` looks at the whole candidate list once, before
  admission. Exact copies (same text after folding whitespace and case) and
  near-duplicates (Jaccard similarity of the word 3-shingles inside their
  sentences at or above a threshold) are dropped in favour of the
  better-ranked copy. Short texts are compared with
  numbers and negations masked out; if two texts match but differ in protected
  details ("Plus costs $2.99" / "$3.99", a name, a "not"), they are
  *conflicting*, never duplicates: both stay and both are marked. A window
  shifted along its document, or one passage inside other surroundings, is
  neither: the ledger sends what it adds. Candidate pairs come from an inverted
  index of shingle sketches, so the work grows with the text, not with the
  square of the candidate count.
- :class:`Ledger` works during admission and remembers what was actually sent:
  sentences (seed 001's "drop sentences that were already sent") and character
  spans of documents (neighbours of one ``doc_id`` that overlap or touch are
  merged into one source without repeating the overlap). Working on what was
  sent, not on what was retrieved, means a sentence is never removed because of
  a chunk that was later skipped for lack of room.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
import operator
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from ._errors import InputError

__all__ = [
    "NEGATION_PATTERN",
    "NUMBER_WORD_PATTERN",
    "Place",
    "agree_where_overlapping",
    "DedupeReport",
    "Ledger",
    "SentenceCache",
    "difference",
    "find_duplicates",
    "join_kept",
    "normalise",
    "split_sentences",
    "strip_boilerplate",
]

# (from a word's start only: from every position of a long run without a digit, the
# search would run to its end again, and a 32 KB word took seconds)
_NUMBERISH = re.compile(r"(?<!\S)\S*\d\S*")
#: Negations, as a regex: a detail that must never be merged or compressed away
#: (shared with compression's protected sentences). "non-" negates the word it opens.
NEGATION_PATTERN = (
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|cannot|without)\b|n't\b|\bnon-(?=\w)"
)
_NEGATION = re.compile(NEGATION_PATTERN, re.IGNORECASE)
#: Numbers written as words ("thirty days", "the fifth", "twenty-one", "half the price"),
#: as a regex: as much a detail as digits (shared with compression's protected sentences).
NUMBER_WORD_PATTERN = (
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
    r"ninety|hundred|thousand|million|billion|trillion|dozen|half|quarter|once|twice|thrice|"
    r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"(?:thir|four|fif|six|seven|eigh|nine)teenth|(?:twen|thir|for|fif|six|seven|eigh|nine)tieth|"
    r"hundredth|thousandth|millionth|billionth)\b"
)
_NUMBER_WORD = re.compile(NUMBER_WORD_PATTERN, re.IGNORECASE)
#: a capitalised word inside a sentence (after a word or a comma and a space): a name
_NAMEISH = re.compile(r"(?<=[\w,;:] )[A-Z][\w'’-]*")
#: the two patterns for lower-case text (see _masked_words)
_LOWER_NUMBER_WORD = re.compile(NUMBER_WORD_PATTERN)
_LOWER_NEGATION = re.compile(NEGATION_PATTERN)
#: Prefixes that turn a word into its opposite ("available" / "unavailable"): two texts
#: that differ only there say opposite things.
_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "non-")
#: those of them at a word's start, as a regex (but "non", which the negations take)
_NEGATING_PREFIX = re.compile(
    rf"\b(?:{'|'.join(p for p in _NEGATING_PREFIXES if not p.startswith('non'))})(?=[a-z]{{3}})"
)

#: Shingles shared by more candidates than this are boilerplate, not evidence of
#: duplication; skipping them keeps candidate generation near-linear.
_POSTING_CAP = 64


#: curly quotes and apostrophes, read as straight ones ("Nintendo’s" is "Nintendo's")
_FOLD = (("‘", "'"), ("’", "'"), ("‚", "'"), ("‛", "'"), ("“", '"'), ("”", '"'), ("„", '"'), ("‟", '"'))


def normalise(text: str) -> str:
    """Fold case, whitespace and curly quotes: the key for exact duplicates and repeated sentences."""
    if not text.isascii():  # (a flag in CPython: most English text never gets here)
        # (str.replace scans in C and leaves a text without the character as it is;
        # str.translate with a table looks up every character, each miss an exception)
        for curly, straight in _FOLD:
            if curly in text:
                text = text.replace(curly, straight)
    # Most sentences hold only single spaces between words: lower case is all there is
    # to do. (isprintable is False for every whitespace character but the space.)
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text.lower()
    return " ".join(text.lower().split())


def _masked_words(text: str) -> list[str]:
    # Numbers, negations (words, and prefixes that negate) and names inside a sentence are
    # masked so that two short texts differing only in them still meet as near-duplicates
    # and are then told apart as conflicts: in a text of a dozen words one changed word
    # leaves too few shingles alike to meet. (Masked alike in both, a changed word is told
    # apart by difference, on the words as written.)
    # (on the text lower-cased first: the patterns then need no case folding, which made
    # the number words' alternation five times slower)
    text = _NUMBERISH.sub(" # ", _NAMEISH.sub(" @ ", text).lower())
    text = _LOWER_NUMBER_WORD.sub(" # ", text)
    text = _LOWER_NEGATION.sub(" ", text)
    return _NEGATING_PREFIX.sub("", text).split()


#: Capitalised words that open sentences rather than name anything.
_COMMON = frozenset(
    """a an the it its this that these those there he she they we i you in on at for and but or if
    when then so as""".split()
)


_PUNCT = ".,;:!?()[]{}\"'“”‘’"
#: what joins two words into one without a space: dashes, a hyphen, a slash
_JOINED = re.compile(r"[-‐‑‒–—―/]+")
#: Qualifiers, units and words of one polarity or direction: changed, they change what a
#: text says ("always" / "rarely", "500 kg" / "500 lb", "free" / "paid", "northern" /
#: "southern"), so two texts that differ in one are never duplicates of each other.
_DECISIVE = frozenset(
    """always usually often sometimes rarely seldom occasionally frequently generally typically
    only must should may might can could shall will would all every each any some most many
    few several more less fewer least minimum maximum approximately roughly nearly almost exactly
    mg kg lb lbs oz ton tons tonne tonnes mm cm km ft feet foot inch inches yard yards mile miles
    meter meters metre metres ml liter liters litre litres gallon gallons second seconds minute
    minutes hour hours day days week weeks month months year years decade decades century
    centuries percent usd eur gbp dollars euros pounds cents mph kb mb gb tb kw mw volts hz khz
    mhz ghz celsius fahrenheit
    north south east west northern southern eastern western northeast northwest southeast
    southwest left right
    free paid included excluded includes excludes including excluding approved rejected accepted
    denied allowed forbidden prohibited permitted required optional mandatory open closed
    enabled disabled true false valid invalid legal illegal positive negative won lost passed
    failed""".split()
)


def _plain(normal: str) -> list[str]:
    """The words of a normalised text without their surrounding punctuation (every step in C)."""
    return list(map(str.strip, normal.split(" "), itertools.repeat(_PUNCT))) if normal else []


def _is_detail(word: str) -> bool:
    """A number, date, negation, name, qualifier or unit (seed 003's decisive details),
    also joined to another word by a dash or slash ("—July", "mid-January")."""
    core = word.strip(_PUNCT)
    if not core:
        return False
    if _is_figure(core):
        return True
    return any(
        (part[0].isupper() and part.lower() not in _COMMON) or part.lower() in _DECISIVE
        for part in _JOINED.split(core)
        if part
    )


def _is_figure(word: str) -> bool:
    """A number, date or negation: a detail that a cut window cannot produce by chance."""
    core = word.strip(_PUNCT)
    return (
        any(ch.isdigit() for ch in core)
        or bool(_NUMBER_WORD.search(core))  # ("twenty-one" holds one)
        or _is_negation(core)
    )


def _is_negation(word: str) -> bool:
    """A word that negates: "not", "never", "cannot", "can't", "non-members"."""
    core = word.strip(_PUNCT)
    lower = core.lower()
    return bool(_NEGATION.fullmatch(core)) or lower.endswith("n't") or lower.startswith("non-")


def _negated(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether a word on one side is a word of the other with a negating prefix
    ("available" / "unavailable", "members" / "non-members")."""
    plain_left = {w.strip(_PUNCT).lower() for w in left} - {""}
    plain_right = {w.strip(_PUNCT).lower() for w in right} - {""}
    for words, others in ((plain_left, plain_right), (plain_right, plain_left)):
        for word in words:
            if any(word.startswith(p) and word[len(p) :] in others for p in _NEGATING_PREFIXES):
                return True
    return False


def _shift(left: list[str], right: list[str], most: int = 32) -> int | None:
    """How many words ``right`` starts into ``left`` when it is ``left`` moved forward
    by up to ``most`` words (the rest agreeing word for word), else None."""
    if not right:
        return None
    first, k = right[0], -1
    while True:
        try:
            k = left.index(first, k + 1, most + 1)  # only offsets where right could start
        except ValueError:
            return None
        overlap = min(len(left) - k, len(right))
        if left[k : k + overlap] == right[:overlap]:
            return k


def _offset(kept: list[str], new: list[str]) -> int | None:
    """How many words ``new`` starts after ``kept`` (negative: before it) when the two are
    one window shifted along its document, else None."""
    k = _shift(kept, new)
    if k is not None:
        return k
    k = _shift(new, kept)
    return None if k is None else -k


def _adds_words(offset: int | None, new: list[str], kept: list[str]) -> bool:
    """Whether the window ``new``, ``offset`` words from ``kept``, has words ``kept`` lacks."""
    if offset is None:
        return False
    return offset < 0 or len(new) > len(kept) - offset  # starts before kept, or runs past its end


def _plain_words(text: str, words: dict[str, list[str]]) -> list[str]:
    """``text``'s words without case or surrounding punctuation, one for each of ``text.split()``;
    kept in ``words`` for the next comparison."""
    found = words.get(text)
    if found is None:
        found = words[text] = _plain(normalise(text))
    return found


#: Words a changed detail spans: a replacement at an end longer than this on
#: either side is other surroundings, not a changed detail.
_DETAIL_WORDS = 3
#: Shared words in a row that align two texts (see difference): a tenth of the
#: shorter text, at least _ANCHOR and at most _ANCHOR_MOST (three common words in
#: a row turn up by chance in two long, different openings).
_ANCHOR = 3
_ANCHOR_MOST = 8


def difference(a: str, b: str, words: dict[str, list[str]] | None = None) -> str | None:
    """How two similar texts differ: ``"detail"``, ``"surroundings"``, or None (only small edits).

    ``"detail"``: a number, date, negation or name replaced, added or removed
    inside ("Plus costs $2.99" / "$3.99", "is" / "is not", "says Anna" / "says
    Brian"), or replaced by another at an end ("The price is $2.99" / "$3.99").
    ``"surroundings"``: an end differs by more than a few words (one passage
    inside two different surroundings): the two are neither duplicates nor in
    conflict, and the sentence ledger sends what the second adds. A window
    shifted along its document, or words added or removed at an end, are not
    differences. ``words`` keeps each text's plain words for the next comparison.
    """
    words = {} if words is None else words
    if _offset(_plain_words(a, words), _plain_words(b, words)) is not None:
        return None  # a window shifted along its document: only its ends differ
    return _difference_unshifted(a, b, words)


def _difference_unshifted(a: str, b: str, words: dict[str, list[str]]) -> str | None:
    """:func:`difference` of two texts known not to be one window shifted."""
    left, right = a.split(), b.split()
    plain_left, plain_right = _plain_words(a, words), _plain_words(b, words)
    # Align on words without case or surrounding punctuation ("month." = "Month!"),
    # then judge the original words where the texts differ. The ends are what lies
    # outside the first and last long runs of shared words (a lone shared "the"
    # inside two different openings does not make them aligned); an end where both
    # texts have more than a few words of their own is other surroundings.
    matcher = difflib.SequenceMatcher(None, plain_left, plain_right, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    least = min(_ANCHOR_MOST, max(_ANCHOR, min(len(left), len(right)) // 10))
    anchors = [m for m in matcher.get_matching_blocks() if m.size >= least]
    found = None
    if anchors:
        first, last = anchors[0], anchors[-1]
        ends = (
            [op for op in ops if op[2] <= first.a and op[4] <= first.b],
            [op for op in ops if op[1] >= last.a + last.size and op[3] >= last.b + last.size],
        )
        for end, start in zip(ends, (True, False), strict=True):
            own_left = sum(i2 - i1 for _, i1, i2, _, _ in end)
            own_right = sum(j2 - j1 for *_, j1, j2 in end)
            if own_left > _DETAIL_WORDS < own_right:
                found = "surroundings"
            elif max(own_left, own_right) > _DETAIL_WORDS:
                # A few words against many: a short shared word between them ("the")
                # aligned them by chance, so the end is judged whole, as one end.
                judged = _judge_end(left[end[0][1] : end[-1][2]], right[end[0][3] : end[-1][4]], start)
                if judged == "detail":
                    return judged
                found = judged or found
            else:
                continue  # a few words against a few: each edit is judged below
            ops = [op for op in ops if op not in end]
    for _, i1, i2, j1, j2 in ops:
        if (i1 == 0 and j1 == 0) or (i2 == len(left) and j2 == len(right)):  # at an end
            judged = _judge_end(left[i1:i2], right[j1:j2], start=i1 == 0 and j1 == 0)
            if judged == "detail":
                return judged
            found = judged or found
        elif (
            any(map(_is_detail, left[i1:i2]))
            or any(map(_is_detail, right[j1:j2]))
            or _negated(left[i1:i2], right[j1:j2])
        ):
            return "detail"
    return found


def _judge_end(left: list[str], right: list[str], start: bool) -> str | None:
    """How two texts differ at one end (``start``: before what they share; else after it).

    Words only one of them has there are no difference. A few words against a
    few are a changed detail with a detail on both sides, or a negation on one
    ("is refundable." / "is non-refundable.", "can" / "cannot": as inside a text,
    a negation changed is never a mere edit). A few words against many are one
    too if a number or negation meets the shared words on both sides ("costs
    $2.99" / "costs $3.99 plus tax"; a capitalised word is too common where a
    window was cut to count there), or a word there is the other's negated. Many
    against many are other surroundings.
    """
    if not left or not right:
        return None
    if max(len(left), len(right)) <= _DETAIL_WORDS:
        if _negated(left, right) or any(map(_is_negation, left)) != any(map(_is_negation, right)):
            return "detail"  # "is refundable." / "is non-refundable.", "can renew." / "cannot renew."
        return "detail" if any(map(_is_detail, left)) and any(map(_is_detail, right)) else None
    if min(len(left), len(right)) > _DETAIL_WORDS:
        return "surroundings"
    near_left = left[-_DETAIL_WORDS:] if start else left[:_DETAIL_WORDS]
    near_right = right[-_DETAIL_WORDS:] if start else right[:_DETAIL_WORDS]
    if (
        any(map(_is_figure, near_left))
        and any(map(_is_figure, near_right))
        or _negated(near_left, near_right)
    ):
        return "detail"
    return "surroundings"


#: Texts are compared as word 3-shingles of their normalised words, each kept
#: as its mark: the CRC-32 of its UTF-8 bytes (random-like, so a few edits
#: cannot crowd a text's sketch; the same in every process, unlike hash() of a
#: str; computed in C). Texts of SHORT_TEXT words or more are shingled sentence
#: by sentence, so each distinct sentence is shingled once however many
#: overlapping candidates hold it: the shingles inside each sentence (its last
#: ones cut short at its end, so a sentence of one or two words is one shingle)
#: whose first word starts with a digit from 0 to 4 or a letter other than the
#: common initials a e g h i l n o r s t u w (about a quarter of English words,
#: every word of most other scripts, and numbers, so tables are sampled too):
#: the choice depends on the words alone, so both copies of a passage keep the
#: same shingles (as in winnowing). The regex runs on the sentence's bytes (a
#: multi-byte character starts with a byte from C2 to F4), so each shingle goes
#: to zlib.crc32 as found. Short texts keep every shingle.
SHORT_TEXT = 64
# (possessive quantifiers: the regex never backtracks into a word)
_SAMPLED = re.compile(rb" (?=([0-4bcdfjkmpqvxyz\xc2-\xf4][^ ]*+(?: [^ ]++){0,2}))")
_NO_MARKS: frozenset[int] = frozenset()
#: (document id, start, end): where a text lies in its document
Place = tuple[str, int, int]
_T = TypeVar("_T")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate is still a character to compare


def sentence_marks(normal: str) -> tuple[int, ...]:
    """The marks of one normalised sentence's sampled shingles (see _SAMPLED)."""
    return tuple(map(zlib.crc32, _SAMPLED.findall(b" " + _utf8(normal))))


def _all_shingles(words: Sequence[str]) -> frozenset[int]:
    """The marks of every 3-shingle of a short text (a text of fewer words is one shingle)."""
    if len(words) < 3:
        return frozenset((zlib.crc32(_utf8(" ".join(words))),))
    shingles = map(" ".join, zip(words, words[1:], words[2:], strict=False))
    return frozenset(map(zlib.crc32, map(_utf8, shingles)))


def _sketch(marks: Iterable[int]) -> list[int]:
    """The _SKETCH smallest marks."""
    return sorted(marks)[:_SKETCH]


@dataclass(frozen=True, slots=True)
class DedupeReport:
    """What the first pass found, by index into the ranked candidate list."""

    #: index -> (index of the better-ranked copy it repeats, similarity; 1.0 for exact)
    duplicate_of: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: index -> indices of candidates it conflicts with (same wording, other details)
    conflicts: dict[int, tuple[int, ...]] = field(default_factory=dict)


#: Candidate pairs come from a bottom-k sketch: each text is indexed under the
#: k smallest marks of its shingles (see _sketch). Texts with Jaccard similarity
#: of 0.8 or more share most of their sketch and meet in the index; every pair
#: that meets is then checked exactly.
_SKETCH = 24
#: Short texts sharing fewer sketch entries than this are too far apart to be
#: checked: at similarity 0.6 two sketches of 24 share about 18 entries on
#: average. (Short texts have fewer shingles than that; every one is in their
#: sketch, and two that differ in a name share little more than half of them.)
_MIN_SHARED = 8
#: Two long texts are checked when they share _least_shared(near, size) sketch
#: entries for the size of either; a pair of similarity ``near`` is missed with a
#: chance below this.
_MISS = 1e-6


@functools.lru_cache(maxsize=4096)
def _least_shared(near: float, size: int) -> int:
    """The fewest sketch entries a long text of ``size`` marks shares with any text of
    similarity ``near`` or more, but for a chance below _MISS / 2.

    With random marks, a text's sketch is a uniform sample of _SKETCH of its
    marks. At similarity ``near`` or more, at least ``near`` x ``size`` of its
    marks are in the other text (their intersection is at least the similarity
    times the union, which is at least this text). So the number of its sketch
    entries found among the other's marks is at least hypergeometric: _SKETCH
    drawn from ``size`` with ceil(``near`` x ``size``) good. The two sketches
    share at least the smaller of the two texts' counts (all of the sketch of
    the text whose sketch reaches less far is below the other's limit too), so a
    pair is checked when it shares the least_shared of either text, and each side
    misses with a chance below _MISS / 2. Small texts have few marks to draw from,
    so the count is tight: 13 of 24 for 56 marks at 0.8, 8 for very long texts.
    """
    drawn = min(_SKETCH, size)
    good = math.ceil(near * size - 1e-9)  # no float error may round a whole number up
    total = math.comb(size, drawn)
    below = 0.0
    for m in range(drawn + 1):
        below += math.comb(good, m) * math.comb(size - good, drawn - m) / total
        if below > _MISS / 2:
            return max(1, m)
    return max(1, drawn)


#: Short texts this much below the near-duplicate threshold that differ in
#: protected details (numbers, negations, names) are still reported as conflicting.
CONFLICT_MARGIN = 0.2


def find_duplicates(
    texts: Sequence[str],
    *,
    exact: bool = True,
    near: float | None = 0.8,
    sentences: SentenceCache | None = None,
    places: Sequence[Place | None] | None = None,
) -> DedupeReport:
    """Find exact copies, near-duplicates and conflicts among ``texts`` (best-ranked first).

    ``places`` gives each text's (document id, start, end) where known: two windows of
    one document that overlap or touch, and agree where they overlap, are no
    near-duplicates of each other; neighbour merging sends them once.
    """
    duplicate_of: dict[int, tuple[int, float]] = {}
    conflicts: dict[int, list[int]] = {}
    cache = sentences if sentences is not None else SentenceCache()
    splits = [cache.split(text) for text in texts]
    if exact:
        first: dict[str, int] = {}
        for i, key in enumerate(split.key for split in splits):  # each text normalised
            if key in first:
                duplicate_of[i] = (first[key], 1.0)
            else:
                first[key] = i
    if near is not None:
        _near_duplicates(texts, splits, cache, near, duplicate_of, conflicts, places)
    # A candidate that duplicates another cannot also conflict with it.
    final = {
        i: tuple(sorted({j for j in js if j not in duplicate_of}))
        for i, js in conflicts.items()
        if i not in duplicate_of
    }
    return DedupeReport(duplicate_of=duplicate_of, conflicts={i: js for i, js in final.items() if js})


def _near_duplicates(
    texts: Sequence[str],
    splits: Sequence[Split],
    cache: SentenceCache,
    near: float,
    duplicate_of: dict[int, tuple[int, float]],
    conflicts: dict[int, list[int]],
    places: Sequence[Place | None] | None = None,
) -> None:
    postings: dict[int, list[int]] = {}
    plain: dict[str, list[str]] = {}  # words of texts compared word by word (see _plain_words)
    shingle_sets: dict[int, frozenset[int]] = {}
    short: dict[int, bool] = {}
    need: dict[int, int] = {}  # sketch entries a text must share with another to be checked
    for i, text in enumerate(texts):
        if i in duplicate_of:
            continue
        short[i] = cache.words(splits[i]) < SHORT_TEXT
        if not short[i]:
            shingles = cache.marks(splits[i])
        else:
            # Short texts: numbers masked and negations left out, so texts that
            # differ only there meet and are then told apart as conflicts. In a
            # long text one number or "not" barely moves the similarity.
            shingles = _all_shingles(_masked_words(text))
        shingle_sets[i] = shingles
        hits: list[int] = []
        sketch = _sketch(shingles)
        # Short: _MIN_SHARED, or all of a smaller sketch. Long: see _least_shared.
        need[i] = min(_MIN_SHARED, len(sketch)) if short[i] else _least_shared(near, len(shingles))
        for sh in sketch:
            posting = postings.get(sh)
            if posting is None:
                postings[sh] = [i]
            else:
                if len(posting) <= _POSTING_CAP:
                    hits.extend(posting)
                posting.append(i)
        met = Counter(hits)  # counted in C, once per text
        size = len(shingles)
        least = need[i]
        for j in sorted(j for j, shared in met.items() if shared >= least or shared >= need[j]):
            other = shingle_sets[j]
            # Jaccard >= t needs the smaller set to be at least t x the larger.
            if min(size, len(other)) < (near - CONFLICT_MARGIN) * max(size, len(other)):
                continue
            inter = len(shingles & other)
            similarity = inter / (size + len(other) - inter)
            # Below the threshold, only short texts (compared with numbers and negations
            # masked) can be the same statement with other details; long texts that far
            # apart are merely related (overlapping windows, say), not conflicting.
            if similarity < near and (similarity < near - CONFLICT_MARGIN or not (short[i] and short[j])):
                continue
            if places is not None and _neighbours(places[i], places[j], text, texts[j]):
                continue  # one document's windows: neighbour merging sends them once
            for k in (i, j):  # each text's plain words, from its sentences' (cut once each)
                if texts[k] not in plain:
                    plain[texts[k]] = cache.plain_words(splits[k])
            mine, theirs = plain[text], plain[texts[j]]
            offset = _offset(theirs, mine)
            if _adds_words(offset, mine, theirs):
                continue  # a shifted window with words of its own: the ledger sends the new part
            # a shifted window inside the other differs only at its ends
            kind = None if offset is not None else _difference_unshifted(text, texts[j], plain)
            # A shared passage in other surroundings is no duplicate: the sentence ledger
            # sends the rest. Unless what the two share is not whole sentences of its own
            # (one long sentence with another ending, a table, text without full stops):
            # the ledger would then send it nearly whole, and it is judged as an edit.
            if kind == "surroundings":
                if _ledger_strips(splits[j], splits[i], cache):
                    continue
                kind = None
            if kind is None:
                if similarity >= near:
                    # (1.0 says "exact copy": a text that differs, where only its sampled
                    # shingles agree, is at most 0.999)
                    shown = (
                        round(similarity, 3)
                        if splits[i].key == splits[j].key
                        else min(round(similarity, 3), 0.999)
                    )
                    duplicate_of[i] = (j, shown)
                    break
                continue
            conflicts.setdefault(i, []).append(j)
            conflicts.setdefault(j, []).append(i)
        if i in duplicate_of:
            # Only texts that may be sent are compared with later ones, so a duplicate
            # leaves the index again (it went in last under each of its entries): a
            # thousand copies of one text leave one text there, not a thousand (past
            # _POSTING_CAP, which would hide the copies from each other).
            for sh in sketch:
                posting = postings[sh]
                if len(posting) == 1:
                    del postings[sh]
                else:
                    posting.pop()


def _neighbours(a: Place | None, b: Place | None, text_a: str, text_b: str) -> bool:
    """Whether texts at places ``a`` and ``b`` are windows of one document that overlap or
    touch and hold the same text where they overlap."""
    if a is None or b is None or a[0] != b[0] or a[2] < b[1] or b[2] < a[1]:
        return False
    return agree_where_overlapping(a, b, text_a, text_b)


def agree_where_overlapping(a: Place, b: Place, text_a: str, text_b: str) -> bool:
    """Whether the texts at places ``a`` and ``b`` of one document hold the same characters
    where they overlap (they do, trivially, when they do not overlap)."""
    start, end = max(a[1], b[1]), min(a[2], b[2])
    return start >= end or text_a[start - a[1] : end - a[1]] == text_b[start - b[1] : end - b[1]]


def _ledger_strips(sent: Split, new: Split, cache: SentenceCache) -> bool:
    """Whether the sentence ledger, once ``sent`` is sent, strips at least half the words of
    ``new``: most of what the two share is whole sentences, which ``new`` then goes without."""
    repeated = set(sent.keys).intersection(new.keys)
    if not repeated:
        return False
    removed = sum(cache.word_count(n) for n in new.normal if n in repeated)
    return 2 * removed >= cache.words(new)


# --- sentences -----------------------------------------------------------------

#: Sentences shorter than this many words ("Yes.") are never treated as repeats:
#: removing them saves nothing and can strip meaning from the chunk around them.
MIN_SENTENCE_WORDS = 3


# Words that end in a period without ending a sentence ("Dr. Smith", "approx. 3").
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st ste mt ft vs etc al approx appt apt dept est inc ltd co corp
    cf ca gen gov sen rep rev hon sgt capt col lt maj cmdr jan feb mar apr jun jul aug sep sept
    oct nov dec mon tue wed thu fri sat sun""".split()
)
# These abbreviate only before a number ("No. 5", "p. 12"); "said no. He" ends a sentence.
_NUMBER_ABBREVIATIONS = frozenset("no nos vol vols fig figs ed eds pp p op art sec ch".split())
# A sentence ends at a run of ., ! or ? (with any closing quotes or brackets)
# followed by whitespace and something that can start a sentence; or at a blank
# line. The pieces of that rule, put together in _BOUNDARY; Python looks only at
# the few periods that may follow an abbreviation, the regex decides the rest:
#: the rest of a run of ends, and the closing quotes or brackets after it
_RUN = r"""[.!?…]*["'”’)\]]*"""
#: what may open a sentence before its first word
_OPENERS = "\"'“‘(["
#: what may start the next sentence (after the whitespace): a digit, a currency sign, or a
#: capital of the Latin, Greek or Cyrillic alphabets ("Über", "Ça", "Łódź", "Это"; Latin
#: Extended-A is taken whole, its capitals and small letters alternate)
_STARTS = r"""(?=["'“‘(\[]?[A-Z0-9$€£#À-ÖØ-ÞĀ-ſΆΈ-ΏΑ-ΩЀ-Я])"""
#: a blank line (a line of spaces or tabs, and a Windows line end), and the whitespace after it
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n\s*")
#: a line break, with the whitespace around it
_LINE_BREAK = re.compile(r"[ \t\r]*\n\s*")
#: Markdown that opens a line of its own: a heading ("## Pricing"), a list item ("- Free",
#: "1. Open", "2) Press") or a table row ("| Plus | $2.99 |"); a line break before it ends
#: the sentence before, as a blank line does. (Only these: hard-wrapped prose breaks its
#: sentences at any word.)
_OPENS_LINE = re.compile(r"#{1,6}[ \t]|[-*+•][ \t]|\d{1,3}[.)][ \t]|\|")
#: the lines that end at their line break: a heading and a table row
_ENDS_AT_BREAK = re.compile(r"[ \t]*(?:#{1,6}[ \t]|\|)")
#: a numbered list item's number, which the splitter reads as a sentence ending in a period
_LIST_NUMBER = re.compile(r"\d{1,3}\.")


def _period_ends(text: str, at: int) -> bool:
    """Whether the period at ``text[at]``, after a short or dotted word, ends a sentence.

    Looks back only as far as the period before it: a word holding that one is dotted
    ("U.S.", "e.g."), and otherwise the word starts after it, so a long run of text
    without spaces is read once, not once for each of its periods.
    """
    dot = text.rfind(".", 0, at)
    if dot != -1 and not _WHITESPACE.search(text, dot + 1, at):
        return False  # a dotted word: "U.S.", "e.g.", "x.yz."
    found = _LAST_WORD.search(text, dot + 1, at)
    word = found.group() if found else ""
    word = word.lstrip(_OPENERS)
    if not word:
        return True
    if len(word) == 1 and word.isalpha():  # "J. Smith"
        return False
    word = word.lower()
    if word in _NUMBER_ABBREVIATIONS:  # "No. 5" but "said no. He"
        follows = _NEXT_VISIBLE.match(text, at + 1)
        return not (follows and follows.group(1).isdigit())
    return word not in _ABBREVIATIONS


_WHITESPACE = re.compile(r"\s")
#: the word that ends where the search ends (possessive, and only from a word's start:
#: one pass over the text searched)
_LAST_WORD = re.compile(r"(?<!\S)\S*+\Z")
#: the first visible character after some whitespace
_NEXT_VISIBLE = re.compile(r"\s*(\S)")


def _one_of(words: Iterable[str], length: int) -> str:
    """A regex for any of ``words`` that has ``length`` letters (ASCII-only case folding,
    as "ſt" is no "st" to _period_ends); empty when none has."""
    known = sorted(w for w in words if len(w) == length)
    return f"(?ai:{'|'.join(known)})" if known else ""


def _easy_ends() -> str:
    """Lookbehinds for periods _period_ends would call ends: after one digit, after two to
    six ASCII letters and digits that are no abbreviation ("in 1901.", "the war."), or
    after a word of up to seven characters without a period that ends in a closing
    bracket or quote ("(2013).", '"man".'), each from whitespace or the start of the
    text: most periods after a short word."""
    alternatives = [r"(?<=(?<!\S)[0-9]\.)"]
    for length in range(2, 7):
        known = _one_of(_ABBREVIATIONS | _NUMBER_ABBREVIATIONS, length)
        unknown = f"(?<!(?<!\\S){known}\\.)" if known else ""
        alternatives.append(f"(?<=(?<!\\S)[A-Za-z0-9]{{{length}}}\\.){unknown}")
    alternatives += [f"(?<=(?<!\\S)[^\\s.]{{{length}}}[)\"'”’\\]]\\.)" for length in range(7)]
    return "|".join(alternatives)


def _no_ends() -> str:
    """Lookbehinds that fail for periods _period_ends would call no end: after one ASCII
    letter ("J. Smith"), after a character that follows a period ("U.S."), or after an
    abbreviation (not those that abbreviate only before a number), each from whitespace
    or the start of the text."""
    lookbehinds = [r"(?<!(?<!\S)[A-Za-z]\.)", r"(?<!\.\S\.)"]
    for length in range(2, 7):
        known = _one_of(_ABBREVIATIONS, length)
        if known:
            lookbehinds.append(f"(?<!(?<!\\S){known}\\.)")
    return "".join(lookbehinds)


def _boundary(ends: str) -> re.Pattern[str]:
    """Every possible end of a sentence in one scan, for re.split, in text whose sentences
    can end in the characters ``ends`` (a regex for one). Group 1 is the end (with the run
    and closers after it); group 2 is empty when it is a period for _period_ends to decide
    (None when the regex decided: "!", "?" or "…", a period after seven characters with no
    whitespace, period or opening quote or bracket (no abbreviation is that long), or
    _easy_ends); group 3 is the whitespace after it."""
    others = "(?<=[!?…])|" if ends != r"\." else ""
    return re.compile(
        "("
        + ends
        + r"(?<![.!?…].)(?:"  # the first end of a run
        + others
        + r"""(?<=[^\s.!?…"'“‘(\[]{7}\.)|"""
        + _easy_ends()
        + r"|(?<=\.)"
        + _no_ends()
        + r"())"
        + _RUN
        + r")(\s+)"
        + _STARTS
    )


#: Every end in any text; it starts with a plain character class, which lets the
#: regex engine skip to the next candidate character.
_BOUNDARY = _boundary("[.!?…]")
#: The same for text without "!", "?" or "…": starting with a literal period, which
#: the regex engine finds much faster than a character of a class.
_PERIOD_BOUNDARY = _boundary(r"\.")


def _split_at_ends(text: str) -> tuple[list[str], list[str]]:
    """``text`` cut at the ends of its sentences: the sentences (the first with the
    whitespace before it, the last with the whitespace after it) and the whitespace
    between them. Blank lines are left to split_sentences."""
    other_ends = "!" in text or "?" in text or "…" in text
    parts = (_BOUNDARY if other_ends else _PERIOD_BOUNDARY).split(text)
    bodies, ends, maybe, gaps = parts[0::4], parts[1::4], parts[2::4], parts[3::4]
    sentences = [*map(operator.add, bodies, ends), bodies[-1]]
    if maybe.count(None) == len(maybe):  # every end decided by the regex: all in C
        return sentences, gaps
    # Where each sentence ends, so that _period_ends can look at the periods left to it.
    bounds = _bounds(sentences, gaps)
    periods = itertools.compress(range(len(gaps)), map(operator.is_not, maybe, itertools.repeat(None)))
    no_end = {k for k in periods if not _period_ends(text, bounds[2 * k + 1] - len(ends[k]))}
    if not no_end:
        return sentences, gaps
    # Each run of sentences joined where no sentence ended, in one pass (joined one at a
    # time, a text of thousands of "No. 5" was copied again for each).
    joined, kept, run = [], [], [sentences[0]]
    for k, gap in enumerate(gaps):
        if k in no_end:
            run += (gap, sentences[k + 1])
        else:
            joined.append("".join(run))
            kept.append(gap)
            run = [sentences[k + 1]]
    joined.append("".join(run))
    return joined, kept


def _bounds(sentences: list[str], gaps: list[str], lead: int = 0) -> list[int]:
    """Where the sentences and the whitespace between them start and end, in turn, after
    ``lead`` characters."""
    lengths = [0] * (2 * len(sentences) - 1)
    lengths[0::2], lengths[1::2] = map(len, sentences), map(len, gaps)
    return list(itertools.accumulate(lengths, initial=lead))


def _spans_of(sentences: list[str], gaps: list[str], lead: int) -> list[tuple[int, int]]:
    """Where each sentence lies in ``lead`` whitespace and then the sentences, the gaps between."""
    bounds = iter(_bounds(sentences, gaps, lead))
    return list(zip(bounds, bounds, strict=False))  # pairs of one iterator


def _stripped(sentences: list[str]) -> int:
    """Strip the whitespace before the first of :func:`_split_at_ends`'s sentences and after the
    last, in place; returns how much came before."""
    first = sentences[0]
    sentences[0] = first.lstrip()
    lead = len(first) - len(sentences[0])
    sentences[-1] = sentences[-1].rstrip()  # (the first too, when it is the only one)
    return lead


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` without surrounding whitespace.

    Rule-based on purpose: it is fast (one regex scan; Python looks only at
    periods after abbreviation-like words), predictable, and keeps "$2.99",
    "Dr. Smith", "U.S." and initials inside their sentence. (The Punkt model of
    nupunkt was tried first; it reads "the app. Press" as an abbreviation and
    merges seed 001's sentences.)
    """
    if not isinstance(text, str):
        raise InputError(f"split_sentences takes a str, got {type(text).__name__}: {text!r:.60}")
    if not text or text.isspace():
        return []
    sentences, gaps = _split_at_ends(text)
    spans = _spans_of(sentences, gaps, _stripped(sentences))
    if "\n" not in text:  # most chunks
        return spans
    # A blank line also ends the sentence before it, wherever that ends (a heading, a
    # list item without a period), and so does a line break before or after a line of
    # Markdown structure (see _OPENS_LINE); one inside the whitespace after an end adds
    # nothing.
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for brk in _LINE_BREAK.finditer(text, start, end):
            if not _ends_at_break(text, brk):
                continue
            stop = len(text[start : brk.start()].rstrip()) + start
            if stop > start:
                _add_span(out, text, start, stop)
            start = brk.end()
        _add_span(out, text, start, end)
    return out


def _add_span(out: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    """Add the sentence at ``start:end`` to ``out``, joined to the one before when that is
    the number of a numbered list item on its line ("1." of "1. Open the app"), which the
    splitter took for a sentence ending in a period."""
    if out and _LIST_NUMBER.fullmatch(text, *out[-1]) and _at_line_start(text, out[-1][0]):
        if "\n" not in text[out[-1][1] : start]:
            start = out.pop()[0]
    out.append((start, end))


def _ends_at_break(text: str, brk: re.Match[str]) -> bool:
    """Whether the line break ``brk`` ends the sentence it falls in: it is a blank line, or
    the line after it opens with Markdown structure, or the line before it is a heading
    or a table row."""
    if brk.group().count("\n") > 1 or _OPENS_LINE.match(text, brk.end()):
        return True
    return _ENDS_AT_BREAK.match(text, text.rfind("\n", 0, brk.start()) + 1) is not None


def _at_line_start(text: str, at: int) -> bool:
    """Whether only spaces or tabs stand between ``text[at]`` and the start of its line."""
    return not text[text.rfind("\n", 0, at) + 1 : at].strip(" \t")


class Split:
    """One text cut into sentences: where they are, each normalised, and those that count
    as repeats."""

    __slots__ = ("_gaps", "_lead", "_pieces", "_spans", "kept", "keys", "normal", "sentences")

    def __init__(
        self,
        spans: list[tuple[int, int]] | None,
        normal: list[str],
        keys: tuple[str, ...],
        sentences: list[str] | None = None,
        *,
        gaps: list[str] | None = None,
        lead: int = 0,
        pieces: tuple[str, ...] | None = None,
        kept: bool = False,
    ) -> None:
        self._spans = spans
        #: when spans is None, they are worked out from the sentences and either the
        #: whitespace between them (and ``lead`` before the first) or ``pieces``, one a sentence
        self._gaps, self._lead, self._pieces = gaps, lead, pieces
        self.normal = normal
        #: the normalised sentences long enough to count as repeats (MIN_SENTENCE_WORDS)
        self.keys = keys
        #: the sentences themselves, when the split kept them (see SentenceCache.keep)
        self.sentences = sentences
        #: True when the split is what the ledger left of a longer text (SentenceCache.keep):
        #: a split of this text alone need not find the same sentences (the sentences
        #: before and after a removed one may read as one)
        self.kept = kept

    @property
    def spans(self) -> list[tuple[int, int]]:
        """Where each sentence lies in the text (worked out when first asked: the ledger
        builds what it leaves from the sentences themselves)."""
        if self._spans is None:
            assert self.sentences is not None
            if self._pieces is not None:  # each sentence ends its piece
                ends = list(itertools.accumulate(map(len, self._pieces)))
                self._spans = list(zip(map(operator.sub, ends, map(len, self.sentences)), ends, strict=True))
            else:
                assert self._gaps is not None
                self._spans = _spans_of(self.sentences, self._gaps, self._lead)
        return self._spans

    @property
    def key(self) -> str:
        """The whole text normalised, as :func:`normalise` (sentences split only at whitespace)."""
        return " ".join(self.normal)


#: The whitespace a text's count may be cut before (see SentenceCache.pieces).
_PIECE_CUTS = frozenset(" \t")


class SentenceCache:
    """Each text split into sentences once, and each distinct sentence normalised once.

    Every dedupe stage reads texts through one cache: exact copies compare
    :attr:`Split.key`, near-duplicates shingle its words, the ledger compares
    the normalised sentences, and token counts add up the sentences (see
    :meth:`pieces`). Retrieved windows overlap, so most sentences recur across
    candidates and are normalised once.
    """

    __slots__ = (
        "_anaphora",
        "_answers",
        "_grown",
        "_is_key",
        "_keys",
        "_marks",
        "_normal",
        "_pieces",
        "_plain",
        "_splits",
        "_tokens",
        "_words",
    )

    def __init__(self) -> None:
        self._splits: dict[str, Split] = {}
        self._normal: dict[str, str] = {}
        #: the normalised sentences that count as repeats, and the test for one (run in C)
        self._keys: set[str] = set()
        self._anaphora: set[str] = set()  # those of them that refer back (see refer_back)
        self._answers: set[str] = set()  # see short_answers
        self._is_key = self._keys.__contains__
        self._pieces: dict[str, tuple[str, ...]] = {}
        self._marks: dict[str, tuple[int, ...]] = {}
        self._words: dict[str, int] = {}  # words in each normalised sentence
        self._plain: dict[str, list[str]] = {}  # and those words without punctuation
        self._grown: dict[str, tuple[str, str, str]] = {}  # see grown
        self._tokens: dict[str, int] = {}  # see tokens

    def split(self, text: str) -> Split:
        """``text`` cut into sentences, each normalised (once: a text asked again gets the same)."""
        done = self._splits.get(text)
        if done is None:
            gaps: list[str] | None = None
            spans: list[tuple[int, int]] | None = None
            lead = 0
            if "\n" in text or not text or text.isspace():
                spans = split_sentences(text)
                sentences = [text[s:e] for s, e in spans]
            else:  # the common case: the sentences come cut, without a slice each
                sentences, gaps = _split_at_ends(text)
                if set(map(operator.itemgetter(0), gaps)) <= _PIECE_CUTS:
                    # each piece is a sentence with the whitespace before it (see pieces)
                    self._pieces[text] = (sentences[0], *map(operator.add, gaps, sentences[1:]))
                lead = _stripped(sentences)
            normal = self._normal
            found = list(map(normal.get, sentences))
            if None in found:
                found = [
                    k if k is not None else self._normalise(sentence)
                    for k, sentence in zip(found, sentences, strict=True)
                ]
            keys = cast(list[str], found)
            done = Split(spans, keys, self.keys_of(keys), sentences, gaps=gaps, lead=lead)
            self._splits[text] = done
        return done

    def split_grown(self, text: str, known: str) -> Split:
        """:meth:`split` of ``text``, which starts or ends with ``known``, a text split here before.

        Neighbours merging into one source make a longer text each time: a document
        retrieved as a thousand touching windows was split again, whole, for each of
        them. Here only what the text adds is split, with the piece of ``known`` next
        to it (see _split_after and _split_before). A known text the ledger left (a
        source that lost sentences) is split whole again: its sentences came from a
        longer text, and alone the sentences around a removed one may read as one.
        """
        done = self._splits.get(text)
        if done is not None:
            return done
        split = self._splits.get(known)
        if split is None or split.kept:
            return self.split(text)
        if text.startswith(known):
            if _near_structure(text, len(known) - len(self._pieces_of(known)[-1])):
                return self.split(text)
            return self._split_after(text, known, split)
        if text.endswith(known):
            shift = len(text) - len(known)
            if _near_structure(text, shift) or _near_structure(text, shift + len(self._pieces_of(known)[0])):
                return self.split(text)
            return self._split_before(text, known, split)
        return self.split(text)

    def _split_after(self, text: str, prefix: str, known: Split) -> Split:
        """``text``, which starts with ``prefix`` (split as ``known``), split from where the
        prefix's last counting piece starts (see :meth:`pieces`: the end of a sentence,
        and the space or tab after it). That is a place where both texts end a sentence
        the same way: an end is decided by what lies before it, back to whitespace or
        the period before it, and by the whitespace and character after it, so no end
        after the cut looks past the space there, and no end before it looks past the
        prefix's end."""
        pieces = self._pieces_of(prefix)
        cut = len(prefix) - len(pieces[-1])
        if 2 * cut < len(text):  # little of it to keep (a window joining a source in front)
            return self.split(text)
        before = len(known.spans)  # the prefix's sentences before the cut
        while before and known.spans[before - 1][0] >= cut:
            before -= 1
        tail = text[cut:]
        rest = self.split(tail)
        return self._spliced(
            text,
            ((prefix, known, slice(before), 0), (tail, rest, slice(None), cut)),
            pieces[:-1] + self._pieces_of(tail),
            (prefix, pieces[-1], tail),
        )

    def _split_before(self, text: str, suffix: str, known: Split) -> Split:
        """``text``, which ends with ``suffix`` (split as ``known``; a window joined a source
        in front), split again up to the end of the suffix's first counting piece: the
        mirror of _split_after. An end after that place looks back no further than the
        space before it. The end there looks back to the last word before it, which must
        start inside the suffix: when the first piece is one word (the text in front may
        make one word with it, as "U" and ".S."), the second is split again too."""
        pieces = self._pieces_of(suffix)
        # the pieces split again: the first, or the first two when the first is one word
        # (the second starts with whitespace)
        again = 1 if _WHITESPACE.search(pieces[0].lstrip()) else 2
        cut = sum(map(len, pieces[:again]))  # where the rest of the suffix starts
        if len(pieces) <= again or 2 * (len(suffix) - cut) < len(text):
            return self.split(text)
        after = 0  # the suffix's sentences before the cut
        while after < len(known.spans) and known.spans[after][0] < cut:
            after += 1
        shift = len(text) - len(suffix)
        head = text[: shift + cut]
        rest = self.split(head)
        return self._spliced(
            text,
            ((head, rest, slice(None), 0), (suffix, known, slice(after, None), shift)),
            self._pieces_of(head) + pieces[again:],
            (suffix, suffix[:cut], head),
        )

    def _spliced(
        self,
        text: str,
        runs: tuple[tuple[str, Split, slice, int], ...],
        pieces: tuple[str, ...],
        grown: tuple[str, str, str],
    ) -> Split:
        """``text`` split as ``runs`` laid end to end, and recorded: each run a text split
        here, its split, the slice of its sentences that ``text`` holds, and where that
        text starts in ``text``. ``pieces`` are ``text``'s counting pieces, ``grown`` what
        its count follows from (see :meth:`grown`)."""
        spans: list[tuple[int, int]] = []
        normal: list[str] = []
        sentences: list[str] = []
        for part, split, which, at in runs:
            # (a run at the start is taken as it is, in C: the text merged before, each time)
            spans += split.spans[which] if at == 0 else [(s + at, e + at) for s, e in split.spans[which]]
            normal += split.normal[which]
            sentences += _sentences(part, split)[which]
        self._pieces[text] = pieces
        self._grown[text] = grown
        done = self._splits[text] = Split(spans, normal, self.keys_of(normal), sentences)
        return done

    def _pieces_of(self, text: str) -> tuple[str, ...]:
        """:meth:`pieces` of a text split here (never None then)."""
        pieces = self.pieces(text)
        assert pieces is not None
        return pieces

    def forget(self, text: str) -> list[str]:
        """Let go of what was kept of ``text`` (a merged source's text that a longer one
        replaced) and of the part it grew by (see grown); returns those of them whose token
        count was not kept here (see tokens), which a caller's counter may hold."""
        gone = [text]
        grown = self._grown.pop(text, None)
        if grown is not None:
            gone.append(grown[2])
        for done in gone:
            self._splits.pop(done, None)
            self._pieces.pop(done, None)
        return [done for done in gone if self._tokens.pop(done, None) is None]

    def tokens(self, text: str) -> int | None:
        """The token count a packer kept for a text grown here (see :meth:`grown`), if any.

        Kept here, by the text (whose hash Python keeps), rather than in the
        counter by the text escaped: a document's windows merging one by one
        would otherwise have each merged text escaped and hashed whole again to
        find its count, and the next one's."""
        return self._tokens.get(text)

    def keep_tokens(self, text: str, n: int) -> None:
        """Keep ``n`` as the token count of ``text``, a text grown here, until it is forgotten."""
        self._tokens[text] = n

    def grown(self, text: str) -> tuple[str, str, str] | None:
        """(known, piece, part) when ``text`` was split from a text split before: ``text`` is
        ``known`` with ``piece``, its last counting piece (grown behind) or its first (grown
        in front), replaced by ``part`` (see :meth:`split_grown`). Token counts add up at a piece's start
        (with the OpenAI encodings; only then is this read), so the text's count is
        known's, less the piece's, plus the part's."""
        return self._grown.get(text)

    def _normalise(self, sentence: str) -> str:
        """``sentence`` normalised, remembered, and noted if it counts as a repeat."""
        key = self._normal[sentence] = normalise(sentence)
        words = self._words[key] = key.count(" ") + 1
        if words >= MIN_SENTENCE_WORDS:  # as _is_key, with the words counted once
            if key[0] in "#|" and _STRUCTURE.match(key):
                return key  # a heading or a table row: it labels what follows (see _STRUCTURE)
            self._keys.add(key)
            if _REFERS_BACK.match(key):
                self._anaphora.add(key)
        elif _ANSWERS.match(key) and _ENDS_SENTENCE.search(key):
            self._answers.add(key)
        return key

    @property
    def short_answers(self) -> set[str]:
        """The normalised sentences split here too short to count as repeats that answer or
        qualify the sentence before them ("No.", "Not anymore.", "It is.", "$5 only."; see
        _ANSWERS and Ledger.fresh). Read, not changed, by its users."""
        return self._answers

    @property
    def refer_back(self) -> set[str]:
        """The normalised sentences split here that open with a word pointing at what came
        before them ("That claim is false.", "It was built in 1901."): what they say depends
        on it (see Ledger). Read, not changed, by its users."""
        return self._anaphora

    def word_count(self, normal: str) -> int:
        """How many words a normalised sentence of a text split here has."""
        return self._words[normal]

    def words(self, split: Split) -> int:
        """How many words the text has (as ``len(split.key.split(" "))``), from its sentences."""
        return sum(map(self._words.__getitem__, split.normal))

    def keys_of(self, normal: Iterable[str]) -> tuple[str, ...]:
        """Those of the normalised sentences (of texts split here) that count as repeats."""
        return tuple(filter(self._is_key, normal))

    def keep(
        self, text: str, split: Split, keep: list[bool], normal: list[str], keys: tuple[str, ...]
    ) -> str:
        """What is left of ``text`` (split as ``split``) keeping the sentences ``keep`` marks
        (``normal`` and ``keys``: theirs), as :func:`join_kept` leaves it; recorded as split,
        and cut into counting pieces, so that neither is done again.

        A line whose pieces are its sentences is put together from those pieces, each
        run of kept sentences as it stood: most of them are already counted, and the
        spans of its sentences are never needed.
        """
        if True not in keep:
            return ""
        pieces = self._pieces.get(text)
        sentences = split.sentences
        # (only a line: where a blank line stood between two runs, join_kept keeps one, and
        # the pieces, cut at the space before it, would join them with a space)
        if pieces is None or sentences is None or len(pieces) != len(sentences) or "\n" in text:
            joined, spans = _join_kept(text, list(itertools.compress(split.spans, keep)))
            if joined not in self._splits:
                self._splits[joined] = Split(spans, normal, keys, kept=True)
            return joined
        # Runs of kept sentences joined by a space (a line has no blank line in it): the
        # first piece of each run is its sentence, after one space but for the first run.
        joined_pieces = list(itertools.compress(pieces, keep))
        place = list(itertools.accumulate(keep))  # 1 + where each kept sentence's piece goes
        starts = itertools.compress(range(len(keep)), map(operator.gt, keep, [False, *keep[:-1]]))
        first = next(starts)
        joined_pieces[0] = sentences[first]
        for k in starts:
            piece = pieces[k]
            if piece[0] != " " or len(piece) != len(sentences[k]) + 1:  # not one space before it
                joined_pieces[place[k] - 1] = " " + sentences[k]
        if keep[-1]:
            joined_pieces[-1] = joined_pieces[-1].rstrip()  # the text's own last sentence
        joined = "".join(joined_pieces)
        if joined not in self._splits:
            cut = self._pieces[joined] = tuple(joined_pieces)
            left = list(itertools.compress(sentences, keep))
            self._splits[joined] = Split(None, normal, keys, left, pieces=cut, kept=True)
        return joined

    def marks(self, split: Split) -> frozenset[int]:
        """The marks of a long text's sampled shingles: those of its sentences (see _SAMPLED)."""
        return _NO_MARKS.union(*_per_sentence(self._marks, sentence_marks, split))

    def plain_words(self, split: Split) -> list[str]:
        """The text's words without case or surrounding punctuation (as _plain(split.key))."""
        words: Iterator[list[str]] = _per_sentence(self._plain, _plain, split)
        return list(itertools.chain.from_iterable(words))

    def pieces(self, text: str) -> tuple[str, ...] | None:
        """``text`` cut before each space or tab that follows a sentence; None if never split.

        Each piece is a sentence with the whitespace before it. For both OpenAI
        encodings a text's count is the sum of its pieces' counts (see
        TiktokenTokenizer), and pieces recur across overlapping candidates, so
        they are what gets counted. A sentence followed by a line break stays
        with the next one, since punctuation and line breaks tokenize together.
        Kept: the prefetch, admission and the manifest all ask.
        """
        done = self._pieces.get(text)
        if done is None:
            split = self._splits.get(text)
            if split is None:
                return None
            cuts = [0, *(end for _, end in split.spans[:-1] if text[end] in _PIECE_CUTS), len(text)]
            done = self._pieces[text] = tuple([text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)])
        return done


#: what may make a line break end a sentence by what its lines hold (see _near_structure)
_STRUCTURE_MARK = re.compile(r"[#|]|^[ \t]*\d", re.MULTILINE)
#: a list item's number, read by a part split alone as opening its first line
_OPENS_NUMBERED = re.compile(r"[ \t]*\d")


def _near_structure(text: str, at: int) -> bool:
    """Whether, around ``at``, where split_grown joins what it splits again to sentences it
    split before, Markdown structure may decide where a sentence ends (see split_sentences):
    in the line holding ``text[at]`` or the next one, or opening a line at ``at`` (as the
    part split alone reads it). A line break there ends a sentence by what its lines hold
    (a heading, a list item's number), which a split of part of the text reads otherwise:
    the text is then split whole."""
    if "\n" not in text:
        return False
    start = text.rfind("\n", 0, at) + 1
    nl = text.find("\n", at)
    end = -1 if nl < 0 else text.find("\n", nl + 1)
    end = len(text) if end < 0 else end
    return _STRUCTURE_MARK.search(text, start, end) is not None or _OPENS_NUMBERED.match(text, at) is not None


def _sentences(text: str, split: Split) -> list[str]:
    """The sentences of ``text``, split as ``split`` (kept there, or cut from its spans)."""
    if split.sentences is not None:
        return split.sentences
    return [text[start:end] for start, end in split.spans]


def _sentence(text: str, split: Split, k: int) -> str:
    """Sentence ``k`` of ``text``, split as ``split`` (as :func:`_sentences` has it, alone)."""
    if split.sentences is not None:
        return split.sentences[k]
    start, end = split.spans[k]
    return text[start:end]


def _per_sentence(known: dict[str, _T], make: Callable[[str], _T], split: Split) -> Iterator[_T]:
    """``make`` of each of the split's normalised sentences, each distinct one made once
    (kept in ``known``): overlapping windows share most of their sentences."""
    for normal in split.normal:
        if normal not in known:
            known[normal] = make(normal)
    return map(known.__getitem__, split.normal)


@dataclass(slots=True)  # not frozen: made for every candidate, and a frozen init costs 4x
class Fresh:
    """What is left of a candidate after removing what was already sent."""

    text: str
    #: for each removed sentence, the id of the source it was already sent in
    sent_in: tuple[str, ...]
    #: the keys of the sentences left, so recording them needs no second split
    keys: tuple[str, ...] | None = None
    #: the text as it came, its split, and where each of its sentences was sent (None:
    #: kept), for removed
    original: str = ""
    split: Split | None = None
    seen: tuple[str | None, ...] = ()
    #: how many of the removed were no sentence of their own, but a piece of one cut at
    #: the text's start or end (see Ledger)
    cut: int = 0
    #: what was left when it was too short to send alone (``text`` is then empty)
    alone: str = ""

    @property
    def removed(self) -> tuple[tuple[str, str], ...]:
        """(sentence, id of the source it was already sent in) for each removed sentence.

        Cut only when asked: admission needs just where they were sent.
        """
        if self.split is None:
            return ()
        gone = zip(itertools.compress(self.split.spans, self.seen), self.sent_in, strict=True)
        return tuple((self.original[s:e], where) for (s, e), where in gone)

    @property
    def run(self) -> tuple[int, int] | None:
        """Where the text left lies in the text as it came, when it is one run of it
        (only sentences at its ends were removed); else None."""
        if self.split is None:
            return (0, len(self.text))
        seen, kept = self.seen, self.seen.count(None)
        if not kept:
            return None
        first, last = seen.index(None), len(seen) - 1 - seen[::-1].index(None)
        if last - first + 1 != kept:
            return None  # a sentence was taken from between two kept ones
        # One run, cut as it stood: found by a search in C where it occurs once (a
        # repeated one is placed by its sentences' spans).
        start = self.original.find(self.text)
        if start < 0:
            return None
        if self.original.find(self.text, start + 1) != -1:
            start = self.split.spans[first][0]
        return start, start + len(self.text)


def _key(sentence: str) -> str | None:
    key = normalise(sentence)
    return key if _is_key(key) else None


def _is_key(normal: str) -> bool:
    """Whether a normalised sentence is long enough to count as a repeat (MIN_SENTENCE_WORDS)."""
    return normal.count(" ") + 1 >= MIN_SENTENCE_WORDS


#: A short sentence that answers or qualifies the one before it: it opens with a yes or a
#: no, a word of degree, a word pointing back ("It is.") or a figure ("$5 only."), and
#: ends as a sentence ends. (Not any short sentence: a splitter's slip, "Marie, Ontario."
#: after "Sault Ste.", needs no sentence kept for it.)
_ANSWERS = re.compile(
    r"""["'“‘(\[]*(?:(?:yes|no|not|never|none|nothing|only|true|false|correct|incorrect|right"""
    r"""|wrong|indeed|exactly|always|sometimes|rarely|usually|maybe|perhaps|partly|neither"""
    r"""|either|agreed|confirmed|denied|this|that|these|those|it|its|they|them|he|she|both"""
    r"""|such)\b|[$€£]?\d)"""
)
#: A heading or a table row, normalised: no repeat, though it recurs. A heading labels the
#: sentences after it, and a table's header row its rows; each window under it keeps it.
_STRUCTURE = re.compile(r"#{1,6} |\|")
#: Words that, opening a sentence, point at what came before it: such a sentence sent
#: after other text says something else there (see Ledger.fresh).
_REFERS_BACK = re.compile(
    r"""["'“”‘’(\[]*(?:this|that|these|those|it|its|they|their|theirs|them|he|his|him|she|her|hers"""
    r"""|such|both|former|latter)\b"""
)


def _ends_alike(a: str, b: str) -> bool:
    """Whether one sentence ends the other (the same, or one a piece of the other cut at its start)."""
    return a.endswith(b) or b.endswith(a)


def _starts_alike(a: str, b: str) -> bool:
    """Whether one sentence starts the other (the same, or one a piece of the other cut at its end)."""
    return a.startswith(b) or b.startswith(a)


#: Characters a cut sentence must have (and by which sent sentences are indexed) for
#: the ledger to find it inside a longer sentence already sent (see Ledger.fresh).
_EDGE = 16
#: a sentence's end: ".", "!", "?" or "…", and any closing quotes or brackets after it
_ENDS_SENTENCE = re.compile(r"""[.!?…]["'”’)\]]*\Z""")


def _keep_answered(normal: Sequence[str], seen: list[str | None], answers: set[str]) -> None:
    """Keep (set ``seen`` to None) each sentence already sent that a short answer follows
    here ("Is the plan refundable? No."): without it the answer says nothing, or the
    opposite of what the source says."""
    for k in range(len(normal) - 1):
        if seen[k] and normal[k + 1] in answers:
            seen[k] = None


class Ledger:
    """The sentences admission has sent so far, and where each was first sent.

    A window cut from its document mid-sentence starts with the end of a sentence
    and ends with the start of one. When another source already sent that whole
    sentence, the piece is sent already too, though it is no sentence of its own.
    For a text that neighbour merging cannot join to the rest of its document (one
    without offsets), the ledger also finds a first sentence that reads as cut at
    the end of a longer sentence sent, and a last one at the start of one:
    overlapping windows without offsets would otherwise repeat their overlap in
    part. (A window with offsets keeps its edges: a neighbour may join it there, and
    the sentence it cuts is then whole again.)

    A sentence sent before is left in a text when it refers back ("That claim is
    false.") and stands between other sentences here than where it was sent: there
    it says something else (see _in_context).
    """

    def __init__(self, sentences: SentenceCache | None = None) -> None:
        self._sent: dict[str, str] = {}
        self._cache = sentences if sentences is not None else SentenceCache()
        # each sent sentence that refers back, and the ones before and after it where it was
        # sent (None: it opened, or closed, its text); see _in_context
        self._context: dict[str, tuple[str | None, str | None]] = {}
        # the sent sentences longer than _EDGE, by their last and first _EDGE characters (all
        # that share them, in the order sent: " said in a statement." ends many), indexed
        # when first asked (most packs' windows have offsets, and never ask)
        self._tails: dict[str, list[str]] = {}
        self._heads: dict[str, list[str]] = {}
        self._indexing = False  # (from the first time it is asked)
        self._unindexed: list[Iterable[str]] = []  # sentences sent since it was last asked

    def fresh(self, text: str, own: set[str] | frozenset[str] = frozenset(), edges: bool = False) -> Fresh:
        """``text`` without sentences already sent (but in the sources ``own``: the text
        joins them), nor, with ``edges``, a first or last sentence cut from a longer one
        already sent; runs of kept sentences stay verbatim."""
        split = self._cache.split(text)
        sent = self._sent
        if not sent:
            return Fresh(text, (), split.keys)
        cut = self._cut_from_sent(text, split) if edges else {}
        if not cut and sent.keys().isdisjoint(split.normal):
            return Fresh(text, (), split.keys)
        seen = list(map(sent.get, split.normal))  # only sentences of MIN_SENTENCE_WORDS are in it
        for k, where in cut.items():
            seen[k] = where
        if own:
            if own.issuperset(filter(None, seen)):  # (a merged source's text: found in C)
                return Fresh(text, (), split.keys)
            seen = [None if where in own else where for where in seen]
        if not self._cache.refer_back.isdisjoint(split.normal):
            self._in_context(split.normal, seen)
        if not self._cache.short_answers.isdisjoint(split.normal):
            _keep_answered(split.normal, seen, self._cache.short_answers)
        if not any(seen):  # every sentence sent before stays (for its context): the text as it came
            return Fresh(text, (), split.keys)
        keep = list(map(operator.not_, seen))  # source ids are never empty
        normal = list(itertools.compress(split.normal, keep))
        keys = self._cache.keys_of(normal)
        joined = self._cache.keep(text, split, keep, normal, keys)
        sent_in = cast(tuple[str, ...], tuple(filter(None, seen)))
        cut_sent = sum(1 for k in cut if seen[k])
        if not keys and sent_in and joined:
            # All that is left is too short to be a repeat ("Yes.", a heading): alone, it
            # says nothing, and the text adds nothing that was not sent.
            return Fresh("", sent_in, (), text, split, tuple(seen), cut_sent, alone=joined)
        return Fresh(joined, sent_in, keys, text, split, tuple(seen), cut_sent)

    def _note_context(self, normal: Sequence[str]) -> None:
        """Note, for each sentence of ``normal`` (a text's sentences, normalised, in order, short
        ones too: "Smith lied." is context) that refers back and is sent for the first time,
        the sentences around it (see _in_context). (Found in C: a merged text is recorded
        whole again with each window that joins it.)"""
        for key in self._cache.refer_back.intersection(normal).difference(self._sent):
            at = normal.index(key)  # (in C; few of a text's sentences refer back)
            self._context[key] = (
                normal[at - 1] if at else None,
                normal[at + 1] if at + 1 < len(normal) else None,
            )

    def _in_context(self, normal: list[str], seen: list[str | None]) -> None:
        """Keep (set ``seen`` to None) each sentence already sent that refers back to what came
        before it ("That claim is false.") when it follows another sentence here than where it
        was sent, and the text does not go on there as here: it says something else. ("Smith
        said the bridge was safe. That claim is false." stays whole after "Jones said the dam
        was unsafe. That claim is false.") A passage shared on (the next sentence the same),
        or an occurrence that opens its text (a window starts where it was cut), says the
        same: it goes, as seed 001's example asks."""
        context = self._context
        # (only the sentences sent that refer back are looked at: found in C)
        refers_back = map(self._cache.refer_back.__contains__, normal)
        for k in itertools.compress(range(len(normal)), map(operator.and_, map(bool, seen), refers_back)):
            there = context.get(normal[k])
            # (a window cut inside the sentence around it holds a piece of it: the end of the
            # one before, the start of the one after)
            if there is None or there[0] is None or not k or _ends_alike(there[0], normal[k - 1]):
                continue
            if k + 1 < len(normal) and there[1] is not None and _starts_alike(there[1], normal[k + 1]):
                continue
            seen[k] = None

    def _cut_from_sent(self, text: str, split: Split) -> dict[int, str]:
        """Where the first and the last sentence of ``text`` (split as ``split``) were sent,
        by their index, when that one was cut from a longer sentence sent: it is no
        sentence sent itself, it ends that one (first) or starts it (last), between
        words, and it reads as cut (first: it starts with a lower-case letter, after any
        opening quotes or brackets; last: it does not end as a sentence ends). (A whole
        sentence that ends another, as "The film failed." or "$5 million was raised."
        ends "Critics said the film failed.", says something of its own.)"""
        normal = split.normal
        if not normal:
            return {}
        last = len(normal) - 1
        cut_first = _sentence(text, split, 0).lstrip(_OPENERS)[:1].islower()
        cut_last = not _ENDS_SENTENCE.search(_sentence(text, split, last))
        if not (cut_first or cut_last):
            return {}
        self._index()
        first = self._inside(normal[0], at_end=True) if cut_first else None
        end = self._inside(normal[last], at_end=False) if cut_last else None
        # (in a text of one sentence both are that one; found as the start of one, it says so)
        return {k: where for k, where in ((0, first), (last, end)) if where is not None}

    def _index(self) -> None:
        """Index the sentences sent since the last time, longer than _EDGE, by their ends (see
        __init__); the first time, every sentence sent so far."""
        if not self._indexing:
            self._indexing = True
            self._unindexed.append(list(self._sent))
        sentences = list(itertools.chain.from_iterable(self._unindexed))
        self._unindexed.clear()
        long = itertools.compress(sentences, map(operator.gt, map(len, sentences), itertools.repeat(_EDGE)))
        for sentence in long:
            for index, end in ((self._tails, sentence[-_EDGE:]), (self._heads, sentence[:_EDGE])):
                alike = index.get(end)
                if alike is None:
                    index[end] = [sentence]
                elif sentence not in alike:  # (a merged text is recorded whole again)
                    alike.append(sentence)

    def _inside(self, piece: str, at_end: bool) -> str | None:
        """Where the first sent sentence that ``piece`` ends (``at_end``) or starts, between
        words, was sent; None when none does, or when ``piece`` is too short to say
        (_EDGE characters, MIN_SENTENCE_WORDS words) or is a sentence sent itself. (At a
        word's middle, "effective against ..." would be taken for the end of "...
        ineffective against ...".)"""
        if len(piece) < _EDGE or piece in self._sent or not _is_key(piece):
            return None
        n = len(piece)
        longer = self._tails.get(piece[-_EDGE:], ()) if at_end else self._heads.get(piece[:_EDGE], ())
        for sentence in longer:
            if len(sentence) > n and (
                not sentence[-n - 1].isalnum() and sentence.endswith(piece)
                if at_end
                else not sentence[n].isalnum() and sentence.startswith(piece)
            ):
                return self._sent[sentence]
        return None

    def record(
        self,
        text: str,
        source_id: str,
        keys: Sequence[str] | None = None,
        around: Sequence[str] | None = None,
    ) -> None:
        """Remember every sentence of ``text`` (or the given ``keys`` of it) as sent in ``source_id``;
        ``around``: the normalised sentences of the text :meth:`fresh` left it of, whose
        order says what stood around each sentence (see _in_context)."""
        if keys is None or around is None:
            split = self._cache.split(text)  # (once, for either)
            keys = split.keys if keys is None else keys
            around = split.normal if around is None else around
        sent = self._sent
        self._note_context(around)
        if len(keys) > 64:  # a long text (a merged one is recorded whole again): the new ones found in C
            # (kept in the text's order, so which of two sentences alike at their ends the
            # ledger indexes never depends on the order of a set)
            new = list(filter(set(keys).difference(sent).__contains__, keys))
            sent.update(dict.fromkeys(new, source_id))
            if self._indexing:
                self._unindexed.append(new)
            return
        if self._indexing:
            self._unindexed.append(keys)
        for key in keys:
            sent.setdefault(key, source_id)


# --- boilerplate -----------------------------------------------------------------


def _units(text: str) -> list[tuple[int, int]]:
    """Lines, each cut into sentences: the pieces boilerplate is made of."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        for start, end in split_sentences(line):
            spans.append((pos + start, pos + end))
        pos += len(line)
    return spans


def join_kept(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The kept spans of ``text``: adjacent ones verbatim as written, separate runs joined by a
    space, or by a blank line or a line break where one stood between them (a heading stays
    apart from the sentence after it)."""
    return _join_kept(text, spans)[0]


def _join_kept(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """:func:`join_kept`, and where each kept span lies in the joined text."""
    parts: list[str] = []
    moved: list[tuple[int, int]] = []
    run_start = run_end = -1  # the run being built (none yet)
    shift = 0  # how far the current run moves to the left in the joined text
    for start, end in spans:
        if run_end >= 0 and not text[run_end:start].strip():  # only whitespace between: the same run
            run_end = end
        else:
            if run_end >= 0:
                gap = "\n\n" if _BLANK_LINE.search(text, run_end, start) else " "
                if gap == " " and "\n" in text[run_end:start]:
                    gap = "\n"  # (a heading, a list item or a table row stays on its line)
                parts += (text[run_start:run_end], gap)
            shift = start - sum(map(len, parts))
            run_start, run_end = start, end
        moved.append((start - shift, end - shift))
    if run_end >= 0:
        parts.append(text[run_start:run_end])
    return "".join(parts), moved


def strip_boilerplate(
    texts: Sequence[str],
    documents: Sequence[str],
    min_documents: int = 3,
    ignore: frozenset[int] = frozenset(),
) -> list[tuple[str, int]]:
    """Remove header and footer lines repeated across ``min_documents`` or more documents.

    Headers, footers and cookie notices recur across *different* documents at
    the edges of chunks. So a piece (a line, or a sentence of one) counts as
    boilerplate when it opens or closes (within two pieces) chunks of at least
    ``min_documents`` distinct documents (a doc_id, or the chunk's own id):
    sentences shared by overlapping windows of one document do not count, and
    neither do chunks in ``ignore`` (duplicates, whose repeats are not
    boilerplate). Returns, per text, the text left and how many pieces were
    stripped. Pieces shorter than three words are never boilerplate.
    """
    units = [_units(t) for t in texts]
    at_edges: dict[str, set[str]] = {}
    for i, (text, spans, doc) in enumerate(zip(texts, units, documents, strict=True)):
        if i in ignore:
            continue
        last = len(spans) - 1
        for n, (s, e) in enumerate(spans):
            if 2 <= n <= last - 2:
                continue
            key = _key(text[s:e])
            if key is not None:
                at_edges.setdefault(key, set()).add(doc)
    boiler = {k for k, docs in at_edges.items() if len(docs) >= min_documents}
    out = []
    for text, spans in zip(texts, units, strict=True):
        if not boiler:
            out.append((text, 0))
            continue
        kept = [(s, e) for s, e in spans if normalise(text[s:e]) not in boiler]
        stripped = len(spans) - len(kept)
        out.append((text if not stripped else join_kept(text, kept), stripped))
    return out

"""Dedupe before admission: exact copies, near-duplicates and conflicts, boilerplate.

:func:`find_duplicates` looks at the whole candidate list once, before admission.
Exact copies (same text after folding whitespace and case) and near-duplicates
(Jaccard similarity of the word 3-shingles inside their sentences at or above a
threshold) are dropped in favour of the better-ranked copy. Short texts are
compared with numbers and negations masked out; if two texts match but differ in
protected details ("Plus costs $2.99" / "$3.99", a name, a "not"), they are
*conflicting*, never duplicates: both stay and both are marked. A window shifted
along its document, or one passage inside other surroundings, is neither: the
ledger sends what it adds. Candidate pairs come from an inverted index of shingle
sketches, so the work grows with the text, not with the square of the candidate
count.

Repetition that shows only once something is sent (a sentence two windows share,
the overlap of two neighbours of one document) is left to admission: the sentence
ledger is in _ledger, neighbour merging in _admit. The sentence splitter, and the
cache every stage reads texts through, are in _sentences.
:func:`strip_boilerplate` removes header and footer lines that recur across
documents.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
import operator
import os
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ._sentences import (
    _ENDS_SENTENCE,
    _PUNCT,
    _UNSPACED,
    SentenceCache,
    Split,
    _code_blocks,
    _has_cjk_ends,
    _key,
    _plain,
    _utf8,
    code_of,
    join_kept,
    nested_otherwise,
    nesting_of,
    normalise,
    spaced_out,
    split_around_code,
    split_sentences,
)

__all__ = [
    "CONFLICT_MARGIN",
    "NEGATION_PATTERN",
    "NUMBER_WORD_PATTERN",
    "SHORT_TEXT",
    "DedupeReport",
    "Place",
    "agree_where_overlapping",
    "difference",
    "find_duplicates",
    "strip_boilerplate",
]


def _alternation(words: Iterable[str]) -> str:
    """A regex matching exactly ``words``, factored by their common beginnings (a trie):
    where a word may start, the engine tries the few words that share its next letter,
    not every word in turn."""

    def build(ends: set[str]) -> str:
        if ends == {""}:
            return ""
        after: dict[str, set[str]] = {}
        for end in ends:
            if end:
                after.setdefault(end[0], set()).add(end[1:])
        alternatives = [re.escape(letter) + build(rest) for letter, rest in sorted(after.items())]
        if "" in ends:  # (a word that another goes on from: "four", "fourteen")
            return f"(?:{'|'.join(alternatives)})?"
        return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"

    return build(set(words))


# (from a word's start only: from every position of a long run without a digit, the
# search would run to its end again, and a 32 KB word took seconds; possessive: the
# word's first digit is found once, without trying every shorter start before it)
_NUMBERISH = re.compile(r"(?<!\S)[^\s\d]*+\d\S*+")
#: Negations: a detail that must never be merged or compressed away (shared with
#: compression's protected sentences). "non-" negates the word it opens.
NEGATIONS = tuple("not no never none nothing nobody nowhere neither nor cannot without".split())
#: ... as a regex
NEGATION_PATTERN = rf"\b(?:{_alternation(NEGATIONS)})\b|n't\b|\bnon-(?=\w)"
_NEGATION = re.compile(NEGATION_PATTERN, re.IGNORECASE)
#: Numbers written as words ("thirty days", "the fifth", "twenty-one", "half the price"):
#: as much a detail as digits (shared with compression's protected sentences).
NUMBER_WORDS = tuple(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
    thousand million billion trillion dozen half quarter once twice thrice first second third fourth
    fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth
    seventeenth eighteenth nineteenth twentieth thirtieth fortieth fiftieth sixtieth seventieth
    eightieth ninetieth hundredth thousandth millionth billionth tens dozens hundreds thousands
    millions billions trillions""".split()
)
#: ... as a regex (whole words only: "twenty-one" holds two)
NUMBER_WORD_PATTERN = rf"\b(?:{_alternation(NUMBER_WORDS)})\b"
_NUMBER_WORD = re.compile(NUMBER_WORD_PATTERN, re.IGNORECASE)
#: a capitalised word inside a sentence (after a word or a comma and a space): a name;
#: the match takes the space before it (a literal the engine looks for first, where a
#: pattern opening with the look-behind was tried at every character)
_NAMEISH = re.compile(r" (?<=[\w,;:] )[\"'“‘(\[]?[A-Z][\w'’-]*")  # (in quotes too: 'Sahara')
#: "yes", left out of short texts with the negations (see _masked_words)
_YES = re.compile(r"\byes\b")
#: the two patterns for lower-case text (see _masked_words)
_LOWER_NUMBER_WORD = re.compile(NUMBER_WORD_PATTERN)
_LOWER_NEGATION = re.compile(NEGATION_PATTERN)
#: Prefixes that turn a word into its opposite ("available" / "unavailable"): two texts
#: that differ only there say opposite things.
_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "non-")
#: those of them at a word's start, as a regex (but "non", which the negations take)
_NEGATING_PREFIX = re.compile(
    rf"\b(?:{_alternation(p for p in _NEGATING_PREFIXES if not p.startswith('non'))})(?=[a-z]{{3}})"
)

#: Shingles shared by more candidates than this are boilerplate, not evidence of
#: duplication; skipping them keeps candidate generation near-linear.
_POSTING_CAP = 64
#: Short texts are shingled with their details masked, so the versions of one templated
#: sentence ("The Plus plan costs $N.99 ...") share every shingle, and past _POSTING_CAP
#: of them met nobody: neither marked conflicting nor dropped as near-duplicates. Where a
#: short text's shingle is that crowded, it meets the best-ranked _CROWD_PARTNERS texts
#: there (it conflicts with those versions, not with every one of thousands) and, through
#: a second index of its shingles with its details, every text with the same details
#: (its near-duplicates).
_CROWD_PARTNERS = 8


def _details_key(text: str, masked: list[str]) -> int:
    """What masking took out of a short text (see _masked_words): its numbers, names and
    negations, as a set of words. Two versions of one sentence with the same details have
    the same key; with another price, their keys differ."""
    words = {w.strip(_PUNCT) for w in spaced_out(text).lower().split()}
    # (punctuation stripped on both sides: "days," is no detail, and a comma added to a
    # copy leaves its details as they were)
    return hash(frozenset(words.difference(w.strip(_PUNCT) for w in masked)))


def _masked_words(text: str) -> list[str]:
    # Numbers, negations (words, and prefixes that negate) and names inside a sentence are
    # masked so that two short texts differing only in them still meet as near-duplicates
    # and are then told apart as conflicts: in a text of a dozen words one changed word
    # leaves too few shingles alike to meet. (Masked alike in both, a changed word is told
    # apart by difference, on the words as written.)
    # (on the text lower-cased first: the patterns then need no case folding, which made
    # the number words' alternation five times slower)
    # (a name's match takes the space before it: " @ " puts one back)
    text = _NUMBERISH.sub(" # ", _NAMEISH.sub(" @ ", spaced_out(text)).lower())
    text = _LOWER_NUMBER_WORD.sub(" # ", text)
    if "yes" in text:  # (an answer "yes" is as "no"; looked for in C first: most texts have none)
        text = _YES.sub(" ", text)
    text = _LOWER_NEGATION.sub(" ", text)
    return _NEGATING_PREFIX.sub("", text).split()


#: Capitalised words that open sentences rather than name anything.
_COMMON = frozenset(
    """a an the it its this that these those there he she they we i you in on at for and but or if
    when then so as""".split()
)
#: the end of a contraction ("'s" of "It's", "'re" of "They're", "'ll")
_CONTRACTION = re.compile(r"['’](?:s|re|ll|ve|d|m)\Z", re.IGNORECASE)
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
    mhz ghz celsius fahrenheit bit bits byte bytes kilobit kilobits kilobyte kilobytes megabit
    megabits megabyte megabytes gigabit gigabits gigabyte gigabytes terabyte terabytes tsp tbsp
    teaspoon teaspoons tablespoon tablespoons cup cups pint pints quart quarts
    north south east west northern southern eastern western northeast northwest southeast
    southwest left right
    free paid included excluded includes excludes including excluding approved rejected accepted
    denied allowed forbidden prohibited permitted required optional mandatory open closed
    enabled disabled true false valid invalid legal illegal positive negative won lost passed
    failed""".split()
)


#: a web address, an e-mail address, a path, a domain or file name: one name, whose every
#: character counts ("example.com/a" / "example.com/b" read as one word spelled two ways,
#: and the second version's text was dropped as a near-duplicate). Told by its form: a
#: scheme, "www.", an "@" inside, a path from the root or home or of two steps, a common
#: top-level domain or file extension. (Not any "/" or inner ".": windows of one text spaced
#: otherwise, "world/ But" / "world/But", "ministry. This" / "ministry.This", are one text.)
_ADDRESS = re.compile(
    r"://|\Awww\.|\w@\w|\A~?/\w|\w/[\w.-]+/|\w\.(?:com|org|net|edu|gov|int|mil|io|dev|ai|app|co|uk"
    r"|de|fr|jp|cn|eu|info|biz|pdf|html?|md|txt|json|csv|xml|ya?ml|toml|py|js|ts|go|rs|java|zip|gz"
    r"|tar|png|jpe?g|gif|svg|exe|sh|dll|so)\b",
    re.IGNORECASE,
)


def _is_detail(word: str) -> bool:
    """A number, date, negation, name, qualifier or unit (seed 003's decisive details),
    also joined to another word by a dash or slash ("—July", "mid-January"); an address."""
    core = word.strip(_PUNCT)
    if not core:
        return False
    if _is_figure(core) or _UNSPACED.search(core) or _ADDRESS.search(core):
        # (Chinese or Japanese: no word list can tell a negation or a number there, "できます" /
        # "できません", "包含" / "不包含": any change is a detail, and the texts both stay)
        return True
    return any(
        # (a contraction as the word it shortens: "It's", "There's" open sentences, name nothing)
        (part[0].isupper() and _CONTRACTION.sub("", part).lower() not in _COMMON) or part.lower() in _DECISIVE
        for part in _JOINED.split(core)
        if part
    )


#: Words that may stand for one another without changing what a text says ("a" / "the",
#: "this" / "that"): swapped, they are an edit. Any other word replaced by one not spelled
#: alike ("increased" / "decreased", "son" / "daughter", "redis" / "memcached") changes it.
_INTERCHANGEABLE = frozenset("a an the this that these those which who and &".split())
#: How alike two words' letters must be (difflib's ratio) to be one word spelled two ways
#: ("colour" / "color", "organise" / "organize", "recieve" / "receive", "member" / "members")
_SPELLED_ALIKE = 0.8


#: what may join or part two words without changing them (see _replaced)
_GLUE = re.compile(r"[\W_]+")
#: the symbols among what _GLUE matches that say something of their own ("x < 5" / "x > 5",
#: "10 $" / "10 €", "✓" / "✗"): Unicode's math, currency and other symbols, but those that
#: Markdown writes as syntax (a table's "|", a fence's "~", a list item's "+")
_SAYING_SYMBOLS = frozenset(("Sm", "Sc", "So"))
_MARKDOWN_SYMBOLS = frozenset("|~+")


def _symbols(words: Sequence[str]) -> list[str]:
    """The symbols of ``words`` that say something (see _SAYING_SYMBOLS), in order."""
    return [
        c
        for c in "".join(words)
        if not c.isalnum() and c not in _MARKDOWN_SYMBOLS and unicodedata.category(c) in _SAYING_SYMBOLS
    ]


#: what a contraction stands for besides the word it shortens ("it's" / "it is", "we'll" /
#: "we will"); "n't" is a negation, judged as one
_CONTRACTED = frozenset("is are am has have had will would shall us".split())


def _replaced(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether words of one side were replaced by other words on the other: each side holds
    a word (but those of _INTERCHANGEABLE) spelled like none of the other's. Words only
    added or taken out, spelled another way, or contracted ("it is" / "it's") are edits."""
    if _GLUE.sub("", "".join(left)).lower() == _GLUE.sub("", "".join(right)).lower():
        # the same words spaced or stopped another way ("series. The" / "series.The"), unless a
        # symbol changed: _GLUE takes symbols for stops, and "x < 5" / "x > 5" read as one text
        if _symbols(left) == _symbols(right):
            return False
    mine, short_mine = _content_words(left)
    theirs, short_theirs = _content_words(right)
    if short_theirs:
        mine = [w for w in mine if w not in _CONTRACTED]
    if short_mine:
        theirs = [w for w in theirs if w not in _CONTRACTED]
    if not (mine and theirs):
        return False
    if len(mine) == len(theirs):  # one for one, in order: each word against its own
        return not all(map(_spelled_alike, mine, theirs))
    if len(mine) * len(theirs) > _DETAIL_WORDS * _DETAIL_WORDS * 4:
        return True  # (many words against many others: replaced, without comparing each pair)
    return any(not any(_spelled_alike(w, t) for t in theirs) for w in mine) and any(
        not any(_spelled_alike(t, w) for w in mine) for t in theirs
    )


def _changed(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether words that stand for one another in two texts change what they say: a detail
    on either side, a word the other's negated, or a word replaced (see _replaced); not one
    number written in digits on one side and in words on the other ("30" / "thirty")."""
    if (
        len(left) == len(right) == 1
        and _number(left[0]) is not None
        and _number(left[0]) == _number(right[0])
    ):
        return False
    return (
        any(map(_is_detail, left))
        or any(map(_is_detail, right))
        or _negated(left, right)
        or _replaced(left, right)
    )


#: the numbers up to ninety-nine as words (see _number): NUMBER_WORDS opens with them in order
_UNITS = {word: n for n, word in enumerate(NUMBER_WORDS[:20])}
_TENS = dict(zip(NUMBER_WORDS[20:28], range(20, 100, 10), strict=True))
#: what a number of _number's opens with: a digit, or a number word's first letter
_NUMBER_STARTS = (
    frozenset("0123456789") | {w[0] for w in (*_UNITS, *_TENS)} | {w[0].upper() for w in (*_UNITS, *_TENS)}
)


def _number(word: str) -> int | None:
    """The whole number a word writes in digits ("30") or in words up to ninety-nine ("thirty",
    "twenty-one"), else None."""
    core = word.strip(_PUNCT)
    if core[:1] not in _NUMBER_STARTS:  # ("$2.99", "Plus": most words, told at once)
        return None
    if core.isascii() and core.isdigit():
        return int(core)
    core = core.lower()
    if core in _UNITS:
        return _UNITS[core]
    tens, _, unit = core.partition("-")
    if tens in _TENS and (not unit or 0 < _UNITS.get(unit, 0) < 10):
        return _TENS[tens] + (_UNITS[unit] if unit else 0)
    return None


def _shortens(plain: str) -> str | None:
    """The word a contraction (lower case, straight quote) shortens ("it's" -> "it", "we'll"
    -> "we"); None for a word that is none ("n't" is a negation, judged as one)."""
    if "'" in plain and not plain.endswith("n't"):
        return plain.partition("'")[0]
    return None


def _content_words(words: Sequence[str]) -> tuple[list[str], bool]:
    """The words of one side as _replaced compares them (a contraction as the word it
    shortens), and whether one was contracted."""
    out, contracted = [], False
    for word in words:
        plain = word.strip(_PUNCT).lower().replace("’", "'")
        shortened = _shortens(plain)
        if shortened is not None:
            plain, contracted = shortened, True
        if plain and plain not in _INTERCHANGEABLE:
            out.append(plain)
    return out, contracted


@functools.lru_cache(maxsize=4096)  # (the versions of a template swap the same few words)
def _spelled_alike(a: str, b: str) -> bool:
    """Whether two lower-case words are one word spelled two ways (see _SPELLED_ALIKE), not
    one word with another prefix ("male" / "female", "hypertension" / "hypotension")."""
    if a == b:
        return True
    least = _SPELLED_ALIKE * (len(a) + len(b))
    if 2 * min(len(a), len(b)) < least:
        return False  # (the ratio cannot reach it: spares difflib most pairs)
    if 2 * sum(min(a.count(c), b.count(c)) for c in set(a).intersection(b)) < least:
        return False  # (nor with the letters the two share, however they align)
    shared = len(os.path.commonprefix([a[::-1], b[::-1]]))  # (the end both words have)
    if {a[: len(a) - shared], b[: len(b) - shared]} <= _PREFIXES:
        return False
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= _SPELLED_ALIKE


#: Prefixes that make another word of the word they open: two words that differ in one
#: of these only (or one has it, the other not) are different words, however alike.
_PREFIXES = frozenset(
    """ fe hyper hypo inter intra ex im in un dis pre post sub super over under up down out
    non anti pro mis mal micro macro mega giga kilo milli mono multi bi tri""".split()
) | {""}


def _is_figure(word: str) -> bool:
    """A number, date or negation: a detail that a cut window cannot produce by chance."""
    core = word.strip(_PUNCT)
    return (
        any(ch.isdigit() for ch in core)
        or bool(_NUMBER_WORD.search(core))  # ("twenty-one" holds one)
        or _is_negation(core)
        or (not core.isascii() and _CJK_FIGURE.search(core) is not None)
    )


#: Chinese and Japanese numerals and negations ("九元", "不包含"): figures, as digits are
_CJK_FIGURE = re.compile(r"[零〇一二三四五六七八九十百千万萬亿億两兩不没沒无無非未否别別]")


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
    by up to ``most`` words (the rest, at least _ANCHOR words or half the shorter
    text, agreeing word for word), else None. (An overlap of a word or two is no
    window moved along: a short table opens and ends with "|", and each of its
    versions read as the other shifted, never compared.)"""
    if not right:
        return None
    first, k = right[0], -1
    least = min(_ANCHOR, (min(len(left), len(right)) + 1) // 2)
    while True:
        try:
            k = left.index(first, k + 1, min(most, len(left) - least) + 1)  # where right could start
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


def _apart(mine: list[str], theirs: list[str]) -> bool:
    """Whether each of two long texts has more words of its own than a few changed details
    make (as sets, in C): texts further apart than that are related, not versions of one
    text, and need no word-by-word alignment to tell."""
    own = 4 * _DETAIL_WORDS
    words, others = set(mine), set(theirs)
    return len(words - others) > own and len(others - words) > own


def _adds_words(offset: int | None, new: list[str], kept: list[str]) -> bool:
    """Whether the window ``new``, ``offset`` words from ``kept``, has words ``kept`` lacks."""
    if offset is None:
        return False
    return offset < 0 or len(new) > len(kept) - offset  # starts before kept, or runs past its end


def _plain_words(text: str, words: dict[str, list[str]]) -> list[str]:
    """``text``'s words without case or surrounding punctuation, one for each of ``_words(text)``;
    kept in ``words`` for the next comparison."""
    found = words.get(text)
    if found is None:
        found = words[text] = _plain(normalise(" ".join(_words(text))))
    return found


def _words(text: str) -> list[str]:
    """``text.split()``, but for Chinese and Japanese sentences, which stand together without
    a space: each is cut from the next, as SentenceCache.plain_words cuts them."""
    if not _has_cjk_ends(text):
        return text.split()
    return [word for start, end in split_sentences(text) for word in text[start:end].split()]


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
    Brian"), or replaced by another at an end ("The price is $2.99" / "$3.99"); any
    word replaced by one not spelled alike ("increased" / "decreased", "of
    delivery" / "of purchase"); or a few words put in or left out inside, but
    articles, prepositions and the like ("of 500" / "of around 500", see
    _qualifies): what the text says changed.
    ``"surroundings"``: an end differs by more than a few words (one passage
    inside two different surroundings), or one text has a passage of more than
    a few words inside that the other lacks: the two are neither duplicates nor
    in conflict, and the sentence ledger sends what the second adds. A window
    shifted along its document, words added or removed at an end, and words
    spelled or contracted another way ("colour" / "color", "it is" / "it's") or
    articles swapped are not differences. ``words`` keeps each text's plain words for the next comparison.
    """
    words = {} if words is None else words
    offset = _offset(_plain_words(b, words), _plain_words(a, words))
    if offset is not None:  # a window shifted along its document: only its ends differ
        return "detail" if _goes_on(a, b, offset) else None
    return _difference_unshifted(a, b, words)


def _goes_on(new: str, kept: str, offset: int) -> bool:
    """Whether, of two texts that read as one window shifted (``new`` starting ``offset``
    words after ``kept``), one ends a sentence where the other goes on with a few words
    that hold a detail or a qualifier: "on weekdays." / "on weekdays only." (Windows of
    one document stop at the same words alike; a sentence end in one of them alone is an
    edit, and that one says something else.)"""
    # Only a text that ends a sentence goes on past the other's end. Most windows are cut
    # inside a sentence, so most pairs are told so from their last words, without cutting
    # either text into words (at 1,000 bench candidates, 83 of 92 pairs; cutting two texts
    # into words was most of the time here). Texts that hold a Chinese or Japanese
    # sentence end are cut into words another way (see _words) and always judged whole.
    ends = _ENDS_SENTENCE.search
    if not (_has_cjk_ends(new) or _has_cjk_ends(kept) or ends(_last_word(new)) or ends(_last_word(kept))):
        return False
    return _goes_on_words(_words(new), _words(kept), offset)


def _last_word(text: str) -> str:
    """The last of ``text.split()`` ("" for a text without words), without splitting the rest."""
    words = text.rsplit(None, 1)
    return words[-1] if words else ""


def _goes_on_words(mine: list[str], theirs: list[str], offset: int) -> bool:
    """:func:`_goes_on` of two texts cut into words as written (see _words)."""
    if 0 <= offset + len(mine) - 1 < len(theirs) - 1:  # (new ends inside kept)
        last, longer, at = mine[-1], theirs, offset + len(mine) - 1
    elif 0 <= len(theirs) - 1 - offset < len(mine) - 1:  # (kept ends inside new)
        last, longer, at = theirs[-1], mine, len(theirs) - 1 - offset
    else:
        return False
    ends = _ENDS_SENTENCE.search
    if not ends(last) or ends(longer[at]) or last.rstrip("\"'”’)]").endswith(("...", "…")):
        return False  # (a snippet cut with "..." ends no sentence there)
    more = longer[at + 1 : at + 1 + _DETAIL_WORDS]
    stop = next((k for k, word in enumerate(more) if ends(word)), None)
    return stop is not None and any(map(_is_detail, more[: stop + 1]))


def _difference_unshifted(a: str, b: str, words: dict[str, list[str]]) -> str | None:
    """:func:`difference` of two texts known not to be one window shifted."""
    left, right = _words(a), _words(b)  # (one for each plain word)
    plain_left, plain_right = _plain_words(a, words), _plain_words(b, words)
    # Align on words without case or surrounding punctuation ("month." = "Month!"),
    # then judge the original words where the texts differ. The ends are what lies
    # outside the first and last long runs of shared words (a lone shared "the"
    # inside two different openings does not make them aligned); an end where both
    # texts have more than a few words of their own is other surroundings.
    if max(len(plain_left), len(plain_right)) > _ALIGN_MOST:
        return _difference_unaligned(left, right)
    if len(plain_left) == len(plain_right):
        # A few words swapped one for one inside the text, each between words both texts
        # share, one a detail: a changed detail, as the alignment below finds, without it
        # (the versions of one templated sentence are compared by the thousand, see
        # _CROWD_PARTNERS, and aligning them took most of that time). Where a word the
        # swap brings repeats one nearby, the alignment may pair them and call the swap an
        # edit; here it stays a detail, so both texts are kept. A word taken out in one
        # place and another put in elsewhere moves every word between: not swaps, so the
        # alignment judges it.
        # (where they differ, in C, and no further than one more than a few: two windows
        # shifted differ from their first word on)
        apart = list(itertools.islice(_unequal_at(plain_left, plain_right), _DETAIL_WORDS + 1))
        if (
            apart
            and len(apart) <= _DETAIL_WORDS
            and 0 < apart[0]
            and apart[-1] < len(left) - 1
            and all(b - a > 2 for a, b in itertools.pairwise(apart))  # (shared words between)
            and _swaps_a_detail(left, right, apart)
        ):
            return "detail"
    matcher = _WordMatcher(plain_left, plain_right)
    ops = [
        op
        for op in matcher.get_opcodes()
        if op[0] != "equal" and not _punctuation_apart(plain_left[op[1] : op[2]], plain_right[op[3] : op[4]])
    ]
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
                i1 = end[0][1]
                judged = _judge_end(
                    left[i1 : end[-1][2]], right[end[0][3] : end[-1][4]], start, left[i1 - 1 : i1]
                )
                if judged == "detail":
                    return judged
                found = judged or found
            else:
                continue  # a few words against a few: each edit is judged below
            ops = [op for op in ops if op not in end]
    for _, i1, i2, j1, j2 in ops:
        if (i1 == 0 and j1 == 0) or (i2 == len(left) and j2 == len(right)):  # at an end
            judged = _judge_end(
                left[i1:i2], right[j1:j2], i1 == 0 and j1 == 0, left[i1 - 1 : i1], right[j1 - 1 : j1]
            )
            if judged == "detail":
                return judged
            found = judged or found
        elif (i1 == i2 or j1 == j2) and max(i2 - i1, j2 - j1) > _DETAIL_WORDS:
            # A passage only one of them has inside (a sentence added): neither a changed
            # detail nor an edit; the ledger sends it with the other's sentences taken out.
            found = "surroundings"
        elif _changed(left[i1:i2], right[j1:j2]):
            return "detail"
        elif (i1 == i2 or j1 == j2) and _qualifies(left[i1:i2] or right[j1:j2]):
            return "detail"  # a few words put in or left out inside: "of around 500" / "of 500"
    return found


#: Words that may be put in or left out inside a text without changing what it says
#: ("within thirty days of the invoice" / "of invoice", "reduced 50%" / "reduced by 50%",
#: "is also free"): articles, pronouns, conjunctions, forms of "be", "have" and "do",
#: prepositions without a sense of extent, and intensifiers.
_FILLER = frozenset(
    """a an the this that these those which who whom whose it its and or but so as also too very
    really quite then there here is are was were be been being am has have had do does did of to in
    on at by for from with into onto upon""".split()
)


def _qualifies(words: Sequence[str]) -> bool:
    """Whether words one text has inside where the other has none change what it says: any
    word but _FILLER ("of around 500" / "of 500", "refunded in full" / "refunded", "thirty
    working days" / "thirty days", "a signed agreement" / "an agreement"). Put in or left out
    inside, unlike at an end, where a window was cut, such a word qualifies a statement both
    texts make (seed 003: "a threshold of 500 became 'around 500'")."""
    return any(word.strip(_PUNCT).lower() not in _FILLER for word in words if word.strip(_PUNCT))


class _WordMatcher(difflib.SequenceMatcher[str]):
    """difflib's SequenceMatcher of two lists of words (no junk, no autojunk), with the
    same matching blocks and opcodes, but each longest shared run found in C: every word
    stands for one character, so a run of words shared is a substring shared, which
    str.find looks for. (difflib finds it word by word in Python, through every place
    each word of one text stands in the other: two overlapping windows of 190 words took
    2M instructions there; at 1,000 bench candidates 14 such pairs took 28M, a tenth of
    find_duplicates.)"""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b, autojunk=False)
        # (a letter for each word of b; a word of a that b lacks is a letter b lacks: "\0")
        letters = dict(zip(dict.fromkeys(b), map(chr, itertools.count(1)), strict=False))
        self._spelled_a = "".join(map(letters.get, a, itertools.repeat("\0")))
        self._spelled_b = "".join(map(letters.__getitem__, b))

    def set_seq2(self, b: Sequence[str]) -> None:
        """As SequenceMatcher's, without the index of where each word of b stands that it
        builds for its own find_longest_match (a third of the time left here)."""
        self.b = b
        self.matching_blocks = self.opcodes = None
        self.fullbcount = None

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        """The longest run of a[alo:ahi] also in b[blo:bhi]; of several as long, the one
        that starts first in a, and then in b, as SequenceMatcher's (which, without junk,
        extends none of them)."""
        a, b = self._spelled_a, self._spelled_b
        ahi = len(a) if ahi is None else ahi
        bhi = len(b) if bhi is None else bhi
        besti, size = alo, 0
        # From each start in turn, a run one word longer than the longest so far: where
        # there is one, the longest from there is the new longest (so, of several as
        # long, the one found starts first).
        for i in range(alo, ahi):
            if i + size >= ahi:
                break
            if b.find(a[i : i + size + 1], blo, bhi) < 0:
                continue
            # How long (runs of every length up to it are found too): by steps that
            # double, then halving what is left between one found and one not (a run of
            # 168 words takes some 15 searches, not 168).
            found, beyond, step = size + 1, ahi - i + 1, 1
            while found + step < beyond and b.find(a[i : i + found + step], blo, bhi) >= 0:
                found, step = found + step, step * 2
            beyond = min(beyond, found + step)
            while beyond - found > 1:
                middle = (found + beyond) // 2
                if b.find(a[i : i + middle], blo, bhi) >= 0:
                    found = middle
                else:
                    beyond = middle
            besti, size = i, found
        if not size:
            return difflib.Match(alo, blo, 0)
        return difflib.Match(besti, b.find(a[besti : besti + size], blo, bhi), size)


#: Texts longer than this many words are not aligned word by word to tell how they differ
#: (SequenceMatcher grows faster than the square of their length on repetitive text:
#: two editions of a 40 KB FAQ took 50 s); see _difference_unaligned.
_ALIGN_MOST = 2000


def _difference_unaligned(left: list[str], right: list[str]) -> str | None:
    """:func:`difference` of two long texts, by the words one has more often than the other:
    a detail among them is a changed detail; else the texts differ only in small edits."""
    only = (Counter(left) - Counter(right)) + (Counter(right) - Counter(left))
    if any(map(_is_detail, only)) or _negated(list(only), list(only)):
        return "detail"
    return None


#: punctuation and spacing that Chinese and Japanese text may change without changing what
#: it says ("，" for "， ", "。" for "！"; see _punctuation_apart)
_CJK_PUNCTUATION = re.compile(r"[\s\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65,;:!?]+")


def _punctuation_apart(left: list[str], right: list[str]) -> bool:
    """Whether words of Chinese or Japanese text differ only in their punctuation or spacing
    (any other change there is a changed detail, see _is_detail)."""
    joined_left, joined_right = "".join(left), "".join(right)
    if not (_UNSPACED.search(joined_left) or _UNSPACED.search(joined_right)):
        return False
    return _CJK_PUNCTUATION.sub("", joined_left) == _CJK_PUNCTUATION.sub("", joined_right)


def _judge_end(
    left: list[str],
    right: list[str],
    start: bool,
    before: Sequence[str] = (),
    before_right: Sequence[str] = (),
) -> str | None:
    """How two texts differ at one end (``start``: before what they share; else after it).

    A few words only one of them has there are no difference; more are other
    surroundings. A few words against a
    few are a changed detail with a detail on either side ("He won" / "Einstein
    won", "is unchanged." / "is $3.99."), a negation on one ("is refundable." /
    "is non-refundable.", "can" / "cannot": as inside a text, a negation changed
    is never a mere edit), or a word replaced (see _replaced); but where a
    sentence ends between them and what the texts share (``before``: the word
    before an end), they are pieces of other sentences a window cut ("... Walters.
    To" / "... Walters. In"), and a changed detail only with a detail on both sides.
    A few words against many are one too if a number or negation meets the shared
    words on both sides ("costs $2.99" / "costs $3.99 plus tax"; a capitalised word
    is too common where a window was cut to count there), or a word there is the
    other's negated. Many against many are other surroundings.
    """
    ends = _ENDS_SENTENCE.search
    if not left or not right:
        # Words only one has: a few are a window cut elsewhere; more are a passage of its
        # own (a sentence put in before the first long shared run), which dropped with it
        # as an edit never reached the prompt. (A window that merely runs further is a
        # shift, found before this.)
        if len(left or right) > _DETAIL_WORDS:
            return "surroundings"
        # ... but a few that go on a sentence the other ends there (``before`` and
        # ``before_right``: each text's word before them), with a detail or a qualifier
        # among them, change what it says: "on weekdays." / "on weekdays only."
        shorter, longer = (before, before_right) if not left else (before_right, before)
        goes_on = not start and shorter and longer and ends(shorter[-1]) and not ends(longer[-1])
        return "detail" if goes_on and any(map(_is_detail, left or right)) else None
    # (pieces of other sentences a window cut, apart from what the texts share)
    cut = ends(left[-1]) and ends(right[-1]) if start else bool(before) and ends(before[-1])
    if max(len(left), len(right)) <= _DETAIL_WORDS:
        if _negated(left, right) or any(map(_is_negation, left)) != any(map(_is_negation, right)):
            return "detail"  # "is refundable." / "is non-refundable.", "can renew." / "cannot renew."
        if cut:
            # pieces of other sentences (a capital there opens a sentence, names nothing)
            return "detail" if any(map(_is_detail, left)) and any(map(_is_detail, right)) else None
        # (a detail on one side is enough: "He won ..." / "Einstein won ...", "... is
        # unchanged." / "... is $3.99.")
        return "detail" if _changed(left, right) else None
    if min(len(left), len(right)) > _DETAIL_WORDS or cut:
        # (a few words against many, each the end of another sentence: "Fiori in 2009." /
        # "... in 1993–94.", a figure there is no changed detail of what they share)
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
#: (document id, start, end): where a text lies in its document
Place = tuple[str, int, int]


#: Short texts of fewer words than this are not indexed by their words left out (see
#: _one_off): "Yes." and "Approved." are different answers, not versions of one; "Shipping
#: is free." and "Shipping is paid." are.
_ONE_OFF_LEAST = 3


def _reworded_key(words: Sequence[str]) -> int:
    """A short text's plain words (see _plain) as a key that copies stopped, cased or
    contracted another way share: each contraction as the word it shortens, and without the
    words a contraction stands for (see _CONTRACTED). Texts that meet so are compared as
    ever ("He is a doctor." / "He has a doctor." differ in a word replaced)."""
    out = []
    for word in words:
        shortened = _shortens(word)
        if shortened is not None:
            word = shortened
        elif word in _CONTRACTED:
            continue
        if word:
            out.append(word)
    return hash(tuple(out))


def _one_off(words: Sequence[str]) -> list[int]:
    """A short text's words, each left out in turn, as hashes: two texts of as many words that
    differ in one word share the key of that word left out."""
    if len(words) < _ONE_OFF_LEAST:
        return []
    # (the words before and after each, hashed as chains in one pass each way: the key of
    # each word left out costs as much as a word, not as the whole text)
    before = list(itertools.accumulate(words, lambda chain, word: hash((chain, word)), initial=0))
    after = list(itertools.accumulate(reversed(words), lambda chain, word: hash((word, chain)), initial=0))
    n = len(words)
    return [hash((k, before[k], after[n - 1 - k])) for k in range(n)]


def _one_word_apart(a: str, b: str, at: int) -> str | None:
    """:func:`difference` of two texts of as many words that differ in word ``at`` alone (met
    through _one_off), judged on that word as the alignment would judge it; "?" when their
    words as written do not line up so (to be aligned after all)."""
    left, right = _words(a), _words(b)
    if len(left) != len(right) or not 0 <= at < len(left):
        return "?"
    word, other = left[at : at + 1], right[at : at + 1]
    if word[0].strip(_PUNCT).lower() == other[0].strip(_PUNCT).lower():
        # (the same word stopped or cased otherwise, "month." / "month!": the texts share every
        # plain word, so they met under each of them, and the first tells nothing)
        return "?"
    if at in (0, len(left) - 1):  # at an end: as _judge_end judges one there
        return _judge_end(word, other, at == 0, left[at - 1 : at])
    return "detail" if _changed(word, other) else None


def _details_apart(a: str, b: str, plain_a: list[str], plain_b: list[str]) -> str:
    """:func:`difference` of two short texts whose words are the same where their numbers,
    names and negations are masked (see _masked_words): versions of one sentence with other
    details filled in ("Item 4 costs $4.99 and ships in 4 days. Contact desk 4." / "Item 5
    costs $5.99 ..."). Of as many words, they differ one word for one where a detail stands:
    a detail changed anywhere, however many and wherever they stand, is a changed detail,
    which the alignment finds too (it took most of the time of a catalogue of such texts,
    each compared with its best-ranked versions: see _CROWD_PARTNERS). "?" when that is
    not so (a negation left out changes the count of words; "30" / "thirty" changes
    nothing): to be aligned after all."""
    if len(plain_a) != len(plain_b):
        return "?"
    left, right = _words(a), _words(b)  # (one for each plain word)
    return "detail" if _swaps_a_detail(left, right, _unequal_at(plain_a, plain_b)) else "?"


def _unequal_at(plain_a: Sequence[str], plain_b: Sequence[str]) -> Iterator[int]:
    """Where two lists of as many words differ, one for one (found in C)."""
    return itertools.compress(itertools.count(), map(operator.ne, plain_a, plain_b))


def _swaps_a_detail(left: Sequence[str], right: Sequence[str], at: Iterable[int]) -> bool:
    """Whether a word swapped for another at any of the places ``at`` changes what the texts
    say (see _changed)."""
    return any(_changed(left[k : k + 1], right[k : k + 1]) for k in at)


def _all_shingles(words: Sequence[str]) -> frozenset[int]:
    """The marks of every 3-shingle of a short text (a text of fewer words is one shingle)."""
    if len(words) < 3:
        return frozenset((zlib.crc32(_utf8(" ".join(words))),))
    shingles = map(" ".join, zip(words, words[1:], words[2:], strict=False))
    return frozenset(map(zlib.crc32, map(_utf8, shingles)))


def _sketch(marks: Iterable[int]) -> list[int]:
    """The _SKETCH smallest marks."""
    return sorted(marks)[:_SKETCH]


#: Sentences stated otherwise are looked for among sentences of this many words or more:
#: shorter ones with a number ("2018 election.", "- Champions: 1966-67.") are headings and
#: list items, each naming another thing, not one claim with another value.
_VERSION_WORDS = 6
_DIGITS = b"0123456789"
#: the negations a sentence's version key leaves out ("not" and "never" with a space before
#: them too, and the space after "n't" kept: "is not included", "isn't included" and "is
#: included" have one key)
_VERSION_NEGATION = re.compile(rb"n(?:ot|ever|'t) ")


def version_groups(normals: Iterable[str]) -> list[list[str]]:
    """The distinct normalised sentences ``normals`` in groups of two or more of one version
    key: the sentence without its digits and negations. Two sentences of one key may be one
    statement with another number, or negated ("the $1.8 billion stadium" / "the $1.9 billion
    stadium", "is included" / "is not included"; see stated_otherwise). Each group is in
    the order given."""
    # All at once, joined (a normalised sentence holds no line break): deleting the digits
    # is then one call in C over one text, and the negations are found by one search of it.
    # (Sentence by sentence, the same work cost 3.5 us each, 9 ms at 1,000 bench candidates;
    # over the joined text, bytes.replace of each negation cost 1 ms, a regex sub 7 ms.)
    normals = list(normals)
    masked = "\n".join(normals).encode("utf-8", "surrogatepass").translate(None, _DIGITS)
    pieces, at = [], 0
    for found in _VERSION_NEGATION.finditer(masked):
        start, end = found.span()
        if found[0] == b"n't " or masked[start - 1 : start] == b" ":  # (a word, not "cannot")
            pieces.append(masked[at:start])
            at = end - 1 if found[0] == b"n't " else end  # (the space after "n't" stays)
    keys = b"".join([*pieces, masked[at:]]).split(b"\n") if pieces else masked.split(b"\n")
    counts = Counter(keys)
    groups: dict[bytes, list[str]] = {}
    shared = map(operator.lt, itertools.repeat(1), map(counts.__getitem__, keys))
    for k in itertools.compress(itertools.count(), shared):
        groups.setdefault(keys[k], []).append(normals[k])
    return list(groups.values())


def stated_otherwise(a: str, b: str) -> bool:
    """Whether two normalised sentences of one version key (see version_groups) are one statement
    with one number changed ("over 132 million followers" / "over 135 million"), or with a
    negation put in ("is included" / "is not included", "isn't included"): word for word the
    same but there. (Sentences that differ in two places are most often two statements of
    one pattern, "Revenue in Q1 was $5M." / "Revenue in Q2 was $6M.", not one told twice.)"""
    left, right = a.split(), b.split()
    if len(left) == len(right):
        changed = [k for k, (x, y) in enumerate(zip(left, right, strict=True)) if x != y]
        return len(changed) == 1
    if abs(len(left) - len(right)) != 1:
        return False
    longer, shorter = (left, right) if len(left) > len(right) else (right, left)
    k = next((k for k, (x, y) in enumerate(zip(longer, shorter, strict=False)) if x != y), len(shorter))
    return longer[k] in ("not", "never") and longer[:k] + longer[k + 1 :] == shorter


def _sentences_stated_otherwise(
    splits: Sequence[Split],
    cache: SentenceCache,
    duplicate_of: Mapping[int, tuple[int, float]],
    conflicts: dict[int, list[int]],
    documents: Sequence[str | None] | None,
) -> None:
    """Mark as conflicting two candidates that state one sentence otherwise (see stated_otherwise)
    where they also share a sentence of _VERSION_WORDS words or more: two editions of one
    passage, windowed apart, that differ too much as wholes to meet as near-duplicates
    ("... the $1.8 billion stadium ..." / "... the $1.9 billion stadium ..."). Both stay
    (their sentences differ), and the manifest now tells they disagree.

    Without a sentence in common, two texts with such sentences are most often about two
    things of one pattern (two squadrons, "VP-29 was a patrol squadron ..." / "VP-25 ...");
    and two windows of one document, two places in it. Neither is marked.
    """
    # Each distinct sentence once (from a set: each group is put in rank order below)
    words = cache.word_count
    groups = ([n for n in group if words(n) >= _VERSION_WORDS] for group in version_groups(cache.repeats))
    alike = [group for group in groups if len(group) > 1]
    if not alike:
        return
    stated = {normal for group in alike for normal in group}
    holders: dict[str, list[int]] = {}  # each such sentence: the candidates that hold it, best first
    for i, split in enumerate(splits):
        if i not in duplicate_of:
            for normal in stated.intersection(split.keys):
                holders.setdefault(normal, []).append(i)
    for group in alike:
        held = sorted((holders[n][0], n) for n in group if n in holders)
        # (a template filled in by the thousand: each version meets its best-ranked others)
        for (_, a), (_, b) in itertools.combinations(held[: _CROWD_PARTNERS + 1], 2):
            if not stated_otherwise(a, b):
                continue
            for i in holders[a][:_CROWD_PARTNERS]:
                for j in holders[b][:_CROWD_PARTNERS]:
                    if _one_account(i, j, a, b, splits, documents) or not _share_a_sentence(
                        splits[i], splits[j], words
                    ):
                        continue
                    conflicts.setdefault(i, []).append(j)
                    conflicts.setdefault(j, []).append(i)


def _one_account(
    i: int, j: int, a: str, b: str, splits: Sequence[Split], documents: Sequence[str | None] | None
) -> bool:
    """Whether candidates ``i`` (holding sentence ``a``) and ``j`` (holding ``b``) are one
    account: one candidate, one that states both sentences, or one document's windows."""
    if i == j or b in splits[i].keys or a in splits[j].keys:
        return True
    return documents is not None and documents[i] is not None and documents[i] == documents[j]


def _share_a_sentence(left: Split, right: Split, words: Callable[[str], int]) -> bool:
    """Whether two texts share a sentence of _VERSION_WORDS words or more."""
    return any(words(normal) >= _VERSION_WORDS for normal in set(left.keys).intersection(right.keys))


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
#: How far below the near-duplicate threshold two long texts are still told apart (see
#: _near_duplicates): their similarity is measured on a sample of their shingles.
_SAMPLED_MARGIN = 0.1


def find_duplicates(
    texts: Sequence[str],
    *,
    exact: bool = True,
    near: float | None = 0.8,
    sentences: SentenceCache | None = None,
    places: Sequence[Place | None] | None = None,
    documents: Sequence[str | None] | None = None,
) -> DedupeReport:
    """Find exact copies, near-duplicates and conflicts among ``texts`` (best-ranked first).

    ``places`` gives each text's (document id, start, end) where known: two windows of
    one document that overlap or touch, and agree where they overlap, are no
    near-duplicates of each other; neighbour merging sends them once. ``documents``
    gives each text's document id where known: a document's own sentences that differ
    in a number are not read as one stating the other otherwise (see
    _sentences_stated_otherwise).
    """
    duplicate_of: dict[int, tuple[int, float]] = {}
    conflicts: dict[int, list[int]] = {}
    cache = sentences if sentences is not None else SentenceCache()
    splits = [cache.split(text) for text in texts]
    if exact:
        first: dict[str, int] = {}
        for i, key in enumerate(split.key for split in splits):  # each text normalised
            j = first.get(key)
            if j is None:
                first[key] = i
            elif _code_differs(texts[j], texts[i]) or _indented_otherwise(texts[j], texts[i]):
                # (normalised alike, the code or the lines' nesting differs)
                conflicts.setdefault(i, []).append(j)
                conflicts.setdefault(j, []).append(i)
            else:
                duplicate_of[i] = (j, 1.0)
    if near is not None:
        _near_duplicates(texts, splits, cache, near, duplicate_of, conflicts, places)
        _sentences_stated_otherwise(splits, cache, duplicate_of, conflicts, documents)
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
    # (mark, details key) -> short texts: see _CROWD_PARTNERS
    alike: dict[tuple[int, int], list[int]] = {}
    plain: dict[str, list[str]] = {}  # words of texts compared word by word (see _plain_words)
    shingle_sets: dict[int, frozenset[int]] = {}
    short: dict[int, bool] = {}
    masked: dict[int, list[str]] = {}  # short texts' words with their details masked (see _masked_words)
    need: dict[int, int] = {}  # sketch entries a text must share with another to be checked
    # short texts by each of their words left out (see _one_off): versions of one sentence
    # with one plain word changed ("son" / "daughter") share too few shingles to meet
    one_off: dict[int, list[int]] = {}
    # short texts by their words as _reworded_key reads them: copies stopped, cased or
    # contracted another way ("... delivery. Refunds" / "... delivery; refunds", "it is" /
    # "it's") differ in a word or two of a dozen, too many shingles for them to meet
    reworded: dict[int, list[int]] = {}
    # sketch entries each earlier text shares with this one: one Counter, emptied for each
    # text (a new one for each, its __init__ run in Python, cost a tenth of the counting:
    # 3.9M instructions at 1,000 bench candidates)
    met: Counter[int] = Counter()
    fewest = _SKETCH  # the fewest sketch entries any text so far needs to share (none needs more)
    for i, text in enumerate(texts):
        if i in duplicate_of:
            continue
        short[i] = cache.words(splits[i]) < SHORT_TEXT
        details = None
        versions: dict[int, int] = {}  # short texts that differ from this one in one word: where
        keys: list[int] = []
        same_words: tuple[int, ...] = ()  # short texts of the same words (see _reworded_key)
        loose: int | None = None
        if not short[i]:
            shingles = cache.marks(splits[i])
        else:
            # Short texts: numbers masked and negations left out, so texts that
            # differ only there meet and are then told apart as conflicts. In a
            # long text one number or "not" barely moves the similarity.
            masked[i] = _masked_words(text)
            shingles = _all_shingles(masked[i])
            details = _details_key(text, masked[i])
            if text not in plain:  # (its plain words, kept for a comparison word by word)
                plain[text] = cache.plain_words(splits[i])
            keys = _one_off(plain[text])
            for at, key in enumerate(keys):
                alike_but_one = one_off.setdefault(key, [])
                if len(versions) < _CROWD_PARTNERS:  # (a sentence of several slots filled in
                    # by the thousand meets as many texts as one of one slot)
                    for j in alike_but_one[: _CROWD_PARTNERS - len(versions)]:
                        versions.setdefault(j, at)
                alike_but_one.append(i)
            loose = _reworded_key(plain[text])
            written_otherwise = reworded.setdefault(loose, [])
            same_words = tuple(written_otherwise[:_CROWD_PARTNERS])
            written_otherwise.append(i)
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
                elif details is not None:  # a crowded shingle of a short text: _CROWD_PARTNERS
                    same = alike.get((sh, details), ())
                    met_here = set(posting[:_CROWD_PARTNERS])
                    if len(same) <= _POSTING_CAP:
                        met_here.update(same)
                    hits.extend(met_here)
                posting.append(i)
            if details is not None:
                alike.setdefault((sh, details), []).append(i)
        met.clear()
        met.update(hits)  # counted in C, once per text
        size = len(shingles)
        least = need[i]
        fewest = min(fewest, least)  # (before any later text meets this one)
        often = _met_enough(met, least, need, fewest)
        # (met otherwise than by their shingles: short texts only; a long text builds no set)
        met_apart = {*versions, *same_words} if versions or same_words else _NONE_MET
        for j in sorted(often) if not met_apart else sorted({*often, *met_apart}):
            other = shingle_sets[j]
            # Jaccard >= t needs the smaller set to be at least t x the larger.
            if (
                min(size, len(other)) < (near - CONFLICT_MARGIN) * max(size, len(other))
                and j not in met_apart
            ):
                continue
            inter = len(shingles & other)
            similarity = inter / (size + len(other) - inter)
            # Below the threshold, short texts (compared with numbers and negations masked)
            # can be the same statement with other details; long texts only a little below
            # it, where sampling their shingles put them (one changed number in a text of 80
            # words measured 0.75 at times): further apart, they are merely related
            # (overlapping windows, say), not conflicting.
            margin = CONFLICT_MARGIN if short[i] and short[j] else _SAMPLED_MARGIN
            if similarity < near - margin and j not in met_apart:
                continue
            if places is not None and _neighbours(places[i], places[j], text, texts[j]):
                continue  # one document's windows: neighbour merging sends them once
            for k in (i, j):  # each text's plain words, from its sentences' (cut once each)
                if texts[k] not in plain:
                    plain[texts[k]] = cache.plain_words(splits[k])
            mine, theirs = plain[text], plain[texts[j]]
            if similarity < near and not (short[i] and short[j]) and _apart(mine, theirs):
                continue  # (below the threshold, only a few words changed can make a conflict)
            # (met as versions, the word they differ in is known: judged alone, unaligned)
            kind = _one_word_apart(text, texts[j], versions[j]) if j in versions else "?"
            if kind == "?" and short[i] and short[j] and masked[i] == masked[j]:
                kind = _details_apart(text, texts[j], mine, theirs)
            if kind == "?":
                offset = _offset(theirs, mine)
                if offset is not None and _goes_on(text, texts[j], offset):
                    kind = "detail"
                elif _adds_words(offset, mine, theirs):
                    continue  # a shifted window with words of its own: the ledger sends the new part
                else:  # a shifted window inside the other differs only at its ends
                    kind = None if offset is not None else _difference_unshifted(text, texts[j], plain)
            # A shared passage in other surroundings is no duplicate: the sentence ledger
            # sends the rest. Where what the two share is not whole sentences of its own
            # (one long sentence with another ending, a table, text without full stops),
            # the ledger sends the second nearly whole, and that is the price of what it
            # says at its end ("... at a cost of 4 million euros." / "... unless the
            # manufacturers object."). (Judged an edit, the second was dropped, and its
            # ending never reached the prompt.)
            if kind == "surroundings":
                continue
            if kind is None and (_code_differs(text, texts[j]) or _indented_otherwise(text, texts[j])):
                kind = "detail"  # (alike but for their code, where every character counts, or nesting)
            if kind is None:
                if similarity >= near or j in same_words:
                    # (1.0 says "exact copy": a text that differs, where only its sampled
                    # shingles agree, is at most 0.999; so is one of the same words written
                    # otherwise, whose shingles a comma or a contraction moved further apart)
                    shown = (
                        round(similarity, 3)
                        if splits[i].key == splits[j].key
                        else 0.999
                        if j in same_words
                        else min(round(similarity, 3), 0.999)
                    )
                    duplicate_of[i] = (j, shown)
                    break
                continue
            conflicts.setdefault(i, []).append(j)
            conflicts.setdefault(j, []).append(i)
        if i in duplicate_of:
            for key in keys:
                one_off[key].pop()
            if loose is not None:
                reworded[loose].pop()
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
                if details is not None:
                    alike[sh, details].pop()


_NONE_MET: frozenset[int] = frozenset()


def _code_differs(a: str, b: str) -> bool:
    """Whether texts ``a`` and ``b`` both hold code and hold other code (see code_of): case
    and spacing count there ("ls -a" / "ls -A"), and the words of a command line are no
    prose spelled two ways ("rm -r" / "rm -rf"). Texts alike but for it conflict."""
    mine = code_of(a)
    if not mine:
        return False
    theirs = code_of(b)
    return bool(theirs) and mine != theirs


def _indented_otherwise(a: str, b: str) -> bool:
    """Whether ``a`` and ``b``, which normalise alike, hold the same lines nested otherwise
    (see nested_otherwise): normalising folds a line's indentation, which is structure."""
    return "\n" in a and "\n" in b and a != b and nested_otherwise(nesting_of(a), nesting_of(b))


def _met_enough(met: Counter[int], least: int, need: dict[int, int], fewest: int) -> list[int]:
    """The texts ``met`` counts as sharing what this text needs (``least`` sketch entries) or
    what they need themselves (``need``), of which none needs fewer than ``fewest``.

    A text met fewer times than any text needs is told by one comparison, its need not
    looked up: most texts met are met a few times (at 1,000 bench candidates a text meets
    ~18, one or two checked; two comparisons and a look-up for each cost 4M instructions
    more, 1.5% of the near-duplicate pass)."""
    return [j for j, shared in met.items() if shared >= fewest and (shared >= least or shared >= need[j])]


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


# --- boilerplate -----------------------------------------------------------------


def _units(text: str) -> list[tuple[int, int]]:
    """Lines, each cut into sentences, and each code block whole: the pieces boilerplate is
    made of. (A line of code is none: stripped, it broke the block it was taken from.)"""
    return split_around_code(text, _code_blocks(text), _line_sentences)


def _line_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of each line of ``text``."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        spans += [(pos + start, pos + end) for start, end in split_sentences(line)]
        pos += len(line)
    return spans


def strip_boilerplate(
    texts: Sequence[str],
    documents: Sequence[str],
    min_documents: int = 3,
    ignore: frozenset[int] = frozenset(),
    keep: Callable[[str], bool] | None = None,
) -> list[tuple[str, int]]:
    """Remove header and footer lines repeated across ``min_documents`` or more documents.

    Headers, footers and cookie notices recur across *different* documents at
    the edges of chunks. So a piece (a line, or a sentence of one) counts as
    boilerplate when it opens or closes (within two pieces) chunks of at least
    ``min_documents`` distinct documents (a doc_id, or the chunk's own id):
    sentences shared by overlapping windows of one document do not count, and
    neither do chunks in ``ignore`` (duplicates, whose repeats are not
    boilerplate). Returns, per text, the text left and how many pieces were
    stripped. Pieces shorter than three words ("Contact us.", "Yes.") are boilerplate
    only beside one that is stripped, at the same edge ("Was this article helpful?
    Contact us."); no piece is for which ``keep`` says so (one that holds what the
    question asks about).
    """
    units = [_units(t) for t in texts]
    at_edges: dict[str, set[str]] = {}
    short_at_edges: dict[str, set[str]] = {}  # (pieces under three words)
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
            elif short := normalise(text[s:e]):
                short_at_edges.setdefault(short, set()).add(doc)

    def common(edges: dict[str, set[str]]) -> set[str]:
        """The pieces at the edges of chunks of ``min_documents`` documents, but those to keep."""
        return {k for k, docs in edges.items() if len(docs) >= min_documents and not (keep and keep(k))}

    boiler, short_boiler = common(at_edges), common(short_at_edges)
    out = []
    for text, spans in zip(texts, units, strict=True):
        if not boiler:
            out.append((text, 0))
            continue
        normal = [normalise(text[s:e]) for s, e in spans]
        gone = [piece in boiler for piece in normal]
        if short_boiler and any(gone):
            _strip_short_beside(normal, gone, short_boiler)
        kept = [span for span, off in zip(spans, gone, strict=True) if not off]
        stripped = len(spans) - len(kept)
        out.append((text if not stripped else join_kept(text, kept), stripped))
    return out


def _strip_short_beside(normal: Sequence[str], gone: list[bool], short_boiler: set[str]) -> None:
    """Mark as ``gone`` each piece of ``short_boiler`` among a text's first or last two pieces
    (``normal``: its pieces, normalised) that stands beside one gone there (twice over: a
    short piece beside another that goes with its neighbour)."""
    last = len(normal) - 1
    edges = {n for n in (0, 1, last - 1, last) if 0 <= n <= last}
    for _ in range(2):
        for n in sorted(edges):
            beside = (n - 1 in edges and gone[n - 1]) or (n + 1 in edges and gone[n + 1])
            if not gone[n] and beside and normal[n] in short_boiler:
                gone[n] = True

"""Sentences: the unit dedupe, counting and compression share.

:func:`split_sentences` cuts a text at the ends of its sentences: rule-based, in
one regex scan, keeping "$2.99", "Dr. Smith" and "U.S." whole, with blank lines
and Markdown structure (headings, list items, table rows) ending sentences too.

:class:`SentenceCache` splits each text once and normalises each distinct sentence
once, for every stage that reads texts sentence by sentence: exact copies compare
the normalised text, near-duplicates shingle its sentences (:func:`sentence_marks`),
the ledger compares normalised sentences (those long enough to count as repeats,
and which of them refer back or answer the one before), and token counts add up a
text's sentence pieces. :func:`join_kept` puts the sentences a text keeps together
again.
"""

from __future__ import annotations

import itertools
import operator
import re
import string
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from ._errors import InputError

__all__ = [
    "MIN_SENTENCE_WORDS",
    "SentenceCache",
    "Split",
    "join_kept",
    "normalise",
    "sentence_marks",
    "spaced_out",
    "split_sentences",
]

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


_PUNCT = ".,;:!?()[]{}\"'“”‘’"


def _plain(normal: str) -> list[str]:
    """The words of a normalised text without their surrounding punctuation (every step in C)."""
    return list(map(str.strip, normal.split(" "), itertools.repeat(_PUNCT))) if normal else []


#: Chinese characters, Hiragana and Katakana: the scripts that run their words together
_UNSPACED_CLASS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNSPACED = re.compile(f"[{_UNSPACED_CLASS}]")


def _unspaced_characters(text: str) -> int:
    """How many Chinese and Japanese characters ``text`` holds."""
    if not _UNSPACED.search(text):
        return 0
    return len(_UNSPACED.findall(text))


def spaced_out(text: str) -> str:
    """``text`` with a space on either side of each Chinese or Japanese character. Those
    scripts run their words together, so where short texts are shingled to find the ones
    that meet, each character counts as a word: a Chinese text was one word, and any two
    that held a number (masked whole) met. (Texts that meet are told apart word by word,
    where a Chinese text stays one word: any change in it is a changed detail, see
    _dedupe._is_detail.)"""
    if text.isascii() or not _UNSPACED.search(text):
        return text
    return _UNSPACED.sub(r" \g<0> ", text)


#: The shingles of a sentence a long text is compared by (see _dedupe.SHORT_TEXT): those
#: whose first word starts with a digit from 0 to 4 or a letter other than the common
#: initials a e g h i l n o r s t u w, found in the sentence's bytes.
# (possessive quantifiers: the regex never backtracks into a word; nor, possessive too, into
# the up to two words after the first, which it never gives back: nothing follows them in
# the look-ahead. A greedy repeat of them kept a place to go back to for each, a tenth of
# the time of the regex at 1,000 bench candidates)
_SAMPLED = re.compile(rb" (?=([0-4bcdfjkmpqvxyz\xc2-\xf4][^ ]*+(?: [^ ]++){0,2}+))")
_Parts = TypeVar("_Parts", bound=Sequence[Any])  # a sentence's marks or words


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate is still a character to compare


def sentence_marks(normal: str) -> tuple[int, ...]:
    """The marks of one normalised sentence's sampled shingles (see _SAMPLED). (Chinese and
    Japanese characters are words here, as for short texts: without spaces, a sentence of
    them was one word, one mark, and two versions of a long text with one name changed
    shared too few marks to be compared.)"""
    if normal.isascii():
        data = normal.encode()  # (no surrogate to pass, and no codec to look up by its name)
    else:
        if (spaced := spaced_out(normal)) is not normal:
            normal = " ".join(spaced.split())
        data = _utf8(normal)
    return tuple(map(zlib.crc32, _SAMPLED.findall(b" " + data)))


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
_NUMBER_ABBREVIATIONS = frozenset(
    "no nos vol vols fig figs eq eqs ref refs ed eds pp p op art sec ch pt para thm".split()
)
# A sentence ends at a run of ., ! or ? (with any closing quotes or brackets)
# followed by whitespace and something that can start a sentence; or at a blank
# line. The pieces of that rule, put together in _BOUNDARY; Python looks only at
# the few periods that may follow an abbreviation, the regex decides the rest:
#: the rest of a run of ends, and the closing quotes or brackets after it
_RUN = r"""[.!?…]*["'”’)\]]*"""
#: what may open a sentence before its first word
_OPENERS = "\"'“‘(["
#: what may start the next sentence (after the whitespace): a digit, a currency sign, a
#: capital of the Latin, Greek or Cyrillic alphabets ("Über", "Ça", "Łódź", "Это"; Latin
#: Extended-A is taken whole, its capitals and small letters alternate), or a Chinese or
#: Japanese character (their scripts have no capitals: "... for you.\n仅限会员。")
_STARTS = r"""(?=["'“‘(\[]?[A-Z0-9$€£#À-ÖØ-ÞĀ-ſΆΈ-ΏΑ-ΩЀ-Я\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff「『])"""
#: a blank line (a line of spaces or tabs, and a Windows line end), and the whitespace after it
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n\s*")
#: a line break, with the whitespace around it
_LINE_BREAK = re.compile(r"[ \t\r]*\n\s*")
#: Markdown that opens a line of its own, as regex pieces: a heading ("## Pricing"), a list
#: item ("- Free"), a numbered one ("1. Open", "2) Press"; its number a group) and a table
#: row ("| Plus | $2.99 |"). The splitter, the ledger and the cache all read them from here.
_HEADING_MARK = r"#{1,6}[ \t]"
_ITEM_MARK = r"[-*+•][ \t]"
_NUMBER_MARK = r"(\d{1,3})[.)][ \t]"
_ROW_MARK = r"\|"
#: Markdown that means something only where it opens a line (see _ledger._keep_line_opening):
#: a code fence, a quote, a heading, a list item or a table row; and the characters it opens with
OPENS_BLOCK = re.compile(f"`{{3}}|~{{3}}|>[ \\t]|{_HEADING_MARK}|{_ITEM_MARK}|{_NUMBER_MARK}|{_ROW_MARK}")
_BLOCK_STARTS = frozenset("`~>#-*+•|0123456789")
#: A line break before a heading, a list item or a table row ends the sentence before it, as
#: a blank line does. (Only these: hard-wrapped prose breaks its sentences at any word.)
_OPENS_LINE = re.compile(f"{_HEADING_MARK}|{_ITEM_MARK}|{_ROW_MARK}")
#: a numbered list item's number, which opens a line of its own where a list starts (at 1)
#: or goes on (after a line that opens with one): hard-wrapped prose may put any number at
#: a line's start ("The total was\n42. That is all.")
_NUMBERED = re.compile(f"[ \\t]*{_NUMBER_MARK}")
#: the lines that end at their line break: a heading and a table row
_ENDS_AT_BREAK = re.compile(f"[ \\t]*(?:{_HEADING_MARK}|{_ROW_MARK})")
#: a heading, and a list item or a table row, each a piece of what is left (see _ledger)
_HEADING = re.compile(_HEADING_MARK)
_ITEM_OR_ROW = re.compile(f"{_ITEM_MARK}|{_NUMBER_MARK}|{_ROW_MARK}")
#: a numbered list item's number, which the splitter reads as a sentence ending in a period
_LIST_NUMBER = re.compile(r"\d{1,3}\.")


def _period_ends(text: str, at: int) -> bool:
    """Whether the period at ``text[at]``, after a short or dotted word, ends a sentence.

    Looks back only as far as the period before it: a word holding that one is dotted,
    and otherwise the word starts after it, so a long run of text without spaces is
    read once, not once for each of its periods.
    """
    dot = text.rfind(".", 0, at)
    if dot != -1 and not _WHITESPACE.search(text, dot + 1, at):
        # A dotted word. One letter after its last period is an abbreviation ("U.S.", "e.g.",
        # "Ph.D.", "J.-P."), and so is a capitalised abbreviation ("Lt.Col.", "Rev.Dr.");
        # a digit after a digit, or more, is a number, a file or a domain ("$9.99.",
        # "Python 3.9.", "config.yaml.", "acme.com.", "Node.js."): the sentence ends with it
        # ("shop.ca." is no "ca.").
        last = text[dot + 1 : at]
        if last[-1:] in _CLOSING:
            return True  # the word closed before the period ("(3.9).", '"main.c".'): no abbreviation's
        if last.isdigit():
            return dot > 0 and text[dot - 1].isdigit()
        letters = last.strip(_NOT_LETTERS)
        if len(letters) <= 1:
            return False
        return not (letters[0].isupper() and letters.lower() in _ABBREVIATIONS | _NUMBER_ABBREVIATIONS)
    # The word before the period: what follows the last whitespace, or all of it from the
    # text's start (there is whitespace since the period before). Split from its end in C:
    # a regex for the word that ends there was tried at each position back to the period
    # before, some 30,000 instructions a call, a third of splitting a text that asks here.
    head = text[dot + 1 : at]
    word = "" if not head or head[-1].isspace() else head.rsplit(None, 1)[-1]
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
#: what may stand before the letters after a dotted word's last period ("J.-P.")
_NOT_LETTERS = "-'’"
#: what closes a word: a period after it is no abbreviation's
_CLOSING = frozenset(")]\"'”’")
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
    text: most periods after a short word. (The rule as written, which _boundary asks
    near the text's start; elsewhere _common_ends stands for it.)"""
    alternatives = [r"(?<=(?<!\S)[0-9]\.)"]
    for length in range(2, 7):
        known = _one_of(_ABBREVIATIONS | _NUMBER_ABBREVIATIONS, length)
        unknown = f"(?<!(?<!\\S){known}\\.)" if known else ""
        alternatives.append(f"(?<=(?<!\\S)[A-Za-z0-9]{{{length}}}\\.){unknown}")
    alternatives += [f"(?<=(?<!\\S)[^\\s.]{{{length}}}[)\"'”’\\]]\\.)" for length in range(7)]
    return "|".join(alternatives)


def _no_ends() -> str:
    """Lookbehinds that fail for periods _period_ends would call no end: after one ASCII
    letter ("J. Smith"), after one character that follows a period ("U.S."; but not a
    digit after a digit's period, "Python 3.9."), or after an abbreviation (not those
    that abbreviate only before a number), each from whitespace or the start of the text."""
    lookbehinds = [r"(?<!(?<!\S)[A-Za-z]\.)", r"(?<!(?<!\d)\.\S\.)", r"(?<!\.[^\s\d]\.)"]
    for length in range(2, 7):
        known = _one_of(_ABBREVIATIONS, length)
        if known:
            lookbehinds.append(f"(?<!(?<!\\S){known}\\.)")
    return "".join(lookbehinds)


#: the ASCII letters and digits, which an abbreviation's letters are told apart from
_ALNUM = string.digits + string.ascii_letters


def _none_of(words: Iterable[str], length: int) -> str:
    """A regex for ``length`` ASCII letters and digits that spell none of ``words`` (lower
    case; ASCII case folding, as _one_of), as a tree of character classes: the letters that
    start none of them, then each letter that starts some, followed by none of their rests.

    (The regex engine tests an alternative's first character class before it enters it, so
    a word is told from the abbreviations one letter at a time. "(?<!(?ai:apr|apt|...)\\.)"
    tried each abbreviation in turn: some 1,000 instructions for each period after a word of
    two to four letters.)"""
    if length == 0:
        return ""
    known = sorted({w for w in words if len(w) == length})
    if not known:
        return f"[A-Za-z0-9]{{{length}}}"
    firsts = sorted({w[0] for w in known})
    others = "".join(sorted(set(_ALNUM) - {*firsts, *map(str.upper, firsts)}))
    alternatives = [f"[{others}]" + _none_of((), length - 1)]
    for first in firsts:
        rests = [w[1:] for w in known if w[0] == first]
        if "" not in rests:  # (else the letter ends an abbreviation: no word may end with it)
            alternatives.append(f"[{first}{first.upper()}]" + _none_of(rests, length - 1))
    return f"(?:{'|'.join(alternatives)})"


def _common_ends() -> str:
    """_easy_ends after whitespace, as they are written for the most common periods, each
    decided in few steps: after two to six ASCII letters and digits that are no abbreviation
    (see _none_of), after one digit, and after a word closed by a bracket or a quote
    (looked for only after one). Not at the text's start: _boundary asks _easy_ends there.

    (Each of _easy_ends's lookbehinds looks for whitespace or the text's start in one of
    its own, which the regex engine enters for every period that gets that far.)"""
    abbreviations = _ABBREVIATIONS | _NUMBER_ABBREVIATIONS
    alternatives = [f"(?<=\\s{_none_of(abbreviations, length)}\\.)" for length in range(6, 1, -1)]
    alternatives.append(r"(?<=\s[0-9]\.)")
    closed = "|".join(f"(?<=\\s[^\\s.]{{{length}}}[)\"'”’\\]]\\.)" for length in range(7))
    alternatives.append(f"(?<=[)\"'”’\\]]\\.)(?:{closed})")
    return "|".join(alternatives)


#: fewer than nine characters before the end: where a lookbehind of _easy_ends may start at
#: the text's start (the longest, a closing bracket after six characters and the period,
#: spans eight), which _common_ends, reading whitespace before the word, does not cover
_NEAR_START = r"(?<![\s\S]{9})"
#: what may follow an end of a sentence: whitespace, or more of its run (see _RUN); a
#: period followed by anything else ("$2.99", "e.g.,") is passed over before its lookbehinds
_MAY_END = r"""(?=[\s.!?…"'”’)\]])"""


def _boundary(ends: str) -> re.Pattern[str]:
    """Every possible end of a sentence in one scan, for re.split, in text whose sentences
    can end in the characters ``ends`` (a regex for one). Group 1 is the end (with the run
    and closers after it); group 2 is empty when it is a period for _period_ends to decide
    (None when the regex decided: "!", "?" or "…", a period after seven characters with no
    whitespace, period or opening quote or bracket (no abbreviation is that long), or
    _easy_ends); group 3 is the whitespace after it.

    Only the first end of a run ends a sentence: each of the regex's own decisions wants a
    character other than an end before it, and the test is written out for the others.
    _easy_ends are looked for as _common_ends away from the text's start."""
    others = "(?<![.!?…].)(?<=[!?…])|" if ends != r"\." else ""
    return re.compile(
        "("
        + ends
        + _MAY_END
        + "(?:"
        + others
        + r"""(?<=[^\s.!?…"'“‘(\[]{7}\.)|"""
        + _common_ends()
        + f"|{_NEAR_START}(?:{_easy_ends()})"
        + r"|(?<![.!?…].)(?<=\.)"
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
    if blocks := _code_blocks(text):
        return split_around_code(text, blocks, _split_prose)
    return _split_prose(text)


#: a line that fences Markdown code: three or more backticks (and no backtick after them:
#: "```pip install x``` does it" is inline code) or tildes, and what follows on the line;
#: indented any amount (a block inside a list item nested twice is indented eight spaces)
_FENCE = re.compile(r"^[ \t]*(?:(`{3,})[^`\n]*|(~{3,})[^\n]*)$", re.MULTILINE)


def _fenced(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text`` (from ``start`` to ``end``) may hold a code fence (see _code_blocks)."""
    # (one character is found some twenty times faster than three: a text without a
    # backtick or a tilde, most, holds no fence; two scans of each text for "```" and
    # "~~~" cost 2 ms of the prefetch at 1,000 candidates)
    if text.find("`", start, end) == -1 and text.find("~", start, end) == -1:
        return False
    return text.find("```", start, end) != -1 or text.find("~~~", start, end) != -1


#: a span of inline code (one backtick each side, on one line)
_INLINE_CODE = re.compile(r"`[^`\n]+`")


def may_hold_code(text: str) -> bool:
    """Whether ``text`` may hold code (see code_of): a backtick or a tilde (found in C; most
    texts hold neither)."""
    return "`" in text or "~" in text


def code_of(text: str) -> tuple[str, ...]:
    """The code ``text`` holds, as written: its fenced blocks, then its spans of inline code
    outside them, each without its lines' trailing whitespace or carriage returns; () for
    text without a backtick or a tilde (most). Where normalising folds case and spaces,
    code keeps them: ``ls -a`` is not ``ls -A``, nor two lines indented otherwise the same
    program (they read as copies, and one version of the code was never sent)."""
    if not may_hold_code(text):
        return ()
    blocks = _code_blocks(text)
    parts = [text[start:end] for start, end in blocks]
    outside = [0, *itertools.chain.from_iterable(blocks), len(text)]
    for start, end in zip(outside[::2], outside[1::2], strict=True):
        parts += _INLINE_CODE.findall(text, start, end)
    return tuple("\n".join(line.rstrip() for line in part.splitlines()) for part in parts)


#: a line's indentation: the spaces and tabs it starts with
_INDENT = re.compile(r"[ \t]*")

#: a text's lines that hold something, each with its spacing and case folded, and each one's
#: level of indentation (see nesting_of)
Nesting = tuple[tuple[str, ...], tuple[int, ...]]


def nesting_of(text: str) -> Nesting:
    """``text``'s lines that hold something, folded as normalising folds them, and each one's
    level: 0 for the least indented, 1 for the next indentation, and so on (a tab counts
    as four spaces, as in Markdown). Levels, not widths: code indented with tabs, two
    spaces or four is the same code."""
    lines = [line for line in text.splitlines() if line and not line.isspace()]
    widths = [len(_INDENT.match(line).group().expandtabs(4)) for line in lines]  # type: ignore[union-attr]
    level = {width: n for n, width in enumerate(sorted(set(widths)))}
    return tuple(" ".join(line.split()).casefold() for line in lines), tuple(level[w] for w in widths)


def nested_otherwise(a: Nesting, b: Nesting) -> bool:
    """Whether two texts' :func:`nesting_of` hold the same lines at other levels.

    Normalising folds spacing, and with it a line's indentation, which is structure: the
    body of a Python ``if`` or not ("    return 2" / "        return 2"), an item of a
    nested list or of the list above it. Read as copies, one version never reached the
    prompt. Lines that break elsewhere (prose wrapped again) are not told apart here."""
    return a[0] == b[0] and a[1] != b[1]


def with_indent(text: str, start: int) -> int:
    """Where the line of ``text`` that ``start`` lies on starts, if only spaces and tabs
    stand before ``start`` on it (a sentence's first line, with its indentation); else
    ``start``."""
    line = text.rfind("\n", 0, start) + 1
    return line if not text[line:start].strip(" \t") else start


def _code_blocks(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s fenced code blocks lie, fence lines included: each from a fence to the
    next fence line of the same character, as long or longer and with nothing after it, or
    to the end of the text (a window cut inside the block)."""
    return _fenced_blocks(text)[0]


def _fenced_blocks(text: str) -> tuple[list[tuple[int, int]], bool]:
    """:func:`_code_blocks`, and whether the last of them is left open."""
    blocks: list[tuple[int, int]] = []
    closed = True
    if not _fenced(text):  # (most texts: no regex scan)
        return blocks, False
    fences = _FENCE.finditer(text)
    for opener in fences:  # (one iterator: the fences inside a block are passed over with it)
        run = opener.group(1) or opener.group(2)
        end, closed = len(text), False
        for closer in fences:
            fence = closer.group(1) or closer.group(2)
            if fence.startswith(run) and closer.group().strip() == fence:
                end, closed = closer.end(), True
                break
        line = opener.group()
        blocks.append((opener.start() + len(line) - len(line.lstrip()), end))
    return blocks, not closed


def split_around_code(
    text: str, blocks: list[tuple[int, int]], split: Callable[[str], list[tuple[int, int]]]
) -> list[tuple[int, int]]:
    """The spans ``split`` finds in ``text`` between its code ``blocks``, and each block one
    span, whole: a line of code is no sentence, and one taken out as "already sent" broke
    the code around it (an install step went missing from a shell block)."""
    out: list[tuple[int, int]] = []
    at = 0
    for start, end in blocks:
        out += [(at + a, at + b) for a, b in split(text[at:start])]
        stop = start + len(text[start:end].rstrip())
        if stop > start:
            out.append((start, stop))
        at = end
    out += [(at + a, at + b) for a, b in split(text[at:])]
    return out


def _split_prose(text: str) -> list[tuple[int, int]]:
    """:func:`split_sentences` of text without code blocks."""
    if not text or text.isspace():
        return []
    sentences, gaps = _split_at_ends(text)
    spans = _spans_of(sentences, gaps, _stripped(sentences))
    if _has_cjk_ends(text):
        spans = _cut_at_cjk_ends(text, spans)
    if "\n" not in text:  # most chunks
        return spans
    # A blank line also ends the sentence before it, wherever that ends (a heading, a
    # list item without a period), and so does a line break before or after a line of
    # Markdown structure (see _OPENS_LINE); one inside the whitespace after an end adds
    # nothing.
    out: list[tuple[int, int]] = []
    for start, end in spans:
        # (most sentences hold no line break, found in C: the regex tries each position of
        # the sentence for the spaces before one, the longest part of splitting such a text)
        breaks = _LINE_BREAK.finditer(text, start, end) if text.find("\n", start, end) != -1 else ()
        for brk in breaks:
            if not _ends_at_break(text, brk):
                continue
            stop = len(text[start : brk.start()].rstrip()) + start
            if stop > start:
                _add_span(out, text, start, stop)
            start = brk.end()
        _add_span(out, text, start, end)
    return out


def _has_cjk_ends(text: str) -> bool:
    """Whether ``text`` holds a Chinese or Japanese full stop, exclamation or question mark
    (looked for only in text that is not ASCII: a flag in CPython)."""
    return not text.isascii() and ("。" in text or "！" in text or "？" in text)


#: The end of a Chinese or Japanese sentence: 。, ！ or ？, which need no space after them,
#: and any space after it, before the next sentence's first character. (Not before a
#: closing quote or bracket: "彼は「行く。」と言った。" is one sentence quoting another.)
_CJK_END = re.compile(r"[。！？]++(\s*)(?=[^\s」』）】〕”’\"')\]])")  # (possessive: a run is one end)


def _cut_at_cjk_ends(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` cut again at the ends of Chinese and Japanese sentences (see _CJK_END)."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for found in _CJK_END.finditer(text, start, end):
            out.append((start, found.start(1)))
            start = found.end()
        out.append((start, end))
    return out


def _add_span(out: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    """Add the sentence at ``start:end`` to ``out``, joined to the one before when that is
    the number of a numbered list item on its line ("1." of "1. Open the app", after a line
    break), which the splitter took for a sentence ending in a period."""
    if out and _LIST_NUMBER.fullmatch(text, *out[-1]):
        if _at_line_start(text, out[-1][0]) or _opens_a_list(text, *out[-1]):
            if "\n" not in text[out[-1][1] : start]:
                start = out.pop()[0]
    out.append((start, end))


def _opens_a_list(text: str, start: int, end: int) -> bool:
    """Whether the number at ``text[start:end]`` ("1.") opens the text and a numbered list:
    the next line opens with the number after it. (A window that starts with a number is
    mostly one cut after the number that ended a sentence, "25. Sentence number 26"; one
    that goes on "1. Plug in the lamp.\n2. Press ..." is a list, whose first item lost
    its sentence to the ledger and left "1." alone on its line.)"""
    if text[:start].strip():
        return False
    brk = text.find("\n", end)
    if brk == -1:
        return False
    blank = _NEXT_LINE.match(text, brk)  # (past blank lines: a loose list)
    after = _NUMBERED.match(text, blank.end()) if blank else None
    return after is not None and int(after.group(1)) == int(text[start : end - 1]) + 1


#: the whitespace from a line break to the next line with text on it, which it starts
_NEXT_LINE = re.compile(r"\s*\n")


def _ends_at_break(text: str, brk: re.Match[str]) -> bool:
    """Whether the line break ``brk`` ends the sentence it falls in: it is a blank line, or
    the line after it opens with Markdown structure, or the line before it is a heading
    or a table row."""
    return brk.group().count("\n") > 1 or _line_parts(text, brk.start(), brk.end())


def _line_parts(text: str, before: int, after: int, line: int | None = None) -> bool:
    """Whether a line break between ``text[:before]`` and ``text[after:]`` ends the sentence
    it falls in by Markdown structure: the line after it opens with a heading, a list item
    or a table row, or the line before it (which starts at ``line``, if given) is a
    heading or a table row."""
    if _OPENS_LINE.match(text, after):
        return True
    if line is None:
        line = text.rfind("\n", 0, before) + 1
    if _ENDS_AT_BREAK.match(text, line):
        return True
    number = _NUMBERED.match(text, after)
    return number is not None and (number.group(1) == "1" or _NUMBERED.match(text, line) is not None)


def _at_line_start(text: str, at: int) -> bool:
    """Whether only spaces or tabs stand between ``text[at]`` and a line break before it. (Not
    the text's start: a window often starts inside a sentence, "25. Sentence number 26",
    after the number that ends one. Looked back over spaces and tabs only: a long line of
    "1. " was read back to its start for each.)"""
    while at and text[at - 1] in " \t":
        at -= 1
    return at > 0 and text[at - 1] == "\n"


#: the ASCII whitespace but the space and the line break (see _spaces_only)
_ASCII_SPACES = ("\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def _spaces_only(text: str) -> bool:
    """Whether ``text``, which holds no line break, holds no ASCII whitespace but spaces
    (each looked for in C: most texts hold none)."""
    return not any(map(text.__contains__, _ASCII_SPACES))


class Split:
    """One text cut into sentences: where they are, each normalised, and those that count
    as repeats."""

    __slots__ = ("_gaps", "_lead", "_pieces", "_spans", "fenced", "kept", "keys", "normal", "sentences")

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
        fenced: bool | None = None,
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
        #: whether the text may hold a code fence (None: not looked yet; see
        #: SentenceCache._fenced_text): a merged text's follows from the text it grew from
        self.fenced = fenced

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
#: a removed sentence and a kept one after it, in SentenceCache.keep's marks as bytes: where
#: a run of kept sentences after the first starts
_RUN_START = b"\x00\x01"


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
        "_openers",
        "_answers",
        "_questions",
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
        self._openers: set[str] = set()  # see opens_block
        self._answers: set[str] = set()  # see short_answers
        self._questions: set[str] = set()  # see questions
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
            if "\n" in text or not text or text.isspace() or _has_cjk_ends(text) or _fenced(text):
                spans = split_sentences(text)
                sentences = [text[s:e] for s, e in spans]
            else:  # the common case: the sentences come cut, without a slice each
                sentences, gaps = _split_at_ends(text)
                # (most texts hold one space between each two sentences: counted, that is
                # told without the set of the gaps' first characters, which cost nearly as
                # much as the pieces themselves)
                if gaps.count(" ") == len(gaps) or set(map(operator.itemgetter(0), gaps)) <= _PIECE_CUTS:
                    # each piece is a sentence with the whitespace before it (see pieces)
                    self._pieces[text] = (sentences[0], *map(operator.add, gaps, sentences[1:]))
                lead = _stripped(sentences)
            normal = self._normal
            found = list(map(normal.get, sentences))
            if None in found:
                # (cut by _split_at_ends, the sentences hold no whitespace at either end, and
                # none but spaces where the text holds no other: see _normalise)
                spaced = gaps is not None and _spaces_only(text)
                found = [
                    k if k is not None else self._normalise(sentence, spaced)
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
        longer text, and alone the sentences around a removed one may read as one. So
        is a text with a code fence put in front of one (see _code_blocks).
        """
        done = self._splits.get(text)
        if done is not None:
            return done
        split = self._splits.get(known)
        if split is None or split.kept:
            return self.split(text)
        if text.startswith(known):
            return self._split_after(text, known, split)
        if text.endswith(known):
            return self._split_before(text, known, split)
        return self.split(text)

    def _split_after(self, text: str, prefix: str, known: Split) -> Split:
        """``text``, which starts with ``prefix`` (split as ``known``), split from where the
        prefix's last counting piece starts (see :meth:`pieces`: the end of a sentence,
        and the space or tab after it, or the start of a line). That is a place where both
        texts end a sentence the same way: an end is decided by what lies before it, back
        to whitespace or the period before it, and by the whitespace and character after
        it, so no end after the cut looks past the space there, and no end before it looks
        past the prefix's end. (At a line's start, the rest is split with the line break
        before it: a list item's number opening the line reads as one, see _add_span.)"""
        pieces = self._pieces_of(prefix)
        cut = len(prefix) - len(pieces[-1])
        if 2 * cut < len(text) or _near_structure(text, cut):
            # little of it to keep (a window joining a source in front), or Markdown at the cut
            return self.split(text)
        before = len(known.spans)  # the prefix's sentences before the cut
        while before and known.spans[before - 1][0] >= cut:
            before -= 1
        at = cut - (text[cut - 1] == "\n")  # (at a line's start: from the line break before it)
        # (whether it holds a fence follows from the prefix's and what it adds: a scan of the
        # whole merged text at each merge cost touching windows of prose 40% more time)
        fenced = self._fenced_text(prefix, known) or _fenced(text, max(0, len(prefix) - 2))
        if fenced and _fence_moves(text, prefix, at, cut):
            return self.split(text)
        part = text[at:]
        rest = self.split(part)
        first, *more = self._pieces_of(part)
        return self._spliced(
            text,
            ((prefix, known, slice(before), 0), (part, rest, slice(None), at)),
            (*pieces[:-1], first[cut - at :], *more),
            (prefix, pieces[-1], text[cut:]),
            fenced,
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
        # (the second starts with whitespace; the first may end in the line break after its
        # word, ".\n", which makes it no more than one word)
        again = 1 if _WHITESPACE.search(pieces[0].strip()) else 2
        cut = sum(map(len, pieces[:again]))  # where the rest of the suffix starts
        shift = len(text) - len(suffix)
        if len(pieces) <= again or 2 * (len(suffix) - cut) < len(text):
            return self.split(text)
        if _near_structure(text, shift) or _break_just_before(text, shift + cut):
            return self.split(text)  # (Markdown where the parts meet)
        fenced = self._fenced_text(suffix, known) or _fenced(text, 0, shift + 2)
        if fenced and _fence_in_front(text, shift, cut):
            return self.split(text)
        after = 0  # the suffix's sentences before the cut
        while after < len(known.spans) and known.spans[after][0] < cut:
            after += 1
        head = text[: shift + cut]
        rest = self.split(head)
        return self._spliced(
            text,
            ((head, rest, slice(None), 0), (suffix, known, slice(after, None), shift)),
            self._pieces_of(head) + pieces[again:],
            (suffix, suffix[:cut], head),
            fenced,
        )

    def _spliced(
        self,
        text: str,
        runs: tuple[tuple[str, Split, slice, int], ...],
        pieces: tuple[str, ...],
        grown: tuple[str, str, str],
        fenced: bool,
    ) -> Split:
        """``text`` split as ``runs`` laid end to end, and recorded: each run a text split
        here, its split, the slice of its sentences that ``text`` holds, and where that
        text starts in ``text``. ``pieces`` are ``text``'s counting pieces, ``grown`` what
        its count follows from (see :meth:`grown`), ``fenced`` whether it may hold a fence."""
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
        done = self._splits[text] = Split(spans, normal, self.keys_of(normal), sentences, fenced=fenced)
        return done

    @staticmethod
    def _fenced_text(text: str, split: Split) -> bool:
        """:func:`_fenced` of a text split here, looked at once (see Split.fenced)."""
        if split.fenced is None:
            split.fenced = _fenced(text)
        return split.fenced

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
            line = "\n" + grown[2]  # (a tail split from the line break before it)
            self._splits.pop(line, None)
            self._pieces.pop(line, None)
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

    def _normalise(self, sentence: str, spaced: bool = False) -> str:
        """``sentence`` normalised, remembered, and noted if it counts as a repeat. ``spaced``:
        the sentence holds no whitespace at either end and, if it is ASCII, none but spaces."""
        # (an ASCII sentence with one space between its words, most, is normalised by lower
        # case alone: told from the text it was cut from, not by normalise's isprintable,
        # which read each of its characters, a third of normalising it)
        if spaced and sentence.isascii() and "  " not in sentence:
            key = self._normal[sentence] = sentence.lower()
        else:
            key = self._normal[sentence] = normalise(sentence)
        if key in self._words:
            return key  # noted already, from another sentence ("The ..." and "THE ...")
        if key[:1] in _BLOCK_STARTS and OPENS_BLOCK.match(key):
            self._openers.add(key)
        words = key.count(" ") + 1
        # (a Chinese or Japanese character counts as a word too: their words run together)
        self._words[key] = words if key.isascii() else words + _unspaced_characters(key)
        if words >= MIN_SENTENCE_WORDS or _long_cjk(key):  # as _is_key, with the words counted once
            if key[0] in "#|" and _STRUCTURE.match(key):
                return key  # a heading or a table row: it labels what follows (see _STRUCTURE)
            self._keys.add(key)
            if _REFERS_BACK.match(key):
                self._anaphora.add(key)
            # (from its end, not a scan of it; most keys end in a period, told by one look)
            if key[-1] in _QUESTION_TAIL and key.rstrip(_CLOSERS).endswith(_ASKS):
                self._questions.add(key)
        elif _ANSWERS.match(key) and _ENDS_SENTENCE.search(key):
            self._answers.add(key)
        return key

    @property
    def repeats(self) -> set[str]:
        """The normalised sentences split here that count as repeats (MIN_SENTENCE_WORDS), each
        once. Read, not changed, by its users."""
        return self._keys

    @property
    def short_answers(self) -> set[str]:
        """The normalised sentences split here too short to count as repeats that answer or
        qualify the sentence before them ("No.", "Not anymore.", "It is.", "$5 only."; see
        _ANSWERS and Ledger.fresh). Read, not changed, by its users."""
        return self._answers

    @property
    def questions(self) -> set[str]:
        """The normalised sentences split here that count as repeats and ask a question: the
        sentence after one answers it (see Ledger.fresh). Read, not changed, by its users."""
        return self._questions

    @property
    def opens_block(self) -> set[str]:
        """The normalised sentences split here that open with Markdown of a line's start (see
        OPENS_BLOCK). Read, not changed, by its users."""
        return self._openers

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
        """How many words the text has (as ``len(split.key.split(" "))``, and each Chinese or
        Japanese character one), from its sentences."""
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
        if not (pieces is None or sentences is None or len(pieces) != len(sentences) or "\n" in text):
            # Runs of kept sentences joined by a space (a line has no blank line in it): the
            # first piece of each run is its sentence, after one space but for the first run.
            joined_pieces = list(itertools.compress(pieces, keep))
            left = list(itertools.compress(sentences, keep))
            joined_pieces[0] = left[0]
            # The runs after the first start where a removed sentence is followed by a kept
            # one: found in C in the marks as bytes (most texts lost one run in the middle:
            # one such start). A list of the run starts, built for every text, and a
            # generator over them cost a third of this method.
            marked = bytes(keep)
            at = marked.find(_RUN_START, keep.index(True))
            while at != -1:
                k = at + 1
                sentence = sentences[k]
                # (a run opening with a number after a removed sentence may not part from the one
                # before: "He said no." then "5 users asked" reads "no. 5"; join_kept sees to it)
                if sentence[:1].isdigit():
                    break
                piece = pieces[k]
                if piece[0] != " " or len(piece) != len(sentence) + 1:  # not one space before it
                    joined_pieces[marked.count(1, 0, k)] = " " + sentence  # (its place: those kept before it)
                at = marked.find(_RUN_START, k)
            else:
                if keep[-1]:
                    joined_pieces[-1] = joined_pieces[-1].rstrip()  # the text's own last sentence
                joined = "".join(joined_pieces)
                if joined not in self._splits:
                    cut = self._pieces[joined] = tuple(joined_pieces)
                    self._splits[joined] = Split(None, normal, keys, left, pieces=cut, kept=True)
                return joined
        joined, spans = _join_kept(text, list(itertools.compress(split.spans, keep)))
        if joined not in self._splits:
            self._splits[joined] = Split(spans, normal, keys, kept=True)
        return joined

    def marks(self, split: Split) -> frozenset[int]:
        """The marks of a long text's sampled shingles: those of its sentences (see _SAMPLED)."""
        # (made a set at once: a union of the sentences' tuples met each one's iterator, 5% of this)
        return frozenset(_per_sentence(self._marks, sentence_marks, split))

    def plain_words(self, split: Split) -> list[str]:
        """The text's words without case or surrounding punctuation (as _plain(split.key))."""
        return _per_sentence(self._plain, _plain, split)

    def pieces(self, text: str) -> tuple[str, ...] | None:
        """``text`` cut before each space or tab that follows a sentence, and before a sentence
        that starts a line; None if never split.

        Each piece is a sentence with the whitespace before it. For both OpenAI
        encodings a text's count is the sum of its pieces' counts (see
        TiktokenTokenizer), and pieces recur across overlapping candidates, so
        they are what gets counted. A line break goes with the sentence before it
        (punctuation and line breaks tokenize together), so a sentence starts a
        piece after one only where it opens its line (not after spaces) with other
        than "/" (o200k's punctuation pieces reach over line breaks to a "/"). (Text
        of one sentence a line, a list or a table, had no place to cut it: a
        document's windows merging one by one were each counted and split whole.)
        Kept: the prefetch, admission and the manifest all ask.
        """
        done = self._pieces.get(text)
        if done is None:
            split = self._splits.get(text)
            if split is None:
                return None
            spans = split.spans
            cuts = [end for _, end in spans[:-1] if text[end] in _PIECE_CUTS]
            if "\n" in text:
                lines = [start for start, _ in spans[1:] if text[start - 1] == "\n" and text[start] != "/"]
                cuts = sorted({*cuts, *lines})
            cuts = [0, *cuts, len(text)]
            done = self._pieces[text] = tuple([text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)])
        return done


def _per_sentence(known: dict[str, _Parts], make: Callable[[str], _Parts], split: Split) -> list[Any]:
    """What ``make`` gives for each of the text's normalised sentences, laid end to end: each
    distinct sentence's made once and kept in ``known`` (overlapping windows share most of
    theirs), and added to the list in C (a chain over the sentences handed over every item,
    an eighth of the time of plain_words)."""
    out: list[Any] = []
    for normal in split.normal:
        found = known.get(normal)
        if found is None:
            found = known[normal] = make(normal)
        out += found
    return out


#: a line break and the whitespace after it
_BREAK_ON = re.compile(r"\n\s*")


def _fence_moves(text: str, prefix: str, at: int, cut: int) -> bool:
    """Whether a code fence decides differently in ``text`` than in its ``prefix``, or split
    again from ``at``: the prefix's last line, a fence that the text may go on (one that
    ceases to be a fence, "```Ph" then "```Ph.D.```", and the sentence before it no longer
    ends there; or turns from a closing fence to an opening one), or, where the part split
    again starts inside a line (``at`` is ``cut``), that line, which would read as a fence
    there. (The fences before pair as they did: pairing runs from the text's start, and a
    block the prefix leaves open is its last piece, split again with what may close it.)"""
    start = prefix.rfind("\n") + 1
    end = text.find("\n", start)
    kind = _fence_kind(prefix[start:])
    # (a line that turns into a fence is split again whole: the prefix's last piece starts
    # at it or before it; so is one that opens the prefix's last block and still opens it)
    grown = _fence_kind(text[start : end if end != -1 else len(text)])
    if kind is not None and kind != grown:
        blocks = _code_blocks(prefix)  # (only where the line is a fence that changes: rare)
        if grown is None or not blocks or prefix[blocks[-1][0] :].find("\n") != -1:
            return True
    if at != cut:
        return False
    end = text.find("\n", at)
    return _fence_kind(text[at : end if end != -1 else len(text)]) is not None


def _fence_in_front(text: str, shift: int, cut: int) -> bool:
    """Whether code fences may pair otherwise in ``text`` than in its suffix from ``shift``,
    split again up to ``shift + cut``: the part split again leaves a block open (it would
    run on into the suffix), or the suffix's fences up to ``cut`` were paired otherwise
    (from the suffix's start) than in the text. Otherwise both are outside any block at
    ``shift + cut``, and the suffix's fences after it pair alike.

    The suffix's fences up to ``cut`` pair alike when the part in front leaves no block
    open, and the line the suffix starts on reads the same: the suffix starts it, or it
    holds no fence character. (A paragraph's window joining one that opens with a code
    block was split whole again at each join: 1,000 windows of a technical document
    took 16 s.)"""
    line = text.rfind("\n", 0, shift) + 1
    if "`" in text[line : shift + cut] or "~" in text[line : shift + cut]:
        if line != shift:  # (the suffix starts inside a line: that line's fence may read otherwise)
            end = text.find("\n", shift)
            seam = text[line : end if end != -1 else len(text)]
            if "`" in seam or "~" in seam:
                return True
        if _fenced_blocks(text[:shift])[1]:  # (the part in front, a window: short)
            return True
    return _fenced_blocks(text[: shift + cut])[1]


def _fence_kind(line: str) -> tuple[str, bool] | None:
    """A line's fence (its run of backticks or tildes, and whether nothing follows it: only
    such a fence can close a block), or None when it is no fence."""
    found = _FENCE.fullmatch(line)
    if found is None:
        return None
    run = found.group(1) or found.group(2)
    return run, line.strip() == run


def _near_structure(text: str, at: int) -> bool:
    """Whether a split of ``text`` cut at ``at`` (split_grown: one part split again, beside
    sentences split before) may read a line break otherwise than the whole text does. A
    line break ends a sentence by what opens the line before it (a heading, a table row,
    a list item's number: see _line_parts), and the part split alone takes ``at`` for
    the start of that line: the first line break after ``at`` must read the same either
    way."""
    nl = text.find("\n", at)
    if nl < 0:
        return False
    brk = _BREAK_ON.match(text, nl)
    assert brk is not None  # (it matches at any "\n")
    after = brk.end()
    if text.count("\n", nl, after) > 1:
        return False  # a blank line ends the sentence either way
    return _line_parts(text, nl, after, text.rfind("\n", 0, at) + 1) != _line_parts(text, nl, after, at)


def _break_just_before(text: str, at: int) -> bool:
    """Whether a part of ``text`` that ends at ``at`` holds a line break just before its end
    that it reads otherwise than the text does.

    A break is read by what opens the line after it (see _line_parts): where the part
    holds the start of that line, it holds only some of it. Where the part ends in the
    whitespace after a break, it holds none of that line: alone, the break is trailing
    whitespace, which ends the part's last sentence, and in the text it ends that
    sentence too (the suffix split alone cut a piece there, before a sentence that opens
    its line). Only when that whitespace starts with a space or tab does the text cut a
    counting piece at its start (see SentenceCache.pieces), where the part alone cuts
    none. (A paragraph's window before one that opens after a blank line was split whole
    again at each join.)"""
    end = text[max(0, at - 8) : at]
    brk = end.rfind("\n")
    if brk == -1:
        return False
    if not end[brk:].isspace():
        return True  # the start of a line after it
    # where the whitespace the part ends in starts (looked for no further back than 64
    # characters: a longer run is taken for a break read otherwise, and split whole)
    floor = max(0, at - 64)
    start = floor + len(text[floor:at].rstrip())
    if start == floor and floor:
        return True
    return text[start] in _PIECE_CUTS


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


def _key(sentence: str) -> str | None:
    key = normalise(sentence)
    return key if _is_key(key) else None


def _is_key(normal: str) -> bool:
    """Whether a normalised sentence is long enough to count as a repeat (MIN_SENTENCE_WORDS,
    or MIN_CJK_CHARACTERS)."""
    return normal.count(" ") + 1 >= MIN_SENTENCE_WORDS or _long_cjk(normal)


#: Chinese, Japanese and Korean text runs its words together: a sentence of this many of
#: their characters or more is long enough to count as a repeat ("是的。", yes, is not).
MIN_CJK_CHARACTERS = 6
#: Chinese characters, Hiragana, Katakana and Hangul syllables
_CJK_CHARACTER = re.compile(f"[{_UNSPACED_CLASS}\\uac00-\\ud7af]")


def _long_cjk(normal: str) -> bool:
    """Whether a normalised sentence holds MIN_CJK_CHARACTERS Chinese, Japanese or Korean
    characters (looked for only in text that is not ASCII)."""
    if normal.isascii():
        return False
    found = _CJK_CHARACTER.finditer(normal)
    return sum(1 for _ in itertools.islice(found, MIN_CJK_CHARACTERS)) >= MIN_CJK_CHARACTERS


#: A short sentence that answers or qualifies the one before it: it opens with a yes or a
#: no, a word of degree, a word pointing back ("It is.") or a figure ("$5 only."), and
#: ends as a sentence ends. (Not any short sentence: a splitter's slip, "Marie, Ontario."
#: after "Sault Ste.", needs no sentence kept for it.)
_ANSWERS = re.compile(
    f"(?!{_NUMBER_MARK})"  # (a list item's number answers nothing)
    r"""["'“‘(\[]*(?:(?:yes|no|not|never|none|nothing|only|true|false|correct"""
    r"""|incorrect|right|wrong|indeed|exactly|always|sometimes|rarely|usually|maybe|perhaps|partly|neither"""
    r"""|either|agreed|confirmed|denied|this|that|these|those|it|its|they|them|he|she|both"""
    r"""|such)\b|[$€£]?\d|[是不对對可没沒有否无無]|はい|いいえ|ええ|いや)"""
)
#: a question's end ("?" or "？", before any closing quotes or brackets)
_ASKS = ("?", "？")
_CLOSERS = "\"'”’)]」』）"
#: what a question ends in: its end, or a closing quote or bracket after it
_QUESTION_TAIL = frozenset(_CLOSERS + "".join(_ASKS))
#: A heading or a table row, normalised: no repeat, though it recurs. A heading labels the
#: sentences after it, and a table's header row its rows; each window under it keeps it.
_STRUCTURE = re.compile(f"{_HEADING_MARK}|{_ROW_MARK}")
#: Words that, opening a sentence, point at what came before it: such a sentence sent
#: after other text says something else there (see Ledger.fresh).
_POINTERS = (
    *"this that these those it its they their theirs them".split(),
    *"he his him she her hers such both former latter".split(),
)
#: words that link a sentence to what came before, before one that points at it ("However,
#: this was later shown ...")
_LINKS = (
    "however",
    *"but yet still nevertheless nonetheless instead indeed".split(),
    "in fact",
    *"moreover also and so thus therefore".split(),
    "even so",
    "as a result",
    "in addition",
    *"furthermore unfortunately fortunately later meanwhile then".split(),
)


def _tree(follows: dict[str, str]) -> str:
    """A regex for any of the words of ``follows``, each followed by the regex it names, as a
    tree of their letters: each alternative opens with a literal, which the regex engine
    compares before it enters it. (The words one after another, and the pointers after each
    link again, had it enter every word that shares a sentence's first letter.)"""
    heads: dict[str, dict[str, str]] = {}
    for word, after in follows.items():
        if word:
            heads.setdefault(word[0], {})[word[1:]] = after
    alternatives = [re.escape(letter) + _tree(rests) for letter, rests in sorted(heads.items())]
    ending = follows.get("")
    if ending == "" and alternatives:  # (a word that ends here, and longer ones: "it", "its")
        return f"(?:{'|'.join(alternatives)})?"
    if ending is not None:
        alternatives.append(ending)
    return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"


#: a sentence that opens with a pointer, after any opening quotes or brackets and a link
#: (possessive: the quotes are never given back, as no word opens with one)
_REFERS_BACK = re.compile(
    r"""["'“”‘’(\[]*+"""
    + _tree(
        {**dict.fromkeys(_LINKS, ",? " + _tree(dict.fromkeys(_POINTERS, ""))), **dict.fromkeys(_POINTERS, "")}
    )
    + r"\b"
)


def refers_back(sentence: str) -> bool:
    """Whether ``sentence`` opens with a word pointing at what came before it ("That claim is
    false.", "However, this was ...", "He was born in 1900."): what it says depends on it."""
    return _REFERS_BACK.match(normalise(sentence)) is not None


#: a sentence's end: ".", "!", "?" or "…", and any closing quotes or brackets after it
_ENDS_SENTENCE = re.compile(r"""[.!?…。！？]["'”’)\]」』）]*\Z""")


def join_kept(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The kept spans of ``text``: adjacent ones verbatim as written, separate runs joined by a
    space, or by a blank line or a line break where one stood between them (a heading stays
    apart from the sentence after it), or by nothing where sentences stood together
    (Chinese and Japanese ones need no space)."""
    return _join_kept(text, spans)[0]


def _gap(text: str, before: int, after: int) -> str:
    """What joins two runs of kept sentences, ``text[:before]`` and ``text[after:]``, when
    what stood between them went: a blank line where one stood; else a line break where
    one stood, a space where one stood, or nothing where the sentences stood together
    (Chinese, Japanese), each where it still ends the sentence before it (a heading, a
    list item or a table row stays on its line); else a blank line, which always does
    (two lines of prose, or a quote "「" after "$5 only. ", would read as one sentence)."""
    if _BLANK_LINE.search(text, before, after):
        return "\n\n"
    if "\n" in text[before:after]:
        return "\n" if _line_parts(text, before, after) or _sentence_parts(text, before, after) else "\n\n"
    if text[before].isspace() or text[after - 1].isspace():
        return " " if _sentence_parts(text, before, after) else "\n\n"
    return "" if text[before - 1] in "。！？" else "\n\n"


def _still_parts(text: str, before: tuple[int, int], gap: str, after: tuple[int, int]) -> bool:
    """Whether ``gap`` between the sentences at ``before`` and ``after`` (the last of a run
    kept and the first of the next) is where a split of the two, so joined, ends the first:
    the rules of _gap read the ends of the two alone, and a period that ended a sentence
    before a removed one may be none before the next ("No." before "2) ...", "$9.99."
    before a line that no longer opens a list)."""
    line = text.rfind("\n", 0, before[0]) + 1  # (from its line's start: a heading, a table row)
    if not any(p.match(text, k) for k in (line, before[0]) for p in (_ENDS_AT_BREAK, _NUMBERED)):
        # What opens the line decides nothing, read from either place: from the sentence on.
        # (From the line's start, a long line was split again for each run joined on it.)
        line = before[0]
    head = text[line : before[1]]
    cut = len(head) + len(gap)
    return any(start == cut for start, _ in split_sentences(head + gap + text[after[0] : after[1]]))


def _sentence_parts(text: str, before: int, after: int) -> bool:
    """Whether whitespace between ``text[:before]`` and ``text[after:]`` ends the sentence
    before it: that ends as a sentence does (. ! ? …, or 。！？) and the one after starts
    as one does."""
    if text[before - 1] in "。！？":
        return _CJK_END.match(text[before - 1] + " " + text[after : after + 1]) is not None
    ends = _ENDS_SENTENCE.search(text, max(0, before - 8), before) is not None
    return ends and _OPENS_SENTENCE.match(text, after) is not None


#: what may start a sentence after whitespace (see _sentence_parts)
_OPENS_SENTENCE = re.compile(_STARTS)


def _join_kept(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """:func:`join_kept`, and where each kept span lies in the joined text."""
    parts: list[str] = []
    moved: list[tuple[int, int]] = []
    run_start = run_end = -1  # the run being built (none yet)
    last = -1  # where the run's last sentence starts
    shift = 0  # how far the current run moves to the left in the joined text
    for start, end in spans:
        if run_end >= 0 and not text[run_end:start].strip():  # only whitespace between: the same run
            run_end = end
        else:
            if run_end >= 0:
                gap = _gap(text, run_end, start)
                if gap != "\n\n" and not _still_parts(text, (last, run_end), gap, (start, end)):
                    gap = "\n\n"
                parts += (text[run_start:run_end], gap)
            shift = start - sum(map(len, parts))
            run_start, run_end = start, end
        last = start
        moved.append((start - shift, end - shift))
    if run_end >= 0:
        parts.append(text[run_start:run_end])
    return "".join(parts), moved

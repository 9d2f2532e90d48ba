"""The shortcuts of _sentences against the general rules they stand for.

Splitting and normalising take shortcuts for the common text (one space between
sentences, no line break, no fence, keys ending in a period). Each test here
puts a shortcut beside the general rule it replaces, written out as it was,
over texts built from a hostile alphabet (curly quotes, Chinese and Japanese,
code fences, line breaks, tabs, abbreviations, numbered lists), so that any
text on which the two part ways fails here.
"""

from __future__ import annotations

import itertools
import os
import re
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from satchel import _sentences
from satchel._sentences import (
    _ANSWERS,
    _ASKS,
    _CLOSERS,
    _ENDS_SENTENCE,
    _LINE_BREAK,
    _STRUCTURE,
    MIN_SENTENCE_WORDS,
    OPENS_BLOCK,
    SentenceCache,
    normalise,
)

EXAMPLES = settings(max_examples=int(os.environ.get("SATCHEL_EXAMPLES", "300")), deadline=None)

ALPHABET = (
    "The lamp blinks.",
    "It is not ready.",
    "Is it ready?",
    "(Is it?)",
    "“Quoted,” she said.",
    "Nintendo’s Switch.",
    "‘Single’ ones.",
    "Yes.",
    "No. 5",
    "said no.",
    "Dr. Smith",
    "U.S.",
    "$2.99.",
    "Python 3.9.",
    "e.g.",
    "J. Smith",
    "However, this was later shown.",
    "This is it.",
    "Then open the app…",
    "仅限会员。",
    "是的。",
    "彼は「行く。」と言った。",
    "日本語の文章です",
    "Über alles.",
    "Это так.",
    "```",
    "```python",
    "~~~",
    "`code`",
    "# Heading",
    "## Pricing",
    "- Free",
    "1. Open",
    "2) Press",
    "| Plus | $2.99 |",
    "> quote",
    "\n",
    "\n\n",
    "\r\n",
    " ",
    "  ",
    "\t",
    "\u00a0",
    "\u2028",
    "\x0b",
    "\x00",
    "!",
    "?",
    "？",
    ".",
    "...",
    "İstanbul.",
    "ΟΔΟΣ.",
    "🙂",
    "\ud800",
    "a",
    "0",
)
pieces = st.sampled_from(ALPHABET)
# words joined by a space mostly, as prose is; any piece stands beside any other
texts = st.lists(
    st.tuples(pieces, st.sampled_from([" ", " ", " ", "", "\n", "  "])), min_size=1, max_size=16
).map(lambda parts: "".join(p + sep for p, sep in parts))
#: words and marks that meet around periods, run together in any order
around_periods = st.lists(
    st.sampled_from(
        [
            "a",
            "J",
            "No",
            "no",
            "Dr",
            "dr",
            "5",
            "3.9",
            ".",
            ". ",
            " ",
            "\u00a0",
            "\t",
            "\n",
            "(",
            '"',
            "”",
            "日本",
        ]
    ),
    max_size=20,
).map("".join)


#: words that end before periods, each length of word the boundary regex tells apart (the
#: abbreviations in any case, dotted words, numbers, words closed by a bracket or a quote)
WORDS_BEFORE_PERIODS = [
    *sorted(_sentences._ABBREVIATIONS | _sentences._NUMBER_ABBREVIATIONS),
    *(w.upper() for w in ("dr", "approx", "sept", "no")),
    *(w.capitalize() for w in ("dr", "approx", "sept", "no")),
    "sT",
    "ſt",
    "Data",
    "DATA",
    "Appx",
    "DEPs",
    "CoX",
    "MRI",
    "\u212aa",
    "a",
    "J",
    "war",
    "data",
    "house",
    "moving",
    "outcome",
    "something",
    "x9",
    "1901",
    "3",
    "$2",
    "3.9",
    "U.S",
    "e.g",
    "Lt.Col",
    "(2013)",
    '"man"',
    "“quoted”",
    "abcdef)",
    "abcdefg)",
    "(abcde)",
    'mr"man"',
    "’90s",
    "(a",
    "Über",
    "日本",
]
#: what may stand between a period and the next word
MARKS_AFTER_WORDS = [
    ". ",
    ".  ",
    ".\n",
    ". \u00a0",
    ".",
    ".) ",
    '." ',
    ".. ",
    ".! ",
    "?! ",
    "! ",
    "? ",
    "… ",
    " ",
    ", ",
]
ends_of_words = st.lists(
    st.tuples(
        st.sampled_from(WORDS_BEFORE_PERIODS),
        st.sampled_from(MARKS_AFTER_WORDS),
        st.sampled_from(["The", "the", "5", "(A", "“B", "Ça", "", " "]),
    ),
    min_size=1,
    max_size=8,
).map(lambda parts: "".join(w + mark + after for w, mark, after in parts))


def _boundary_as_written(ends: str) -> re.Pattern[str]:
    """_sentences._boundary with each end after a short word looked for by _easy_ends alone
    (whitespace or the text's start before the word in a lookbehind of its own, each
    abbreviation tried in turn) and the first end of a run looked for before them all."""
    others = "(?<=[!?…])|" if ends != r"\." else ""
    return re.compile(
        "("
        + ends
        + r"(?<![.!?…].)(?:"
        + others
        + r"""(?<=[^\s.!?…"'“‘(\[]{7}\.)|"""
        + _sentences._easy_ends()
        + r"|(?<=\.)"
        + _sentences._no_ends()
        + r"())"
        + _sentences._RUN
        + r")(\s+)"
        + _sentences._STARTS
    )


_BOUNDARY_AS_WRITTEN = _boundary_as_written("[.!?…]")
_PERIOD_BOUNDARY_AS_WRITTEN = _boundary_as_written(r"\.")


@EXAMPLES
@given(st.one_of(ends_of_words, texts, around_periods))
def test_ends_are_found_as_written(text):
    # (the boundary regex looks for the common ends after whitespace, abbreviations one
    # letter at a time, and only at a period that whitespace or a run may follow)
    assert _sentences._BOUNDARY.split(text) == _BOUNDARY_AS_WRITTEN.split(text)
    assert _sentences._PERIOD_BOUNDARY.split(text) == _PERIOD_BOUNDARY_AS_WRITTEN.split(text)


def test_each_word_before_an_end_is_read_as_written():
    # (at the text's start too, where the ends are looked for as _easy_ends has them)
    for word in WORDS_BEFORE_PERIODS:
        for mark in MARKS_AFTER_WORDS:
            for text in (f"{word}{mark}The end.", f"See {word}{mark}The", f"See it{word}{mark}The"):
                assert _sentences._BOUNDARY.split(text) == _BOUNDARY_AS_WRITTEN.split(text), text
                assert _sentences._PERIOD_BOUNDARY.split(text) == _PERIOD_BOUNDARY_AS_WRITTEN.split(text)


def _fenced_as_written(text: str, start: int = 0, end: int | None = None) -> bool:
    return text.find("```", start, end) != -1 or text.find("~~~", start, end) != -1


@EXAMPLES
@given(texts, st.integers(0, 40), st.one_of(st.none(), st.integers(0, 60)))
def test_a_fence_is_looked_for_as_written(text, start, end):
    assert _sentences._fenced(text, start, end) == _fenced_as_written(text, start, end)
    assert _sentences._fenced(text) == _fenced_as_written(text)


_LAST_WORD = re.compile(r"(?<!\S)\S*+\Z")


def _period_ends_as_written(text: str, at: int) -> bool:
    """_period_ends with the word before the period found by a regex search."""
    dot = text.rfind(".", 0, at)
    if dot != -1 and not re.search(r"\s", text[dot + 1 : at]):
        return _sentences._period_ends(text, at)  # (a dotted word: no word is looked for)
    found = _LAST_WORD.search(text, dot + 1, at)
    word = found.group() if found else ""
    word = word.lstrip(_sentences._OPENERS)
    if not word:
        return True
    if len(word) == 1 and word.isalpha():
        return False
    word = word.lower()
    if word in _sentences._NUMBER_ABBREVIATIONS:
        follows = _sentences._NEXT_VISIBLE.match(text, at + 1)
        return not (follows and follows.group(1).isdigit())
    return word not in _sentences._ABBREVIATIONS


@EXAMPLES
@given(st.one_of(texts, around_periods))
def test_the_word_before_a_period_is_found_as_written(text):
    for at in [k for k, c in enumerate(text) if c == "."]:
        assert _sentences._period_ends(text, at) == _period_ends_as_written(text, at), at


def _split_prose_as_written(text: str) -> list[tuple[int, int]]:
    """_split_prose with the line breaks of every sentence looked for by the regex."""
    if not text or text.isspace():
        return []
    sentences, gaps = _sentences._split_at_ends(text)
    spans = _sentences._spans_of(sentences, gaps, _sentences._stripped(sentences))
    if _sentences._has_cjk_ends(text):
        spans = _sentences._cut_at_cjk_ends(text, spans)
    if "\n" not in text:
        return spans
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for brk in _LINE_BREAK.finditer(text, start, end):
            if not _sentences._ends_at_break(text, brk):
                continue
            stop = len(text[start : brk.start()].rstrip()) + start
            if stop > start:
                _sentences._add_span(out, text, start, stop)
            start = brk.end()
        _sentences._add_span(out, text, start, end)
    return out


@EXAMPLES
@given(st.one_of(texts, around_periods))
def test_prose_is_split_as_written(text):
    assert _sentences._split_prose(text) == _split_prose_as_written(text)


#: _sentences._REFERS_BACK as written, the words one after another
_REFERS_BACK_AS_WRITTEN = re.compile(
    r"""["'“”‘’(\[]*"""
    r"""(?:(?:however|but|yet|still|nevertheless|nonetheless|instead|indeed|in fact|moreover|also"""
    r"""|and|so|thus|therefore|even so|as a result|in addition|furthermore|unfortunately"""
    r"""|fortunately|later|meanwhile|then),? )?"""
    r"""(?:this|that|these|those|it|its|they|their|theirs|them|he|his|him|she|her|hers"""
    r"""|such|both|former|latter)\b"""
)
#: the openings of sentences that may point back, and words that start alike
openings = st.lists(
    st.sampled_from(
        [
            *_sentences._LINKS,
            *_sentences._POINTERS,
            *("the", "then", "thee", "i", "item", "hey", "shed", "in", "fact", "even", "as", "a", "so"),
            *("'", '"', "(", "[", "“", "’", ",", " ", ".", "-", "1", "é", "ſ", "K"),
        ]
    ),
    max_size=6,
).map(lambda words: "".join(w + sep for w, sep in zip(words, itertools.cycle([" ", "", ", ", " "]))))


@EXAMPLES
@given(st.one_of(openings, texts))
def test_a_sentence_points_back_as_written(text):
    key = normalise(text)
    assert bool(_sentences._REFERS_BACK.match(key)) == bool(_REFERS_BACK_AS_WRITTEN.match(key))


def test_each_link_and_pointer_is_read_as_written():
    for link in ("", *_sentences._LINKS, "the", "i"):
        for pointer in (*_sentences._POINTERS, "the", "i", "them.", "its,", "theirselves", "hi"):
            for key in (
                f"{link} {pointer} is",
                f"{link}, {pointer}",
                f"(“{link}{pointer}",
                f"{link}{pointer}",
            ):
                found = _sentences._REFERS_BACK.match(key)
                assert bool(found) == bool(_REFERS_BACK_AS_WRITTEN.match(key)), key


def _noted_as_written(key: str) -> dict[str, bool | int]:
    """What SentenceCache._normalise notes of a normalised sentence, by its rules as written."""
    words = key.count(" ") + 1
    if not key.isascii():
        words += _sentences._unspaced_characters(key)
    counted = key.count(" ") + 1 >= MIN_SENTENCE_WORDS or _sentences._long_cjk(key)
    structure = counted and key[0] in "#|" and _STRUCTURE.match(key) is not None
    is_key = counted and not structure
    return {
        "words": words,
        "opens_block": key[:1] in _sentences._BLOCK_STARTS and OPENS_BLOCK.match(key) is not None,
        "key": is_key,
        "refers_back": is_key and _REFERS_BACK_AS_WRITTEN.match(key) is not None,
        "question": is_key and key.rstrip(_CLOSERS).endswith(_ASKS),
        "answer": not counted and _ANSWERS.match(key) is not None and _ENDS_SENTENCE.search(key) is not None,
    }


def _noted(cache: SentenceCache, key: str) -> dict[str, bool | int]:
    return {
        "words": cache.word_count(key),
        "opens_block": key in cache.opens_block,
        "key": bool(cache.keys_of([key])),
        "refers_back": key in cache.refer_back,
        "question": key in cache.questions,
        "answer": key in cache.short_answers,
    }


@EXAMPLES
@given(st.lists(texts, min_size=1, max_size=4))
def test_each_sentence_is_noted_as_written(batch):
    # (several texts through one cache: a key met again, from another sentence or
    # another text, is noted as it was the first time)
    cache = SentenceCache()
    for text in batch:
        split = cache.split(text)
        sentences = [text[start:end] for start, end in split.spans]
        assert split.normal == [normalise(sentence) for sentence in sentences]
        for key in split.normal:
            assert _noted(cache, key) == _noted_as_written(key), key


def test_a_sentence_with_other_whitespace_is_normalised_as_written():
    # (the sentences of a text with no ASCII whitespace but spaces are lowered alone, each
    # other whitespace character sends them to normalise; see SentenceCache._normalise)
    for space in [*(chr(c) for c in range(0x3001) if chr(c).isspace()), "  ", "\x00", "\x7f"]:
        for text in (
            f"The lamp{space}blinks. It is ready.",
            f"It is. The{space}{space}lamp. Über{space}alles.",
        ):
            split = SentenceCache().split(text)
            assert split.normal == [normalise(text[start:end]) for start, end in split.spans], repr(text)


@EXAMPLES
@given(texts)
def test_counting_pieces_are_cut_as_written(text):
    cache = SentenceCache()
    cache.split(text)
    pieces = cache.pieces(text)
    assert pieces is not None and "".join(pieces) == text
    # the pieces as SentenceCache.pieces cuts them from the spans (when split did not)
    cache._pieces.pop(text)
    assert cache.pieces(text) == pieces


def test_the_alphabet_reaches_every_rule():
    # (the texts above must hold what each shortcut passes over: tests that never met a
    # question, a fence or a line break inside a sentence would check nothing)
    cache = SentenceCache()
    for piece in ALPHABET:
        cache.split(piece)
    assert cache.questions and cache.refer_back and cache.short_answers and cache.opens_block
    assert any(_sentences._fenced(piece) for piece in ALPHABET)
    assert any("\n" in piece for piece in ALPHABET) and any(not piece.isascii() for piece in ALPHABET)


#: lines of sentences (SentenceCache.keep builds what is left of them from their counting
#: pieces): most apart by one space, some by more, a tab or nothing, some opening with a number
lines = st.lists(
    st.tuples(
        st.sampled_from(
            (
                "The lamp blinks.",
                "It is not ready.",
                "Is it ready?",
                "5 users asked.",
                "No. 5 is.",
                "$2.99 only.",
                "Dr. Smith said no.",
                "“Quoted,” she said.",
                "仅限会员。",
                "Über alles.",
            )
        ),
        st.sampled_from([" ", " ", " ", " ", "", "  ", "\t", " \u00a0"]),
    ),
    min_size=2,
    max_size=16,
).map(lambda parts: "".join(p + sep for p, sep in parts))


@EXAMPLES
@given(st.one_of(lines, lines, texts), st.lists(st.booleans(), min_size=16, max_size=16))
def test_what_is_kept_is_joined_as_written(text, marks):
    # (keep builds a line from its counting pieces, finding the runs of kept sentences in C;
    # join_kept, the rule as written, joins the kept spans of the text)
    cache = SentenceCache()
    split = cache.split(text)
    # (a part may hold two sentences, "仅限会员。No. 5 is.": the marks go round again)
    keep = [marks[k % len(marks)] for k in range(len(split.normal))]
    normal = [key for key, kept in zip(split.normal, keep, strict=True) if kept]
    joined = cache.keep(text, split, keep, normal, cache.keys_of(normal))
    kept = [span for span, k in zip(split.spans, keep, strict=True) if k]
    expected, spans = _sentences._join_kept(text, kept)
    assert joined == expected
    if joined and joined != text:  # (all kept: the text itself, split before)
        left = cache.split(joined)
        assert left.kept and left.normal == normal
        assert [joined[start:end] for start, end in left.spans] == [joined[start:end] for start, end in spans]
        assert "".join(cache._pieces_of(joined)) == joined


def _marks_as_written(normal: str) -> tuple[int, ...]:
    """sentence_marks with every sentence encoded as UTF-8 with its surrogates passed."""
    if not normal.isascii() and (spaced := _sentences.spaced_out(normal)) is not normal:
        normal = " ".join(spaced.split())
    return tuple(map(zlib.crc32, _sentences._SAMPLED.findall(b" " + _sentences._utf8(normal))))


@EXAMPLES
@given(st.lists(st.one_of(texts, lines), min_size=1, max_size=4))
def test_marks_and_plain_words_are_those_of_the_sentences(batch):
    # (a text's marks are laid end to end in a list and its plain words added sentence by
    # sentence; several texts through one cache: sentences met again are taken as made)
    cache = SentenceCache()
    for text in batch:
        split = cache.split(text)
        assert cache.marks(split) == frozenset().union(*map(_marks_as_written, split.normal))
        assert cache.plain_words(split) == [w for n in split.normal for w in _sentences._plain(n)]
        assert cache.plain_words(split) == _sentences._plain(split.key)

"""Dedupe's shortcuts for speed give what the general path they stand in for gives."""

from __future__ import annotations

import difflib
import re
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from satchel import _dedupe, _sentences

# Words of windows cut from one document: sentence ends with and without closing quotes
# or brackets, a snippet cut with "...", details and qualifiers, Chinese and Japanese
# sentence ends, and whitespace other than a space between them.
words = st.sampled_from(
    [
        "the",
        "plan",
        "costs",
        "$2.99.",
        "only.",
        "weekdays.",
        "weekdays",
        "on",
        "It",
        "said.”",
        'said."',
        "(open)",
        "closed.)",
        "Really?",
        "Yes!",
        "then...",
        "then…",
        "1999",
        "not",
        "Plus",
        "価格は9元。",
        "会員のみ！",
        "「行く。」",
        "end。",
        "\u2028",
        "\x0b",
    ]
)
gaps = st.sampled_from([" ", " ", " ", "  ", "\n", "\t", "\u3000"])


@st.composite
def shifted_windows(draw: st.DrawFn) -> tuple[str, str, int]:
    """Two windows of one document (with whitespace around them at times) and an offset
    between them: the true one or any other; or two short texts of those words."""
    doc = draw(st.lists(words, min_size=1, max_size=30))
    seps = draw(st.lists(gaps, min_size=len(doc), max_size=len(doc)))

    def window() -> tuple[str, int]:
        start = draw(st.integers(0, len(doc) - 1))
        end = draw(st.integers(start + 1, len(doc)))
        inner = "".join(w + s for w, s in zip(doc[start:end], seps[start:end], strict=True))
        around = st.sampled_from(["", " ", "\n "])
        return draw(around) + inner.rstrip() + draw(around), start

    (new, a), (kept, c) = window(), window()
    if draw(st.booleans()):
        # (one ending inside the other, at any word of it: the whole judgement says yes
        # more often)
        shorter = draw(st.lists(words, min_size=1, max_size=6))
        longer = draw(st.lists(words, min_size=2, max_size=10))
        at = draw(st.integers(0, len(longer) - 2))  # where the shorter one ends
        offset = at - (len(shorter) - 1)
        if draw(st.booleans()):
            return " ".join(shorter), " ".join(longer), offset
        return " ".join(longer), " ".join(shorter), -offset  # (kept ends inside new)
    return new, kept, draw(st.one_of(st.just(a - c), st.integers(-40, 40)))


@settings(max_examples=600, deadline=None)
@given(shifted_windows())
def test_goes_on_judged_from_last_words_as_from_all_words(pair: tuple[str, str, int]) -> None:
    # _goes_on tells most pairs apart by their last words alone (see there); the whole
    # judgement on both texts' words must agree with it everywhere
    new, kept, offset = pair
    mine, theirs = _dedupe._words(new), _dedupe._words(kept)
    if not mine or not theirs:
        return  # (never asked: _offset finds no shift for a text without words)
    assert _dedupe._goes_on(new, kept, offset) == _dedupe._goes_on_words(mine, theirs, offset)


def test_goes_on_still_finds_a_qualifier_after_a_sentence_end() -> None:
    kept = "Returns are free on weekdays only. Call us first."
    new = "Returns are free on weekdays."
    assert _dedupe._goes_on(new, kept, 0)
    assert not _dedupe._goes_on("Returns are free on", kept, 0)


# Word lists of a small vocabulary (so words repeat, as "the" and "|" do, and runs shared by
# chance tie with one another), at times one a window of the other with other ends.
few_words = st.lists(st.sampled_from(["the", "a", "plan", "costs", "$2.99", "|", "x"]), max_size=40)


@st.composite
def word_lists(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    a, b = draw(few_words), draw(few_words)
    if draw(st.booleans()):
        start = draw(st.integers(0, len(a)))
        end = draw(st.integers(start, len(a)))
        b = b[: draw(st.integers(0, 6))] + a[start:end] + b[draw(st.integers(0, len(b))) :]
    return a, b


@settings(max_examples=1500, deadline=None)
@given(word_lists(), st.data())
def test_word_matcher_aligns_as_difflib(pair: tuple[list[str], list[str]], data: st.DataObject) -> None:
    # _WordMatcher finds each longest shared run with str.find; difflib's matcher (no junk)
    # must find the very same runs, ties included, so every opcode is the same
    a, b = pair
    ours, difflibs = _dedupe._WordMatcher(a, b), difflib.SequenceMatcher(None, a, b, autojunk=False)
    assert ours.get_matching_blocks() == difflibs.get_matching_blocks()
    assert ours.get_opcodes() == difflibs.get_opcodes()
    alo = data.draw(st.integers(0, len(a)))
    ahi = data.draw(st.integers(alo, len(a)))
    blo = data.draw(st.integers(0, len(b)))
    bhi = data.draw(st.integers(blo, len(b)))
    assert ours.find_longest_match(alo, ahi, blo, bhi) == difflibs.find_longest_match(alo, ahi, blo, bhi)


def _difflib_matcher(a: list[str], b: list[str]) -> difflib.SequenceMatcher[str]:
    return difflib.SequenceMatcher(None, a, b, autojunk=False)


@settings(max_examples=600, deadline=None)
@given(shifted_windows())
def test_difference_unshifted_as_with_difflib(pair: tuple[str, str, int]) -> None:
    # the whole judgement, with _WordMatcher and with difflib's matcher in its place
    new, kept, _ = pair
    fast = _dedupe._difference_unshifted(new, kept, {})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_dedupe, "_WordMatcher", _difflib_matcher)
        assert _dedupe._difference_unshifted(new, kept, {}) == fast


def test_word_matcher_finds_the_first_of_runs_as_long() -> None:
    # "a b" twice in each: difflib takes the run that starts first in a, then in b
    a, b = "x a b y a b".split(), "a b z a b".split()
    assert _dedupe._WordMatcher(a, b).find_longest_match(0, 6, 0, 5) == (1, 0, 2)
    assert _dedupe._WordMatcher(a, b).find_longest_match(3, 6, 1, 5) == (4, 3, 2)


#: _sentences._SAMPLED as first written: the up to two words after a sampled one taken by a
#: greedy repeat (which keeps a place to go back to for each), not a possessive one
_SAMPLED_GREEDY = re.compile(rb" (?=([0-4bcdfjkmpqvxyz\xc2-\xf4][^ ]*+(?: [^ ]++){0,2}))")

# Sentences as bytes: words of sampled and unsampled initials, numbers, multi-byte
# characters, and runs of spaces (none, one, two) between them and at either end.
sentence_bytes = st.lists(
    st.sampled_from(
        [b"b", b"cat", b"the", b"3", b"9x", b"\xc3\xa9t\xc3\xa9", b"\xe4\xbb\xb7", b"z.", b"", b" ", b"  "]
    ),
    max_size=20,
).map(b" ".join)


@settings(max_examples=1000, deadline=None)
@given(sentence_bytes)
def test_sampled_shingles_as_with_a_greedy_repeat(data: bytes) -> None:
    # the possessive repeat of the words after a sampled one never gives one back; greedy,
    # the regex found the very same shingles (nothing after them in the look-ahead can fail)
    assert _sentences._SAMPLED.findall(b" " + data) == _SAMPLED_GREEDY.findall(b" " + data)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(st.integers(0, 40), st.integers(1, 24), max_size=30), st.data())
def test_texts_met_enough_as_by_each_need(met: dict[int, int], data: st.DataObject) -> None:
    # _met_enough compares a count with the fewest entries any text needs before it looks a
    # text's need up; what it keeps must be what both needs, compared for every text, keep
    need = {j: data.draw(st.integers(1, 24)) for j in met}
    least = data.draw(st.integers(1, 24))
    fewest = data.draw(st.integers(1, min([least, *need.values()])))  # (as _near_duplicates keeps it)
    counted = Counter(met)
    expected = [j for j, shared in counted.items() if shared >= least or shared >= need[j]]
    assert _dedupe._met_enough(counted, least, need, fewest) == expected


# A templated sentence: words that do not repeat, and slots filled in with details at any
# place, the first and last too, side by side at times; each slot from a pool of its own
# (numbers in digits and in words, prices, names, years), so that no detail of one slot
# turns up at another.
_TEMPLATE_WORDS = "item costs and ships in days contact desk the plan per month for our team".split()
_SLOTS = [
    ["3", "4"],
    ["30", "thirty", "31"],
    ["$2.99", "$3.99"],
    ["Anna", "Brian"],
    ["2024", "1,000", "1000"],
]


@st.composite
def template_versions(draw: st.DrawFn) -> tuple[str, str]:
    words = draw(st.lists(st.sampled_from(_TEMPLATE_WORDS), min_size=2, max_size=12, unique=True))
    places = draw(st.lists(st.integers(0, len(words)), min_size=1, max_size=len(_SLOTS)))
    first = [draw(st.sampled_from(_SLOTS[slot])) for slot in range(len(places))]
    # (the second version keeps some of the first's details: most pairs differ in a few)
    second = [d if draw(st.booleans()) else draw(st.sampled_from(_SLOTS[s])) for s, d in enumerate(first)]

    def filled(details: list[str]) -> str:
        out = list(words)
        for detail, at in sorted(zip(details, places, strict=True), key=lambda p: -p[1]):
            out.insert(at, detail)
        return " ".join(out) + "."

    return filled(first), filled(second)


@settings(max_examples=1500, deadline=None)
@given(template_versions())
def test_versions_of_one_sentence_are_judged_as_the_alignment_judges_them(pair: tuple[str, str]) -> None:
    # _details_apart tells versions of one templated sentence apart without aligning them
    # (see there). A changed detail the alignment finds, it finds; a pair it leaves to the
    # alignment ("?": "30" / "thirty") has none; and where the alignment reads the versions
    # as other surroundings (a run of details before the first words both share, more
    # than a few), they are still one sentence with other details (see the test below)
    a, b = pair
    # (only such texts are asked: the near-duplicate pass checks first; a name opening the
    # text is not masked, as it may be any capitalised word)
    assume(_dedupe._masked_words(a) == _dedupe._masked_words(b))
    plain_a, plain_b = _dedupe._plain_words(a, {}), _dedupe._plain_words(b, {})
    quick = _dedupe._details_apart(a, b, plain_a, plain_b)
    aligned = _dedupe._difference_unshifted(a, b, {})
    if quick == "?":
        assert aligned != "detail", (a, b)
    else:
        assert quick == "detail" and aligned in ("detail", "surroundings"), (a, b, aligned)


@pytest.mark.parametrize(
    ("a", "b", "aligned"),
    [
        # one version's detail stands elsewhere in the other ("3"): the alignment pairs the
        # two and reads the rest as other surroundings
        ("4 item 3 costs 3.", "3 item 30 costs 4.", "surroundings"),
        # more than a few details in a row at an end: read as another start
        ("2024 Anna $2.99 30 3 item costs.", "1,000 Brian $3.99 thirty 3 item costs.", "surroundings"),
    ],
)
def test_versions_of_one_sentence_with_other_details_are_a_changed_detail(a, b, aligned) -> None:
    # Where the alignment reads versions of one templated sentence as texts in other
    # surroundings, they are still one sentence with other details: both stay, marked
    # conflicting (aligned, both were sent, unmarked)
    assert _dedupe._difference_unshifted(a, b, {}) == aligned
    assert _dedupe._details_apart(a, b, _dedupe._plain_words(a, {}), _dedupe._plain_words(b, {})) == "detail"
    report = _dedupe.find_duplicates([a, b])
    assert not report.duplicate_of and report.conflicts == {0: (1,), 1: (0,)}

"""The shortcuts of chunk validation, admission and its costing against the general rules
they stand for.

Every candidate is validated, costed twice (the tags alone, then the text it keeps)
and asked about in the ledger: each shortcut taken there for the common case is put
here beside the rule it replaces, written out as it was, so that any input on which
the two part ways fails here.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import satchel
from satchel._chunk import check_utf8
from satchel._errors import InputError
from satchel._pack import _Tags
from satchel._render import escape_text
from satchel._sentences import SentenceCache

EXAMPLES = settings(max_examples=int(os.environ.get("SATCHEL_EXAMPLES", "300")), deadline=None)


def _utf8_refusal(value: str) -> str | None:
    """What check_utf8 says of ``value`` as written first: encoded as UTF-8 (None: nothing)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate {value[exc.start]!r} at character {exc.start},"
    return None


@EXAMPLES
@given(st.text(st.sampled_from("aé–€😀\ud800\udbff\udc00\udfff\ud7ff\ue000\uffff\n ")))
def test_a_lone_surrogate_is_refused_as_utf8_refuses_it(value):
    # (check_utf8 encodes as UTF-16, which refuses the same code points: a surrogate, paired
    # or not, which no str holds for a character UTF-8 can send)
    expected = _utf8_refusal(value)
    try:
        check_utf8(value, "text")
    except InputError as exc:
        assert expected is not None and expected in str(exc)
    else:
        assert expected is None


def _chunks() -> list[satchel.Chunk]:
    """Chunks whose tags escape, quote or list attributes in every way a tag can."""
    ids = ["w1", "w,2", 'w"3', "w&4", "w 5", "w6.", "§7-", "x<y>"]
    attrs = [
        {},
        {"title": "Lamp & app"},
        {"section": "B; C", "updated": "2024-01-01"},
        {"title": 'The "guide"', "section": "D\nE"},
        {"metadata": {"source": "wiki", "lang": "en"}},
    ]
    return [
        satchel.Chunk(id=cid, text="The lamp blinks.", **attrs[i % len(attrs)]) for i, cid in enumerate(ids)
    ]


@pytest.mark.parametrize("options", [{}, {"model": "gpt-4"}, {"metadata": ("source", "title")}])
def test_the_tags_alone_are_costed_as_the_enclosure_counts_them(options):
    # (_cost counts an empty text, admission's room check for every candidate, in its additive
    # branch, from the single chunk's tags, without the enclosure built and its text escaped)
    packer = satchel.Packer(**options)
    count, sentences, tags = packer.count, SentenceCache(), _Tags()
    for chunk in _chunks():
        for label in (1, 7, 10, 999, 1000, 1234):
            costed = packer._cost([chunk], "", label, sentences, tags)
            at = 1 if count.additive and label < 1000 else label  # (see _cost)
            head, body, tail = packer._enclosure([chunk], "", at, tags)
            assert costed == count.inside(head) + count.inside(body) + count.inside(tail)


def test_a_text_is_counted_from_its_pieces_as_the_tokenizer_counts_it_escaped():
    # (_body_tokens sums a text's counting pieces, escaped when the text has anything to
    # escape, and asked again finds its count kept: as the tokenizer counts the text escaped)
    packer = satchel.Packer()
    count, sentences = packer.count, SentenceCache()
    texts = [
        "The lamp blinks. It is not ready.",
        "The lamp blinks. It is <b>not</b> ready & waiting.",
        "A & B.\nThe next line < here. Then > there.",
        "No split here, nothing asked before.",
    ]
    for text in texts[:3]:
        sentences.split(text)
    for _ in range(2):  # (the second time, each count is the one kept)
        for text in texts:
            assert packer._body_tokens(text, sentences) == count.tokenizer.count(escape_text(text))

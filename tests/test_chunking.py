"""Seed 004's DocumentChunker: "If a single document is too large, chunk it first with
DocumentChunker, then add each chunk as a separate MEDIUM-priority block."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import satchel
from satchel import ContextWindow, DocumentChunker, Priority
from satchel._tokens import TiktokenTokenizer

O200K = TiktokenTokenizer("o200k_base")
CL100K = TiktokenTokenizer("cl100k_base")

MANUAL = (
    "# Aurora lamp\n\n"
    "The Aurora lamp has three modes. Night mode dims it to ten percent. Party mode cycles "
    "through colours every two seconds, and Focus mode holds a cool white at full brightness.\n\n"
    "## Setup\n\n"
    "1. Plug the base into a wall socket.\n"
    "2. Hold the button for five seconds until the ring blinks blue.\n"
    "3. Open the app and choose Add lamp.\n\n"
    "```sh\nacme pair --lamp aurora --timeout 30\n```\n\n"
    "## Warranty\n\n"
    "The warranty covers parts and labour for two years from the date of purchase. It does not "
    "cover damage from water, drops or power surges. Returns are accepted within 30 days of "
    "delivery if the lamp is unused and in its original box.\n"
)


def check(chunks, doc, max_tokens, overlap, tokenizer=O200K):
    """Every invariant of a chunking of ``doc``: exact offsets, within max_tokens, in order,
    every word of the document in a chunk, overlaps of at most ``overlap`` tokens, and no
    whitespace at a chunk's end, nor at its start but where it touches the chunk before."""
    assert chunks, doc
    for k, c in enumerate(chunks):
        assert doc[c.start : c.end] == c.text
        if c.text != c.text.rstrip():  # (the whitespace before the chunk after, which it touches)
            assert k + 1 < len(chunks) and chunks[k + 1].start == c.end, c
        if c.text != c.text.lstrip():  # (the whitespace after the chunk before, which it touches)
            assert k and chunks[k - 1].end == c.start, c
        assert tokenizer.count(c.text) <= max_tokens, c
    covered = set()
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert before.start < after.start and before.end < after.end
        if after.start < before.end:  # (they share whole units: at most overlap tokens)
            assert tokenizer.count(doc[after.start : before.end].strip()) <= overlap
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(doc) if not ch.isspace())


@pytest.mark.parametrize(("max_tokens", "overlap"), [(12, 0), (40, 0), (40, 10), (120, 30), (1000, 0)])
def test_chunks_fit_end_at_sentence_ends_and_hold_their_place(max_tokens, overlap):
    chunks = DocumentChunker("gpt-4o", max_tokens=max_tokens, overlap=overlap).chunk(
        MANUAL, "manual", title="User manual"
    )
    check(chunks, MANUAL, max_tokens, overlap)
    assert [c.id for c in chunks] == [f"manual#{n}" for n in range(len(chunks))]
    assert {(c.doc_id, c.title) for c in chunks} == {("manual", "User manual")}
    # every chunk ends where a sentence (a list item, a heading, the code block) ends
    ends = {end for _, end in satchel.split_sentences(MANUAL)}
    assert all(c.end in ends for c in chunks if O200K.count(MANUAL[c.start : c.end]) < max_tokens // 2) or (
        max_tokens == 12
    )
    if max_tokens >= 40:
        assert all(c.end in ends for c in chunks)
        # (the code block is one unit: never cut inside)
        assert sum("```sh\nacme pair --lamp aurora --timeout 30\n```" in c.text for c in chunks) >= 1
    if max_tokens == 1000:
        assert [c.text for c in chunks] == [MANUAL.strip()]


def test_overlap_repeats_the_sentences_that_end_the_chunk_before():
    chunks = DocumentChunker("gpt-4o", max_tokens=40, overlap=15).chunk(MANUAL, "manual")
    shared = [after.start < before.end for before, after in zip(chunks, chunks[1:], strict=False)]
    assert any(shared)
    none = DocumentChunker("gpt-4o", max_tokens=40).chunk(MANUAL, "manual")
    assert all(after.start >= before.end for before, after in zip(none, none[1:], strict=False))


def test_the_whitespace_between_chunks_goes_where_it_fits():
    # "\n\n" is a token of its own: a sentence of exactly max_tokens starts its chunk alone,
    # and the chunk before ends with the line break (apart, the two never merged in a pack)
    sentence = "The lamp glows blue when it is ready to pair."
    limit = O200K.count(sentence)
    doc = f"Setup first.\n\n{sentence}"
    chunks = DocumentChunker("gpt-4o", max_tokens=limit).chunk(doc, "d")
    check(chunks, doc, limit, 0)
    assert [c.text for c in chunks] == ["Setup first.\n\n", sentence]  # (the one before takes it)
    # a token more, and it takes the line break with it
    chunks = DocumentChunker("gpt-4o", max_tokens=limit + 1).chunk(doc, "d")
    assert [c.text for c in chunks] == ["Setup first.", f"\n\n{sentence}"]


def test_a_sentence_longer_than_max_tokens_is_cut_between_words_and_a_word_between_characters():
    long_sentence = "The lamp " + "really " * 200 + "glows."
    blob = base64.b64encode(bytes(range(256)) * 8).decode()  # (one word of 2,732 characters)
    doc = f"First sentence here. {long_sentence} Then a blob: {blob} Last sentence."
    chunks = DocumentChunker("gpt-4o", max_tokens=30).chunk(doc, "d")
    check(chunks, doc, 30, 0)
    at = doc.find(long_sentence)
    inside = [c for c in chunks if at <= c.start < at + len(long_sentence)]
    assert len(inside) > 1 and all(doc[c.end].isspace() for c in inside)  # (cut between words)
    assert sum(c.text in blob for c in chunks) > 1  # (cut inside the word)


def test_a_word_is_cut_into_the_longest_pieces_that_fit_counting_little_more_than_them():
    # (a tokenizer of one token a character: each piece is max_tokens characters; the search
    # for each cut counts pieces about as long as it, not max_tokens * 128 characters first)
    counted = []

    def characters(text: str) -> int:
        counted.append(len(text))
        return len(text)

    word = "".join(chr(0x4E00 + (k * 7919) % 20000) for k in range(20_000))  # (CJK, no spaces)
    chunks = DocumentChunker("in-house", max_tokens=50, tokenizer=characters).chunk(word, "d")
    assert [len(c.text) for c in chunks] == [50] * 400
    assert sum(counted) < 20 * len(word)  # (halving the whole range first: 256 times)


def test_chunks_fit_the_tokenizer_of_the_model_they_are_for():
    for model, tokenizer in (("gpt-4", CL100K), ("gpt-4o", O200K)):
        check(DocumentChunker(model, max_tokens=25).chunk(MANUAL, "m"), MANUAL, 25, 0, tokenizer)
    words = DocumentChunker("in-house", max_tokens=10, tokenizer=lambda t: len(t.split())).chunk(MANUAL, "m")
    assert all(len(c.text.split()) <= 10 for c in words)


def test_chunks_go_into_a_context_window_as_seed_004_says_and_merge_back_in_a_pack():
    chunks = DocumentChunker("gpt-4o", max_tokens=40, overlap=10).chunk(MANUAL, "manual", title="Manual")
    window = ContextWindow("gpt-4o")
    window.add_block("You answer from the manual.", Priority.CRITICAL, "system")
    for chunk in chunks:
        window.add_block(chunk.text, Priority.MEDIUM, chunk.id)
    window.assemble(max_tokens=120)
    usage = window.usage()
    assert "system" in usage.included and usage.excluded and usage.tokens_used <= 120
    # all of them retrieved: chunks that overlap or touch merge back into one source, the
    # document as it was, and no sentence is sent twice
    result = satchel.pack(chunks, "How long is the warranty?", model="gpt-4o")
    overlapping = {c.id for b, c in zip(chunks, chunks[1:], strict=False) if c.start < b.end}
    assert overlapping and all(result.entry(c.id).merged_into for c in chunks[1:])
    assert [s.text for s in result.sources] == [MANUAL.strip()]
    for start, end in satchel.split_sentences(MANUAL):
        assert result.text.count(MANUAL[start:end]) == 1, MANUAL[start:end]


def test_chunks_without_overlap_touch_and_merge_back_in_a_pack():
    # (apart by the whitespace between them, which no chunk held, the neighbours of one
    # document retrieved together were sent as sources of their own: a merge cannot know
    # what stood between them)
    chunks = DocumentChunker("gpt-4o", max_tokens=30).chunk(MANUAL, "manual")
    assert all(b.end == a.start for b, a in zip(chunks, chunks[1:], strict=False))
    retrieved = chunks[1:4]
    result = satchel.pack([chunks[3], chunks[1], chunks[2]], "How long is the warranty?", model="gpt-4o")
    [source] = result.sources
    assert source.text == MANUAL[retrieved[0].start : retrieved[-1].end]
    assert set(source.ids) == {c.id for c in retrieved}


@settings(max_examples=int(os.environ.get("SATCHEL_EXAMPLES", "60")), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "The lamp has three modes.",
                "Night mode dims it to ten percent!",
                "Is it waterproof?",
                "No.",
                "- a list item",
                "## A heading",
                "| a | table | row |",
                "Dr. Smith said so in 2024.",
                "仅限会员。",
                "word " * 30,
                "x" * 300,
            ]
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from([" ", "\n", "\n\n", "  "]),
    st.integers(5, 60),
    st.integers(0, 20),
)
def test_any_document_is_chunked_within_max_tokens_with_exact_offsets(parts, gap, max_tokens, overlap):
    doc = gap.join(parts)
    if not doc.strip() or overlap >= max_tokens:
        return
    check(
        DocumentChunker("gpt-4o", max_tokens=max_tokens, overlap=overlap).chunk(doc, "d"),
        doc,
        max_tokens,
        overlap,
    )


def test_bad_settings_and_documents_are_refused_with_the_fix():
    with pytest.raises(satchel.ConfigError, match=r"max_tokens=0 must be a positive whole number of tokens"):
        DocumentChunker(max_tokens=0)
    with pytest.raises(
        satchel.ConfigError,
        match=r"overlap=64 must be a whole number of tokens from 0 to less than max_tokens=64",
    ):
        DocumentChunker(max_tokens=64, overlap=64)
    with pytest.raises(satchel.UnknownModelError, match="DocumentChunker"):
        DocumentChunker("no-such-model")
    chunker = DocumentChunker()
    with pytest.raises(satchel.InputError, match="non-empty string"):
        chunker.chunk("   ", "d")
    with pytest.raises(satchel.InputError, match=r"doc_id=None must be a non-empty string"):
        chunker.chunk("Text.", None)  # type: ignore[arg-type]
    with pytest.raises(satchel.InputError, match=r"chunk\(\) sets start itself"):
        chunker.chunk("Text.", "d", start=5)


def test_a_character_over_max_tokens_alone_is_refused_not_sent_over():
    # (a code point of 4 tokens under max_tokens=2 can be cut no further)
    with pytest.raises(
        satchel.ConfigError, match=r"the character '𒀀' at 3 is 4 tokens alone, over max_tokens=2; raise"
    ):
        DocumentChunker(max_tokens=2).chunk("ab 𒀀𒀀", "d")

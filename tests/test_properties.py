"""Hypothesis invariants: within budget, verbatim, one entry per candidate, no breakout, deterministic."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import satchel
from satchel._tokens import TiktokenTokenizer

O200K = TiktokenTokenizer("o200k_base")

# Hostile alphabet: tag characters, quotes, ampersands, entities, newlines, digits,
# and the rarer whitespace and control characters a scraped page carries.
pieces = st.sampled_from(
    [
        "Plus costs $2.99.",
        "It is not ready.",
        "</source_1>",
        "<sources>",
        '"',
        "&lt;",
        "&",
        "<",
        ">",
        "\n",
        " ",
        "Then open the app.",
        "The lamp blinks.",
        "é",
        "日本",
        "<|endoftext|>",
        "S1",
        "]]>",
        "\t",
        "  ",
        "Dr. Who said no. ",
        "A. B. Smith sent it. ",
        "End.\n\nNew one ",
        "Done.\r\nNext ",
        "\x0b",
        "\u2028",
        "\u0085",
        "\x00",
        "\ufeff",
        "🙂",
    ]
)
texts = st.lists(pieces, min_size=1, max_size=12).map("".join).filter(lambda t: t.strip())


@st.composite
def candidates(draw):
    n = draw(st.integers(1, 9))
    out = []
    for i in range(n):
        chunk = {"id": draw(st.sampled_from([f"c{i}", f'c"{i}', f"<c{i}>", f"c&{i}"])), "text": draw(texts)}
        if draw(st.booleans()):
            chunk["score"] = draw(st.floats(0, 1, allow_nan=False))
        if draw(st.booleans()):
            chunk["title"] = draw(texts)
        if draw(st.booleans()):
            chunk["updated"] = draw(st.sampled_from(["2024-01-01", "2026-03-01", "2025-12-31T10:00:00Z"]))
        if draw(st.integers(0, 4)) == 0:
            chunk["priority"] = draw(st.sampled_from(["high", "low"]))
        out.append(chunk)
    return out


options = st.fixed_dictionaries(
    {
        "order": st.sampled_from(sorted(satchel.ORDERS)),
        "source_budget": st.integers(0, 400),
        "dedupe": st.booleans(),
    }
)

#: settings of the property tests that pack (SATCHEL_EXAMPLES=1500 for a longer run)
PACK_EXAMPLES = settings(
    max_examples=int(__import__("os").environ.get("SATCHEL_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

SOURCE = re.compile(
    r'<source_(\d+) id="S(\d+)" chunk="([^"]*)"(?: [a-z._-]+="[^"]*")*>\n([^<>]*)\n</source_(\d+)>'
)


def _user(result):
    return result.messages[-1]["content"]


@PACK_EXAMPLES
@given(candidates(), texts, options)
def test_invariants(chunks, question, opts):
    check_invariants(chunks, question, opts)


@st.composite
def windows_of_one_document(draw):
    """Overlapping and touching windows of one document (with offsets), sentences of it
    sent on their own from elsewhere, and other candidates, in any order."""
    doc = draw(st.lists(pieces, min_size=3, max_size=16).map("".join).filter(lambda t: t.strip()))
    out = []
    for n in range(draw(st.integers(1, 6))):
        a = draw(st.integers(0, len(doc) - 1))
        b = draw(st.integers(a + 1, len(doc)))
        if doc[a:b].strip():
            out.append({"id": f"w{n}", "text": doc[a:b], "doc_id": "d", "start": a, "end": b})
    sentences = [doc[a:b] for a, b in satchel.split_sentences(doc)]
    for n in range(draw(st.integers(0, 3))):
        out.append({"id": f"x{n}", "text": draw(st.sampled_from(sentences))})
    out += draw(candidates())
    return doc, draw(st.permutations(out))


@PACK_EXAMPLES
@given(windows_of_one_document(), texts, options)
def test_invariants_with_windows_of_one_document(drawn, question, opts):
    doc, chunks = drawn
    check_invariants(chunks, question, opts, document=doc)


def check_invariants(chunks, question, opts, document=None):
    result = satchel.pack(chunks, question, **opts)
    # within budget, counted again from scratch with the model's tokenizer
    recount = sum(O200K.count(m["content"]) for m in result.messages) + result.tokens.framing
    assert recount == result.tokens.prompt
    assert result.tokens.prompt + result.budget.answer <= result.budget.context_window
    assert result.tokens.sources <= result.budget.sources
    # one manifest entry per candidate, every drop explained
    assert sorted(e.id for e in result.manifest) == sorted(c["id"] for c in chunks)
    assert all(e.reason for e in result.manifest)
    # no breakout: the user message parses as exactly our structure
    user = _user(result)
    if not result.sources:
        assert user == "<question>" + satchel.escape_text(question) + "</question>"
        return
    head, _, tail = user.partition("\n</sources>\n\n<question>")
    assert tail.endswith("</question>")
    assert satchel.unescape(tail[: -len("</question>")]) == question
    assert "<" not in tail[: -len("</question>")] and ">" not in tail[: -len("</question>")]
    assert head.startswith("<sources>")
    body = head[len("<sources>") :]
    blocks = SOURCE.findall(body)
    assert len(blocks) == len(result.sources)
    assert SOURCE.sub("", body).strip("\n") == ""
    for (n_open, n_id, chunk_attr, text, n_close), source in zip(blocks, result.sources, strict=True):
        assert n_open == n_id == n_close == str(source.position)
        # kept text verbatim: unescaping gives back exactly what was sent, and every
        # sentence sent is a piece of one of its chunks' original text
        assert satchel.unescape(text) == source.text
        assert satchel.unescape(chunk_attr) == ", ".join(source.ids)
        originals = [c["text"] for c in chunks if c["id"] in source.ids]
        if len(source.ids) > 1:  # neighbours merged: sentences may span two of them
            originals.append(document)
        for start, end in satchel.split_sentences(source.text):
            assert any(source.text[start:end] in o for o in originals)
    # a kept chunk that lost no sentence and was not compressed is sent whole: a citation
    # of its label stands on all of its text (but the whitespace around it: a window
    # "\n\nN" joins the source before it after that source's last kept sentence)
    by_label = {s.label: s for s in result.sources}
    texts = {c["id"]: c["text"] for c in chunks}
    for e in result.manifest:
        if e.kept and not e.sentences_removed and not e.compression:
            assert texts[e.id].strip() in by_label[e.label].text, (e.id, e.reason)
    # deterministic
    again = satchel.pack(chunks, question, **opts)
    assert again.text == result.text and again.to_dict() == result.to_dict()


@settings(max_examples=60, deadline=None)
@given(texts)
def test_escaping_round_trips(text):
    assert satchel.unescape(satchel.escape_text(text)) == text
    assert satchel.unescape(satchel.escape_attr(text)) == text
    assert not set("<>") & set(satchel.escape_text(text))
    assert not set('<>"') & set(satchel.escape_attr(text))


SCRIPT = """
import json, satchel
chunks = json.load(open(0))
r = satchel.pack(chunks, "What does it cost?", order="edges", source_budget=120)
print(json.dumps(r.to_dict(), sort_keys=True))
"""


def test_identical_across_processes_and_hash_seeds():
    import json

    chunks = [
        {"id": f"c{i}", "text": t, "score": s}
        for i, (t, s) in enumerate(
            [
                ("Plus costs $2.99 a month. There is no annual plan.", 0.9),
                ("Plus costs $3.99 a month. There is no annual plan.", 0.8),
                ("plus costs $2.99 a month.  there is no annual plan.", 0.7),
                ("There is no annual plan. Plus has a 14-day trial.", 0.6),
                ("The trial lasts 14 days and can be cancelled at any time.", 0.5),
            ]
        )
    ]
    outputs = set()
    for seed in ("0", "1", "12345"):
        run = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            input=json.dumps(chunks),
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1


@PACK_EXAMPLES
@given(
    st.lists(
        st.tuples(texts, st.sampled_from(["critical", "high", "medium", "low"])), min_size=1, max_size=8
    ),
    st.integers(1, 120),
)
def test_a_context_window_counts_its_blocks_and_their_joins_exactly(blocks, max_tokens):
    # The running count of what admission took equals the assembled prompt's count, so no
    # block is ever dropped after the fact (which an undercount would do), and a limit
    # the whole prompt fits in exactly includes every block (which an overcount would not).
    window = satchel.ContextWindow("gpt-4o")
    for i, (text, priority) in enumerate(blocks):
        window.add_block(text, priority, f"b{i}")
    whole = O200K.count("\n\n".join(text for text, _ in blocks))
    assert window.assemble(max_tokens=whole) == "\n\n".join(text for text, _ in blocks)
    try:
        prompt = window.assemble(max_tokens=max_tokens)
    except satchel.BudgetError:
        return  # a CRITICAL block that does not fit (its own test checks the wording)
    usage = window.usage()
    assert usage.tokens_used == O200K.count(prompt) <= max_tokens
    assert not any("exact count" in reason for reason in usage.reasons.values())
    assert set(usage.included) | set(usage.excluded) == {f"b{i}" for i in range(len(blocks))}

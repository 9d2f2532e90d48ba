"""The benchmarks' candidate builder (bench/_data.py) on real nq-open-oracle records.

Needs ../shared/data (or $SATCHEL_DATA); skipped with the missing path named when absent.
"""

from __future__ import annotations

import pytest

from bench import _data

RECORDS = (0, 1, 2)


@pytest.fixture(scope="module")
def index() -> _data.NQIndex:
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"benchmark data not found: {path} (set SATCHEL_DATA)")
    return _data.nq_index()


def test_offsets_exact_ids_unique_gold_contains_answer(index: _data.NQIndex) -> None:
    for i in RECORDS:
        record = index.records[i]
        paragraph = record["nq_annotated_gold"]["long_answer"]
        cands, gold = _data.build_candidates(i, index, k_distractors=15)
        ids = [c["id"] for c in cands]
        assert len(ids) == len(set(ids))
        assert len(cands) >= 15
        own = [c for c in cands if c.get("doc_id") == f"nq{i}"]
        assert own, "the gold paragraph's windows are candidates"
        for c in own:
            assert c["text"] == paragraph[c["start"] : c["end"]]
        for c in cands:
            if "start" in c:  # distractor windows of other records are exact slices too
                rec = index.records[int(c["doc_id"][2:])]
                assert c["text"] == rec["nq_annotated_gold"]["long_answer"][c["start"] : c["end"]]
            assert isinstance(c["score"], float)
        assert all(c.get("doc_id") != f"nq{i}" for c in cands if not c["id"].startswith(f"nq{i}#w"))
        assert not any(c["id"] == f"nq{i}#ctx" for c in cands), "own ctxs passage is not a distractor"
        assert gold, f"record {i}: some gold window holds an answer"
        by_id = {c["id"]: c for c in cands}
        for gid in gold:
            assert gid.startswith(f"nq{i}#w")
            assert _data.answer_in(by_id[gid]["text"], record["answers"])
        scores = [c["score"] for c in cands]
        assert scores == sorted(scores, reverse=True)


def test_deterministic(index: _data.NQIndex) -> None:
    again = _data.nq_index(index.records)
    for i in RECORDS:
        assert _data.build_candidates(i, index) == _data.build_candidates(i, again)


def test_candidates_pack() -> None:
    import satchel

    cands = [
        {"id": "a", "text": "The first Nobel Prize in Physics went to Wilhelm Conrad Röntgen.", "score": 1.0}
    ]
    result = satchel.pack(cands, "who got the first nobel prize in physics", source_budget=200)
    assert _data.answer_in(satchel.unescape(result.messages[-1]["content"]), ["Wilhelm Conrad Röntgen"])


def test_answer_in_and_windows() -> None:
    assert _data.answer_in(
        "It was awarded to Wilhelm Conrad Röntgen, of Germany.", ["wilhelm conrad röntgen"]
    )
    assert _data.answer_in("The Beatles' album", ["Beatles"])
    assert not _data.answer_in("in 19012", ["1901"])
    assert not _data.answer_in("anything", ["the"])  # normalises to nothing
    text = "  one two   three four five six seven "
    spans = _data.windows(text, size=3, stride=2)
    assert [text[s:e] for s, e in spans] == ["one two   three", "three four five", "five six seven"]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
def test_the_speed_benchmarks_candidates_pack_to_their_exact_count(model: str) -> None:
    # 1,000 real windows with heavy sentence reuse: admission counts texts as the
    # sums of their sentences and stripped texts from what they keep; recounting
    # every message from scratch must give the same total.
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"benchmark data not found: {path} (set SATCHEL_DATA)")
    import satchel
    from bench.speed import build

    cands, _ = build(1000, _data.load_nq())
    result = satchel.pack(cands, "who got the first nobel prize in physics", model=model, order="edges")
    count = satchel.Packer(model=model).count.tokenizer.count
    profile = satchel.Packer(model=model).profile
    framing = profile.message_overhead * len(result.messages) + profile.reply_overhead
    assert sum(count(m["content"]) for m in result.messages) + framing == result.tokens.prompt
    assert result.tokens.prompt <= result.budget.prompt_limit
    assert sum(e.sentences_removed for e in result.manifest) > 100  # the stripped texts were exercised


def test_peers_bench_skips_a_missing_peer_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs without the peer libraries: a peer whose import fails is a skipped row, not a crash.
    from bench import peers

    def missing() -> peers.Row:
        raise ModuleNotFoundError("No module named 'haystack'", name="haystack")

    monkeypatch.setitem(peers.ROWS, "haystack-litm", missing)
    rows, skipped = peers.load(["satchel", "haystack-litm"])
    assert list(rows) == ["satchel"]
    assert "haystack-ai" in skipped["haystack-litm"] and peers.INSTALL_HINT in skipped["haystack-litm"]
    assert [peers.position(i, 3) for i in range(3)] == ["first", "middle", "last"]
    assert peers.position(0, 1) == "first"
    assert peers.words_for(200) == 150


def test_the_fill_loop_keeps_to_the_budget_and_render_counts_what_it_sends() -> None:
    import satchel
    from bench import evidence

    chunks = [
        satchel.Chunk(id=f"c{i}", text=f"Sentence {i} is about the river Thames. " * (i + 1))
        for i in range(8)
    ]
    kept = evidence.fill(chunks, "which river?", 120)
    text, tokens = evidence.render(kept, "which river?")
    assert 0 < tokens <= 120 and len(kept) < len(chunks)
    assert text.count("<source_") == len(kept)

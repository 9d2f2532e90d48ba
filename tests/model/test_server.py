"""OpenAIClient end to end against a real OpenAI-compatible server on loopback:
``python -m llama_cpp.server`` serving the SmolLM2 GGUF file (see conftest.py)."""

from __future__ import annotations

import pytest

import satchel
from satchel.clients import DEFAULT_LOCAL_MODEL, OpenAIClient, client_from_spec

pytestmark = pytest.mark.model

CANDIDATES = [
    {
        "id": "returns#1",
        "text": "You can return any product within 30 days of delivery.",
        "score": 0.9,
        "title": "Returns and refunds",
        "section": "How long you have",
    },
    {
        "id": "refunds#1",
        "text": "We refund the full price within 5 business days.",
        "score": 0.8,
        "title": "Returns and refunds",
        "section": "Refunds",
    },
    {"id": "ship#1", "text": "Orders ship from Rotterdam in two days.", "score": 0.5, "title": "Shipping"},
]
QUESTION = "How long do I have to return a lamp?"


@pytest.fixture
def packed(local_client):
    # local_client registered the model, so the pack is budgeted in the served model's own tokens
    return satchel.pack(CANDIDATES, QUESTION, model=DEFAULT_LOCAL_MODEL, reserve_answer=32)


def test_a_pack_is_answered_and_cited(llama_server, server_key, packed, local_client):
    with client_from_spec("openai:smollm2", base_url=llama_server.base_url) as client:
        answer = client.complete(packed.chat_messages(), max_tokens=32)
    assert answer.text.strip()
    assert answer.prompt_tokens is not None and answer.completion_tokens is not None
    assert 0 < answer.completion_tokens <= 32
    assert answer.finish_reason in ("stop", "length")
    # the server reads exactly the templated prompt, and Satchel's budget covers it
    assert answer.prompt_tokens == local_client.prompt_tokens(packed.chat_messages())
    assert answer.prompt_tokens <= packed.tokens.prompt
    citations = satchel.cite(answer, packed)
    assert set(citations.cited_labels) | set(citations.uncited_labels) == set(packed.labels)
    assert not set(citations.unknown_labels) & set(packed.labels)
    assert [r.chunk_id for r in citations.references] == list(citations.cited_ids)


def test_a_prompt_the_server_calls_too_long(llama_server, server_key):
    huge = [{"role": "user", "content": " ".join(f"word{i}" for i in range(3000))}]
    with OpenAIClient("smollm2", base_url=llama_server.base_url) as client:
        with pytest.raises(
            satchel.ModelError,
            match=r"the prompt is too long for model 'smollm2'.*"
            r"maximum context length is 2048 tokens",
        ):
            client.complete(huge, max_tokens=8)


def test_a_missing_key_names_the_variable(llama_server, monkeypatch):
    monkeypatch.delenv("SATCHEL_TEST_NO_KEY", raising=False)
    with OpenAIClient("smollm2", base_url=llama_server.base_url, api_key_env="SATCHEL_TEST_NO_KEY") as client:
        with pytest.raises(
            satchel.ModelError, match="no API key was sent: set the environment variable SATCHEL_TEST_NO_KEY"
        ):
            client.complete([{"role": "user", "content": "Hi"}], max_tokens=4)


def test_a_wrong_key_names_the_variable(llama_server, monkeypatch):
    monkeypatch.setenv("SATCHEL_TEST_BAD_KEY", "not-the-key")
    with OpenAIClient(
        "smollm2", base_url=llama_server.base_url, api_key_env="SATCHEL_TEST_BAD_KEY"
    ) as client:
        with pytest.raises(
            satchel.ModelError, match=r"rejected the API key from SATCHEL_TEST_BAD_KEY \(HTTP 401\)"
        ):
            client.complete([{"role": "user", "content": "Hi"}], max_tokens=4)


def test_a_base_url_without_v1_is_reported(llama_server, server_key):
    root = llama_server.base_url.removesuffix("/v1")
    with OpenAIClient("smollm2", base_url=root) as client:
        with pytest.raises(
            satchel.ModelError,
            match=r"no chat-completions endpoint at .*/chat/completions "
            r"\(HTTP 404\): check base_url, which usually ends in /v1",
        ):
            client.complete([{"role": "user", "content": "Hi"}], max_tokens=4)


def test_a_stopped_server_is_a_connection_error(server_key):
    # A loopback port nobody listens on: the client retries, then says what to check.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    with OpenAIClient(
        "smollm2", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, sleep=sleeps.append
    ) as client:
        with pytest.raises(
            satchel.ModelError, match=r"after 3 attempt\(s\); check that the server is running"
        ):
            client.complete([{"role": "user", "content": "Hi"}], max_tokens=4)
    assert len(sleeps) == 2

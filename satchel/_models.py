"""What Satchel knows about models: context window, tokenizer and chat framing.

The registry maps a model name to a :class:`ModelProfile`. Dated snapshots
(``gpt-4o-2024-08-06``) resolve to their family by the longest registered prefix.
``register_model`` adds or replaces an entry, for a private deployment or a local
model.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ._errors import ConfigError, UnknownModelError
from ._tokens import Tokenizer, resolve_tokenizer

__all__ = ["ModelProfile", "get_model", "known_models", "register_model"]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model's window and how its chat format costs tokens.

    ``message_overhead`` is what the chat format adds around each message's
    content and ``reply_overhead`` what it adds to prime the answer; both count
    against the window. ``tokenizer`` is an encoding name, a tokenizer.json path,
    or a callable (see :func:`satchel.resolve_tokenizer`). ``input_limit`` is the most
    tokens the model's API takes as input, where that is less than the window less
    the answer (None: the whole window is input or output).
    """

    name: str
    context_window: int
    tokenizer: Any
    message_overhead: int = 0
    reply_overhead: int = 0
    input_limit: int | None = None


# OpenAI's chat format costs 4 tokens per message: 3 for <|start|>, <|message|> and
# <|end|>, and 1 for the role's name (system, user, assistant and tool are one token each
# in both encodings; tests/test_tokens.py checks), and 3 to prime the reply
# (<|start|>assistant<|message|>), as OpenAI's counting guide (the cookbook's
# num_tokens_from_messages) counts them: 3 per message plus the encoded role.
_ROLE_TOKENS = 1


def _openai(
    name: str, window: int, encoding: str = "o200k_base", input_limit: int | None = None
) -> ModelProfile:
    return ModelProfile(
        name, window, encoding, message_overhead=3 + _ROLE_TOKENS, reply_overhead=3, input_limit=input_limit
    )


#: The GPT-5 models' window is 400,000 tokens, of which their API takes at most 272,000 as
#: input ("Input tokens exceed the configured limit of 272000 tokens"): the other 128,000
#: are kept for their output, reasoning included. A prompt packed to the window was refused.
_GPT5_INPUT = 272_000


_REGISTRY: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        _openai("gpt-4o", 128_000),
        _openai("gpt-4o-mini", 128_000),
        _openai("chatgpt-4o-latest", 128_000),
        _openai("gpt-4.1", 1_047_576),
        _openai("gpt-4.1-mini", 1_047_576),
        _openai("gpt-4.1-nano", 1_047_576),
        _openai("gpt-4.5-preview", 128_000),
        _openai("gpt-5", 400_000, input_limit=_GPT5_INPUT),
        _openai("gpt-5-mini", 400_000, input_limit=_GPT5_INPUT),
        _openai("gpt-5-nano", 400_000, input_limit=_GPT5_INPUT),
        _openai("o1", 200_000),
        _openai("o1-mini", 128_000),
        _openai("o1-preview", 128_000),
        _openai("o3", 200_000),
        _openai("o3-mini", 200_000),
        _openai("o4-mini", 200_000),
        _openai("gpt-4-turbo", 128_000, "cl100k_base"),
        _openai("gpt-4", 8_192, "cl100k_base"),
        _openai("gpt-4-32k", 32_768, "cl100k_base"),
        _openai("gpt-3.5-turbo", 16_385, "cl100k_base"),
        _openai("gpt-3.5-turbo-16k", 16_385, "cl100k_base"),  # (and -16k-0613)
        # Snapshots whose window is not their family's: by the prefix alone, the early
        # gpt-3.5-turbo ones would get 16,385 tokens of a window of 4,096 (a prompt that
        # overflows), and the gpt-4 previews 8,192 of 128,000. (-instruct is a completions
        # model: the chat framing counted is more than its prompt carries.)
        *(
            _openai(name, 4_096, "cl100k_base")
            for name in ("gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613", "gpt-3.5-turbo-instruct")
        ),
        *(
            _openai(name, 128_000, "cl100k_base")
            for name in (
                "gpt-4-1106-preview",
                "gpt-4-0125-preview",
                "gpt-4-turbo-preview",
                "gpt-4-vision-preview",
                "gpt-4-1106-vision-preview",
            )
        ),
    )
}


def register_model(profile: ModelProfile) -> None:
    """Add or replace a model in the registry."""
    if not isinstance(profile, ModelProfile):
        raise ConfigError(f"register_model needs a ModelProfile, got {type(profile).__name__}")
    if not isinstance(profile.name, str) or not profile.name:
        raise ConfigError(f"ModelProfile name={profile.name!r} must be a non-empty model name")
    for name in ("context_window", "input_limit", "message_overhead", "reply_overhead"):
        value = getattr(profile, name)
        if name == "input_limit" and value is None:
            continue
        least = 1 if name in ("context_window", "input_limit") else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            # (checked here, not at the first pack, whose error named an option never passed)
            raise ConfigError(
                f"model {profile.name!r}: {name}={value!r} must be a "
                + ("positive" if least else "non-negative")
                + " whole number of tokens"
                + (" or None (the whole window)" if name == "input_limit" else "")
            )
    if profile.input_limit is not None and profile.input_limit > profile.context_window:
        raise ConfigError(
            f"model {profile.name!r}: input_limit={profile.input_limit} is more than its "
            f"context_window={profile.context_window}; give at most the window (or None)"
        )
    _REGISTRY[profile.name] = profile


def known_models() -> list[str]:
    """Registered model names, sorted."""
    return sorted(_REGISTRY)


#: how pack() is told of a model the registry does not know (ContextWindow has its own)
_PACK_ADVICE = (
    "or pass context_window= and tokenizer= for this one (--context-window and --tokenizer "
    "on the command line), or register it with satchel.register_model(satchel.ModelProfile(...))"
)


def get_model(name: str, advice: str = _PACK_ADVICE) -> ModelProfile:
    """The profile of ``name``, or of its longest registered prefix (dated snapshots);
    ``advice``: what the error for an unknown one says to do besides using a known one."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"model={name!r} must be a model name such as 'gpt-4o'")
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name.startswith("ft:") and name.count(":") >= 2:
        # OpenAI's fine-tuned models, "ft:gpt-4o-mini-2024-07-18:org::id": the base model's
        # window and tokenizer
        try:
            return get_model(name.split(":", 2)[1], advice)
        except ConfigError:
            pass  # (an unknown base: the error names the model as given)
    for length in range(len(name) - 1, 0, -1):
        prefix = name[:length]
        if prefix in _REGISTRY and name[length] in "-:@":
            return _REGISTRY[prefix]
    # (names are compared as written, as the model APIs do; "GPT-4o" is close to nothing
    # by difflib's measure, which counts case)
    close = close_models(name, 3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise UnknownModelError(
        f"unknown model {name!r}.{hint} Either use a known model (satchel.known_models()), {advice}"
    )


def close_models(name: str, n: int) -> list[str]:
    """Up to ``n`` registered names close to ``name`` (a typo: "gpt4o", "GPT-4o"), closest first."""
    lowered = {known.lower(): known for known in _REGISTRY}
    return [lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=n)]


def tokenizer_for(
    model: str, tokenizer: Any, caller: str, limit: str = ""
) -> tuple[Tokenizer, ModelProfile | None]:
    """What a counter of ``model`` that is no pack (``caller``: ``ContextWindow``,
    ``DocumentChunker``) counts with: ``tokenizer`` as given (see resolve_tokenizer), else
    the model's own; and the model's profile (its window and input limit), None for a
    model Satchel does not know (only with a tokenizer given). ``limit``: where the
    caller's own limit is set, for the error's advice (pack's names context_window=,
    which these have none of)."""
    advice = (
        f"or give its tokenizer: {caller}({model!r}, tokenizer='o200k_base' or a "
        f"tokenizer.json path or a callable){limit}"
    )
    try:
        profile = get_model(model, advice)
    except ConfigError:
        if tokenizer is None:
            raise
        return resolve_tokenizer(tokenizer, None, model), None  # (for a model Satchel does not know)
    given = profile.tokenizer if tokenizer is None else tokenizer
    return resolve_tokenizer(given, None, model), profile

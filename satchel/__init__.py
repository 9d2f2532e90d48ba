"""Satchel packs retrieved evidence into an LLM prompt.

Within a hard token budget it decides which candidates enter the prompt, in what
form, in what order and under what labels, and records what it did with every
one of them in a manifest::

    import satchel
    result = satchel.pack(chunks, "How long do I have to return a lamp?", model="gpt-4o")
    result.messages   # ({"role": "system", ...}, {"role": "user", ...}): a tuple
    result.labels     # {"S1": "returns-policy#1", ...}
    result.manifest   # one entry per candidate: kept or dropped, and why
"""

from ._budget import Budget
from ._chunk import ROLES, Chunk, Priority
from ._errors import (
    BudgetError,
    ConfigError,
    InputError,
    ModelError,
    PackError,
    TokenizerError,
    UnknownModelError,
)
from ._manifest import ManifestEntry, PackedSource, PackResult, TokenUsage
from ._models import ModelProfile, get_model, known_models, register_model
from ._order import ORDERS
from ._pack import Packer, pack
from ._render import DEFAULT_SYSTEM
from ._render import public_escape_attr as escape_attr
from ._render import public_escape_text as escape_text
from ._render import public_unescape as unescape
from ._roles import DEFAULT_ROLE_CAPS, EVIDENCE_POLICY, RoleRule
from ._sentences import split_sentences
from ._tokens import TokenCounter, Tokenizer, resolve_tokenizer
from .chunking import DocumentChunker
from .citations import Citations, cite
from .window import ContextWindow, WindowUsage

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ROLE_CAPS",
    "DEFAULT_SYSTEM",
    "EVIDENCE_POLICY",
    "ORDERS",
    "ROLES",
    "Budget",
    "BudgetError",
    "Chunk",
    "Citations",
    "ConfigError",
    "ContextWindow",
    "DocumentChunker",
    "InputError",
    "ManifestEntry",
    "ModelError",
    "ModelProfile",
    "PackError",
    "PackResult",
    "PackedSource",
    "Packer",
    "Priority",
    "RoleRule",
    "TokenCounter",
    "TokenUsage",
    "Tokenizer",
    "TokenizerError",
    "UnknownModelError",
    "WindowUsage",
    "cite",
    "escape_attr",
    "escape_text",
    "get_model",
    "known_models",
    "pack",
    "register_model",
    "resolve_tokenizer",
    "split_sentences",
    "unescape",
]

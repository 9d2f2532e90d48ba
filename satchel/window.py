"""Seed 004's priority window, on the same engine as :func:`satchel.pack`.

::

    window = ContextWindow("gpt-4o")
    window.add_block("You are an expert Python developer.", Priority.CRITICAL, "system")
    window.add_block("How do I implement a binary search tree?", Priority.HIGH, "query")
    prompt = window.assemble(max_tokens=8000)
    window.usage()  # included and excluded ids, tokens_used

Blocks are admitted by priority (CRITICAL first), in the order they were added
within a tier, skipping what does not fit; the included blocks are joined in
the order they were added. Unlike the library seed 004 describes, a CRITICAL
block that cannot fit raises :class:`satchel.BudgetError` instead of being
dropped silently. ``tokens_used`` is counted on the assembled text itself, so
the separators between blocks are included and the limit holds exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._admit import Admission, admit, drop_weakest
from ._chunk import Chunk, Priority, as_priority, check_utf8
from ._errors import ConfigError, InputError
from ._models import get_model
from ._pack import rank_candidates
from ._tokens import TokenCounter, resolve_tokenizer

__all__ = ["ContextWindow", "WindowUsage"]

#: What joins the included blocks into one prompt.
SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class WindowUsage:
    """The outcome of the last :meth:`ContextWindow.assemble`."""

    included: tuple[str, ...]
    excluded: tuple[str, ...]
    tokens_used: int
    max_tokens: int
    reasons: dict[str, str]

    @property
    def tokens_left(self) -> int:
        return self.max_tokens - self.tokens_used


class ContextWindow:
    """Blocks with priorities packed into a token limit."""

    def __init__(self, model: str = "gpt-4o", *, tokenizer: Any = None) -> None:
        if tokenizer is None:
            profile = get_model(model)
            tokenizer = profile.tokenizer
        self.model = model
        self._count = TokenCounter(resolve_tokenizer(tokenizer, None, model))
        self._blocks: dict[str, Chunk] = {}  # by id, in the order added
        self._usage: WindowUsage | None = None

    def add_block(
        self, text: str, priority: Priority | int | str = Priority.MEDIUM, id: str | None = None
    ) -> None:
        """Add a block; ``id`` defaults to ``block_N`` and must be unique."""
        block_id = id if id is not None else f"block_{len(self._blocks)}"
        # Checked here, so that errors name a block (the Chunk underneath names a candidate).
        if not isinstance(block_id, str) or not block_id.strip():
            raise InputError(
                f"block id must be a non-empty string, got {block_id!r}; give each block a unique "
                "string id such as 'system' (or leave it out for block_N)"
            )
        check_utf8(block_id, f"block id {block_id!r}")
        if block_id in self._blocks:
            raise InputError(f"block id {block_id!r} is already used; give each block a unique id")
        if not isinstance(text, str) or not text.strip():
            raise InputError(
                f"block {block_id!r}: text must be a non-empty string, got {text!r:.40}; "
                "leave empty blocks out (they would only cost a separator)"
            )
        check_utf8(text, f"block {block_id!r}: text")
        level = as_priority(priority, block_id, "block")
        self._blocks[block_id] = Chunk(id=block_id, text=text, priority=level, rank=len(self._blocks))

    @property
    def blocks(self) -> Sequence[Chunk]:
        return tuple(self._blocks.values())

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def assemble(self, max_tokens: int) -> str:
        """Admit blocks by priority within ``max_tokens`` and join the included ones in added order."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"max_tokens={max_tokens!r} must be a positive whole number of tokens")
        count = self._count
        sep = count(SEPARATOR)

        def cost(members: Sequence[Chunk], text: str, label: int) -> int:
            # Every block but the first is preceded by a separator; charging each
            # one a separator errs on the safe side by one separator at most.
            return count(text) + (sep if label > 1 else 0)

        admission = admit(
            rank_candidates(list(self._blocks.values())),
            max_tokens,
            cost,
            sentences=False,
            neighbours=False,
            text_tokens=count,
            names=("block", "budget (max_tokens)"),
        )
        while True:
            included = [b for b in self._blocks.values() if _kept(admission, b.id)]
            prompt = SEPARATOR.join(b.text for b in included)
            used = count(prompt)
            if used <= max_tokens:
                break
            drop_weakest(admission, used - max_tokens)
        self._usage = WindowUsage(
            included=tuple(b.id for b in included),
            excluded=tuple(b.id for b in self._blocks.values() if not _kept(admission, b.id)),
            tokens_used=used,
            max_tokens=max_tokens,
            reasons={k: d.reason for k, d in admission.decisions.items()},
        )
        return prompt

    def usage(self) -> WindowUsage:
        """Included and excluded ids and tokens used, from the last :meth:`assemble`."""
        if self._usage is None:
            raise ConfigError("usage() is known only after assemble(max_tokens=...) has run")
        return self._usage


def _kept(admission: Admission, block_id: str) -> bool:
    return admission.decisions[block_id].status == "kept"

"""Seed 004's priority window, on the same engine as :func:`satchel.pack`.

::

    window = ContextWindow("gpt-4o")
    window.add_block("You are an expert Python developer.", Priority.CRITICAL, "system")
    window.add_block("How do I implement a binary search tree?", Priority.HIGH, "query")
    prompt = window.assemble(max_tokens=8000)
    window.usage()  # included and excluded ids, tokens_used

Blocks are admitted by priority (CRITICAL first), in the order they were added
within a tier, skipping what does not fit; the included blocks are joined in
the order they were added (seed 004 sorts them by priority first, which would put a
HIGH question added last before the MEDIUM documents it asks about; seed 001 puts
the question last). As seed 004 says, a CRITICAL block that cannot fit raises
(:class:`satchel.BudgetError`) rather than being dropped silently. Each block is
charged what it adds where it goes: its text and the separators' joins with the
blocks around it (".\n\n" is one token), so a block that fits is never left out
for a separator counted apart. ``tokens_used`` is counted on the assembled text
itself, and the limit holds exactly.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._admit import Decision, _no_room
from ._chunk import Chunk, Priority, _whole, as_priority, check_utf8
from ._errors import BudgetError, ConfigError, InputError
from ._models import tokenizer_for
from ._pack import rank_candidates
from ._tokens import TokenCounter

__all__ = ["BlockIds", "ContextWindow", "WindowUsage"]

#: What joins the included blocks into one prompt.
SEPARATOR = "\n\n"
#: What errors call a block and the budget
_NAMES = ("block", "budget (max_tokens)")


class BlockIds(tuple[str, ...]):
    """Block ids, a tuple that prints as seed 004 shows them: ``system, query, rag_0``
    (its usage prints ``f"Included: {stats.included} blocks"``, which showed a tuple's
    brackets and quotes)."""

    __slots__ = ()

    def __str__(self) -> str:
        return ", ".join(self)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


@dataclass(frozen=True, slots=True)
class WindowUsage:
    """The outcome of the last :meth:`ContextWindow.assemble`."""

    included: BlockIds
    excluded: BlockIds
    tokens_used: int
    max_tokens: int
    reasons: dict[str, str]

    @property
    def tokens_left(self) -> int:
        return self.max_tokens - self.tokens_used


#: why usage() has nothing to give (ContextWindow._no_usage)
_NOT_ASSEMBLED = "usage() is known only after assemble(max_tokens=...) has run"
_ASSEMBLE_FAILED = (
    "usage() is known only after an assemble() that succeeds; the last one raised (see its error)"
)
_BLOCK_ADDED = (
    "usage() describes the blocks of the last assemble(), and a block was added since; call "
    "assemble(max_tokens=...) again"
)


class ContextWindow:
    """Blocks with priorities packed into a token limit."""

    def __init__(self, model: str = "gpt-4o", *, tokenizer: Any = None) -> None:
        counter, self._profile = tokenizer_for(
            model, tokenizer, "ContextWindow", "; the limit is assemble(max_tokens=...)"
        )
        self.model = model
        self._count = TokenCounter(counter)
        self._blocks: dict[str, Chunk] = {}  # by id, in the order added
        self._usage: WindowUsage | None = None
        self._no_usage = _NOT_ASSEMBLED  # why usage() has none to give, while it has none

    def add_block(
        self, text: str, priority: Priority | int | str = Priority.MEDIUM, id: str | None = None
    ) -> None:
        """Add a block; ``id`` must be unique, and defaults to ``block_N``, N the number of
        blocks added before (or the first N after it that no block has taken)."""
        block_id = id
        if block_id is None:
            n = len(self._blocks)
            while f"block_{n}" in self._blocks:  # (a block given that id by hand)
                n += 1
            block_id = f"block_{n}"
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
        if self._usage is not None:  # (it no longer describes the blocks: the new one was nowhere)
            self._usage, self._no_usage = None, _BLOCK_ADDED

    @property
    def blocks(self) -> Sequence[Chunk]:
        return tuple(self._blocks.values())

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def assemble(self, max_tokens: int) -> str:
        """Admit blocks by priority within ``max_tokens`` and join the included ones in added order."""
        self._usage = None  # (a failed assemble leaves no usage of an earlier one behind)
        self._no_usage = _ASSEMBLE_FAILED  # (until it returns)
        whole = _whole(max_tokens)  # (8000.0 or a numpy int is 8000)
        if whole is None or whole <= 0:
            raise ConfigError(f"max_tokens={max_tokens!r} must be a positive whole number of tokens")
        profile = self._profile
        if profile is not None and whole > profile.context_window:
            # (a prompt assembled to such a limit may hold more than the model reads)
            window = profile.context_window
            raise ConfigError(
                f"max_tokens={max_tokens!r} is more than the {window} tokens of {self.model}'s "
                f"context window; pass at most {window}, less what the answer needs "
                f"(for a 2,000-token answer, max_tokens={window - 2000})"
            )
        if profile is not None and profile.input_limit is not None and whole > profile.input_limit:
            # (gpt-5's API refuses a prompt past it, though its window is larger)
            raise ConfigError(
                f"max_tokens={max_tokens!r} is more than the {profile.input_limit} input tokens "
                f"{self.model} takes (its window of {profile.context_window} keeps the rest for its "
                f"output); pass at most {profile.input_limit}"
            )
        max_tokens = whole
        blocks = list(self._blocks.values())
        position = {b.id: i for i, b in enumerate(blocks)}  # in the order added
        included: list[int] = []  # the positions of the blocks admitted, in order
        used = 0
        decisions: dict[str, Decision] = {}
        for block in rank_candidates(blocks):
            # What the block adds where it goes: its text, and the joins with the blocks
            # around it (a separator meets the text on each side), less the join it splits.
            at = bisect.bisect(included, position[block.id])
            before = blocks[included[at - 1]] if at else None
            after = blocks[included[at]] if at < len(included) else None
            needs = (
                self._count(block.text)
                + self._join(before, block)
                + self._join(block, after)
                - self._join(before, after)
            )
            if needs > max_tokens - used:
                decisions[block.id] = _no_room(block, needs, (max_tokens - used, max_tokens), _NAMES)
                continue
            included.insert(at, position[block.id])
            used += needs
            decisions[block.id] = Decision("kept", "admitted", "admit")
        dropped = False
        while True:
            # The joins are exact where counts add up (both OpenAI encodings) and no piece of
            # the tokenizer spans a whole block (one of "/" and line breaks can); another
            # tokenizer may count the whole otherwise, and the whole is what counts.
            prompt = SEPARATOR.join(blocks[i].text for i in included)
            used = self._count(prompt)
            if used <= max_tokens:
                break
            _drop_weakest(blocks, included, decisions, used - max_tokens)
            dropped = True
        if dropped:
            # What the dropped block left is offered to those skipped for want of room, in
            # priority order, each counted in the whole prompt (a rare path).
            for block in rank_candidates(blocks):
                if decisions[block.id].stage != "admit" or decisions[block.id].status == "kept":
                    continue
                trial = sorted([*included, position[block.id]])
                text = SEPARATOR.join(blocks[i].text for i in trial)
                tokens = self._count(text)
                if tokens <= max_tokens:
                    included, prompt, used = trial, text, tokens
                    decisions[block.id] = Decision(
                        "kept", "admitted (room left after the exact count)", "verify"
                    )
        self._usage = WindowUsage(
            included=BlockIds(blocks[i].id for i in included),
            excluded=BlockIds(b.id for b in blocks if decisions[b.id].status != "kept"),
            tokens_used=used,
            max_tokens=max_tokens,
            reasons={b.id: decisions[b.id].reason for b in blocks},
        )
        return prompt

    def _join(self, first: Chunk | None, second: Chunk | None) -> int:
        """Tokens that joining ``first`` and ``second`` with the separator adds to their counts
        (the separator, less what it merges with: ".\n\n" is one token); 0 without both.

        Where counts add up only the pieces that meet the separator are counted
        again: the last of ``first`` and the first of ``second`` (see
        TokenCounter.tail_of and head_of), so a window of many blocks is counted once.
        """
        if first is None or second is None:
            return 0
        count = self._count
        if not count.additive:
            return count(first.text + SEPARATOR + second.text) - count(first.text) - count(second.text)
        last = count.tail_of(first.text) or first.text
        head = count.head_of(second.text) or second.text
        return count(last + SEPARATOR + head) - count(last) - count(head)

    def usage(self) -> WindowUsage:
        """Included and excluded ids and tokens used, from the last :meth:`assemble`."""
        if self._usage is None:
            raise ConfigError(self._no_usage)
        return self._usage


def _drop_weakest(
    blocks: list[Chunk], included: list[int], decisions: dict[str, Decision], over: int
) -> None:
    """The assembled prompt counted ``over`` its limit (a tokenizer whose counts do not add
    up): the lowest-priority, latest-added block that is not CRITICAL goes."""
    droppable = [i for i in included if blocks[i].priority != Priority.CRITICAL]
    if not droppable:
        raise BudgetError(
            f"the assembled prompt is {over} tokens over budget and holds only CRITICAL blocks; "
            "raise max_tokens or lower a priority"
        )
    weakest = max(droppable, key=lambda i: (blocks[i].priority, i))
    included.remove(weakest)
    decisions[blocks[weakest].id] = Decision(
        "dropped",
        f"dropped after the exact count of the assembled prompt came out {over} token(s) over budget",
        "verify",
    )

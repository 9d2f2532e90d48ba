"""Seed 004's DocumentChunker: a document too long for one block, cut into chunks that fit.

Seed 004, best practice 4: "If a single document is too large, chunk it first with
DocumentChunker, then add each chunk as a separate MEDIUM-priority block. The packer
will include as many chunks as fit." Chunks end where sentences end (``split_sentences``:
a list item, a table row or a fenced code block is a unit of its own), each holds at most
``max_tokens`` counted with the model's own tokenizer, and each carries its exact place in
the document (``doc_id``, ``start``, ``end``): when several of them reach :func:`satchel.pack`,
neighbours merge back into one source without repeating what they share. A chunk that repeats
nothing of the one before (``overlap=0``) starts where that one ends, with the whitespace
between them (or, where that would take it over ``max_tokens``, the one before ends with the
whitespace), so that the two touch.

    chunker = DocumentChunker("gpt-4o", max_tokens=256, overlap=32)
    for chunk in chunker.chunk(manual, doc_id="manual", title="User manual"):
        window.add_block(chunk.text, Priority.MEDIUM, chunk.id)

Only a sentence longer than ``max_tokens`` is cut inside: between words, or, for a word
longer than that (a blob of base64), between characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._chunk import Chunk, _whole
from ._errors import ConfigError, InputError
from ._models import tokenizer_for
from ._sentences import _HEADING, split_sentences
from ._tokens import TokenCounter

__all__ = ["DocumentChunker"]

_WORD = re.compile(r"\S+")
#: the most characters one token of either OpenAI encoding (or any tokenizer Satchel knows
#: of) spans: a piece of ``n`` tokens is at most ``n`` times this long, which bounds the
#: search for where to cut inside a word
_MOST_PER_TOKEN = 128


class DocumentChunker:
    """Cuts documents into chunks of at most ``max_tokens`` (of ``model``'s tokenizer, or
    ``tokenizer``), at sentence ends; each chunk after the first repeats the sentences
    that end the one before it, up to ``overlap`` tokens of them."""

    def __init__(
        self, model: str = "gpt-4o", *, max_tokens: int = 256, overlap: int = 0, tokenizer: Any = None
    ) -> None:
        limit = _whole(max_tokens)
        if limit is None or limit <= 0:
            raise ConfigError(
                f"max_tokens={max_tokens!r} must be a positive whole number of tokens, such as 256"
            )
        shared = _whole(overlap)
        if shared is None or not 0 <= shared < limit:
            raise ConfigError(
                f"overlap={overlap!r} must be a whole number of tokens from 0 to less than "
                f"max_tokens={limit}, such as {limit // 8}"
            )
        self._tokenizer, _ = tokenizer_for(model, tokenizer, "DocumentChunker")
        self.model = model
        self.max_tokens = limit
        self.overlap = shared

    def chunk(self, text: str, doc_id: str, **fields: Any) -> list[Chunk]:
        """``text`` cut into chunks with ids ``doc_id#0``, ``doc_id#1``, ..., each with its
        offsets in ``text``; ``fields`` (title, section, updated, priority, role, metadata,
        or metadata's keys) go to every chunk."""
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"chunk() takes a document's text as a non-empty string, got {text!r:.60}")
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise InputError(
                f"doc_id={doc_id!r} must be a non-empty string naming the document, such as 'manual'"
            )
        taken = {"id", "text", "doc_id", "start", "end"} & fields.keys()
        if taken:
            raise InputError(
                f"chunk() sets {', '.join(sorted(taken))} itself; give the document's other fields "
                "(title, section, updated, metadata, ...)"
            )
        count = TokenCounter(self._tokenizer)  # (its counts are this document's alone)
        units = [piece for span in split_sentences(text) for piece in self._fitted(text, span, count)]
        out = []
        for n, (start, end) in enumerate(self._runs(text, units, count)):
            out.append(
                Chunk.from_dict(
                    {
                        "id": f"{doc_id}#{n}",
                        "text": text[start:end],
                        "doc_id": doc_id,
                        "start": start,
                        "end": end,
                        **fields,
                    }
                )
            )
        return out

    def _runs(self, text: str, units: list[tuple[int, int]], count: TokenCounter) -> list[tuple[int, int]]:
        """(start, end) of each chunk: runs of ``units`` as long as they fit, the next run
        starting at the units that end the last one and fit in ``overlap``."""
        runs: list[tuple[int, int]] = []
        first = 0
        while first < len(units):
            start = units[first][0]
            # A chunk after one it does not overlap starts where that one ends, with the
            # whitespace between them: the two touch, so retrieved together they merge back
            # into one source in pack (apart by the whitespace no chunk held, they never did:
            # a merge cannot know what stood between them). Not where that whitespace alone
            # would take its first unit over max_tokens ("\n\n" is a token of its own).
            if runs and runs[-1][1] < start and text[runs[-1][1] : start].isspace():
                lead = runs[-1][1]
                if count(text[lead : units[first][1]]) <= self.max_tokens:
                    start = lead
                elif count(text[runs[-1][0] : start]) <= self.max_tokens:
                    # (else the chunk before ends with it, where that fits: the two touch still)
                    runs[-1] = (runs[-1][0], start)
            last, tokens = first, count(text[start : units[first][1]])
            while last + 1 < len(units):
                # (only the end of what is there is counted again with what joins it)
                more = count.joined(
                    text[start : units[last][1]], text[units[last][1] : units[last + 1][1]], tokens
                )
                if more > self.max_tokens:
                    break
                last, tokens = last + 1, more
            # (a heading belongs to what follows it: it opens the next chunk, not ends this one)
            while last > first and last + 1 < len(units) and self._heading(text, units[last]):
                last -= 1
            runs.append((start, units[last][1]))
            if last + 1 == len(units):
                break
            # The next run starts with the units that end this one, as many as fit in
            # overlap, and in max_tokens with the unit after them (or it would end where
            # this one ends, adding nothing).
            following = last + 1
            # (none across a heading: the next section does not open with the end of this one)
            while following - 1 > first and not self._heading(text, units[last + 1]):
                shared = units[following - 1][0]
                if count(text[shared : units[last][1]]) > self.overlap:
                    break
                if count(text[shared : units[last + 1][1]]) > self.max_tokens:
                    break
                following -= 1
            first = following
        return runs

    @staticmethod
    def _heading(text: str, unit: tuple[int, int]) -> bool:
        """Whether ``unit`` is a Markdown heading ("## Warranty")."""
        return _HEADING.match(text, unit[0], unit[1]) is not None

    def _fitted(self, text: str, span: tuple[int, int], count: TokenCounter) -> list[tuple[int, int]]:
        """A unit, or, when it is over ``max_tokens``, its longest pieces that fit: cut between
        words, and inside a word only when one alone is over."""
        start, end = span
        if count(text[start:end]) <= self.max_tokens:
            return [span]
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        limit = self.max_tokens

        def words_fit(begin: int) -> Callable[[int], bool]:
            """Whether the text from ``begin`` to the end of word ``k`` fits."""
            return lambda k: count(text[begin : words[k][1]]) <= limit

        def characters_fit(begin: int) -> Callable[[int], bool]:
            """Whether the text from ``begin`` to character ``k`` fits."""
            return lambda k: count(text[begin : k + 1]) <= limit

        pieces = []
        w = 0
        while w < len(words):
            # (a word is at least one token: no piece that fits holds more than max_tokens words)
            last = _last_fitting(
                words_fit(words[w][0]),
                w,
                min(len(words), w + self.max_tokens) - 1,
            )
            if last is None:  # one word over max_tokens: cut between its characters
                at, word_end = words[w]
                while at < word_end:
                    cut = _last_fitting(
                        characters_fit(at),
                        at,
                        min(word_end, at + self.max_tokens * _MOST_PER_TOKEN) - 1,
                        step=self.max_tokens,
                    )
                    if cut is None:
                        raise ConfigError(
                            f"the character {text[at]!r} at {at} is {count(text[at])} tokens alone, over "
                            f"max_tokens={limit}; raise max_tokens to {count(text[at])} or more"
                        )
                    pieces.append((at, cut + 1))
                    at = cut + 1
                w += 1
                continue
            pieces.append((words[w][0], words[last][1]))
            w = last + 1
        return pieces


def _last_fitting(fits: Callable[[int], bool], low: int, high: int, step: int | None = None) -> int | None:
    """The largest ``k`` from ``low`` to ``high`` for which ``fits(k)`` holds (it holds for
    every smaller one too); None if it holds for none.

    With ``step``, the search first gallops up from ``low`` (``low + step``, then steps twice
    as long each time) to the first ``k`` that does not fit, and halves only from there: a
    piece cut inside a word (base64, CJK without punctuation) is some hundreds of characters
    of a range of ``max_tokens * _MOST_PER_TOKEN``, and halving the whole range first counted
    16,000 characters, then 8,000, ... for each (90 times a tokenizer pass over the document;
    now each count is at most twice the piece)."""
    if not fits(low):
        return None
    while step is not None and low < high:
        probe = min(high, low + step)
        if not fits(probe):
            high = probe - 1
            break
        low, step = probe, step * 2
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low

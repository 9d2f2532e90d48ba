"""pack(): plan → dedupe → admit → represent → order → render, then verify.

Each stage lives in its own module; this one only composes them. A
:class:`Packer` holds a checked configuration and can pack many questions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._admit import Admission, Decision, Draft, admit
from ._budget import Budget
from ._chunk import Chunk, Priority, as_chunks
from ._dedupe import DedupeReport, find_duplicates
from ._errors import BudgetError, ConfigError, InputError
from ._manifest import ManifestEntry, PackedSource, PackResult, TokenUsage
from ._models import ModelProfile, get_model
from ._order import apply_order, check_order
from ._render import (
    DEFAULT_METADATA,
    DEFAULT_SYSTEM,
    QUESTION_SEPARATOR,
    SOURCES_CLOSE,
    SOURCES_OPEN,
    attributes,
    check_metadata_fields,
    escape_text,
    open_tag,
    prompt_text,
    question_block,
    source_block,
    sources_block,
)
from ._tokens import TokenCounter, resolve_tokenizer

__all__ = ["DEDUPE_STAGES", "Packer", "pack", "rank_candidates"]

#: The dedupe stages, in the order they act.
DEDUPE_STAGES = ("exact", "near", "neighbours", "sentences")
_HISTORY_ROLES = ("system", "user", "assistant", "tool")


def rank_candidates(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Priority tier first, then score (higher first), else rank (lower first), else input order."""
    def key(item: tuple[int, Chunk]) -> tuple[Any, ...]:
        i, c = item
        return (
            int(c.priority),
            0 if c.score is not None else 1,
            -(c.score or 0.0),
            0 if c.rank is not None else 1,
            c.rank or 0,
            i,
        )

    return [c for _, c in sorted(enumerate(chunks), key=key)]


def _positive_or_none(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name}={value!r} must be a positive whole number or None")


def _dedupe_stages(value: bool | Iterable[str]) -> frozenset[str]:
    if value is True:
        return frozenset(DEDUPE_STAGES)
    if value is False or value is None:
        return frozenset()
    if isinstance(value, str):
        value = [value]
    stages = frozenset(value)
    unknown = stages - set(DEDUPE_STAGES)
    if unknown:
        raise ConfigError(
            f"dedupe={sorted(unknown)!r} names unknown stages; use True, False, or a list of "
            f"{', '.join(DEDUPE_STAGES)}"
        )
    return stages


@dataclass(frozen=True)
class Packer:
    """A checked packing configuration. ``Packer(**options).pack(chunks, question)``."""

    model: str = "gpt-4o"
    context_window: int | None = None
    tokenizer: Any = None
    reserve_answer: int = 512
    reserve_other: int = 0
    source_budget: int | None = None
    order: str | Callable[..., list] = "relevance"
    dedupe: bool | Iterable[str] = True
    near_duplicate: float = 0.8
    max_sources: int | None = None
    max_chunk_tokens: int | None = None
    metadata: Sequence[str] = DEFAULT_METADATA
    message_overhead: int | None = None
    reply_overhead: int | None = None
    _profile: ModelProfile = field(init=False, repr=False, compare=False)
    _counter: TokenCounter = field(init=False, repr=False, compare=False)
    _stages: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        try:
            profile = get_model(self.model)
        except ConfigError:
            if self.context_window is None or self.tokenizer is None:
                raise
            profile = ModelProfile(self.model, self.context_window, self.tokenizer)
        window = self.context_window if self.context_window is not None else profile.context_window
        _positive_or_none("context_window", window)
        overheads = {}
        for name in ("message_overhead", "reply_overhead"):
            value = getattr(self, name)
            if value is None:
                value = getattr(profile, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a non-negative whole number of tokens")
            overheads[name] = value
        set_(
            self,
            "_profile",
            ModelProfile(profile.name, window, self.tokenizer or profile.tokenizer, **overheads),
        )
        for name in ("reserve_answer", "reserve_other"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a non-negative whole number of tokens")
        if self.source_budget is not None and (
            isinstance(self.source_budget, bool) or not isinstance(self.source_budget, int) or self.source_budget < 0
        ):
            raise ConfigError(
                f"source_budget={self.source_budget!r} must be a non-negative whole number of tokens or None"
            )
        check_order(self.order)
        _positive_or_none("max_sources", self.max_sources)
        _positive_or_none("max_chunk_tokens", self.max_chunk_tokens)
        if isinstance(self.near_duplicate, bool) or not isinstance(self.near_duplicate, (int, float)) or not 0 < self.near_duplicate <= 1:
            raise ConfigError(
                f"near_duplicate={self.near_duplicate!r} must be a similarity in (0, 1]; 0.8 is the default"
            )
        set_(self, "metadata", check_metadata_fields(self.metadata))
        set_(self, "_stages", _dedupe_stages(self.dedupe))
        set_(self, "_counter", TokenCounter(resolve_tokenizer(self._profile.tokenizer, None, self.model)))

    # -- the public face -------------------------------------------------------

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    @property
    def count(self) -> TokenCounter:
        """The token counter this packer uses (cached per distinct text)."""
        return self._counter

    def config(self) -> dict[str, Any]:
        """The configuration as JSON-ready data (recorded in every result)."""
        return {
            "model": self.model,
            "context_window": self._profile.context_window,
            "tokenizer": self._counter.name,
            "reserve_answer": self.reserve_answer,
            "reserve_other": self.reserve_other,
            "source_budget": self.source_budget,
            "order": self.order if isinstance(self.order, str) else getattr(self.order, "__name__", "custom"),
            "dedupe": sorted(self._stages, key=DEDUPE_STAGES.index),
            "near_duplicate": self.near_duplicate,
            "max_sources": self.max_sources,
            "max_chunk_tokens": self.max_chunk_tokens,
            "metadata": list(self.metadata),
            "message_overhead": self._profile.message_overhead,
            "reply_overhead": self._profile.reply_overhead,
        }

    def plan(
        self,
        question: str,
        system: str | None = None,
        history: Sequence[Mapping[str, str]] | None = None,
    ) -> Budget:
        """The budget for this question, system text and history, before any source is admitted."""
        system_text, history_msgs = _check_prompt_parts(question, system, history)
        return self._plan(question, system_text, history_msgs)

    def pack(
        self,
        candidates: Iterable[Chunk | Mapping[str, Any]],
        question: str,
        *,
        system: str | None = None,
        history: Sequence[Mapping[str, str]] | None = None,
    ) -> PackResult:
        """Pack ``candidates`` for ``question``; see :func:`satchel.pack`."""
        chunks = as_chunks(candidates)
        system_text, history_msgs = _check_prompt_parts(question, system, history)
        budget = self._plan(question, system_text, history_msgs)
        count = self._counter
        ranked = rank_candidates(chunks)

        # dedupe, first pass: over the whole ranked list
        stages = self._stages
        report = DedupeReport()
        if stages & {"exact", "near", "sentences"}:
            report = find_duplicates(
                [c.text for c in ranked],
                exact="exact" in stages,
                near=self.near_duplicate if "near" in stages else None,
            )

        # admit (with the second dedupe pass: neighbours and sentences already sent)
        wrapper = count(SOURCES_OPEN + "\n") + count(SOURCES_CLOSE)
        room = max(0, budget.sources - wrapper)
        admission = admit(
            ranked,
            room,
            self._cost,
            report=report,
            sentences="sentences" in stages,
            neighbours="neighbours" in stages,
            max_sources=self.max_sources,
            text_tokens=lambda t: count(escape_text(t)),
            max_chunk_tokens=self.max_chunk_tokens,
        )

        # order, render, and verify the exact count of what will be sent
        while True:
            ordered = apply_order(self.order, sorted(admission.sources, key=lambda d: d.rank))
            messages, labels = self._render(ordered, question, system_text, history_msgs)
            usage = self._usage(messages, budget, question)
            over = max(usage.prompt - budget.prompt_limit, usage.sources - budget.sources)
            if over <= 0:
                break
            _drop_weakest(admission, over)

        return PackResult(
            messages=tuple(messages),
            text=prompt_text(messages),
            labels=labels,
            manifest=self._manifest(ranked, admission, ordered, report),
            tokens=usage,
            budget=budget,
            tokenizer=count.name,
            sources=tuple(
                PackedSource(
                    label=f"S{n}",
                    position=n,
                    ids=tuple(m.id for m in d.members),
                    text=d.text,
                    attributes=tuple(self._attrs(d.lead)),
                    cost=d.cost,
                )
                for n, d in enumerate(ordered, start=1)
            ),
            config=self.config(),
            question=question,
        )

    # -- stages ---------------------------------------------------------------

    def _plan(self, question: str, system: str, history: list[dict[str, str]]) -> Budget:
        count, p = self._counter, self._profile
        return Budget(
            context_window=p.context_window,
            system=count(system) + p.message_overhead,
            question=count(QUESTION_SEPARATOR + question_block(question)) + p.message_overhead + p.reply_overhead,
            history=sum(count(m["content"]) + p.message_overhead for m in history),
            answer=self.reserve_answer,
            other=self.reserve_other,
            cap=self.source_budget,
        )

    def _attrs(self, chunk: Chunk) -> list[tuple[str, str]]:
        fields = {**chunk.metadata, "title": chunk.title, "section": chunk.section, "updated": chunk.updated}
        return attributes(fields, self.metadata)

    def _cost(self, members: Sequence[Chunk], text: str, label: int) -> int:
        """Tokens one source takes: open tag, escaped text, close tag and the line break after it."""
        count = self._counter
        ids = ", ".join(m.id for m in members)
        return (
            count(open_tag(label, ids, self._attrs(members[0])) + "\n")
            + count(escape_text(text))
            + count(f"\n</source_{label}>\n")
        )

    def _render(
        self,
        ordered: Sequence[Draft],
        question: str,
        system: str,
        history: list[dict[str, str]],
    ) -> tuple[list[dict[str, str]], dict[str, str | list[str]]]:
        blocks = []
        labels: dict[str, str | list[str]] = {}
        for n, draft in enumerate(ordered, start=1):
            ids = [m.id for m in draft.members]
            blocks.append(source_block(n, ", ".join(ids), self._attrs(draft.lead), draft.text))
            labels[f"S{n}"] = ids[0] if len(ids) == 1 else ids
        # With nothing kept the prompt is the question alone: an empty <sources>
        # element would cost tokens a zero source budget does not have.
        user = (sources_block(blocks) + QUESTION_SEPARATOR if blocks else "") + question_block(question)
        messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": user}]
        return messages, labels

    def _usage(self, messages: list[dict[str, str]], budget: Budget, question: str) -> TokenUsage:
        count, p = self._counter, self._profile
        system = count(messages[0]["content"])
        history = sum(count(m["content"]) for m in messages[1:-1])
        user = count(messages[-1]["content"])
        question_part = count(QUESTION_SEPARATOR + question_block(question))
        framing = p.message_overhead * len(messages) + p.reply_overhead
        return TokenUsage(
            prompt=system + history + user + framing,
            system=system,
            history=history,
            question=question_part,
            sources=user - question_part if len(messages[-1]["content"]) > len(question_block(question)) else 0,
            framing=framing,
            answer_reserve=budget.answer,
            context_window=budget.context_window,
            source_budget=budget.sources,
            exact=count.exact,
        )

    def _manifest(
        self,
        ranked: Sequence[Chunk],
        admission: Admission,
        ordered: Sequence[Draft],
        report: DedupeReport,
    ) -> tuple[ManifestEntry, ...]:
        count = self._counter
        where: dict[str, tuple[int, Draft]] = {}
        for n, draft in enumerate(ordered, start=1):
            for m in draft.members:
                where[m.id] = (n, draft)
        entries = []
        for i, chunk in enumerate(ranked):
            decision = admission.decisions[chunk.id]
            placed = where.get(chunk.id)
            kept = placed is not None
            conflicts = tuple(ranked[j].id for j in report.conflicts.get(i, ()))
            cost = 0
            sent = 0
            if placed is not None:
                n, draft = placed
                if draft.lead is chunk:
                    cost = draft.cost
                    sent = count(escape_text(draft.text))
            entries.append(
                ManifestEntry(
                    id=chunk.id,
                    status="kept" if kept else "dropped",
                    reason=decision.reason,
                    stage=decision.stage,
                    tokens=count(escape_text(chunk.text)),
                    rank=i + 1,
                    cost=cost,
                    sent_tokens=sent,
                    label=f"S{placed[0]}" if placed else None,
                    position=placed[0] if placed else None,
                    score=chunk.score,
                    priority=Priority(chunk.priority).name,
                    role=chunk.role,
                    duplicate_of=decision.duplicate_of,
                    merged_into=decision.merged_into,
                    conflicts_with=conflicts,
                    sentences_removed=len(decision.removed_sentences),
                )
            )
        return tuple(entries)


def _drop_weakest(admission: Admission, over: int) -> None:
    """The exact count of the rendered prompt came out over budget: drop the weakest source."""
    droppable = [d for d in admission.sources if d.lead.priority != Priority.CRITICAL]
    if not droppable:
        raise BudgetError(
            f"the rendered prompt is {over} tokens over budget and holds only CRITICAL sources; "
            "raise the budget or lower a priority"
        )
    weakest = max(droppable, key=lambda d: (d.lead.priority, d.rank))
    admission.sources.remove(weakest)
    admission.used -= weakest.cost
    for m in weakest.members:
        admission.decisions[m.id] = Decision(
            "dropped",
            f"dropped after the exact count of the rendered prompt came out {over} token(s) over budget",
            "verify",
        )


def _check_prompt_parts(
    question: Any, system: Any, history: Any
) -> tuple[str, list[dict[str, str]]]:
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"question={question!r} must be a non-empty string")
    if system is None:
        system = DEFAULT_SYSTEM
    if not isinstance(system, str):
        raise InputError(f"system must be a string (or None for the default), got {type(system).__name__}")
    messages = []
    for i, m in enumerate(history or ()):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str) or m.get("role") not in _HISTORY_ROLES:
            raise InputError(
                f"history[{i}]={m!r} must be a dict with role ({', '.join(_HISTORY_ROLES)}) and "
                "string content"
            )
        messages.append({"role": m["role"], "content": m["content"]})
    return system, messages


def pack(
    candidates: Iterable[Chunk | Mapping[str, Any]],
    question: str,
    *,
    system: str | None = None,
    history: Sequence[Mapping[str, str]] | None = None,
    **options: Any,
) -> PackResult:
    """Pack ranked candidates into a budgeted, deduplicated, ordered, labelled prompt.

    ``options`` are those of :class:`Packer`: ``model``, ``context_window``,
    ``tokenizer``, ``reserve_answer``, ``reserve_other``, ``source_budget``,
    ``order`` (``relevance``, ``edges``, ``chronological``), ``dedupe``,
    ``near_duplicate``, ``max_sources``, ``max_chunk_tokens``, ``metadata``,
    ``message_overhead`` and ``reply_overhead``.
    """
    unknown = set(options) - set(Packer.__dataclass_fields__) | {k for k in options if k.startswith("_")}
    if unknown:
        raise ConfigError(
            f"pack() got unknown option(s) {', '.join(sorted(unknown))}; see help(satchel.Packer)"
        )
    return Packer(**options).pack(candidates, question, system=system, history=history)

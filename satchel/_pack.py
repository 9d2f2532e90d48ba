"""pack(): plan → dedupe → admit → represent → order → render, then verify.

Each stage lives in its own module; this one only composes them. A
:class:`Packer` holds a checked configuration and can pack many questions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import itertools
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ._admit import Admission, Decision, Draft, Policy, admit, distractor
from ._budget import Budget
from ._chunk import ROLES, Chunk, Priority, _whole, as_chunks, check_utf8, listed, plain
from ._dedupe import DedupeReport, find_duplicates, strip_boilerplate
from ._errors import BudgetError, ConfigError, InputError
from ._manifest import ManifestEntry, PackedSource, PackResult, TokenUsage
from ._models import ModelProfile, get_model
from ._order import OrderFn, apply_order, check_order
from ._records import maker
from ._render import (
    DEFAULT_METADATA,
    DEFAULT_SYSTEM,
    QUESTION_SEPARATOR,
    SOURCES_CLOSE,
    SOURCES_OPEN,
    attributes,
    check_metadata_fields,
    chunk_attr,
    chunk_attr_id,
    close_part,
    escape_text,
    open_tag_end,
    open_tag_start,
    prompt_text,
    question_block,
    source_block,
    source_head,
    sources_block,
)
from ._represent import Compressor, asks_about, question_terms, term_weights
from ._roles import RoleRule, assign_roles, check_role_caps, resolve_cap
from ._sentences import SentenceCache, normalise
from ._tokens import (
    EstimateTokenizer,
    HuggingFaceTokenizer,
    TiktokenTokenizer,
    TokenCounter,
    resolve_tokenizer,
)

__all__ = ["DEDUPE_STAGES", "Packer", "pack", "rank_candidates"]

#: The dedupe stages, in the order they act.
DEDUPE_STAGES = ("exact", "near", "neighbours", "sentences")
_HISTORY_ROLES = ("system", "user", "assistant", "tool")
#: each priority's name, for the manifest (an enum call and .name cost more than a lookup)
_PRIORITY_NAMES = {p: p.name for p in Priority}
#: one of each per candidate (and per source): built without a frozen init (see _records)
_make_entry = maker(ManifestEntry)
_make_source = maker(PackedSource)
_ID = operator.attrgetter("id")
_SCORE = operator.attrgetter("score")
_RANK = operator.attrgetter("rank")
_PRIORITY = operator.attrgetter("priority")
_TAG_FIELDS = operator.attrgetter("metadata", "title", "section", "updated")  # what a tag may show
#: Tokenizers whose counting leaves no cycles (native code, or none)
_OWN_TOKENIZERS = (TiktokenTokenizer, HuggingFaceTokenizer, EstimateTokenizer)
_collector_lock = threading.Lock()
_collector_holders = 0  # packs running with the cycle collector paused
_collector_was_enabled = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a pack runs.

    A pack allocates tens of thousands of short-lived containers, all freed by
    reference counting (a pack leaves no cycles: tests/test_pack.py checks), yet
    every 700 of them would start a collection that finds nothing. Packs may run in
    several threads at once: the collector runs again when the last one ends,
    if it was running when the first began.
    """
    global _collector_holders, _collector_was_enabled
    with _collector_lock:
        if _collector_holders == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_holders += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_holders -= 1
            if _collector_holders == 0 and _collector_was_enabled:
                gc.enable()


class _Tags:
    """A pack's source tags, each built once: a single chunk's (open tag, close tag) by (chunk
    id, label), and a merged source's open tag as it grows, by (lead id, label)."""

    __slots__ = ("merged", "single")

    def __init__(self) -> None:
        self.single: dict[tuple[str, int], tuple[str, str]] = {}
        self.merged: dict[tuple[str, int], _MergedTag] = {}


@dataclass(slots=True)
class _MergedTag:
    """A merged source's open tag (and line break), in two parts: up to the end of the ids
    it lists, and the rest. A neighbour that joins the source adds its id to the first,
    and any attribute value it brings to the second, and only what changed is counted
    again: built and counted whole at each merge, the tag of a document retrieved as
    thousands of windows listed thousands of ids thousands of times."""

    members: Sequence[Chunk]  # whose ids it lists, in order
    ids: str  # the tag up to the end of the last id
    ids_tokens: int
    values: dict[str, list[str]]  # each field's distinct values among the members, in order
    rest: str  # the quote after the ids, the other attributes, ">" and the line break
    tokens: int  # of the whole


def rank_candidates(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Priority tier first, then score (higher first), else rank (lower first), else input order."""
    if None not in map(_SCORE, chunks) and {*map(_RANK, chunks)} <= {None}:
        # The usual list, every chunk scored and none ranked: two stable sorts by keys read
        # in C, score (ties keep input order) then tier, give the order the key below
        # gives, without a Python call per chunk.
        ranked = sorted(chunks, key=_SCORE, reverse=True)
        ranked.sort(key=_PRIORITY)
        return ranked

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


#: the options that are whole numbers (of tokens, or of sources)
_TOKEN_COUNTS = (
    "context_window",
    "reserve_answer",
    "reserve_other",
    "source_budget",
    "max_sources",
    "max_chunk_tokens",
    "message_overhead",
    "reply_overhead",
)
#: options that are a number or a flag of another kind
_PLAIN_OPTIONS = ("near_duplicate", "min_score_ratio", "strip_boilerplate", "compress", "restate_contract")


def _positive_or_none(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name}={value!r} must be a positive whole number or None")


def _dedupe_stages(value: bool | Iterable[str] | None) -> frozenset[str]:
    # (None, as JSON's null, is the option not given: the default, every stage, as None is for
    # every other option; it turned every stage off)
    if value is True or value is None:
        return frozenset(DEDUPE_STAGES)
    if value is False:
        return frozenset()
    stages = frozenset(
        _names("dedupe", value, DEDUPE_STAGES, "stage names (or True for all, False for none)")
    )
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
    order: str | OrderFn = "relevance"
    dedupe: bool | Iterable[str] = True
    near_duplicate: float = 0.8
    max_sources: int | None = None
    max_chunk_tokens: int | None = None
    metadata: Sequence[str] = DEFAULT_METADATA
    message_overhead: int | None = None
    reply_overhead: int | None = None
    # seed 003's policy; every default leaves the core's behaviour unchanged
    role_caps: Mapping[str, int | float | None] | None = None
    role_rule: RoleRule = field(default_factory=RoleRule)
    compress: bool = False
    compressor: Compressor | None = None
    compressor_roles: Sequence[str] = ()
    contract: str | None = None
    restate_contract: bool = False
    min_score_ratio: float | None = None
    strip_boilerplate: bool | int = False
    _profile: ModelProfile = field(init=False, repr=False, compare=False)
    _counter: TokenCounter = field(init=False, repr=False, compare=False)
    _stages: frozenset[str] = field(init=False, repr=False, compare=False)

    def __new__(cls, *args: Any, **options: Any) -> Packer:
        # (the dataclass's __init__ would meet an unknown option with a bare TypeError)
        _check_option_names(options, "Packer()")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in _TOKEN_COUNTS:  # a whole float (500.0, 1e3 from JSON) or numpy int is that int
            value = getattr(self, name)
            if value is not None and type(value) is not int and (whole := _whole(value)) is not None:
                set_(self, name, whole)
        for name in _PLAIN_OPTIONS:  # (numpy's numbers and bools as Python's, as for the counts)
            set_(self, name, plain(getattr(self, name)))
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
            # (only None means the model's own: an empty or false tokenizer is an error below)
            ModelProfile(
                profile.name,
                window,
                profile.tokenizer if self.tokenizer is None else self.tokenizer,
                **overheads,
                # (a window given for a known model does not lift what its API takes as input)
                input_limit=profile.input_limit,
            ),
        )
        for name in ("reserve_answer", "reserve_other"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a non-negative whole number of tokens")
        if self.source_budget is not None and (
            isinstance(self.source_budget, bool)
            or not isinstance(self.source_budget, int)
            or self.source_budget < 0
        ):
            raise ConfigError(
                f"source_budget={self.source_budget!r} must be a non-negative whole number of tokens or None"
            )
        check_order(self.order)
        _positive_or_none("max_sources", self.max_sources)
        _positive_or_none("max_chunk_tokens", self.max_chunk_tokens)
        if (
            isinstance(self.near_duplicate, bool)
            or not isinstance(self.near_duplicate, (int, float))
            or not 0 < self.near_duplicate <= 1
        ):
            raise ConfigError(
                f"near_duplicate={self.near_duplicate!r} must be a similarity in (0, 1]; 0.8 is the default"
            )
        set_(self, "metadata", check_metadata_fields(self.metadata))
        if self.order == "chronological" and "updated" not in self.metadata:
            # (sorted by a date the model never sees, the newest fact cannot read as the update)
            raise ConfigError(
                f"order='chronological' puts sources in the order of their updated dates, which the "
                f"prompt must then show (seed 001: show the dates), but metadata={list(self.metadata)!r} "
                "leaves 'updated' out; add 'updated' to metadata, or choose another order"
            )
        set_(self, "role_caps", check_role_caps(self.role_caps))
        if isinstance(self.role_rule, Mapping):  # (as config() records it: a logged pack replays)
            fields = {f.name for f in dataclasses.fields(RoleRule)}
            unknown = set(self.role_rule) - fields
            if unknown:
                raise ConfigError(
                    f"role_rule has unknown key(s) {', '.join(sorted(map(str, unknown)))}; its fields are "
                    f"{', '.join(sorted(fields))}"
                )
            set_(self, "role_rule", RoleRule(**self.role_rule))
        if not isinstance(self.role_rule, RoleRule):
            raise ConfigError(
                f"role_rule={self.role_rule!r} must be a satchel.RoleRule or a mapping of its fields, "
                'such as {"max_decisive": 1, "decisive_gap": 0.02, "supporting": 4}'
            )
        if self.compressor is not None and not callable(self.compressor):
            raise ConfigError("compressor must be a callable (text, question, max_tokens) -> str")
        for name in ("compress", "restate_contract"):
            if not isinstance(getattr(self, name), bool):  # "false" is true in Python
                raise ConfigError(f"{name}={getattr(self, name)!r} must be True or False")
        given = () if self.compressor_roles is None else self.compressor_roles
        roles = frozenset(_names("compressor_roles", given, ROLES, "roles"))
        if roles - set(ROLES) or (roles and self.compressor is None) or (self.compressor and not roles):
            raise ConfigError(
                f"compressor_roles={sorted(roles)!r}: an abstractive compressor runs only for roles you name "
                f"({', '.join(ROLES)}); give both compressor= and compressor_roles="
            )
        set_(self, "compressor_roles", roles)
        if self.contract is not None and (not isinstance(self.contract, str) or not self.contract.strip()):
            raise ConfigError(
                f"contract={self.contract!r} must be non-empty text (the output contract) or None"
            )
        if self.contract is not None:
            check_utf8(self.contract, "contract")
        if self.min_score_ratio is not None and (
            isinstance(self.min_score_ratio, bool)
            or not isinstance(self.min_score_ratio, (int, float))
            or not 0 < self.min_score_ratio <= 1
        ):
            raise ConfigError(
                f"min_score_ratio={self.min_score_ratio!r} must be in (0, 1], e.g. 0.5, or None"
            )
        if self.strip_boilerplate is not False and (
            not isinstance(self.strip_boilerplate, int)
            or (self.strip_boilerplate is not True and self.strip_boilerplate < 2)
        ):
            raise ConfigError(
                f"strip_boilerplate={self.strip_boilerplate!r}: use True (3 documents) or the number of "
                "distinct documents (at least 2) a line must recur in to count as boilerplate"
            )
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
            "role_caps": dict(self.role_caps) if self.role_caps is not None else None,
            "role_rule": dataclasses.asdict(self.role_rule),  # (what role_rule= takes back)
            "compress": self.compress,
            "compressor_roles": sorted(self.compressor_roles),
            "contract": self.contract,
            "restate_contract": self._restates,
            "min_score_ratio": self.min_score_ratio,
            "strip_boilerplate": self.strip_boilerplate,
        }

    @property
    def _restates(self) -> bool:
        """The contract is restated after the sources when asked, and always by ``edge-anchored``."""
        return self.contract is not None and (self.restate_contract or self.order == "edge-anchored")

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
        # The collector is paused only while Satchel's own code runs: a user's
        # compressor or token counter may make cycles of its own.
        own_code = self.compressor is None and isinstance(self._counter.tokenizer, _OWN_TOKENIZERS)
        with _collector_paused() if own_code else contextlib.nullcontext():
            return self._pack(candidates, question, system, history)

    def _pack(
        self,
        candidates: Iterable[Chunk | Mapping[str, Any]],
        question: str,
        system: str | None,
        history: Sequence[Mapping[str, str]] | None,
    ) -> PackResult:
        chunks = as_chunks(candidates)
        system_text, history_msgs = _check_prompt_parts(question, system, history)
        budget = self._plan(question, system_text, history_msgs)
        retrieval = rank_candidates(chunks)
        sentences = SentenceCache()  # every dedupe stage reads each text's sentences from here
        tags = _Tags()  # and every source's tags are built once
        counted = self._prefetch(retrieval, sentences, tags)
        try:
            found = self._find_duplicates(retrieval, sentences)
            ranked, stripped = self._strip_boilerplate(retrieval, found, question)
            roles = self._roles(ranked, retrieval, found)
            if self.role_caps is not None:
                last = len(ROLES)  # (what has no role is dropped before its role counts)
                ranked.sort(
                    key=lambda c: (int(c.priority), ROLES.index(roles[c.id]) if c.id in roles else last)
                )
        finally:
            counted()  # the counts are needed next; and no counting thread outlives a failure
        admission = self._admit(ranked, retrieval, found, roles, stripped, budget, question, sentences, tags)

        # order, render, and verify the exact count of what will be sent
        shortfall = 0
        while True:
            ordered = apply_order(self.order, sorted(admission.sources, key=lambda d: d.rank))
            if len(ordered) >= 1000 or admission.widest_label >= 1000:
                # A source costs the same at every label of as many digits (see _cost), not
                # across 1000: past 999 sources, each is costed again at the place it is sent.
                for n, draft in enumerate(ordered, start=1):
                    draft.cost = self._cost(draft.members, draft.text, n, sentences, tags)
            messages, labels, sources = self._render(
                ordered, question, self._system(system_text), history_msgs
            )
            usage = self._usage(
                messages, budget, question, ordered, admission.widest_label, len(history_msgs)
            )
            over = max(usage.prompt - budget.prompt_limit, usage.sources - budget.sources)
            if over <= 0:
                break
            if not admission.sources:  # nothing left to leave out: the reserves alone are over
                raise BudgetError(
                    f"the prompt without any source counts {usage.prompt} tokens with "
                    f"{self._counter.name}, {over} over the {budget.prompt_limit} the window leaves "
                    "it (the reserves, counted apart, came to less: this tokenizer's counts do not "
                    f"add up); raise context_window by {over} or more, or lower reserve_answer"
                )
            # Counted apart, the parts came out below the whole (a tokenizer whose counts do
            # not add up): admission runs again in a budget that much smaller, so what is left
            # out is decided by priority, role and rank as ever, and no source keeps a gap
            # where it left a sentence to one that went.
            shortfall += over
            admission = self._admit(
                ranked, retrieval, found, roles, stripped, budget, question, sentences, tags, shortfall
            )

        conflicts = {retrieval[i].id: tuple(retrieval[j].id for j in js) for i, js in found.conflicts.items()}
        return PackResult(
            messages=tuple(messages),
            text=prompt_text(messages),
            labels=labels,
            manifest=self._manifest(retrieval, admission, ordered, conflicts, roles, stripped, sentences),
            tokens=usage,
            budget=budget,
            tokenizer=self._counter.name,
            sources=sources,
            config=self.config(),
            question=question,
        )

    # -- stages ---------------------------------------------------------------

    def _prefetch(
        self, retrieval: Sequence[Chunk], sentences: SentenceCache, tags: _Tags
    ) -> Callable[[], None]:
        """Start counting, in native batches beside the dedupe, what admission and the manifest count."""
        return self._counter.prefetch_groups(self._to_count(retrieval, sentences, tags))

    def _to_count(
        self, retrieval: Sequence[Chunk], sentences: SentenceCache, tags: _Tags
    ) -> Iterator[list[str]]:
        """For each candidate, its text (the manifest reports it) with the head and tail of its enclosure.

        With an additive tokenizer a text is counted as its sentences (see
        SentenceCache.pieces): sentences recur across overlapping candidates,
        and a text stripped of sentences already sent is then the sum of what it
        keeps. The texts are split here, as they are yielded, so counting starts
        while later candidates are still being split.
        """
        count = self._counter
        split = count.additive and bool(self._stages & {"exact", "near", "sentences"})
        for chunk in retrieval:
            if not count.additive:  # (counted where it stands: see TokenCounter.inside)
                yield [count.placed(escape_text(chunk.text))]
                continue
            # the text and what _cost counts besides it (label 1 stands for all): the open
            # tag, and the text's last piece alone and with the close tag (see joined_parts)
            head, tail = self._tags(chunk, 1, tags)
            body = escape_text(chunk.text)
            if split:
                sentences.split(chunk.text)
                group = [*_escaped(sentences.pieces(chunk.text) or (), body is not chunk.text)]
            else:
                group = [body]
            group.append(head)
            last = count.tail_of(body)
            if last is not None:
                group += (last, last + tail)
            yield group

    def _body_tokens(self, text: str, sentences: SentenceCache, merged: bool = False) -> int:
        """Tokens of a source's text as rendered (escaped); from its sentences when they are
        known; ``merged``: a merged source's, from the text it grew from (see _grown_tokens)."""
        count = self._counter
        if merged and count.additive:
            n = self._grown_tokens(text, sentences)
            if n is not None:
                return n
        body = escape_text(text)
        if count.additive:  # (most texts' pieces were counted in the prefetch)
            pieces = sentences.pieces(text)
            if pieces is not None:
                # (sum_of looks the text up first: a text asked about again, as admission's
                # and then the manifest's, is not summed again; a text without an escape,
                # most, has its pieces as they are: two Python calls less for each)
                return count.sum_of(body, pieces if body is text else _escaped(pieces, True))
        return count.inside(body)

    def _grown_tokens(self, text: str, sentences: SentenceCache) -> int | None:
        """A merged source's text, grown from a shorter one already counted: that count, less
        the piece the new part replaces, plus the part (see SentenceCache.grown); None when
        it grew from nothing counted. Kept by the text (see SentenceCache.tokens): a
        document's windows joining one by one are not escaped, hashed or counted whole again."""
        n = sentences.tokens(text)
        if n is not None:
            return n
        grown = sentences.grown(text)
        if grown is None:
            return None
        known, piece, part = grown
        count = self._counter
        before = sentences.tokens(known)
        if before is None:  # (a window's text, counted in the prefetch)
            escaped = escape_text(known)
            if not count.knows(escaped):
                return None
            before = count(escaped)
        n = before - count(escape_text(piece)) + self._body_tokens(part, sentences)
        sentences.keep_tokens(text, n)
        return n

    def _find_duplicates(self, retrieval: Sequence[Chunk], sentences: SentenceCache) -> DedupeReport:
        """Dedupe, first pass: exact copies, near-duplicates and conflicts over the whole list."""
        if not self._stages & {"exact", "near"}:
            return DedupeReport()
        # (one document's windows are left to neighbour merging)
        places = [c.place for c in retrieval] if "neighbours" in self._stages else None
        return find_duplicates(
            [c.text for c in retrieval],
            exact="exact" in self._stages,
            near=self.near_duplicate if "near" in self._stages else None,
            sentences=sentences,
            places=places,
            documents=[c.doc_id for c in retrieval],
        )

    @property
    def _boilerplate_documents(self) -> int:
        """How many documents' chunks a piece must open or close to be boilerplate."""
        return 3 if self.strip_boilerplate is True else int(self.strip_boilerplate)

    @property
    def _boilerplate_rule(self) -> str:
        return f"each opens or closes chunks of {self._boilerplate_documents} or more documents"

    def _strip_boilerplate(
        self, retrieval: Sequence[Chunk], found: DedupeReport, question: str
    ) -> tuple[list[Chunk], dict[str, int]]:
        """Seed 003, step 1: lines repeated across documents go (off by default), but those
        that hold what the question asks about (see asks_about).

        Returns the candidates left (texts stripped) and, per chunk id, how many
        pieces were stripped; a chunk that was all boilerplate is left out.
        """
        ranked = list(retrieval)
        stripped: dict[str, int] = {}
        if self.strip_boilerplate is False:
            return ranked, stripped
        terms = question_terms(question)
        cleaned = strip_boilerplate(
            [c.text for c in ranked],
            # (a chunk without a document is its own, but copies of one text are one
            # document, found as copies or not: with the dedupe off, three copies of a
            # window made its sentences boilerplate, and each was sent stripped to a letter)
            [c.doc_id if c.doc_id is not None else "\0" + normalise(c.text) for c in ranked],
            self._boilerplate_documents,
            ignore=frozenset(found.duplicate_of),
            keep=lambda piece: asks_about(piece, terms),
        )
        for i, (text, n) in enumerate(cleaned):
            if n and ranked[i].priority == Priority.CRITICAL:
                # (a CRITICAL chunk is sent as given, or stops the pack: its lines may recur
                # elsewhere, as a pinned notice does, and are stripped from the others)
                cleaned[i] = (ranked[i].text, 0)
                continue
            if n:
                stripped[ranked[i].id] = n
            if n and text:
                # Offsets no longer describe the text, so the chunk cannot merge with neighbours.
                ranked[i] = replace(ranked[i], text=text, start=None, end=None)
        return [c for c, (text, _) in zip(ranked, cleaned, strict=True) if text], stripped

    def _roles(
        self, ranked: Sequence[Chunk], retrieval: Sequence[Chunk], found: DedupeReport
    ) -> dict[str, str]:
        """Seed 003, step 3: the role of each candidate left after dedupe (step 1) and the
        distractor filter of admission (step 2), by the user's ``role`` or the role rule;
        reported in the manifest (a copy or a distractor shows only a role of its own, or
        None), and with role caps they also set admission order and caps. (Given to every
        candidate, copies from several queries took the supporting places, and the chunk
        holding the answer was background, with no tokens.)"""
        copies = {retrieval[i].id for i in found.duplicate_of}
        least = self._min_score(ranked)
        left = [c for c in ranked if c.id not in copies]
        if least is not None:  # (the distractor filter is on: off, it drops nothing, uncalled)
            left = [c for c in left if not distractor(c, least)]
        return dict(zip(map(_ID, left), assign_roles(left, self.role_rule), strict=True))

    def _min_score(self, ranked: Sequence[Chunk]) -> float | None:
        """The distractor filter's threshold: ``min_score_ratio`` of the best score (None: off).
        (A share of the best score means nothing when no score is above zero, as with logits
        or negative distances: all would fall below it, the best too; the filter then drops
        nothing, as the roles' rule does.)"""
        if self.min_score_ratio is None:  # (the usual: no best score looked for)
            return None
        best = max((c.score for c in ranked if c.score is not None), default=None)
        if best is None or best <= 0:
            return None
        return best * self.min_score_ratio

    def _admit(
        self,
        ranked: Sequence[Chunk],
        retrieval: Sequence[Chunk],
        found: DedupeReport,
        roles: Mapping[str, str],
        stripped: Mapping[str, int],
        budget: Budget,
        question: str,
        sentences: SentenceCache,
        tags: _Tags,
        shortfall: int = 0,
    ) -> Admission:
        """Admit, with the second dedupe pass (neighbours, sentences already sent) and the
        representation of what overflows; every candidate leaves with a decision."""
        policy = Policy(
            roles=roles,
            caps=None
            if self.role_caps is None
            else {role: resolve_cap(cap, budget.sources) for role, cap in self.role_caps.items()},
            question=question,
            extractive=self.compress,
            compressor=self.compressor,
            compressor_roles=frozenset(self.compressor_roles),
            min_score=self._min_score(ranked),
            min_score_ratio=self.min_score_ratio,
            weights=term_weights((c.text for c in ranked), question_terms(question))
            if self.compress
            else None,
            counts_add_up=self._counter.additive,
        )
        room = max(0, budget.sources - self._sources_element(question) - shortfall)

        def cost(members: Sequence[Chunk], text: str, label: int) -> int:
            # (asked twice for each candidate: a partial with keywords built a dict each time)
            return self._cost(members, text, label, sentences, tags)

        admission = admit(
            ranked,
            room,
            cost,
            functools.partial(self._body_tokens, sentences=sentences),
            duplicate_of={
                retrieval[i].id: (retrieval[j].id, sim) for i, (j, sim) in found.duplicate_of.items()
            },
            sentences="sentences" in self._stages,
            neighbours="neighbours" in self._stages,
            max_sources=self.max_sources,
            max_chunk_tokens=self.max_chunk_tokens,
            policy=policy,
            cache=sentences,
            # role caps admit by role; the orders place sources by retrieval rank
            ranks=None if self.role_caps is None else {c.id: i for i, c in enumerate(retrieval, start=1)},
            forget=functools.partial(self._forget, sentences=sentences),
            spent=budget.sources - room,  # the <sources> tags (and any shortfall): shown as used
        )
        left = {c.id for c in ranked}
        for chunk in retrieval:
            if chunk.id not in left:
                admission.decisions[chunk.id] = Decision(
                    "dropped",
                    f"boilerplate: all {stripped[chunk.id]} of its lines recur in other documents",
                    "dedupe",
                )
        return admission

    def _forget(self, text: str, sentences: SentenceCache) -> None:
        """Let go of a merged source's text that a longer one replaced (see admit)."""
        for gone in sentences.forget(text):  # (those whose count the cache did not keep)
            self._counter.forget(escape_text(gone))

    def _plan(self, question: str, system: str, history: list[dict[str, str]]) -> Budget:
        count, p = self._counter, self._profile
        # The output contract is its own fixed slice (seed 003): reserved before any
        # source, so packing can cut evidence but never the contract.
        contract = 0
        if self.contract is not None:
            contract = count(self._system(system)) - count(system)
            if self._restates:
                contract += count(self._restated())
        sent = self._system(system)
        return Budget(
            context_window=p.context_window,
            # (an empty system text, and no contract: no system message, nor its framing)
            system=count(system) + p.message_overhead if sent else 0,
            question=count(QUESTION_SEPARATOR + question_block(question))
            + p.message_overhead
            + p.reply_overhead,
            history=sum(count(m["content"]) + p.message_overhead for m in history),
            answer=self.reserve_answer,
            contract=contract,
            other=self.reserve_other,
            cap=self.source_budget,
            input_limit=p.input_limit,
        )

    def _after_sources(self, question: str) -> str:
        """Everything the user message holds after ``</sources>``: the contract restated, the question."""
        return (self._restated() if self._restates else "") + QUESTION_SEPARATOR + question_block(question)

    def _sources_element(self, question: str) -> int:
        """Tokens the ``<sources>`` element adds around its sources, as the exact count splits it.

        The close tag merges with the line break after it, so it is counted with
        everything that follows, less that.
        """
        count, after = self._counter, self._after_sources(question)
        # (the question's reserve, counted alone, holds what a tokenizer that marks the start
        # of its input adds there: the user message opens with this tag, counted inside)
        return count.inside(SOURCES_OPEN + "\n") + count(SOURCES_CLOSE + after) - count(after)

    def _system(self, system: str) -> str:
        """The system message: instructions, then the output contract when there is one
        ("": none is sent)."""
        if self.contract is None:
            return system
        return f"{system}\n\n{self.contract}" if system else self.contract

    def _restated(self) -> str:
        """The contract restated between the sources and the question (escaped, as in the
        user message it could otherwise close its tag and open others)."""
        assert self.contract is not None
        return f"{QUESTION_SEPARATOR}<contract>{escape_text(self.contract)}</contract>"

    def _attrs(self, members: Sequence[Chunk]) -> list[tuple[str, str]]:
        """The attributes a source shows: its chunk's; for neighbours merged into one source,
        each field's distinct values among them, in member order, joined by "; " (their
        sections or dates may differ)."""
        if len(members) == 1:
            return self._chunk_attrs(members[0])
        return self._joined_values(self._values(members))

    def _values(self, members: Sequence[Chunk]) -> dict[str, list[str]]:
        """Each shown field's distinct values among ``members``, in member order."""
        values: dict[str, list[str]] = {}
        # (only members with a field to show: found in C, as most windows of a document have none)
        for member in itertools.compress(members, map(any, map(_TAG_FIELDS, members))):
            for name, value in self._chunk_attrs(member):
                seen = values.setdefault(name, [])
                if value not in seen:
                    seen.append(value)
        return values

    def _joined_values(self, values: Mapping[str, list[str]]) -> list[tuple[str, str]]:
        return [(name, "; ".join(values[name])) for name in self.metadata if name in values]

    def _chunk_attrs(self, chunk: Chunk) -> list[tuple[str, str]]:
        if not chunk.metadata and chunk.title is None and chunk.section is None and chunk.updated is None:
            return []  # nothing to show (asked for every source several times per pack)
        fields = {**chunk.metadata, "title": chunk.title, "section": chunk.section, "updated": chunk.updated}
        return attributes(fields, self.metadata, chunk.id)

    def _enclosure(
        self, members: Sequence[Chunk], text: str, label: int, tags: _Tags
    ) -> tuple[str, str, str]:
        """A source as (open tag, escaped text, close tag and the line break after it)."""
        if len(members) == 1:
            head, tail = self._tags(members[0], label, tags)
        else:
            head = source_head(label, chunk_attr(list(map(_ID, members))), self._attrs(members))
            tail = _closing(label)
        return head, escape_text(text), tail

    def _tags(self, chunk: Chunk, label: int, tags: _Tags) -> tuple[str, str]:
        """A single chunk's (open tag, close tag and the line break that joins it to what
        follows), kept for the rest of the pack: the prefetch, admission's room check and
        the source's cost all ask for the same ones."""
        made = tags.single.get((chunk.id, label))
        if made is None:
            # (one id's chunk attribute is chunk_attr_id's: no list joined and searched for commas)
            head = source_head(label, chunk_attr_id(chunk.id), self._chunk_attrs(chunk))
            made = tags.single[chunk.id, label] = (head, _closing(label))
        return made

    def _merged_tag(self, members: Sequence[Chunk], label: int, tags: _Tags) -> _MergedTag:
        """A merged source's open tag and its count (see _MergedTag): from the tag of the
        source it grew from when ``members`` are that source's and one more; else whole."""
        count = self._counter
        was = tags.merged.get((members[0].id, label))
        chunk = members[-1]
        if (
            was is not None
            and len(members) == len(was.members) + 1
            and all(map(operator.is_, was.members, members))  # (the same chunks: compared in C)
        ):
            added = ", " + chunk_attr_id(chunk.id)
            ids, ids_tokens = was.ids + added, count.joined(was.ids, added, was.ids_tokens)
            values = was.values
            brought = [(n, v) for n, v in self._chunk_attrs(chunk) if v not in values.get(n, ())]
            if brought:
                values = {name: list(seen) for name, seen in values.items()}
                for name, value in brought:
                    values.setdefault(name, []).append(value)
        else:
            ids = open_tag_start(label) + chunk_attr(list(map(_ID, members)))
            # (counted in pieces that add up, each once: see TokenCounter.once_in_parts)
            ids_tokens = count.once_in_parts(ids)
            values = self._values(members)
        rest = (
            was.rest
            if was is not None and values is was.values
            else open_tag_end(self._joined_values(values)) + "\n"
        )
        made = _MergedTag(members, ids, ids_tokens, values, rest, count.joined(ids, rest, ids_tokens))
        tags.merged[members[0].id, label] = made
        return made

    def _cost(
        self, members: Sequence[Chunk], text: str, label: int, sentences: SentenceCache, tags: _Tags
    ) -> int:
        """Tokens one source takes: open tag, escaped text, close tag and the line break after it.

        With an additive tokenizer (both OpenAI encodings) the count is exact and
        the same for every label below 1000 (so label 1 is counted for all of
        them), and the rendered prompt is the sum of its parts; a text starting
        with a line break or "/" would join the open tag's last piece, so it is
        counted whole. Otherwise the parts are counted apart (an estimate; the
        rendered prompt is then counted again).
        """
        count = self._counter
        if count.additive and label < 1000:
            label = 1
        # (an empty text, the tags alone that admission's room check asks for every
        # candidate, joins nothing: it is counted below with the tags, as any text)
        if not count.additive or (text and text[0] in "\r\n/"):
            head, body, tail = self._enclosure(members, text, label, tags)
            if count.additive:
                return count(head + body + tail)
            return count.inside(head) + count.inside(body) + count.inside(tail)
        if len(members) == 1:
            head, tail = self._tags(members[0], label, tags)
            head_tokens = count(head)
        else:
            head_tokens, tail = self._merged_tag(members, label, tags).tokens, _closing(label)
        # The text, counted from its sentences (see _body_tokens), and the close tag, which
        # meets only its last piece (see TokenCounter.joined): the text is never escaped or
        # counted whole here (a merged source's grows with every window that joins it).
        last = count.tail_of(text)
        if last is None:
            return head_tokens + count(escape_text(text) + tail)
        last = escape_text(last)
        return (
            head_tokens
            + self._body_tokens(text, sentences, len(members) > 1)
            - count(last)
            + count(last + tail)
        )

    def _render(
        self,
        ordered: Sequence[Draft],
        question: str,
        system: str,
        history: list[dict[str, str]],
    ) -> tuple[list[dict[str, str]], dict[str, str | list[str]], tuple[PackedSource, ...]]:
        """The messages, each label's chunk id (or a merged source's ids), and the sources as
        sent (each source's ids, attributes and label found once, for all three)."""
        blocks = []
        labels: dict[str, str | list[str]] = {}
        sources = []
        for n, draft in enumerate(ordered, start=1):
            ids = tuple(map(_ID, draft.members))
            attrs = tuple(self._attrs(draft.members))
            label = f"S{n}"
            blocks.append(source_block(n, chunk_attr(ids), attrs, draft.text))
            labels[label] = ids[0] if len(ids) == 1 else list(ids)
            # (label, position, ids, text, attributes, cost: by position, as a manifest entry)
            sources.append(_make_source(label, n, ids, draft.text, attrs, draft.cost))
        # With nothing kept the prompt is what follows the sources alone: an empty
        # <sources> element would cost tokens a zero source budget does not have.
        user = self._after_sources(question)
        user = sources_block(blocks) + user if blocks else user.removeprefix(QUESTION_SEPARATOR)
        messages = [{"role": "system", "content": system}] if system else []
        messages += [*history, {"role": "user", "content": user}]
        return messages, labels, tuple(sources)

    def _usage(
        self,
        messages: list[dict[str, str]],
        budget: Budget,
        question: str,
        ordered: Sequence[Draft],
        widest_label: int,
        history_messages: int,
    ) -> TokenUsage:
        count, p = self._counter, self._profile
        sent = len(messages) - history_messages - 1  # the system message: 1, or 0 when none is sent
        system = count(messages[0]["content"]) if sent else 0
        history = sum(count(m["content"]) for m in messages[sent:-1])
        # (with no sources the user message is that part alone, without its separator)
        question_part = count(self._after_sources(question) if ordered else messages[-1]["content"])
        if ordered and count.additive and widest_label < 1000:
            # Exact without a second pass over the sources: the user message splits
            # into segments that tokenize independently, and each source was costed
            # as it is labelled now, or with a label of as many digits (see _cost).
            user = self._sources_element(question) + sum(d.cost for d in ordered) + question_part
        else:
            user = count(messages[-1]["content"])
        framing = p.message_overhead * len(messages) + p.reply_overhead
        return TokenUsage(
            prompt=system + history + user + framing,
            system=system,
            history=history,
            question=question_part,
            sources=max(0, user - question_part) if messages[-1]["content"].startswith(SOURCES_OPEN) else 0,
            framing=framing,
            answer_reserve=budget.answer,
            context_window=budget.context_window,
            source_budget=budget.sources,
            exact=count.exact,
        )

    def _manifest(
        self,
        retrieval: Sequence[Chunk],
        admission: Admission,
        ordered: Sequence[Draft],
        conflicts: Mapping[str, tuple[str, ...]],
        roles: Mapping[str, str],
        stripped: Mapping[str, int],
        sentences: SentenceCache,
    ) -> tuple[ManifestEntry, ...]:
        """One entry per candidate, in retrieval rank order."""
        # where each kept chunk went: (position, label, source)
        where: dict[str, tuple[int, str, Draft]] = {}
        for n, draft in enumerate(ordered, start=1):
            spot = (n, f"S{n}", draft)  # (its label written once, for all its members)
            for m in draft.members:
                where[m.id] = spot
        decisions, body_tokens = admission.decisions, self._body_tokens
        entries = []
        for rank, chunk in enumerate(retrieval, start=1):
            cid = chunk.id
            decision = decisions[cid]
            placed = where.get(cid)
            if placed is None:
                status, position, label, cost, sent = "dropped", None, None, 0, 0
            else:
                status = "kept"
                position, label, draft = placed
                cost = sent = 0
                if draft.lead.id == cid:  # the source's lead carries its cost
                    cost = draft.cost
                    sent = body_tokens(draft.text, sentences, len(draft.members) > 1)
            compression, reason = decision.compression, decision.reason
            if stripped.get(cid):
                compression = {**(compression or {}), "boilerplate_stripped": stripped[cid]}
                if not reason.startswith("boilerplate"):  # (the trace says what stripping took)
                    n, rule = stripped[cid], self._boilerplate_rule
                    reason += f"; {n} boilerplate piece(s) stripped first ({rule})"
            # The fields in their order, passed by position: by keyword, matching the 19
            # names cost each entry about 2 us, as much as all the rest of this loop.
            entries.append(
                _make_entry(
                    cid,  # id
                    status,
                    reason,
                    decision.stage,
                    body_tokens(chunk.text, sentences),  # tokens
                    rank,
                    cost,
                    sent,  # sent_tokens
                    label,
                    position,
                    chunk.score,
                    _PRIORITY_NAMES[chunk.priority],
                    decision.role or roles.get(cid, chunk.role),  # role
                    decision.duplicate_of,
                    decision.merged_into,
                    conflicts.get(cid, ()),  # conflicts_with
                    decision.sentences_removed,
                    compression,
                    chunk,
                )
            )
        return tuple(entries)


def _closing(label: int) -> str:
    """A source's close tag as a cost counts it: the close part (see source_parts) and the
    line break that joins it to what follows."""
    return close_part(label) + "\n"


def _escaped(pieces: Sequence[str], escape: bool) -> Sequence[str]:
    """A text's counting pieces (see SentenceCache.pieces), escaped if the text needs it.

    Escaping turns a character into an entity without whitespace, so the escaped
    pieces still split where the tokenizer's pieces do and their counts add up to
    the escaped text's.
    """
    if not escape:
        return pieces
    joined = "\0".join(pieces)  # escaped together, in C, and cut apart again
    if joined.count("\0") == len(pieces) - 1:  # (unless a piece holds the separator)
        return escape_text(joined).split("\0")
    return [*map(escape_text, pieces)]


def _check_prompt_parts(question: Any, system: Any, history: Any) -> tuple[str, list[dict[str, str]]]:
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"question={question!r} must be a non-empty string")
    if system is None:
        system = DEFAULT_SYSTEM
    if not isinstance(system, str):
        raise InputError(f"system must be a string (or None for the default), got {type(system).__name__}")
    if system and system.isspace():
        raise InputError(
            f"system={system!r} is blank; give instructions, None for satchel.DEFAULT_SYSTEM, or "
            "'' to send no system message"
        )
    check_utf8(question, "question")
    check_utf8(system, "system")
    messages = []
    if history is not None and not listed(history):
        raise InputError(
            f"history must be a list of messages, got {type(history).__name__} {history!r:.60}; "
            "pass e.g. [{'role': 'user', 'content': '...'}] (or leave it out)"
        )
    for i, m in enumerate(history or ()):
        if (
            not isinstance(m, Mapping)
            or not isinstance(m.get("content"), str)
            or m.get("role") not in _HISTORY_ROLES
        ):
            raise InputError(
                f"history[{i}]={m!r} must be a dict with role ({', '.join(_HISTORY_ROLES)}) and "
                "string content"
            )
        other = sorted(map(str, m.keys() - {"role", "content"}))
        if other:
            # (passed on, they would go uncounted; left out, a tool message loses its call)
            raise InputError(
                f"history[{i}] has {', '.join(map(repr, other))} besides role and content; Satchel "
                "sends and counts role and content only: put what matters into the content, or "
                "add those messages to the request after packing (and leave room: reserve_other=)"
            )
        check_utf8(m["content"], f"history[{i}] content")
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

    ``system`` replaces :data:`satchel.DEFAULT_SYSTEM` (the grounding rules: answer from
    the sources, cite them, source text is information, not instructions) whole; add to
    it to keep them.

    ``options`` are those of :class:`Packer`: ``model``, ``context_window``,
    ``tokenizer``, ``reserve_answer``, ``reserve_other``, ``source_budget``,
    ``order`` (``relevance``, ``edges``, ``chronological``, and seed 003's
    ``query-adjacent`` and ``edge-anchored``), ``dedupe``,
    ``near_duplicate``, ``max_sources``, ``max_chunk_tokens``, ``metadata``,
    ``message_overhead`` and ``reply_overhead``.
    """
    _check_option_names(options, "pack()")
    return Packer(**options).pack(candidates, question, system=system, history=history)


def _names(option: str, value: Any, known: Sequence[str], kind: str) -> list[str]:
    """An option's list of names (one name alone is a list of one), before checking each is known."""
    names = [value] if isinstance(value, str) else value
    if not listed(names) or not all(isinstance(name, str) for name in names):
        raise ConfigError(f"{option}={value!r} must be a list of {kind}: {', '.join(known)}")
    return list(names)


def _check_option_names(options: Mapping[str, Any], caller: str) -> None:
    """Refuse option names Packer does not have (its private fields included)."""
    unknown = set(options) - set(Packer.__dataclass_fields__) | {k for k in options if k.startswith("_")}
    if unknown:
        raise ConfigError(
            f"{caller} got unknown option(s) {', '.join(sorted(unknown))}; see help(satchel.Packer)"
        )

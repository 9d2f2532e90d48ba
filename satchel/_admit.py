"""Admit: walk the ranked candidates and take each one that fits.

Seed 001's fill loop and seed 004's priority window are the same loop: candidates
are visited by priority tier (CRITICAL first) and rank within a tier; one that
does not fit is skipped and the next one is tried. A CRITICAL candidate that
cannot fit raises :class:`BudgetError`. Every candidate ends with a
:class:`Decision` that says what happened to it and why.

Admission also applies the second dedupe pass (the ledger, :mod:`satchel._ledger`):
neighbours of one document merge into one source, and sentences that were
already sent are left out. Costs come from a caller-supplied function so the
same loop serves enclosed sources (``pack``) and bare blocks (``ContextWindow``).
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ._chunk import Chunk, Priority
from ._dedupe import Place, agree_where_overlapping
from ._errors import BudgetError
from ._ledger import Fresh, Ledger
from ._represent import Compressor, Fit, fit, unmarked
from ._sentences import SentenceCache

__all__ = ["Admission", "Decision", "Draft", "Policy", "admit"]


@dataclass(slots=True, eq=False)  # (compared by identity: admission finds them in long lists)
class Draft:
    """A source being built: one chunk, or neighbours of one document merged."""

    members: list[Chunk]
    text: str
    rank: int
    #: (doc_id, start, end) while the text is still exactly that slice of the document
    span: Place | None
    cost: int = 0
    role: str = "supporting"

    @property
    def lead(self) -> Chunk:
        return self.members[0]


_RANK = operator.attrgetter("rank")
#: read once: in Python 3.11 a member read off its enum class (``Priority.CRITICAL``) costs
#: about as much as a function call, and admission asks for every candidate
_CRITICAL = Priority.CRITICAL


@dataclass(slots=True)
class Decision:
    """What happened to one candidate."""

    status: str  # "kept" or "dropped"
    reason: str
    stage: str  # "dedupe", "admit", "represent" or "verify"
    duplicate_of: str | None = None
    merged_into: str | None = None
    sentences_removed: int = 0
    compression: dict[str, object] | None = None
    #: the tokens that were left when it was dropped for want of room (see _turns)
    left: int | None = None
    #: dropped by the source cap (max_sources), which a merge may make room under again
    at_cap: bool = False
    #: the role it was admitted under, where that is not its own (a copy in its original's place)
    role: str | None = None


class _DocumentSources:
    """The admitted sources of one document that are still exact slices of it, in
    document order.

    Their spans never overlap or touch (a chunk that touches one merges with it), so
    their ends are in order too, and the sources a chunk touches are one run of them,
    found by bisection: a document cut into thousands of windows is not scanned for
    every one of them.
    """

    __slots__ = ("drafts", "ends", "starts")

    def __init__(self) -> None:
        self.drafts: list[Draft] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def touching(self, start: int, end: int) -> tuple[int, int]:
        """Where the run of sources that ``start``-``end`` overlaps or touches begins and ends
        (equal when there is none: then it is where such a source would go)."""
        return bisect_left(self.ends, start), bisect_right(self.starts, end)

    def put(self, draft: Draft, run: tuple[int, int] | None = None) -> None:
        """Add ``draft``, in place of the sources of ``run`` when given; a draft that is no
        longer a slice of the document (no span) only takes them out."""
        if draft.span is None:
            assert run is not None
            lo, hi = run
            del self.drafts[lo:hi], self.starts[lo:hi], self.ends[lo:hi]
            return
        _, start, end = draft.span
        lo, hi = run if run is not None else self.touching(start, end)
        self.drafts[lo:hi], self.starts[lo:hi], self.ends[lo:hi] = [draft], [start], [end]


@dataclass(slots=True)
class Admission:
    sources: list[Draft] = field(default_factory=list)
    decisions: dict[str, Decision] = field(default_factory=dict)
    used: int = 0
    #: the highest label a source was costed with (sources move down when others merge)
    widest_label: int = 0


@dataclass(frozen=True, slots=True)
class Policy:
    """Seed 003's admission policy: roles, per-role caps, compression, distractor filter.

    The default policy changes nothing: no caps, no compression, no filter.
    """

    roles: Mapping[str, str] = field(default_factory=dict)
    #: per-role cap in tokens (None: uncapped); ``caps=None`` turns role caps off
    caps: Mapping[str, int | None] | None = None
    question: str = ""
    extractive: bool = False
    compressor: Compressor | None = None
    compressor_roles: frozenset[str] = frozenset()
    #: candidates scoring below this are distractors (``min_score_ratio`` × best score)
    min_score: float | None = None
    min_score_ratio: float | None = None
    #: question-term weights for extractive compression (idf over the candidates)
    weights: Mapping[str, float] | None = None
    #: the counts add up over text cut where _tokens.cut_in cuts (before a space or tab that
    #: follows a visible character, after a line break): compression counts each trial from
    #: the pieces it changes, and a merged source's text is counted from the text it grew from
    counts_add_up: bool = False


def distractor(chunk: Chunk, min_score: float | None) -> bool:
    """Whether the distractor filter drops ``chunk``: it scores below ``min_score`` (None:
    the filter is off), and is not CRITICAL. (Roles, assigned before admission, leave out
    the chunks it drops.)"""
    return (
        min_score is not None
        and chunk.priority != _CRITICAL
        and chunk.score is not None
        and chunk.score < min_score
    )


CostFn = Callable[[Sequence[Chunk], str, int], int]
"""cost(members, text, provisional label number) -> tokens the source takes in the prompt."""


def admit(
    ranked: Sequence[Chunk],
    budget: int,
    cost: CostFn,
    text_tokens: Callable[[str], int],
    *,
    duplicate_of: Mapping[str, tuple[str, float]] | None = None,
    sentences: bool = True,
    neighbours: bool = True,
    max_sources: int | None = None,
    max_chunk_tokens: int | None = None,
    policy: Policy | None = None,
    cache: SentenceCache | None = None,
    names: tuple[str, str] = ("candidate", "source budget"),
    spent: int = 0,
    ranks: Mapping[str, int] | None = None,
    forget: Callable[[str], None] | None = None,
) -> Admission:
    """Admit ``ranked`` (already in tier-and-rank order) into ``budget`` tokens.

    ``cache`` holds texts already split into sentences (by the first dedupe pass);
    ``names`` are what errors call an item and the budget, and ``spent`` what the budget
    the user set had spent before ``budget`` (the ``<sources>`` tags around the sources):
    reasons and errors show that budget, with ``spent`` as used; ``ranks`` the retrieval rank
    of each candidate, when ``ranked`` is in another order (role caps admit by role),
    for the orders to place sources by; ``forget`` is told the text of a merged source
    that a longer one replaced, which the caller's caches may then let go of (a document
    retrieved as a thousand windows would otherwise leave a thousand ever longer copies).
    """
    out = Admission()
    ledger = Ledger(cache) if sentences else None
    by_doc: dict[str, _DocumentSources] = {}
    duplicate_of = duplicate_of or {}
    policy = policy or Policy()
    count = text_tokens
    whole = budget + spent  # the budget the user set, as reasons and errors show it
    # A duplicate whose original was not sent for want of room (or of a place under
    # max_sources), or never reached admission (all its lines were boilerplate), has a turn
    # of its own, in its place, under the original's role: dropped as a copy of text the
    # prompt never held, a window that would have merged into its document's source for a
    # few tokens lost the answer. (An original a role cap, the distractor filter or the
    # per-chunk cap left out holds its copies out too.)
    in_place: dict[str, tuple[str, str]] = {}  # duplicate -> (original, what kind of copy)
    copies: dict[str, list[str]] = {}  # original -> its duplicates that had a turn of their own

    def stand_in(original: str) -> str | None:
        """The duplicate of ``original`` sent in its place, if any (kept alone or merged)."""
        return next((d for d in copies.get(original, ()) if out.decisions[d].status == "kept"), None)

    texts = {c.id: c.text for c in ranked} if duplicate_of else {}
    min_score = policy.min_score
    behind: list[str] = []  # duplicates dropped behind their original, whatever became of it
    for position, chunk, again in _turns(ranked, out, budget, max_sources):
        critical = chunk.priority == _CRITICAL
        rank = position + 1 if ranks is None else ranks[chunk.id]  # (where the orders place it)
        role = policy.roles.get(chunk.id, "supporting")
        if again and (sent := stand_in(chunk.id)) is not None:  # (tried again once merges freed room)
            out.decisions[chunk.id] = Decision(
                "dropped",
                f"duplicate: {sent}, its {in_place[sent][1]}, was sent in its place when it was left out",
                "dedupe",
                duplicate_of=sent,
            )
            continue
        dup = duplicate_of.get(chunk.id)
        if dup is not None:
            original, similarity = dup
            # (three places from 0.995 on: 0.999 is no "1.00", which only an exact copy is)
            shown = f"{similarity:.2f}" if similarity < 0.995 else f"{similarity:.3f}"
            kind = "exact copy" if similarity == 1.0 else f"near-duplicate (similarity {shown})"
            if similarity == 1.0 and texts.get(original, chunk.text) != chunk.text:
                kind = "copy in other case, spacing or quote marks"
            decided = out.decisions.get(original)
            left_out = original not in texts or (
                decided is not None
                and decided.status != "kept"
                and (decided.left is not None or decided.at_cap)
            )
            if not left_out:  # sent; or yet to have its turn (role caps admit by role); or held out
                out.decisions[chunk.id] = Decision(
                    "dropped",
                    f"duplicate: {kind} of {original}, which ranks higher",
                    "dedupe",
                    duplicate_of=original,
                )
                behind.append(chunk.id)
                continue
            if (sent := stand_in(original)) is not None:
                out.decisions[chunk.id] = Decision(
                    "dropped",
                    f"duplicate: {kind} of {original}, which ranks higher and was not sent; {sent}, "
                    "another copy of it, was sent in its place",
                    "dedupe",
                    duplicate_of=sent,
                )
                continue
            if chunk.id not in in_place:
                in_place[chunk.id] = (original, kind)
                copies.setdefault(original, []).append(chunk.id)
            role = policy.roles.get(original, role)  # (copies take no role of their own)
        if min_score is not None and distractor(chunk, min_score):  # (no call while the filter is off)
            out.decisions[chunk.id] = Decision(
                "dropped",
                f"distractor filter: score {chunk.score:g} < {policy.min_score_ratio:g} × the best score "
                f"(min_score_ratio)",
                "admit",
            )
            continue
        left = budget - out.used
        room = (left, whole)  # (what is left, of the budget shown: see _no_room)
        place = chunk.place
        # why a chunk that touches an admitted source of its document is not merged into it
        # (then it goes the ordinary way, a source of its own without a place to join)
        apart = None
        sources = by_doc.get(place[0]) if neighbours and place is not None else None
        if sources is not None:
            assert place is not None
            run = sources.touching(place[1], place[2])
            if run[0] < run[1]:  # admitted sources of its document it overlaps or touches
                touching = sources.drafts[run[0] : run[1]]
                stale = _other_version(chunk, place, touching)
                if stale is not None:
                    apart = (
                        f"not merged with {stale}, which holds other text at the same characters of "
                        f"document {chunk.doc_id!r} (another version of it?)"
                    )
                else:
                    if again and (below := min(touching, key=_RANK)).rank > rank:
                        # Tried again, it would join a source led by a chunk ranked below it,
                        # and be placed at that chunk's rank, after it: it goes as a source of
                        # its own, without the sentences that source sent.
                        apart = f"not merged with {below.lead.id}, which ranks below it"
                    else:
                        # It joins that source, as part of it, under the source's role (not its
                        # own: a window next to the decisive one is more of the same passage;
                        # dropped by a background cap of 0, it cost the evidence benchmark's
                        # policy row 1.6 to 2.2 points of answers), within that role's cap; one
                        # that would take the source over it is sent alone, under its own.
                        # (the merged text is split for the ledger, and to be counted from
                        # what it grew from when counts add up)
                        apart = _merge_neighbours(
                            chunk,
                            sources,
                            run,
                            out,
                            room,
                            cost,
                            count,
                            ledger,
                            names,
                            forget=forget,
                            cache=cache if ledger is not None or policy.counts_add_up else None,
                            caps=None if critical else policy.caps,
                            max_chunk_tokens=max_chunk_tokens,
                        )
                        if apart is None:
                            continue
                    if ledger is None:
                        # Alone, nothing would take out the text it shares with the source.
                        out.decisions[chunk.id] = Decision(
                            "dropped",
                            f"{apart}; alone it would repeat the text they share "
                            "(the sentence dedupe is off)",
                            "represent",
                        )
                        continue
        if max_sources is not None and not critical and len(out.sources) >= max_sources:
            # (checked once it is known to go as a source of its own: a window that joins
            # an admitted source of its document adds no source)
            reason = f"source cap: {max_sources} sources already admitted (max_sources)"
            out.decisions[chunk.id] = Decision(
                "dropped", reason + (f"; {apart}" if apart else ""), "admit", at_cap=True
            )
            continue
        cap = None if critical or policy.caps is None else policy.caps.get(role)
        if cap == 0:
            out.decisions[chunk.id] = Decision(
                "dropped", f"role cap: {role} items get 0 tokens (role_caps)", "represent"
            )
            continue
        label = len(out.sources) + 1
        if label > out.widest_label:
            out.widest_label = label
        overhead = cost([chunk], "", label)
        if left <= overhead:
            # The budget is full: nothing of this chunk can fit (but a text that merges whole
            # into the close tag: "."), so skip the dedupe work.
            needs = cost([chunk], chunk.text, label)
            if needs > left:
                decision = _no_room(chunk, needs, room, names, apart=apart)
                compressible = not critical and (
                    policy.extractive or (policy.compressor is not None and role in policy.compressor_roles)
                )
                if compressible:  # (the verbatim cost alone read as if compression were never tried)
                    decision.reason += f" (its enclosure alone takes {overhead}: no compression can fit it)"
                if ledger is not None and (where := ledger.sent_whole(chunk.text)):
                    # (the ledger's work is skipped here: "does not fit" alone sent one looking for
                    # the answer to raise the budget for a text the prompt already holds)
                    decision.reason += f"; every sentence of it was already sent (in {', '.join(where)})"
                out.decisions[chunk.id] = decision
                continue
        # (a text neighbours cannot join is also checked for sentences cut from those sent)
        edges = place is None or not neighbours or apart is not None
        # (its own repeats go only from a text that is sent as it is, whole or not at all: a
        # window neighbours may join must stay one slice of its document, and CRITICAL text
        # is sent as given)
        itself = chunk.id if (place is None or not neighbours) and not critical else None
        fresh = ledger.fresh(chunk.text, edges=edges, itself=itself) if ledger is not None else None
        if fresh is not None and fresh.sent_in and not fresh.text:
            out.decisions[chunk.id] = _already_sent(fresh, "every sentence")
            continue
        text = fresh.text if fresh is not None else chunk.text
        removed = len(fresh.sent_in) if fresh is not None else 0
        # The per-chunk cap is on what the chunk would send: a window of a sentence or two
        # more than one sent before sends only those (checked on the whole text, it was
        # dropped over the cap with the only sentence it had that was new).
        if max_chunk_tokens is not None and not critical and (size := count(text)) > max_chunk_tokens:
            without = ""
            if removed:
                assert fresh is not None
                repeats = fresh.sent_in.count(chunk.id)
                without = f" ({_without(removed, fresh.cut, repeats, fresh.sent_in, chunk.id).lstrip()})"
            out.decisions[chunk.id] = Decision(
                "dropped",
                f"over the per-chunk cap: {size} tokens{without} > max_chunk_tokens={max_chunk_tokens}"
                + (f"; {apart}" if apart else ""),
                "admit",
                sentences_removed=removed,
            )
            continue
        # Exactly what the text takes as it is (its last piece may merge with the close
        # tag: ".\n" is one token, so it takes less than the tags and the text apart).
        verbatim = cost([chunk], text, label)
        if verbatim <= left and (cap is None or count(text) <= cap):
            shaped = Fit(text, "verbatim")
        else:
            shaped = fit(
                text,
                role=role,
                cap=cap,
                room=max(0, left - overhead),
                question=policy.question,
                count=count,
                extractive=policy.extractive and not critical,
                compressor=None if critical else policy.compressor,
                compressor_roles=policy.compressor_roles,
                weights=policy.weights,
                adds_up=policy.counts_add_up,
            )
        if shaped.text is None:
            decision = _no_room(chunk, verbatim, room, names)
            if shaped.reason:  # a role cap or compression said why
                no_room = decision.reason.removeprefix("does not fit: ")
                decision.reason, decision.stage = shaped.reason, "represent"
                if verbatim > left:
                    # (and what it needed whole: "cannot compress ... the 10 tokens available"
                    # alone gave no figure of the source budget that would have taken it)
                    decision.reason += f"; whole, it {no_room}"
            if apart is not None:
                decision.reason += f"; {apart}"  # (after what the role cap or compression said)
            decision.sentences_removed = removed
            out.decisions[chunk.id] = decision
            continue
        if (
            ledger is not None
            and shaped.compression is not None
            and shaped.compression["strategy"] == "abstractive"
        ):
            # A summary is new text, which the ledger never saw: two items the compressor
            # summed up alike were both sent.
            summary = ledger.fresh(shaped.text)
            if summary.sent_in and not summary.text:
                out.decisions[chunk.id] = _already_sent(
                    summary, "every sentence of its summary (abstractive)"
                )
                continue
        span = None
        if place is not None and shaped.compression is None and apart is None:
            # still a slice of its document (when the ledger took sentences only from its
            # ends), so a neighbour can join it later
            span = _within(place, fresh.run if fresh is not None else (0, len(text)))
        draft = Draft([chunk], shaped.text, rank, span, role=role)
        draft.cost = verbatim if draft.text is text else cost(draft.members, draft.text, label)
        if draft.cost > left:  # the parts did not add up exactly; never overshoot
            out.decisions[chunk.id] = _no_room(chunk, draft.cost, room, names, apart=apart)
            continue
        out.sources.append(draft)
        out.used += draft.cost
        if span is not None and neighbours:  # (the index is only for merging neighbours)
            by_doc.setdefault(span[0], _DocumentSources()).put(draft)
        if ledger is not None:
            # the keys of a text kept as the ledger left it are known; a compressed one is split
            # again, without the marks of what it left out (see unmarked)
            known = fresh.keys if fresh is not None and draft.text is fresh.text else None
            # (and what stood around its sentences is the text as it came)
            around = fresh.split.normal if known is not None and fresh is not None and fresh.split else None
            strategy = None if shaped.compression is None else shaped.compression["strategy"]
            sent = draft.text if strategy is None else unmarked(draft.text, str(strategy))
            ledger.record(sent, chunk.id, known, around)
        reason = "admitted" if shaped.compression is None else f"admitted, {shaped.reason}"
        if removed:  # (a text the ledger left whole says nothing more)
            assert fresh is not None
            reason += _without(removed, fresh.cut, fresh.sent_in.count(chunk.id), fresh.sent_in, chunk.id)
        if apart is not None:
            reason += f"; {apart}"
        if critical:  # (CRITICAL is sent or stops the pack: no cap holds it back, and it says so)
            reason += _past_caps(len(out.sources), max_sources, draft.text, max_chunk_tokens, count)
        out.decisions[chunk.id] = Decision(
            "kept", reason, "admit", sentences_removed=removed, compression=shaped.compression
        )
    _say_in_place(out, in_place, policy.roles)
    _say_held_out(out, behind)
    return out


def _say_held_out(out: Admission, behind: Sequence[str]) -> None:
    """Each duplicate dropped behind its original (``behind``) whose original went out after
    all (a role cap, the distractor filter or the per-chunk cap held it out, and so its
    copies: a copy takes its original's role) says so; its reason read as if the original
    had been sent."""
    for chunk_id in behind:
        decision = out.decisions[chunk_id]
        if decision.status != "dropped" or decision.duplicate_of is None:
            continue  # (decided again since)
        gone = out.decisions.get(decision.duplicate_of)
        # (an original dropped as a copy itself had its text sent, or says why it was not)
        if gone is not None and gone.status != "kept" and gone.stage != "dedupe":
            decision.reason += f" and was not sent either ({gone.reason}), nor its copies"


def _say_in_place(out: Admission, in_place: Mapping[str, tuple[str, str]], roles: Mapping[str, str]) -> None:
    """Each duplicate that had a turn of its own (its original was left out) says so, kept or
    not (its decision was made where any candidate's is); one whose original was sent after
    all (tried again once merges freed room) is its duplicate, as any copy of a text sent."""
    for chunk_id, (original, kind) in in_place.items():
        decision = out.decisions[chunk_id]
        if decision.duplicate_of is not None and decision.status == "dropped":
            continue  # (another copy went in its place: its reason says so)
        gone = out.decisions.get(original)
        if gone is not None and gone.status == "kept":
            if decision.status != "kept":
                out.decisions[chunk_id] = Decision(
                    "dropped",
                    f"duplicate: {kind} of {original}, which ranks higher",
                    "dedupe",
                    duplicate_of=original,
                )
            continue
        decision.role = roles.get(original)  # (copies take no role of their own: it had its original's)
        if decision.status == "kept":
            decision.reason += (
                f"; in place of {original}, which ranks higher but was not sent: it is its {kind}"
            )
            if gone is not None and gone.status != "kept":
                # The original says so too: read alone, its "does not fit" told one looking for
                # the answer it held that the prompt lost it, though its copy carried it in.
                gone.reason += f"; {chunk_id}, its {kind}, was sent in its place"
        else:
            article = "an" if kind.startswith("exact") else "a"
            decision.reason += (
                f"; it is {article} {kind} of {original}, which ranks higher and was not sent either"
            )


def _turns(
    ranked: Sequence[Chunk], out: Admission, budget: int, max_sources: int | None
) -> Iterator[tuple[int, Chunk, bool]]:
    """Each (position, chunk, False) of ``ranked`` in turn, and again (True) each one that was
    dropped for want of room while more is free now, or by the source cap while there are
    fewer sources now, best-ranked first.

    A window joining two admitted sources of its document makes them one, and frees the
    tags of the other and a place under max_sources: a better-ranked chunk skipped for
    want of them was left out while they stayed free. What a merge frees goes at once to
    the best-ranked chunks it now holds, before the next in turn could take it: a place
    under the cap to the best-ranked chunk the cap dropped, tokens to each chunk dropped
    for want of them that they now hold. Once every chunk had its turn, all are looked at
    again, and so on while merges free more. (Read between turns: a turn's decision is
    made when the next turn is asked for.) Bounded so that admission stays linear: at
    most as many turns again as there are chunks, and as many looks at waiting chunks
    during the turns, each sorting of them counted too (past those, freed tokens wait for
    the end of the turns); a chunk left out then says how much was left at its last turn.
    """
    # position -> tokens left when it was dropped for want of room (None: by the source cap)
    short: dict[int, int | None] = {}
    capped: list[int] = []  # (a heap) the positions the source cap dropped
    turns_left = looks_left = len(ranked)

    def note(position: int, chunk: Chunk) -> None:
        decision = out.decisions.get(chunk.id)
        if decision is not None and (decision.left is not None or decision.at_cap):
            short[position] = decision.left
            if decision.at_cap:
                heapq.heappush(capped, position)

    def under_cap() -> bool:
        return max_sources is not None and len(out.sources) < max_sources

    def freed(left: int | None) -> bool:
        return under_cap() if left is None else budget - out.used > left

    def again(position: int) -> Iterator[tuple[int, Chunk, bool]]:
        nonlocal turns_left
        turns_left -= 1
        left = short.pop(position)
        chunk = ranked[position]
        yield position, chunk, True
        note(position, chunk)
        decision = out.decisions[chunk.id]
        if decision.status == "kept":
            what = "room" if left is not None else "a place under max_sources"
            decision.reason += f"; tried again once merged neighbours freed {what}"

    def retried(during: bool) -> Iterator[tuple[int, Chunk, bool]]:
        """Each chunk waiting, best-ranked first, that what is free now holds, tried again.
        ``during`` the turns: for tokens only (a place under the cap goes by ``capped``),
        within the looks left (the sorting counted), and no further once none is free."""
        nonlocal looks_left
        if during:
            if looks_left < len(short):
                return
            looks_left -= len(short)
        for position in sorted(short):
            left = short[position]
            if turns_left and (left is not None or not during) and freed(left):
                yield from again(position)
            if during:
                looks_left -= 1
                if looks_left <= 0 or budget - out.used <= 0:
                    return

    for position, chunk in enumerate(ranked):
        used = out.used
        yield position, chunk, False
        note(position, chunk)
        while capped and turns_left and under_cap():
            waiting = heapq.heappop(capped)
            if short.get(waiting, 0) is None:  # (still dropped by the cap)
                yield from again(waiting)
        if out.used < used and short:  # a merge freed tokens
            yield from retried(during=True)
    while True:
        before = turns_left
        yield from retried(during=False)
        if turns_left == before:
            return


def _merge_neighbours(
    chunk: Chunk,
    sources: _DocumentSources,
    run: tuple[int, int],
    out: Admission,
    room: tuple[int, int],
    cost: CostFn,
    count: Callable[[str], int],
    ledger: Ledger | None,
    names: tuple[str, str],
    forget: Callable[[str], None] | None = None,
    cache: SentenceCache | None = None,
    caps: Mapping[str, int | None] | None = None,
    max_chunk_tokens: int | None = None,
) -> str | None:
    """Merge ``chunk`` into the admitted sources of its document in ``run``, which it
    overlaps or touches and which hold the same text where they overlap it (see
    _other_version); or drop it, when it is covered or too big to merge. ``room``: the
    tokens left, of the budget shown (see _no_room); ``caps``: the role caps, when the
    merged source must stay within the cap of its role (``count`` its text), and
    ``max_chunk_tokens`` the per-chunk cap, which a merged source is held to as any
    (ten windows of 65 tokens merged into one source of 696 under a cap of 80), but for
    a CRITICAL chunk, whose reason says it went past it. Returns
    None, or, when the merged source would be over a cap, why the chunk stays apart (for
    its reason: it goes on as a source of its own)."""
    assert chunk.doc_id is not None and chunk.start is not None and chunk.end is not None
    touching = sources.drafts[run[0] : run[1]]
    for d in touching:
        assert d.span is not None
        if d.span[1] <= chunk.start and chunk.end <= d.span[2]:
            out.decisions[chunk.id] = Decision(
                "dropped",
                f"duplicate: its text is already sent inside {d.lead.id} (same document, "
                f"characters {chunk.start}-{chunk.end})",
                "dedupe",
                duplicate_of=d.lead.id,
            )
            return None
    # (start, end, text) of each, in document order: the merged text starts with the first's
    parts = sorted(
        [(d.span[1], d.span[2], d.text) for d in touching if d.span] + [(chunk.start, chunk.end, chunk.text)]
    )
    text, first = "", parts[0][0]
    cursor = first
    for start, end, part in parts:
        if end <= cursor:
            continue
        text += part[max(0, cursor - start) :]
        cursor = end
    lead_draft = min(touching, key=lambda d: d.rank)
    union: Place = (chunk.doc_id, first, cursor)
    span: Place | None = union
    members = [m for d in sorted(touching, key=lambda d: d.rank) for m in d.members] + [chunk]
    cuts: dict[str, _Cut] = {}
    if cache is not None:
        # Split once, from the longer of the texts at its ends (the text merged before:
        # only the rest is split again), for the ledger and for counting the merged text
        # from that text's count rather than whole again.
        at_start, at_end = parts[0][2], parts[-1][2]
        cache.split_grown(text, at_end if len(at_end) > len(at_start) else at_start)
    if ledger is not None:
        # What the chunk adds may hold sentences another source already sent; the
        # sources it joins keep theirs (recorded under any of their members).
        fresh = ledger.fresh(text, own={m.id for m in members[:-1]})
        if fresh.sent_in and not fresh.text:
            # Every sentence of the union was sent elsewhere (a source here held only a
            # piece of one): the chunk brings nothing new, and the sources stay as they are.
            out.decisions[chunk.id] = _already_sent(fresh, f"all it adds to {lead_draft.lead.id}")
            return None
        if fresh.sent_in:
            # A sentence sent elsewhere may take a piece of a member with it (a window cut
            # inside it, now completed by the chunk): that member's entry says so, and a
            # member left with nothing leaves the source.
            text, span = fresh.text, _within(union, fresh.run)
            cuts = _cut_members(fresh, union, touching, chunk)
            members = [m for m in members if m is chunk or cuts.get(m.id, _UNCUT).left]
    cap = None if caps is None else caps.get(lead_draft.role)
    size = count(text) if cap is not None or max_chunk_tokens is not None else 0  # (counted once)
    if cap is not None and size > cap:
        # (a supporting source capped at 40 tokens grew to 211, window by window; dropped
        # instead, the window holding the answer was lost)
        return (
            f"not merged with {lead_draft.lead.id}: the source would be {size} tokens, over its "
            f"{lead_draft.role} cap of {cap} (role_caps)"
        )
    critical = chunk.priority == _CRITICAL
    # (CRITICAL goes past the cap, and says so below)
    if max_chunk_tokens is not None and size > max_chunk_tokens and not critical:
        return (
            f"not merged with {lead_draft.lead.id}: the source would be {size} tokens, over "
            f"max_chunk_tokens={max_chunk_tokens}"
        )
    past = _past_caps(0, None, text, max_chunk_tokens, count) if critical else ""
    lead = members[0]
    merged = Draft(members, text, lead_draft.rank, span, role=lead_draft.role)
    old_cost = sum(d.cost for d in touching)
    index = out.sources.index(lead_draft)
    merged.cost = cost(merged.members, text, index + 1)
    extra = merged.cost - old_cost
    if extra > room[0]:
        out.decisions[chunk.id] = _no_room(chunk, extra, room, names, joining=lead_draft.lead.id)
        return None
    out.sources[index] = merged
    for d in touching:
        if d is not lead_draft:
            out.sources.remove(d)
    sources.put(merged, run)
    out.used += extra
    if ledger is not None:
        assert chunk.start is not None  # (a chunk with a place: see Chunk.place)
        ledger.record(text, lead.id, joined=(chunk.text, chunk.start - first))
    if forget is not None:
        for d in touching:
            if len(d.members) > 1 and d.text != text:  # a merged text no source holds now
                forget(d.text)
    for m_id, cut in cuts.items():  # the members that lost sentences to the merge
        if m_id == chunk.id:
            continue
        if cut.left:
            decision = out.decisions[m_id]
            decision.sentences_removed += cut.sentences
            decision.reason += (
                f"; {cut.sentences} sentence(s) of it went when {chunk.id} joined it (already sent in "
                f"{', '.join(cut.sent_in)})"
            )
        else:
            out.decisions[m_id] = Decision(
                "dropped",
                f"duplicate: all it sent was already sent (in {', '.join(cut.sent_in)}), as {chunk.id} "
                "completed its sentence(s)",
                "dedupe",
                duplicate_of=cut.sent_in[0],
                sentences_removed=cut.sentences,
            )
    # Earlier members now sit under one lead (the new chunk is decided below). Those of the
    # lead's own source already did, unless its lead went: only the members of the sources
    # it joined move (a document's windows joining one by one are not all set again each time).
    moved = (
        [m for d in touching if d is not lead_draft for m in d.members if cuts.get(m.id, _UNCUT).left]
        if lead is lead_draft.lead
        else members[1:-1]
    )
    for m in moved:
        decision = out.decisions[m.id]
        if decision.merged_into is None:  # it led a source of its own, which the chunk joined to this one
            decision.reason += f"; its source joined {lead.id}'s when {chunk.id} came between them"
        decision.merged_into = lead.id
    if lead is not lead_draft.lead and lead is not chunk:
        # The source's lead went (all it sent was already sent): the next member leads it now.
        decision = out.decisions[lead.id]
        decision.merged_into = None
        decision.reason += f"; it leads the source since {lead_draft.lead.id} left it, as {chunk.id} joined"
    removed, sent_in = cuts.get(chunk.id, _UNCUT).sentences, cuts.get(chunk.id, _UNCUT).sent_in
    if lead is chunk:  # every member it joined is gone (see above)
        gone = ", ".join(m_id for m_id, cut in cuts.items() if not cut.left)
        out.decisions[chunk.id] = Decision(
            "kept",
            f"admitted{_without(removed, sent_in=sent_in)}, in place of {gone} (same document), "
            "whose text was already sent" + past,
            "admit",
            sentences_removed=removed,
        )
        return None
    out.decisions[chunk.id] = Decision(
        "kept",
        f"merged into {lead.id}: neighbour in the same document, overlap sent once"
        + _without(removed, sent_in=sent_in)
        + past,
        "dedupe",
        merged_into=lead.id,
        sentences_removed=removed,
    )
    return None


@dataclass(frozen=True, slots=True)
class _Cut:
    """What a merge's ledger took from one member: how many sentences touching its text,
    where they were sent, and whether any of its text is left."""

    sentences: int = 0
    sent_in: tuple[str, ...] = ()
    left: bool = True


_UNCUT = _Cut()


def _cut_members(fresh: Fresh, union: Place, touching: Sequence[Draft], chunk: Chunk) -> dict[str, _Cut]:
    """For each member of a merge (the ``touching`` sources' and ``chunk``) that the ledger took
    sentences from, what it lost (``fresh``: the merged text at ``union`` after the ledger)."""
    assert fresh.split is not None and chunk.start is not None and chunk.end is not None
    first = union[1]
    gone = [
        (first + s, first + e, where)
        for (s, e), where in zip(fresh.split.spans, fresh.seen, strict=True)
        if where is not None
    ]
    ranges = [(chunk, chunk.start, chunk.end)]
    for d in touching:
        assert d.span is not None
        ranges += [(m, max(d.span[1], m.start or 0), min(d.span[2], m.end or 0)) for m in d.members]
    out = {}
    for m, start, end in ranges:
        hits = [(s, e, where) for s, e, where in gone if s < end and e > start]
        if not hits:
            continue
        left, at = False, start  # any of its text outside the sentences taken?
        for s, e, _ in hits:
            left = left or bool(fresh.original[at - first : s - first].strip())
            at = max(at, e)
        left = left or bool(fresh.original[at - first : end - first].strip())
        out[m.id] = _Cut(len(hits), tuple(sorted({where for *_, where in hits})), left)
    return out


def _no_room(
    chunk: Chunk,
    needs: int,
    room: tuple[int, int],
    names: tuple[str, str],
    joining: str | None = None,
    apart: str | None = None,
) -> Decision:
    """The decision for a candidate that needs ``needs`` tokens (more, to join the source led
    by ``joining``) with ``room`` = (left, of a budget of) tokens: dropped, unless it is
    CRITICAL, which must be sent or stop the pack (as seed 004 says: never dropped
    silently). ``apart``: why it was not merged with the source of its document it
    touches (its reason says so too)."""
    left, budget = room
    if chunk.priority == _CRITICAL:
        item, budget_name = names
        what, fix = (
            (f"{needs} more tokens to join {joining}", "raise the budget or lower its priority")
            if joining
            else (f"{needs} tokens", "shorten it, raise the budget, or lower its priority")
        )
        raise BudgetError(
            f"CRITICAL {item} {chunk.id!r} needs {what} but only {left} of the "
            f"{budget}-token {budget_name} are left; {fix}"
        )
    merging = f"merging into {joining} " if joining else ""
    reason = f"does not fit: {merging}needs {needs} tokens, {left} of {budget} left"
    if apart is not None:
        reason += f"; {apart}"
    return Decision("dropped", reason, "admit", left=left)


def _within(place: Place, run: tuple[int, int] | None) -> Place | None:
    """Where ``run`` (offsets into the text at ``place``) lies in the document; None if the
    ledger left no single run (a sentence went from between two kept ones)."""
    return None if run is None else (place[0], place[1] + run[0], place[1] + run[1])


def _past_caps(
    sources: int,
    max_sources: int | None,
    text: str,
    max_chunk_tokens: int | None,
    count: Callable[[str], int],
) -> str:
    """The end of a CRITICAL chunk's reason when it was admitted past a cap (``sources``
    admitted with it; ``text``, what it sends), which holds back every other chunk."""
    past = []
    if max_sources is not None and sources > max_sources:
        past.append(f"past max_sources={max_sources}")
    if max_chunk_tokens is not None and (size := count(text)) > max_chunk_tokens:
        past.append(f"{size} tokens, over max_chunk_tokens={max_chunk_tokens}")
    return f"; CRITICAL, so sent {' and '.join(past)}" if past else ""


def _without(removed: int, cut: int = 0, repeats: int = 0, sent_in: Sequence[str] = (), own: str = "") -> str:
    """The end of a kept chunk's reason when the ledger took sentences out of it (``cut`` of
    them pieces of a sentence, cut at the chunk's start or end; ``repeats`` of them its own
    sentences said again, ``own`` being its id; ``sent_in``: where each removed one was sent)."""
    if not removed:
        return ""
    parts = []
    if removed > repeats:
        pieces = f" ({cut} of them a cut piece)" if cut else ""
        # Where they were sent (as a chunk dropped whole says): one looking for the answer a
        # chunk held, told only "1 sentence(s) already sent", could not tell which source has it.
        # (each source once, in C: a generator over them cost a pack of 1,000 bench candidates
        # 3.6M instructions more)
        names = dict.fromkeys(sent_in)
        names.pop(own, None)
        where = f" in {', '.join(names)}" if names else ""
        parts.append(f"{removed - repeats} sentence(s) already sent{where}{pieces}")
    if repeats:
        parts.append(f"{repeats} repeat(s) of its own sentences")
    return " without " + " and ".join(parts)


def _other_version(chunk: Chunk, place: Place, touching: Sequence[Draft]) -> str | None:
    """The id of one of the ``touching`` sources (of the chunk's document, at ``place``) that
    claims some of the same characters but holds other text there (two versions of a
    document under one id, say): then the chunk is no neighbour of any, and goes the
    ordinary way, judged by its text."""
    for d in touching:
        assert d.span is not None
        if not agree_where_overlapping(d.span, place, d.text, chunk.text):
            return d.lead.id
    return None


def _already_sent(fresh: Fresh, what: str) -> Decision:
    """A chunk dropped because ``what`` of it (every sentence, all it adds) was already sent."""
    where = sorted(set(fresh.sent_in))
    # (what is left, too short to send alone: see Ledger.fresh)
    left = f" but {fresh.alone!r}, which says nothing alone" if fresh.alone else ""
    return Decision(
        "dropped",
        f"duplicate: {what} was already sent (in {', '.join(where)}){left}",
        "dedupe",
        duplicate_of=where[0],
        sentences_removed=len(fresh.sent_in),
    )

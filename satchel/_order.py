"""Order: where each admitted source lands in the prompt.

Orders live in a small registry; each is a pure function from the admitted
sources (best-ranked first) to the same sources in prompt order. Labels S1..Sn
are given afterwards, by position, so they always read top to bottom.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._chunk import listed
from ._errors import CallerCode, ConfigError

__all__ = ["ORDERS", "apply_order", "check_order", "order"]

T = TypeVar("T")
#: An order: the admitted sources best-first in, the same sources in prompt order out.
OrderFn = Callable[[Sequence[Any]], list[Any]]

ORDERS: dict[str, OrderFn] = {}


def order(name: str) -> Callable[[OrderFn], OrderFn]:
    """Register an order under ``name``."""

    def register(fn: OrderFn) -> OrderFn:
        ORDERS[name] = fn
        return fn

    return register


@order("relevance")
def relevance(ranked: Sequence[T]) -> list[T]:
    """Best first: the default for factual questions (seed 001)."""
    return list(ranked)


@order("edges")
def edges(ranked: Sequence[T]) -> list[T]:
    """Best at the edges ("lost in the middle"): 1st first, 2nd last, weakest in the middle.

    Seed 001: five ranked give 1 3 5 4 2; six give 1 3 5 6 4 2.
    """
    front = list(ranked[0::2])
    back = list(ranked[1::2])
    return front + back[::-1]


def _date_of(item: Any) -> _dt.datetime | None:
    """A source's date: its chunk's, or the latest of the neighbours merged into it (the
    source holds text as recent as that)."""
    dates = [m.date for m in item.members if m.updated is not None]
    return max(dates) if dates else None


@order("chronological")
def chronological(ranked: Sequence[T]) -> list[T]:
    """Oldest first, so the newest fact comes last and reads as the update (seed 001).

    Undated sources go before the dated ones, in relevance order: how old they are is
    not known, and the last place, next to the question, reads as the update, which
    only a dated source can claim (after the dated ones, a stale undated "$1.99" read as
    the newest price). Ties keep relevance order. A merged source is as old as its
    newest member.
    """
    dates = [_date_of(s) for s in ranked]  # (each parsed once)
    dated = sorted(((d, i) for i, d in enumerate(dates) if d is not None), key=lambda pair: pair[0])
    undated = [i for i, d in enumerate(dates) if d is None]
    return [ranked[i] for i in undated + [i for _, i in dated]]


def check_order(spec: str | OrderFn) -> None:
    """Accept a registered order name or a callable; anything else is a clear error."""
    if callable(spec):
        return
    if not isinstance(spec, str) or spec not in ORDERS:
        raise ConfigError(
            f"unknown order {spec!r}; choose one of {', '.join(sorted(ORDERS))}, or pass a "
            "callable that takes the sources best-first and returns them in prompt order"
        )


def apply_order(spec: str | OrderFn, ranked: Sequence[T]) -> list[T]:
    """Put ``ranked`` (best first) into the order ``spec`` (a registered name or a callable).

    A callable receives the admitted sources best-ranked first (each with
    ``lead``, ``members``, ``rank`` and ``text``) and must return the same
    sources, each once, in prompt order; the ablation harness uses this for
    reversed and permuted orders.
    """
    check_order(spec)
    fn = spec if callable(spec) else ORDERS[spec]
    with CallerCode(
        f"order {getattr(fn, '__name__', fn)!r}", f"on {len(ranked)} sources", "fix the order function"
    ):
        returned = fn(list(ranked))
    if not listed(returned):
        raise ConfigError(
            f"order {getattr(fn, '__name__', fn)!r} returned {type(returned).__name__}; it must "
            "return the admitted sources it was given, each once, in prompt order (a list)"
        )
    out = list(returned)
    if len(out) != len(ranked) or {id(x) for x in out} != {id(x) for x in ranked}:
        raise ConfigError(
            f"order {getattr(fn, '__name__', fn)!r} must return each admitted source exactly once; "
            f"got {len(out)} items for {len(ranked)} sources"
        )
    return out


@order("query-adjacent")
def query_adjacent(ranked: Sequence[T]) -> list[T]:
    """The strongest evidence immediately before the question (seed 003): best last."""
    return list(ranked)[::-1]


def _role_of(item: object) -> str:
    return getattr(item, "role", "supporting")


@order("edge-anchored")
def edge_anchored(ranked: Sequence[T]) -> list[T]:
    """The decisive item first, supporting material in the middle (seed 003).

    The last slot belongs to the output contract, which :func:`satchel.pack`
    restates after the sources, next to the question, whenever this order is used
    and a ``contract`` is given. Without any decisive item the best-ranked one
    takes the first slot.
    """
    items = list(ranked)
    decisive = [s for s in items if _role_of(s) == "decisive"] or items[:1]
    rest = [s for s in items if s not in decisive]
    rank = {"supporting": 0, "background": 1, "decisive": 0}
    rest.sort(key=lambda s: rank.get(_role_of(s), 0))  # stable: rank order within a role
    return decisive + rest

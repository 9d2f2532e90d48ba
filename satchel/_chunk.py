"""The candidate: one retrieved chunk as Satchel receives it.

A :class:`Chunk` is a frozen value. Plain dicts with the same keys are accepted
wherever chunks are; :func:`as_chunks` turns a mixed list into chunks and checks
everything once, so the stages after it never validate again.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import enum
import itertools
import math
import numbers
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import InputError
from ._frameworks import document_fields
from ._records import maker

__all__ = ["ROLES", "Chunk", "Priority", "as_chunks", "as_priority", "parse_date"]

#: Evidence roles of seed 003, strongest first.
ROLES = ("decisive", "supporting", "background")


class Priority(enum.IntEnum):
    """Priority tiers of seed 004: lower numbers are admitted first.

    CRITICAL content must fit or packing raises :class:`BudgetError`; the other
    tiers are admitted in order while they fit, and what does not fit is dropped
    with a reason.
    """

    CRITICAL = 0
    HIGH = 1
    MEDIUM = 2
    LOW = 3


_FIELDS = (
    "id",
    "text",
    "score",
    "rank",
    "doc_id",
    "start",
    "end",
    "title",
    "section",
    "updated",
    "priority",
    "role",
    "metadata",
)
_FIELD_NAMES = frozenset(_FIELDS)
_ID = operator.attrgetter("id")


class _Metadata(dict[str, Any]):
    """A chunk's metadata: a dict that cannot be changed (the chunk is a frozen value).

    A dict, not a read-only view of one, so that a chunk pickles (to a worker process),
    deep-copies and goes through ``dataclasses.asdict`` like any other value.
    """

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "a chunk's metadata cannot be changed (a Chunk is a frozen value); build a new chunk "
            "with dataclasses.replace(chunk, metadata={...})"
        )

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickle's default for a dict subclass fills it item by item, which it refuses)
        return (type(self), (dict(self),))

    def __copy__(self) -> _Metadata:
        return self  # (it cannot change: a copy would be the same)


#: the metadata of every chunk without any (read-only, so one can be shared)
_NO_METADATA: Mapping[str, Any] = _Metadata()


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk.

    ``id`` must be unique in a pack; ``text`` is sent verbatim (escaped).
    ``score`` (higher is better) or ``rank`` (1 is best) give the retrieval
    order; without either, input order is the rank. ``doc_id`` with ``start``
    and ``end`` (character offsets of ``text`` in its document) let Satchel
    merge neighbours of one document. ``updated`` is an ISO date shown to the
    model and used by the chronological order.
    """

    id: str
    text: str
    score: float | None = None
    rank: int | None = None
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    title: str | None = None
    section: str | None = None
    updated: str | None = None
    priority: Priority = Priority.MEDIUM
    role: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)  # (a dict cannot be hashed)

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Chunk:
        """Build a chunk from a dict with the same keys (unknown keys go to ``metadata``)."""
        if type(data) is not dict and not isinstance(data, Mapping):  # (the ABC check is slow)
            raise InputError(
                f"a candidate must be a satchel.Chunk, a dict or a LangChain, LlamaIndex or "
                f"Haystack document, got {type(data).__name__}: {_short(data)}; pass "
                "{'id': ..., 'text': ...}"
            )
        known: Mapping[str, Any] = data  # the usual dict: every key a field (the call copies it)
        if not data.keys() <= _FIELD_NAMES:
            fields = {k: data[k] for k in _FIELDS if k in data}
            extra = {k: v for k, v in data.items() if k not in _FIELD_NAMES}
            given = fields.get("metadata")
            if given is not None and type(given) is not dict and not isinstance(given, Mapping):
                raise InputError(
                    f"candidate {fields.get('id')!r}: metadata must be a dict, got {type(given).__name__}; "
                    "pass metadata as {'key': value} (or leave it out: keys that are no field go there)"
                )
            merged = dict(given or {})
            for k, v in extra.items():
                merged[k] = _given_once(fields.get("id"), repr(k), v, merged[k]) if k in merged else v
            fields["metadata"] = merged
            known = fields
        if "id" not in known or "text" not in known:
            missing = "id" if "id" not in known else "text"
            raise InputError(
                f"candidate {_short(dict(data))} has no {missing!r}; every candidate needs "
                "'id' (unique string) and 'text'"
            )
        return (_make_chunk if cls is Chunk else cls)(**known)

    def to_dict(self) -> dict[str, Any]:
        """The chunk as a JSON-ready dict, leaving out empty optional fields."""
        out: dict[str, Any] = {"id": self.id, "text": self.text}
        for name in _FIELDS[2:]:
            value = getattr(self, name)
            if name == "priority":
                if value != Priority.MEDIUM:
                    out[name] = value.name.lower()
            elif name == "metadata":
                if value:
                    out[name] = dict(value)
            elif value is not None:
                out[name] = value
        return out

    @property
    def place(self) -> tuple[str, int, int] | None:
        """(doc_id, start, end) when the chunk says where it lies in its document, else None."""
        if self.doc_id is None or self.start is None or self.end is None:
            return None
        return (self.doc_id, self.start, self.end)

    @property
    def date(self) -> _dt.datetime | None:
        """``updated`` as a datetime (a bare date is midnight), for sorting."""
        return None if self.updated is None else parse_date(self.updated, self.id)


#: Chunk.from_dict builds one per candidate dict: without a frozen init (see _records)
_make_chunk = maker(Chunk)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_YEAR_OR_MONTH = re.compile(r"[0-9]{4}(?:-(?:0[1-9]|1[0-2]))?")


def parse_date(value: str, chunk_id: str = "?") -> _dt.datetime:
    """Parse an ISO date or datetime; naive datetimes are taken as UTC."""
    try:
        if len(value) == 10:
            day = _dt.date.fromisoformat(value)
            return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.UTC)
        if _YEAR_OR_MONTH.fullmatch(value):  # ISO 8601's reduced precision: "2026", "2026-03"
            year, _, month = value.partition("-")
            return _dt.datetime(int(year), int(month or 1), 1, tzinfo=_dt.UTC)
        moment = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"candidate {chunk_id!r}: updated={value!r} is not an ISO date; "
            "write it as YYYY-MM-DD (or YYYY-MM, YYYY, or an ISO datetime such as 2026-03-01T09:30:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=_dt.UTC)


def check_utf8(value: str, what: str) -> None:
    """Refuse a string holding a lone surrogate: no UTF-8 prompt, log or model API can carry it.

    Such strings come from text decoded with ``surrogateescape`` or JSON with a
    broken pair ("\\ud800"). Only non-ASCII strings are encoded to check
    (``isascii`` is a flag lookup in CPython).
    """
    if value.isascii():
        return
    try:
        # (encoded as UTF-16, which refuses the same code points, the surrogates, at the same
        # place, for a quarter less work than UTF-8: half the speed benchmark's candidates
        # hold a dash or an accent)
        value.encode("utf-16-le")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{what} holds a lone surrogate {value[exc.start]!r} at character {exc.start}, which cannot "
            "be sent as UTF-8; repair the text where it was decoded (e.g. "
            "bytes.decode('utf-8', errors='replace'))"
        ) from None


#: the optional fields that hold text, where NaN (a dataframe's gap in a column of text) is
#: a field not given, as None is; a NaN score, rank or offset is still refused
_TEXT_FIELDS = ("doc_id", "title", "section", "updated", "role")
_TEXT_VALUES = operator.attrgetter(*_TEXT_FIELDS)
_NONE_OR_TEXT = frozenset({type(None), str})
#: the fields that name where a chunk comes from, shown or matched as text
_NAMING_FIELDS = ("doc_id", "title", "section")


def _dataframe_gap(value: Any) -> bool:
    """Whether ``value`` is a dataframe's gap: NaN (in a column of text or numbers; numpy's
    float32 is no float subclass), or pandas' own, NaT (a column of dates: it passed for a
    date and reached the prompt as updated="NaT") and NA (shown as "<NA>"), told by their
    type's name, without importing pandas; or numpy's NaT (a column of dates as an array)."""
    if type(value).__name__ in _PANDAS_GAPS:
        return True
    if _is_datetime64(value):
        return str(value) == "NaT"
    return isinstance(value, numbers.Real) and not isinstance(value, int) and math.isnan(value)


_PANDAS_GAPS = frozenset({"NaTType", "NAType"})


def _is_datetime64(value: Any) -> bool:
    """Whether ``value`` is numpy's date and time (told without importing numpy)."""
    return type(value).__name__ == "datetime64" and type(value).__module__ == "numpy"


def _numpy_date(value: Any) -> str:
    """A numpy datetime64 as an ISO date: the date alone where its time is midnight (a column
    of dates comes as nanoseconds: "2024-05-01T00:00:00.000000000"), else to the microsecond,
    as Python's dates go."""
    text = str(value)
    day, _, time = text.partition("T")
    if not time.strip("0:."):
        return day
    whole, _, fraction = time.partition(".")
    fraction = fraction[:6].rstrip("0")
    return f"{day}T{whole}{'.' + fraction if fraction else ''}"


def is_gap(value: Any) -> bool:
    """Whether ``value`` is a field not given: None, or a dataframe's gap (see _dataframe_gap)."""
    return value is None or _dataframe_gap(value)


def _same(a: Any, b: Any) -> bool:
    """Whether a value given twice is given alike: equal, or written alike ("2024-01-01" and
    date(2024, 1, 1); two equal numpy arrays, which compare element-wise and refuse bool())."""
    try:
        if bool(a == b):
            return True
    except Exception:  # noqa: BLE001 (any comparison a value makes may fail)
        pass
    return str(a) == str(b)


def _given_once(cid: Any, name: str, top: Any, nested: Any) -> Any:
    """The value of a key given both at the top of a candidate (``top``) and in its metadata
    (``nested``): the one given (None and NaN are not given), or both if alike; two values
    are refused (one was thrown away without a word: the prompt showed the other)."""
    if is_gap(top):
        return nested
    if is_gap(nested) or _same(top, nested):
        return top
    raise InputError(
        f"candidate {cid!r}: {name} is given twice, as {_short(top)} and as {_short(nested)} in "
        "metadata; give it once"
    )


def _check(chunk: Chunk) -> None:
    """Validate and normalise one chunk in place (the dataclass is frozen, so via object.__setattr__)."""
    set_ = object.__setattr__
    # (most are None or text: the loop runs only for a chunk with another value in one of
    # them; their types read at once, in C: a getattr for each took a fifth of this check)
    if not _NONE_OR_TEXT.issuperset(map(type, _TEXT_VALUES(chunk))):
        for name in _TEXT_FIELDS:
            value = getattr(chunk, name)
            if value is not None and type(value) is not str and _dataframe_gap(value):
                set_(chunk, name, None)
    cid = chunk.id
    if not isinstance(cid, str) or not cid.strip():
        raise InputError(
            f"candidate id must be a non-empty string, got {_short(cid)} "
            f"({type(cid).__name__}); give each candidate a unique string id such as 'doc#3'"
        )
    if not isinstance(chunk.text, str):
        raise InputError(
            f"candidate {cid!r}: text must be a string, got {type(chunk.text).__name__}; "
            "pass the chunk's text as str"
        )
    if not chunk.text or chunk.text.isspace():  # (no copy of the text, as strip() would make)
        raise InputError(
            f"candidate {cid!r}: text is {'blank (whitespace only)' if chunk.text else 'empty'}; drop "
            "empty chunks before packing (an empty source wastes tokens and a label)"
        )
    # (check_utf8 passes ASCII at once: tested here first, the description it is given is
    # written only for other text, not for every chunk)
    if not cid.isascii():
        check_utf8(cid, f"candidate id {cid!r}")
    if not chunk.text.isascii():
        check_utf8(chunk.text, f"candidate {cid!r}: text")
    score = chunk.score
    if score is not None and (type(score) is not float or not math.isfinite(score)):
        set_(chunk, "score", _score(score, cid))  # (a finite float is kept as it is)
    if chunk.rank is not None:
        rank = _whole(chunk.rank)
        if rank is None or rank < 0:
            raise InputError(
                f"candidate {cid!r}: rank={_short(chunk.rank)} must be a non-negative integer "
                "(1 = best); leave it out to use input order"
            )
        set_(chunk, "rank", rank)
    metadata = chunk.metadata
    if metadata and (type(metadata) is dict or isinstance(metadata, Mapping)):
        # title, section and updated given inside metadata are the fields themselves (shown,
        # checked, and used by the chronological order), unless the fields are given too
        for name in ("title", "section", "updated"):
            value = metadata.get(name)
            if not is_gap(value):  # (None, NaN: not given, as for the field itself)
                set_(chunk, name, _given_once(cid, name, getattr(chunk, name), value))
    # The fields naming where a chunk comes from are text (a whole number is a doc_id's); the
    # usual chunk, with an ASCII doc_id or none and no title or section, has nothing to check.
    doc_id = chunk.doc_id
    usual = (
        chunk.title is None
        and chunk.section is None
        and (doc_id is None or (type(doc_id) is str and doc_id.isascii()))
    )
    for name in () if usual else _NAMING_FIELDS:
        value = getattr(chunk, name)
        if value is None:
            continue
        if not isinstance(value, str):
            number = _whole(value) if name == "doc_id" else None
            if number is not None:
                set_(chunk, name, str(number))
            else:
                raise InputError(f"candidate {cid!r}: {name}={_short(value)} must be a string or left out")
        elif not value.isascii():
            check_utf8(value, f"candidate {cid!r}: {name}")
    _check_offsets(chunk)
    if chunk.updated is not None:
        set_(chunk, "updated", _normalise_updated(chunk.updated, cid))
    # (null is what JSON and dataframes say for "not given")
    priority = chunk.priority
    if type(priority) is not Priority:
        set_(chunk, "priority", Priority.MEDIUM if priority is None else as_priority(priority, cid))
    if chunk.role is not None and chunk.role not in ROLES:
        raise InputError(
            f"candidate {cid!r}: role={_short(chunk.role)} is not one of {', '.join(ROLES)}; "
            "use one of those or leave it out to let the role rule assign it"
        )
    if type(chunk.metadata) is dict and not chunk.metadata:  # (the usual: none given)
        set_(chunk, "metadata", _NO_METADATA)
        return
    if chunk.metadata is None:
        set_(chunk, "metadata", _NO_METADATA)
    elif type(chunk.metadata) is not dict and not isinstance(chunk.metadata, Mapping):
        raise InputError(
            f"candidate {cid!r}: metadata must be a dict, got {type(chunk.metadata).__name__} "
            f"{_short(chunk.metadata)}; pass metadata as {{'key': value}} (or leave it out)"
        )
    for key, value in chunk.metadata.items():
        for part in _strings_in((key, value)):
            check_utf8(part, f"candidate {cid!r}: metadata {key!r}")
    if type(chunk.metadata) is not _Metadata:  # (one already read-only is shared, not copied)
        set_(chunk, "metadata", _Metadata(chunk.metadata) if chunk.metadata else _NO_METADATA)


def _strings_in(value: Any) -> Iterator[str]:
    """The strings in a metadata value, inside lists, tuples, sets and dicts too, however
    deep (a tag shows a list's items; see attribute_value); each container read once."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, (list, tuple, set, frozenset, Mapping)) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(itertools.chain.from_iterable(item.items()) if isinstance(item, Mapping) else item)


def _whole(value: Any) -> int | None:
    """``value`` as an int if it is a whole number: of an integer type (numpy's too, as a
    dataframe's columns give them) or a float without a fraction; else None. True and
    False are no numbers here."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    # a whole float, as a dataframe column with gaps or a JSON writer gives them ("start": 0.0)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def plain(value: Any) -> Any:
    """An option's number or flag as Python's own type: a numpy (or other) integer as int, a
    real as float, a numpy bool as bool, as a dataframe or a config loaded with numpy gives
    them; anything else as it is (to be judged, and refused, by the option's own check)."""
    if type(value) in (int, float, bool) or isinstance(value, (str, bytes)):
        return value
    if type(value).__name__ in ("bool_", "bool") and type(value).__module__ == "numpy":
        return bool(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


def _score(value: Any, cid: str) -> float:
    """A retrieval score as a finite float (any real number type, numpy's too, and Decimal,
    as databases return NUMERIC columns)."""
    score: float = value
    if type(value) is not float:  # (the ABC check below is slow)
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
            raise InputError(
                f"candidate {cid!r}: score={_short(value)} is not a number; "
                "pass a float (higher is better) or leave it out"
            )
        try:
            score = float(value)
        except OverflowError:
            raise InputError(
                f"candidate {cid!r}: score={_short(value)} is too large for a float; "
                "pass scores within ±1.8e308 (rescale them) or leave the score out"
            ) from None
    if not math.isfinite(score):
        raise InputError(
            f"candidate {cid!r}: score={score!r} is not finite; "
            "replace NaN/inf scores by real numbers or leave the score out"
        )
    return score


def _check_offsets(chunk: Chunk) -> None:
    start, end, cid = chunk.start, chunk.end, chunk.id
    if start is None and end is None:
        return
    if start is None or end is None:
        raise InputError(
            f"candidate {cid!r}: give both start and end (character offsets in the document) "
            f"or neither; got start={start!r}, end={end!r}"
        )
    if type(start) is not int or type(end) is not int or start < 0 or end < 0:  # (else as they are)
        start, end = _offset(chunk, "start"), _offset(chunk, "end")
    if end - start != len(chunk.text):
        raise InputError(
            f"candidate {cid!r}: end - start = {end - start} but the text has "
            f"{len(chunk.text)} characters; start and end must be the character offsets of "
            "exactly this text in its document (or leave both out)"
        )
    if chunk.doc_id is None:
        raise InputError(
            f"candidate {cid!r}: start/end are given without doc_id; offsets only mean "
            "something inside one document, so add doc_id"
        )


def _offset(chunk: Chunk, name: str) -> int:
    """The chunk's ``start`` or ``end``, checked, and stored as an int."""
    value = getattr(chunk, name)
    offset = _whole(value)
    if offset is None or offset < 0:
        raise InputError(
            f"candidate {chunk.id!r}: {name}={_short(value)} must be a non-negative integer character offset"
        )
    object.__setattr__(chunk, name, offset)
    return offset


def _normalise_updated(value: Any, cid: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if _is_datetime64(value):  # (a dataframe's dates through .to_numpy() or .values)
        value = _numpy_date(value)
    if not isinstance(value, str):
        raise InputError(f"candidate {cid!r}: updated={_short(value)} must be an ISO date string or a date")
    text: str = value.strip()
    parse_date(text, cid)
    return text


def as_priority(value: Any, cid: str, item: str = "candidate") -> Priority:
    """``value`` (a Priority, its name or its number) as a Priority; ``item`` is what errors
    call the thing it belongs to."""
    if isinstance(value, Priority):
        return value
    if isinstance(value, str) and value.upper() in Priority.__members__:
        return Priority[value.upper()]
    number = _whole(value)
    if number is not None and 0 <= number <= 3:
        return Priority(number)
    raise InputError(
        f"{item} {cid!r}: priority={_short(value)} is not a priority; use "
        "satchel.Priority.CRITICAL/HIGH/MEDIUM/LOW, 0-3, or their names"
    )


def listed(value: Any) -> bool:
    """Whether ``value`` is a collection of items to go through: iterable, but no string,
    bytes or single mapping (each of which iterates too)."""
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))


def as_chunks(candidates: Iterable[Chunk | Mapping[str, Any]]) -> tuple[Chunk, ...]:
    """Turn candidates (chunks or dicts) into chunks and check that ids are unique."""
    if hasattr(candidates, "to_dict") and hasattr(candidates, "columns"):
        # (a dataframe iterates over its column names: "got str: 'id'" said nothing of rows)
        raise InputError(
            f"candidates is a {type(candidates).__name__}, whose rows are not candidates as it "
            "iterates; pass df.to_dict('records'), a list of one dict per row"
        )
    if not listed(candidates):
        raise InputError(
            f"candidates must be a list of chunks or dicts, got {type(candidates).__name__}; "
            "wrap a single chunk in a list (an empty list packs no sources)"
        )
    chunks = []
    from_dict = Chunk.from_dict
    for i, c in enumerate(candidates):
        try:
            if isinstance(c, Chunk):
                chunks.append(c)
            elif type(c) is dict or isinstance(c, Mapping):
                chunks.append(from_dict(c))
            else:  # (a LangChain, LlamaIndex or Haystack document, else a clear error)
                chunks.append(from_dict(document_fields(c, i + 1) or c))
        except InputError as exc:  # where it is in the list, for a long list
            raise InputError(f"candidates[{i}]: {exc}") from None
    ids = list(map(_ID, chunks))
    if len(set(ids)) < len(ids):  # (told in C; the loop below finds the first repeated id)
        first: dict[str, int] = {}
        for i, cid in enumerate(ids):
            if first.setdefault(cid, i) != i:
                raise InputError(
                    f"candidate id {cid!r} appears more than once (candidates[{first[cid]}] and "
                    f"[{i}]); ids must be unique (suffix a position, e.g. 'doc#1', 'doc#2')"
                )
    return tuple(chunks)

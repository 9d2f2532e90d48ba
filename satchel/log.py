"""The manifest log: one canonical-JSON line per pack, with the answer when there is one.

Each record is ``PackResult.to_dict()`` (messages, labels, manifest, tokens,
budget, tokenizer, configuration and ``prompt_sha256``) plus:

- ``logged_at``: when it was logged, ISO 8601 in UTC;
- ``answer``: the model's :class:`~satchel.clients.Answer` as a dict, or null;
- ``citations``: :class:`~satchel.citations.Citations` as a dict, or null.

A record is the shape :func:`satchel._manifest.format_trace` reads, so
``satchel trace LOG`` prints the same table as ``satchel pack --format trace``;
:func:`read_log` checks that shape (:data:`RECORD_SHAPE`) so a damaged record is
one clear error, not a failure halfway through the table.

:func:`decode_utf8` and :func:`load_json` turn every way a JSON file can fail to
decode into an :class:`~satchel.InputError` naming it; each reader of Satchel's
files (logs, requests, query sets, options) goes through them.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._errors import InputError
from ._manifest import PackResult, canonical_json
from .citations import Citations, cite

__all__ = ["LOG_KEYS", "RECORD_SHAPE", "append_log", "decode_utf8", "json_lines", "load_json", "read_log"]

#: Keys every record holds; read_log rejects a line without them.
LOG_KEYS = ("budget", "logged_at", "manifest", "prompt_sha256", "tokens")

# -- the fields `satchel trace` reads ------------------------------------------------

#: A kind of JSON value: how an error names it, and the test a value must pass.
#: (``type(v) is int`` because JSON's true and false decode to bool, an int subclass.)
_Kind = tuple[str, Callable[[Any], bool]]

_INTEGER: _Kind = ("an integer", lambda v: type(v) is int)
_NUMBER: _Kind = ("a number", lambda v: type(v) in (int, float))
_STRING: _Kind = ("a string", lambda v: type(v) is str)
_BOOLEAN: _Kind = ("true or false", lambda v: type(v) is bool)
_STRINGS: _Kind = ("a list of strings", lambda v: type(v) is list and all(type(x) is str for x in v))
_OBJECT: _Kind = ("an object", lambda v: type(v) is dict)
_LABELS: _Kind = (
    "an object of label: chunk id (or list of chunk ids)",
    lambda v: type(v) is dict and all(type(t) is str or _STRINGS[1](t) for t in v.values()),
)

# A shape maps each field to its kind, to a nested shape, or to [shape] for a list of them;
# a field ending in "?" may be missing or null (the display leaves it out or shows "-" or "?").
_BUDGET = {
    **dict.fromkeys(("context_window", "system", "question", "history", "answer", "sources"), _INTEGER),
    **dict.fromkeys(("contract?", "other?", "cap?", "input_limit?"), _INTEGER),
}
_TOKENS = {
    **dict.fromkeys(("prompt", "sources", "source_budget", "answer_reserve", "free"), _INTEGER),
    "exact?": _BOOLEAN,
}
_ENTRY = {
    "id": _STRING,
    "status": _STRING,
    "reason": _STRING,
    "tokens": _INTEGER,
    "position?": _INTEGER,
    "label?": _STRING,
    "role?": _STRING,
    "cost?": _INTEGER,
    "conflicts_with?": _STRINGS,
    "provenance?": _OBJECT,
}
_ANSWER = {
    "text?": _STRING,
    "model?": _STRING,
    "prompt_tokens?": _INTEGER,
    "completion_tokens?": _INTEGER,
    "latency_s?": _NUMBER,
    "finish_reason?": _STRING,
}
_REFERENCE = {"label": _STRING, "chunk_id": _STRING, "title?": _STRING, "section?": _STRING}
_CITATIONS = {
    **dict.fromkeys(("cited_labels", "uncited_labels", "unknown_labels"), _STRINGS),
    "references?": [_REFERENCE],
}

#: What a record must hold for ``satchel trace`` to show it; read_log refuses any other.
RECORD_SHAPE: dict[str, Any] = {
    "budget": _BUDGET,
    "tokens": _TOKENS,
    "manifest": [_ENTRY],
    "logged_at": _STRING,
    "prompt_sha256": _STRING,
    "question?": _STRING,
    "tokenizer?": {"name?": _STRING},
    "config?": {"order?": _STRING},
    "labels?": _LABELS,
    "answer?": _ANSWER,
    "citations?": _CITATIONS,
}


def _shown(value: Any) -> str:
    """A value as an error quotes it: containers by kind (they can be large), the rest as JSON."""
    if type(value) is dict:
        return "an object"
    if type(value) is list:
        return "a list"
    text = canonical_json(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _misfit(value: Any, shape: Any, path: str = "") -> str | None:
    """The first field of ``value`` that does not fit ``shape`` (``"budget.cap is ..."``), or None."""
    if type(shape) is tuple:
        what, test = shape
        return None if test(value) else f"{path} is {_shown(value)}, not {what}"
    if type(shape) is list:
        if type(value) is not list:
            return f"{path} is {_shown(value)}, not a list"
        for i, item in enumerate(value):
            if problem := _misfit(item, shape[0], f"{path}[{i}]"):
                return problem
        return None
    if type(value) is not dict:
        return f"{path} is {_shown(value)}, not an object"
    for key, kind in shape.items():
        name = key.rstrip("?")
        field = f"{path}.{name}" if path else name
        if key.endswith("?") and value.get(name) is None:
            continue
        if name not in value:
            return f"{field} is missing"
        if problem := _misfit(value[name], kind, field):
            return problem
    return None


# -- reading JSON files -----------------------------------------------------------------


def decode_utf8(raw: bytes, where: str, fix: str = "save it as UTF-8") -> str:
    """``raw`` as text, without the byte order mark some editors put first; if it is not
    UTF-8, an InputError naming ``where`` and the first bad byte."""
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        at = f"offset {exc.start}" + (f", line {line}" if line > 1 else "")
        raise InputError(f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at {at}); {fix}") from None


def load_json(text: str, where: str) -> Any:
    """``json.loads(text)``; a value Python's reader refuses is an InputError naming ``where``.

    A syntax error stays :class:`json.JSONDecodeError`: each caller words that itself
    (``satchel pack`` reads a file that is not one JSON value as JSONL).
    """
    try:
        return json.loads(text, object_pairs_hook=functools.partial(_object, where))
    except (json.JSONDecodeError, InputError):
        raise
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits()
        raise InputError(
            f"{where} holds an integer longer than {sys.get_int_max_str_digits()} digits, which "
            "Python's JSON reader refuses; shorten it or write it as a string"
        ) from None
    except RecursionError:
        raise InputError(
            f"{where} nests arrays or objects deeper than Python's JSON reader can follow; flatten it"
        ) from None


def _object(where: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's keys and values, refusing a key given twice (Python's reader keeps the
    last silently: ``{"text": "first half", "text": "second half"}`` sent half a chunk)."""
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InputError(f"{where} gives the key {key!r} twice in one object; keep one of them")
            seen.add(key)
    return made


def json_error(exc: json.JSONDecodeError, line: bool = True) -> str:
    """What is wrong in a JSON text, and where, for a message: ``Expecting value at line 3
    column 5`` (with how to write a tab or line break inside a string, when that is it);
    without ``line``, only the column (a line of JSONL, whose line the message names).
    A comma before a closing bracket is named as such, at the comma, whatever the Python
    version (see _trailing_comma)."""
    what = exc.msg.removesuffix(" at")  # ("Invalid control character at": the position follows)
    fix = "; write a tab or line break inside a string as \\t or \\n" if "control character" in what else ""
    comma = _trailing_comma(exc)
    if comma is not None:
        # (the error moved to the comma: json's own error class says where that is)
        what, fix = "trailing comma", "; JSON allows none before ] or }"
        exc = json.JSONDecodeError(what, exc.doc, comma)
    at = f"line {exc.lineno} column {exc.colno}" if line else f"column {exc.colno}"
    return f"{what} at {at}{fix}"


#: the errors a comma before a closing bracket ("[1, 2,]", '{"a": 1,}') raises: Python 3.13
#: names it, earlier versions expect another value or key at the bracket
_AFTER_COMMA = (
    "Expecting value",
    "Expecting property name enclosed in double quotes",
    "Illegal trailing comma",
)
#: a comma, then nothing but JSON's whitespace before a closing bracket
_COMMA_THEN_CLOSE = re.compile(r",[ \t\n\r]*[\]}]")


def _trailing_comma(exc: json.JSONDecodeError) -> int | None:
    """Where the comma stands when ``exc`` is about one right before a closing bracket that
    follows a value ("[1, 2,]"); None for any other error. (Python 3.11 and 3.12 said
    "Expecting value at line 5 column 3", the bracket's place, and left the comma to be found;
    3.13 points at the comma: the message is the same on each.)"""
    doc, pos = exc.doc, exc.pos
    if not exc.msg.startswith(_AFTER_COMMA):
        return None
    comma = pos if doc.startswith(",", pos) else doc.rfind(",", 0, pos)
    close = _COMMA_THEN_CLOSE.match(doc, comma) if comma >= 0 else None
    if close is None or close.end() <= pos:  # (the bracket after it must be where the error is, or past it)
        return None
    before = comma - 1
    while before >= 0 and doc[before] in " \t\n\r":
        before -= 1
    # a value ends before it ("[,]" and "[1,,2]" lack a value, not a closing bracket)
    return comma if before >= 0 and doc[before] not in "[{," else None


def json_lines(
    lines: Iterable[bytes | str],
    name: str,
    fix: str,
    damaged: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[str, Any]]:
    """Each non-blank line's JSON value, with where it is (``"NAME line N"``).

    A line that is not UTF-8, or not JSON Python can read, is an InputError naming it
    (and ``fix``, for JSON); with ``damaged``, a line that is not UTF-8 or not JSON at all
    (torn: a writer died mid-line) is told to ``damaged(where, why)`` and skipped instead.
    Every JSONL reader here (logs, JSONL requests, query sets) goes through this one.
    """
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name} line {n}"
        try:
            text = decode_utf8(line, where) if isinstance(line, bytes) else line
        except InputError:
            if damaged is None:
                raise
            damaged(where, "not UTF-8")  # (a character cut in two)
            continue
        try:
            value = load_json(text, where)
        except json.JSONDecodeError as exc:
            if damaged is None:
                raise InputError(
                    f"{where} is not valid JSON ({json_error(exc, line=False)}); {fix}"
                ) from None
            damaged(where, f"not valid JSON ({json_error(exc, line=False)})")
            continue
        yield where, value


def _answer_dict(answer: Any) -> dict[str, Any]:
    if isinstance(answer, str):
        return {
            "text": answer,
            "model": None,
            "prompt_tokens": None,
            "completion_tokens": None,
            "latency_s": None,
            "finish_reason": None,
        }
    to_dict = getattr(answer, "to_dict", None)
    if to_dict is None:
        raise InputError(f"answer={answer!r} must be a satchel.clients.Answer or the answer text")
    data: dict[str, Any] = to_dict()
    return data


def _timestamp(seconds: float) -> str:
    moment = _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_log(
    path: str | os.PathLike[str],
    result: PackResult,
    *,
    answer: Any = None,
    citations: Citations | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Append one record for ``result`` to the JSONL log at ``path``; return the record.

    With an ``answer`` and no ``citations``, the citations are parsed from it.
    ``clock`` returns seconds since the epoch (a seam for tests).
    """
    if not isinstance(result, PackResult):
        raise InputError(f"append_log needs the PackResult of a pack, got {type(result).__name__}")
    if citations is None and answer is not None:
        citations = cite(answer, result)
    record = result.to_dict()
    record["logged_at"] = _timestamp(clock())
    record["answer"] = _answer_dict(answer) if answer is not None else None
    record["citations"] = citations.to_dict() if citations is not None else None
    line = canonical_json(record) + "\n"
    try:
        with open(path, "a+b") as handle:
            # A writer that died mid-line must not glue its fragment to this record.
            handle.seek(0, os.SEEK_END)
            if handle.tell():
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    line = "\n" + line
            handle.write(line.encode("utf-8"))
    except OSError as exc:
        raise InputError(
            f"cannot append to the log {os.fspath(path)!r}: {exc.strerror}; give a writable file path"
        ) from None
    return record


def read_log(
    path: str | os.PathLike[str], damaged: Callable[[str, str], None] | None = None
) -> Iterator[dict[str, Any]]:
    """The records of a log, in the order they were written (blank lines are skipped).

    Each record is checked against :data:`RECORD_SHAPE`; one that does not fit is an
    InputError naming its line, its record number and the field. A line that is not
    JSON at all (or not UTF-8) is one a writer left torn when it died mid-line: an
    InputError too, unless ``damaged(where, why)`` is given, which is told of it and the
    line skipped (records are numbered without it: one torn line made a whole log
    unreadable to ``satchel trace``).
    """
    name = os.fspath(path)
    if name == "-":  # (a log piped in: `... | satchel trace -`)
        handle: Any = contextlib.nullcontext(sys.stdin.buffer)
        name = "stdin"
    else:
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise InputError(
                f"cannot read the log {name!r}: {exc.strerror}; write one with `satchel pack --log {name}`"
            ) from None
    with handle as lines:
        fix = "a Satchel log holds one JSON record per line; remove or repair that line"
        for number, (where, record) in enumerate(json_lines(lines, name, fix, damaged), start=1):
            missing = [k for k in LOG_KEYS if not isinstance(record, dict) or k not in record]
            if missing:
                raise InputError(
                    f"{where} is not a Satchel log record (missing {', '.join(missing)}); "
                    "log packs with satchel.log.append_log or `satchel pack --log`"
                )
            problem = _misfit(record, RECORD_SHAPE)
            if problem:
                raise InputError(
                    f"{where} (record {number}): {problem}; remove or repair that record "
                    "(`satchel pack --log` writes whole ones)"
                )
            yield record

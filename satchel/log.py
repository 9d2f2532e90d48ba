"""The manifest log: one canonical-JSON line per pack, with the answer when there is one.

Each record is ``PackResult.to_dict()`` (messages, labels, manifest, tokens,
budget, tokenizer, configuration and ``prompt_sha256``) plus:

- ``logged_at``: when it was logged, ISO 8601 in UTC;
- ``answer``: the model's :class:`~satchel.clients.Answer` as a dict, or null;
- ``citations``: :class:`~satchel.citations.Citations` as a dict, or null.

A record is the shape :func:`satchel._manifest.format_trace` reads, so
``satchel trace LOG`` prints the same table as ``satchel pack --format trace``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ._errors import InputError
from ._manifest import PackResult, canonical_json
from .citations import Citations, cite

__all__ = ["LOG_KEYS", "append_log", "read_log"]

#: Keys every record holds; read_log rejects a line without them.
LOG_KEYS = ("budget", "logged_at", "manifest", "prompt_sha256", "tokens")


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


def read_log(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The records of a log, in the order they were written (blank lines are skipped)."""
    name = os.fspath(path)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise InputError(
            f"cannot read the log {name!r}: {exc.strerror}; write one with `satchel pack --log {name}`"
        ) from None
    with handle:
        for n, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise InputError(
                    f"{name} line {n} is not UTF-8 text; a Satchel log is UTF-8 JSONL; "
                    "remove or repair that line"
                ) from None
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{name} line {n} is not valid JSON ({exc.msg}); a Satchel log holds one JSON record "
                    "per line; remove or repair that line"
                ) from None
            missing = [k for k in LOG_KEYS if not isinstance(record, dict) or k not in record]
            if missing:
                raise InputError(
                    f"{name} line {n} is not a Satchel log record (missing {', '.join(missing)}); "
                    "log packs with satchel.log.append_log or `satchel pack --log`"
                )
            yield record

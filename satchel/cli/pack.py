"""``satchel pack``: pack a request file (or the built-in example) and print it."""

from __future__ import annotations

import argparse
import decimal
import difflib
import json
import math
import os
import sys
from collections.abc import Callable
from importlib import resources
from typing import Any

from .._chunk import Chunk
from .._errors import InputError
from .._manifest import canonical_json
from .._order import ORDERS
from .._pack import Packer
from .._roles import EVIDENCE_POLICY
from ..log import decode_utf8, json_error, json_lines, load_json
from . import command

FORMATS = ("text", "messages", "json", "trace")

#: pack() keyword names a JSON request may carry next to candidates and question
REQUEST_KEYS = set(Packer.__dataclass_fields__) - {"_profile", "_counter", "_stages"} | {"system", "history"}


def example_request() -> dict[str, Any]:
    """The built-in example: a help-centre question with tricky candidates."""
    text = resources.files("satchel").joinpath("examples/brightgrid.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def read_request(path: str, question: str | None) -> dict[str, Any]:
    """A JSON request object, or JSONL candidates (one per line) with --question."""
    name, text = read_text(path)
    if not text.strip():
        raise InputError(f'{name} is empty; give a JSON request with "candidates" or JSONL candidates')
    data = parse_request(text, name)
    tokenizer = data.get("tokenizer")
    if path != "-" and isinstance(tokenizer, str) and tokenizer.endswith(".json"):
        # A tokenizer.json the request names by a relative path lies beside the request (as
        # paths in any config file do), wherever satchel is run from; else where it is run.
        beside = os.path.join(os.path.dirname(path), tokenizer)
        if not os.path.isabs(tokenizer) and os.path.isfile(beside):
            data["tokenizer"] = beside
    if question is not None:
        data["question"] = question
    if not data.get("question"):
        raise InputError(f"{name} has no question; put 'question' in the request or pass --question")
    return data


def read_text(path: str, wanted: str = "a JSON or JSONL file") -> tuple[str, str]:
    """(what errors call it, its text) of the UTF-8 file at ``path``, or of stdin for -;
    ``wanted``: what the advice asks for when it cannot be read."""
    name = "stdin" if path == "-" else path
    data = _read_bytes(path, wanted)
    return name, decode_utf8(data, name, "send UTF-8" if path == "-" else "save it as UTF-8")


def _read_bytes(path: str, wanted: str) -> bytes:
    """The file's bytes (stdin's for -): decoded by decode_utf8, which names a bad byte."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror}; give {wanted}, or - for stdin") from None


def parse_request(text: str, name: str) -> dict[str, Any]:
    """A request object, a JSON list of candidates, or (when the text is not one JSON value) JSONL."""
    try:
        whole = load_json(text, name)
    except json.JSONDecodeError as whole_error:
        # JSONL when its first line is a JSON value by itself; otherwise one JSON document
        # spread over lines (pretty-printed), whose own error says where it is wrong
        first = next((line for line in text.split("\n") if line.strip()), "")
        try:
            load_json(first, name)
        except json.JSONDecodeError:
            if "\n" in text.strip():
                raise InputError(
                    f"{name} is not valid JSON: {json_error(whole_error)}; fix it there (a request "
                    "object with 'candidates', a JSON list, or one candidate object per line)"
                ) from None
        return {"candidates": _jsonl_candidates(text, name)}
    return request_of(whole, text, name)


def request_of(whole: Any, text: str, name: str) -> dict[str, Any]:
    """:func:`parse_request` of ``text``, which is the one JSON value ``whole`` (parsed by a
    caller that looked at it first: the lab's loader)."""
    if isinstance(whole, dict) and "candidates" in whole:
        unknown = set(whole) - REQUEST_KEYS - {"candidates", "question"}
        if unknown and _is_query(whole):
            raise InputError(f"{name} is {_QUERY_SET}")
        if unknown:
            raise InputError(
                f"{name}: unknown key(s) {', '.join(sorted(unknown))}; a request holds candidates, question "
                "and pack() options"
            )
        if whole.get("compressor") is not None:
            raise InputError(
                f"{name}: compressor={whole['compressor']!r}: an abstractive compressor is a Python "
                'callable, which a request cannot hold; give "compress": true for the extractive one, '
                "or pass compressor= to satchel.pack in Python"
            )
        return whole
    if isinstance(whole, dict) and whole and not {"id", "text"} & whole.keys():
        # Not a one-line JSONL candidate either: most likely a request whose "candidates" is misspelt.
        unknown = set(whole) - REQUEST_KEYS - {"question"}
        raise InputError(
            f'{name} is a JSON object without "candidates"'
            + (f" (unknown key(s) {', '.join(sorted(unknown))})" if unknown else "")
            + '; a request holds "candidates": [...], "question" and pack() options'
        )
    if isinstance(whole, list):
        return {"candidates": whole}
    if isinstance(whole, dict) and "\n" in text.strip():
        return {"candidates": [whole]}  # one candidate object, pretty-printed over lines
    return {"candidates": _jsonl_candidates(text, name)}


#: what a query set for ``satchel ablate`` is told (a line of one read as a candidate had "no 'id'")
_QUERY_SET = (
    "a query set for satchel ablate (each line a question with its candidates, answers and "
    "gold); run satchel ablate FILE --out DIR, or pack one query's candidates with --question"
)


def _is_query(data: Any) -> bool:
    """Whether ``data`` reads as a line of a query set (see satchel.ablate.QUERY_KEYS)."""
    from ..ablate import QUERY_KEYS  # (here: `satchel pack` does not load the harness to start)

    return (
        isinstance(data, dict)
        and "id" not in data
        and {"question", "candidates"} <= data.keys()
        and bool((set(QUERY_KEYS) - {"question", "candidates"}) & data.keys())  # (answers, gold)
    )


def _jsonl_candidates(text: str, name: str) -> list[Chunk]:
    """One candidate per line, each checked here so that an error names its line."""
    fix = "give a JSON request object with 'candidates', a JSON list, or one candidate object per line"
    candidates = []
    first: dict[str, str] = {}  # each id, and the line it was first on
    # "\n" only: str.splitlines() also splits at U+2028 and the like, which JSON strings may hold.
    for where, data in json_lines(text.split("\n"), name, fix):
        if _is_query(data):
            raise InputError(f"{name} is {_QUERY_SET} ({where.removeprefix(name + ' ')} reads as a query)")
        try:
            candidate = Chunk.from_dict(data)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        if first.setdefault(candidate.id, where) != where:
            line = first[candidate.id].removeprefix(name + " ")
            raise InputError(
                f"{where}: candidate id {candidate.id!r} is on {line} too; ids must be unique "
                "(suffix a position, e.g. 'doc#1', 'doc#2')"
            )
        candidates.append(candidate)
    return candidates


def whole_number(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``, refused in the option's own
    terms (checked by pack, the message named its Python keyword: "max_sources=0 must be
    a positive whole number or None")."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            kind = "a positive whole number" if least == 1 else f"a whole number of {least} or more"
            raise argparse.ArgumentTypeError(f"{text!r} must be {kind}; leave the option out for the default")
        return value

    return whole


def _ratio(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number above 0 and at most 1, e.g. 0.5")
    return value


def add_pack_options(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that packs."""
    positive, tokens = whole_number(1), whole_number(0)
    p.add_argument("--model", help="model name (sets window, tokenizer and chat framing); default gpt-4o")
    p.add_argument("--context-window", type=positive, help="window in tokens (overrides the model's)")
    p.add_argument("--tokenizer", help="o200k_base, cl100k_base, a tokenizer.json path, or 'estimate'")
    p.add_argument("--reserve-answer", type=tokens, help="tokens kept free for the answer (default 512)")
    p.add_argument(
        "--reserve-other", type=tokens, help="tokens kept free for anything else the prompt carries"
    )
    p.add_argument("--source-budget", type=tokens, help="cap on the tokens the sources may use")
    p.add_argument("--order", choices=sorted(ORDERS), help="source order (default relevance)")
    p.add_argument("--max-sources", type=positive, help="keep at most this many sources")
    p.add_argument(
        "--max-chunk-tokens",
        type=positive,
        help="skip a chunk that would send more tokens than this (counted once the sentences "
        "already sent are taken out of it)",
    )
    p.add_argument("--no-dedupe", action="store_true", help="send repeats as they are")
    p.add_argument(
        "--system",
        help="system instructions (default: a short grounded instruction; '' sends no system message)",
    )
    policy = p.add_argument_group("seed 003's policy (all off by default)")
    policy.add_argument(
        "--policy",
        choices=["evidence"],
        help="evidence: strip boilerplate, cap by role, decisive first (edge-anchored), compress "
        "only what overflows",
    )
    policy.add_argument("--compress", action="store_true", help="compress what overflows (extractive)")
    policy.add_argument(
        "--role-caps",
        type=role_caps,
        metavar="ROLE=CAP,...",
        help="per-item cap by role, in tokens or as a share of the source budget, e.g. "
        "decisive=none,supporting=0.25,background=0",
    )
    policy.add_argument("--contract", help="output contract, given its own reserved slice")
    policy.add_argument(
        "--restate-contract", action="store_true", help="restate the contract before the question"
    )
    policy.add_argument(
        "--min-score-ratio",
        type=_ratio,
        help="drop candidates scoring below RATIO x the best (when the best is above zero)",
    )
    policy.add_argument(
        "--strip-boilerplate",
        action="store_true",
        help="remove header/footer lines repeated across documents",
    )


def role_caps(text: str) -> dict[str, int | float | None]:
    """``decisive=none,supporting=0.25,background=0`` -> a role_caps dict (checked by pack)."""
    caps: dict[str, int | float | None] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, sep, value = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"{part!r} is not ROLE=CAP (e.g. supporting=120)")
        role = role.strip()
        if role in caps:
            raise argparse.ArgumentTypeError(
                f"role {role!r} is given twice in {text!r}; give each role one cap"
            )
        try:
            caps[role] = read_cap(value, role)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return caps


def read_cap(text: str, role: str) -> int | float | None:
    """One role's cap as typed: whole tokens (``120``), a share of the source budget with a
    decimal point (``0.25``, ``1.0``), or ``none`` (or nothing): no cap. A ValueError that
    names the three forms for anything else. (The lab reads its cap fields with this too:
    a number read by JavaScript loses its decimal point, and 1.0, the whole budget, became
    a cap of 1 token.)"""
    value = text.strip().lower()
    if value in ("none", ""):
        return None
    try:
        cap = float(value) if "." in value else int(value)
    except ValueError:
        raise ValueError(
            f"cap {value!r} for {role!r} must be a whole number of tokens (120), a share of the "
            "source budget with a decimal point (0.25), or 'none'"
        ) from None
    if isinstance(cap, float) and cap > 1:  # (pack's own message speaks of Python's types)
        raise ValueError(
            f"cap {value!r} for {role!r} has a decimal point, so it is a share of the source budget, "
            f"and a share is at most 1; give tokens without one ({int(cap)}) or a share such as 0.25"
        )
    return cap


def cap_text(cap: int | float | None) -> str:
    """A cap as :func:`read_cap` reads it back, of the same type: ``120``, ``1.0``, ``none``.
    (A float is written out in full, ``0.00001`` for ``1e-05``: it needs its decimal point.)
    A ValueError for a value no text reads back as (a bool, NaN, a string)."""
    if cap is None:
        return "none"
    if isinstance(cap, bool) or not isinstance(cap, (int, float)):
        raise ValueError(f"{cap!r} is no cap")
    if isinstance(cap, int):
        return str(cap)
    if not math.isfinite(cap):
        raise ValueError(f"{cap!r} is no cap")
    text = format(decimal.Decimal(repr(cap)), "f")
    return text if "." in text else f"{text}.0"


#: How to fix each option that must not be blank: taken as "not given", a default would win unsaid.
BLANK_FIXES = {
    "question": "give the question, or leave --question out to use the request's",
    "log": "give the path of a JSONL log to append to, or leave --log out",
    "tokenizer": "give o200k_base, cl100k_base, a tokenizer.json path or 'estimate', or leave "
    "--tokenizer out for the model's own",
    "pack_model": "give a registered model name, or leave --pack-model out to budget for --model",
}


def refuse_blank(args: argparse.Namespace, *names: str) -> None:
    """Raise InputError for any of these options given as an empty (or all-space) string."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None and not value.strip():
            raise InputError(f"--{name.replace('_', '-')} {value!r} is blank; {BLANK_FIXES[name]}")


def pack_options(args: argparse.Namespace, request: dict[str, Any]) -> dict[str, Any]:
    """Request keys, overridden by whatever was given on the command line."""
    options = {k: v for k, v in request.items() if k not in ("candidates", "question")}
    system = getattr(args, "system", None)
    if system and system.isspace():  # (in the option's terms; pack() names its keyword)
        raise InputError(
            f"--system {system!r} is blank; give instructions, leave --system out for the default, "
            "or give --system '' to send no system message"
        )
    if getattr(args, "policy", None) == "evidence":
        options.update(EVIDENCE_POLICY)  # a named policy, then any option given beside it
    for name in (
        "model",
        "context_window",
        "tokenizer",
        "reserve_answer",
        "reserve_other",
        "source_budget",
        "order",
        "max_sources",
        "max_chunk_tokens",
        "system",
        "role_caps",
        "contract",
        "min_score_ratio",
    ):
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    if getattr(args, "no_dedupe", False):
        options["dedupe"] = False
    for name in ("compress", "restate_contract", "strip_boilerplate"):
        if getattr(args, name, False):
            options[name] = True
    return options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="JSON request or JSONL candidates; - for stdin")
    p.add_argument("--example", action="store_true", help="use the built-in example request")
    p.add_argument("--question", help="the question (required with JSONL candidates)")
    add_pack_options(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: the prompt; messages: chat messages JSON; json: the whole result; "
        "trace: a table of every candidate and the budget",
    )
    p.add_argument("--log", metavar="LOG", help="also append the pack to this JSONL manifest log")
    p.add_argument(
        "--explain",
        metavar="ID",
        action="append",
        help="print, instead, what happened to candidate ID and where the prompt holds each of its "
        "sentences (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from .._pack import pack

    refuse_blank(args, "question", "log", "tokenizer")
    if args.example and args.file:
        raise InputError("give a request FILE (or - for stdin) or --example, not both")
    if not args.example and not args.file:
        raise InputError("give a request FILE (or - for stdin), or --example for the built-in one")
    request = example_request() if args.example else read_request(args.file, args.question)
    if args.example and args.question:
        request["question"] = args.question
    options = pack_options(args, request)
    try:
        result = pack(request["candidates"], request["question"], **options)
    except InputError as exc:  # (a candidate, the question or the history: in which file)
        if args.example:
            raise
        raise InputError(f"{'stdin' if args.file == '-' else args.file}: {exc}") from None
    if args.log:
        from ..log import append_log

        append_log(args.log, result)
    if args.explain:
        known = [e.id for e in result.manifest]
        for wanted in args.explain:
            if wanted not in known:
                close = difflib.get_close_matches(wanted, known, 1)
                hint = (
                    f"; did you mean {close[0]!r}?"
                    if close
                    else "; the ids are in --format trace's id column"
                )
                raise InputError(f"--explain {wanted!r}: no candidate has that id{hint}")
        print("\n\n".join(map(result.explain, args.explain)))
    elif args.format == "text":
        print(result.text)
    elif args.format == "messages":
        print(json.dumps(result.chat_messages(), indent=2, ensure_ascii=False))
    elif args.format == "json":
        print(canonical_json(result.to_dict()))
    else:
        print(result.trace())
    return 0


command(
    "pack",
    "Pack candidates (a JSON request, JSONL with --question, or --example) and print the prompt.",
    add_arguments,
    run,
)

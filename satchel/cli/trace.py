"""``satchel trace LOG``: show a logged pack as the table ``satchel pack --format trace`` prints."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from .._errors import InputError
from .._manifest import format_trace
from . import command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "log", metavar="LOG", help="a JSONL manifest log (written by `satchel pack --log LOG`); - for stdin"
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--index",
        type=int,
        metavar="N",
        help="the N-th record, counting from 1; negative counts from the end (-1 is the last)",
    )
    which.add_argument("--last", action="store_true", help="the last record (the default)")
    which.add_argument("--all", action="store_true", help="every record, oldest first")


def _answer_summary(record: Mapping[str, Any]) -> list[str]:
    answer = record.get("answer")
    if not answer:
        return []
    facts = [f"model {answer.get('model') or '?'}"]
    if answer.get("prompt_tokens") is not None:
        facts.append(
            f"{answer['prompt_tokens']} prompt + {answer.get('completion_tokens')} completion tokens"
        )
    if answer.get("latency_s") is not None:
        facts.append(f"{answer['latency_s']:.2f} s")
    if answer.get("finish_reason"):
        facts.append(f"finish {answer['finish_reason']}")
    lines = ["", f"answer ({', '.join(facts)}):"]
    lines.extend("  " + line for line in (answer.get("text") or "").splitlines() or [""])
    citations = record.get("citations")
    if citations:
        labels = record.get("labels") or {}
        refs = {(r["label"], r["chunk_id"]): r for r in citations.get("references") or []}

        def describe(label: str) -> str:
            target = labels.get(label)
            ids = [target] if isinstance(target, str) else list(target or [])
            shown = []
            for chunk_id in ids:
                ref = refs.get((label, chunk_id), {})
                where = " § ".join(x for x in (ref.get("title"), ref.get("section")) if x)
                shown.append(f"{chunk_id} ({where})" if where else chunk_id)
            return f"{label} = {', '.join(shown)}" if shown else label

        lines.append("")
        lines.append(f"cited:   {'; '.join(map(describe, citations['cited_labels'])) or 'none'}")
        lines.append(f"uncited: {', '.join(citations['uncited_labels']) or 'none'}")
        lines.append(
            f"unknown: {', '.join(citations['unknown_labels']) or 'none'}"
            + (" (labels never sent: the model invented them)" if citations["unknown_labels"] else "")
        )
    return lines


def show(record: Mapping[str, Any], number: int, total: int) -> str:
    """One record: a header line, the trace table, then the answer and its citations if logged."""
    question = (record.get("question") or "").replace("\n", " ")
    header = (
        f"record {number} of {total}, logged {record.get('logged_at', '?')}, "
        f"prompt {record.get('prompt_sha256', '?')}"
    )
    lines = [header]
    if question:
        lines.append(f"question: {question}")
    lines.append(format_trace(record))
    lines.extend(_answer_summary(record))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..log import read_log

    skipped: list[str] = []

    def damaged(where: str, why: str) -> None:
        # (a writer that died mid-line leaves a torn record: the others still show)
        skipped.append(f"satchel trace: skipped {where}, no whole record: {why}")

    records = list(read_log(args.log, damaged))
    total = len(records)
    if not total:
        if _is_request(args.log):  # (each of its lines was told as a torn record)
            raise InputError(
                f"{args.log!r} is a pack request, not a log; `satchel pack {args.log} --format trace` "
                "shows how it packs (and `--log LOG` keeps the pack for satchel trace)"
            )
        torn = f" ({len(skipped)} line(s) are no whole record)" if skipped else ""
        raise InputError(
            f"the log {args.log!r} holds no records{torn}; write one with `satchel pack --log LOG`"
        )
    for line in skipped:
        print(line, file=sys.stderr)
    if args.all:
        chosen = list(range(total))
    elif args.index is not None:
        if args.index == 0 or not -total <= args.index <= total:
            raise InputError(
                f"--index {args.index} is outside the log {args.log!r}, which holds {total} record(s); "
                f"give 1..{total}, or -1 for the last"
            )
        chosen = [args.index - 1 if args.index > 0 else total + args.index]
    else:
        chosen = [total - 1]
    print("\n\n".join(show(records[i], i + 1, total) for i in chosen))
    return 0


def _is_request(path: str) -> bool:
    """Whether the file is one JSON object with candidates, as `satchel pack` reads."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "candidates" in data


command("trace", "Show a logged pack (from `satchel pack --log LOG`) as the trace table.", add_arguments, run)

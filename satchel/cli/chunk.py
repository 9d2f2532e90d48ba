"""``satchel chunk FILE``: a document cut into chunks (seed 004's DocumentChunker), as JSONL
candidates that ``satchel pack - --question ...`` reads, each with its document's offsets."""

from __future__ import annotations

import argparse
import os
import sys

from .._errors import InputError
from .._manifest import canonical_json
from ..chunking import DocumentChunker
from . import command
from .pack import read_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the document, UTF-8 text (Markdown too); - for stdin")
    p.add_argument(
        "--doc-id",
        help="the document's id, which each chunk's id starts with; default the file's path as given "
        "(two README.md files in other folders are two documents)",
    )
    p.add_argument("--model", default="gpt-4o", help="whose tokenizer counts max_tokens; default gpt-4o")
    p.add_argument("--tokenizer", help="o200k_base, cl100k_base or a tokenizer.json path, for another model")
    p.add_argument(
        "--max-tokens", type=int, default=256, metavar="N", help="the most tokens a chunk holds (256)"
    )
    p.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="tokens of the sentences that end a chunk to repeat at the start of the next (0)",
    )
    p.add_argument("--title", help="the title every chunk carries")
    p.add_argument("--section", help="the section every chunk carries")
    p.add_argument("--updated", help="the date every chunk carries (ISO, such as 2026-03-01)")


def run(args: argparse.Namespace) -> int:
    name, text = read_text(args.file, "a UTF-8 text file")
    doc_id = args.doc_id
    if doc_id is None:
        if args.file == "-":
            raise InputError("a document read from stdin has no name; give it one with --doc-id")
        doc_id = os.path.normpath(args.file)  # (its name alone: docs/a/README.md and b/README.md met)
    if not text.strip():
        raise InputError(f"{name} is empty; give a document with text in it")
    chunker = DocumentChunker(
        args.model, max_tokens=args.max_tokens, overlap=args.overlap, tokenizer=args.tokenizer
    )
    fields = {k: v for k in ("title", "section", "updated") if (v := getattr(args, k)) is not None}
    out = sys.stdout
    for chunk in chunker.chunk(text, doc_id, **fields):
        out.write(canonical_json(chunk.to_dict()) + "\n")
    return 0


command(
    "chunk", "cut a document into chunks that fit (JSONL candidates for `satchel pack`)", add_arguments, run
)

"""DocumentChunker benchmark: how long cutting a document takes, against one tokenizer pass.

The document is nq-open-oracle's distinct gold paragraphs (``long_answer``) joined by
blank lines, cut to each size in characters. For each size: (a) one tokenizer pass,
``TiktokenTokenizer("o200k_base").count`` of the whole document, (b)
``DocumentChunker("gpt-4o", max_tokens=M, overlap=O).chunk(document, "doc")`` (fresh
counts each time), (c) their ratio, best of ``--repeat``; and what came out: chunks,
the largest chunk in tokens (never over M), the mean, and the tokens sent twice by the
overlap. Growth is this size's chunking time over the previous size's (2.0 is linear for
the doubling sizes). Reports only; asserts nothing.

    python bench/chunking.py [--sizes 250000,500000,1000000] [--max-tokens 256] [--overlap 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import best_time, command_line, gold_paragraphs, load_nq  # noqa: E402
from satchel import DocumentChunker  # noqa: E402
from satchel._tokens import TiktokenTokenizer  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250000,500000,1000000", help="document sizes in characters")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--overlap", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    document = "\n\n".join(gold_paragraphs(load_nq()))
    if max(sizes) > len(document):
        sys.exit(f"the largest size is {len(document):,} characters (the joined paragraphs)")
    tokenizer = TiktokenTokenizer("o200k_base")
    tokenizer.count("warm")  # (the rank file loads once, outside the timings)
    chunker = DocumentChunker("gpt-4o", max_tokens=args.max_tokens, overlap=args.overlap)
    print(f"$ {command_line('bench/chunking.py', argv)}")
    settings = f"max_tokens={args.max_tokens}, overlap={args.overlap}"
    print(f"DocumentChunker('gpt-4o', {settings}); best of {args.repeat}\n")
    print(
        f"{'characters':>10} {'tokens':>8} {'tokenizer':>10} {'chunker':>9} {'ratio':>6} {'growth':>6}"
        f" {'chunks':>6} {'largest':>7} {'mean':>6} {'overlap':>7}"
    )
    previous = None
    for size in sizes:
        doc = document[:size]
        tok_time = best_time(args.repeat, lambda doc=doc: tokenizer.count(doc))
        chunk_time = best_time(args.repeat, lambda doc=doc: chunker.chunk(doc, "doc"))
        chunks = chunker.chunk(doc, "doc")
        counts = [tokenizer.count(c.text) for c in chunks]
        twice = sum(
            tokenizer.count(doc[b.start : a.end])
            for a, b in zip(chunks, chunks[1:], strict=False)
            if b.start < a.end
        )
        growth = f"{chunk_time / previous:.1f}x" if previous else ""
        previous = chunk_time
        print(
            f"{size:>10,} {tokenizer.count(doc):>8,} {tok_time:>9.3f}s {chunk_time:>8.3f}s"
            f" {chunk_time / tok_time:>5.1f}x {growth:>6} {len(chunks):>6} {max(counts):>7}"
            f" {statistics.mean(counts):>6.1f} {twice:>7,}"
        )
    print("\n(the largest chunk is never over max_tokens; overlap: tokens sent twice where chunks overlap)")


if __name__ == "__main__":
    main()

"""Adversarial shapes: does pack() stay linear where ordinary text is not what it gets?

Each shape is built at doubling sizes from real prose (nq-open-oracle gold
paragraphs, joined) or from a repeated unit, and timed against one tokenizer
pass over the same texts (``len(encode_ordinary(text))`` each, o200k_base);
best of ``--repeat``. ``growth`` is the time over the previous size's: about 2
is linear, about 4 quadratic. A shape stops growing once one size takes more
than ``--cap`` seconds. Reports only; asserts nothing.

    python bench/adversarial.py [--repeat 3] [--cap 5] [--shapes NAME,...] [--memory]

Shapes (each found by an audit; all were quadratic in time or memory; the others
are fixed, and the three ``touching-`` shapes hold linear memory, split, escape and
count only what each merge adds, and grow the merged tag by the id it gains, but
each merge still copies and hashes the growing text and walks its sentences in C
(the ledger's checks, the split's lists), so their time still grows faster than
linear, about 2.5 to 3 times per doubling):

- ``long-word``: one short text (under 64 words) holding one long word without a
  digit (a base64 blob, a URL, text without spaces);
- ``no-5``: one text of "No. 5 " repeated (every period left to the
  abbreviation rule, none an end);
- ``two-windows``: many documents, each cut into two overlapping windows, every
  second window merging into the first;
- ``window-blocks``: ContextWindow.add_block for many blocks, then assemble;
- ``touching-windows``: one document cut into windows that touch, ranked in
  document order, so each merges into one growing source;
- ``touching-in-front``: the same ranked in reverse document order, so each
  window joins the source in front;
- ``touching-neighbours``: touching-windows with ``dedupe=["neighbours"]`` (no
  sentence ledger splitting the merged text);
- ``touching-markdown``: touching windows of 600 characters of a Markdown document
  (headings, lists, lines opening with a year or holding "C#": each merge used to split
  the merged text whole there);
- ``touching-table``: the same for a Markdown table, whose rows end in no sentence end
  before a space: counting and splitting only what a window adds needs a place to cut
  the merged text, which was only such an end (each merge counted and split it whole:
  3.4 s at 1,000 windows); a sentence that opens a line is one now;
- ``touching-code``: the same for technical docs, paragraphs and fenced code blocks
  (a block is one unit; a merge splits again only what it adds unless a fence line
  at the seam changes); ``touching-code-in-front`` ranks them in reverse;
- ``compress-over``: compress=True on one text a tenth over its room;
- ``compress-table``: compress=True on one long Markdown table at a source budget of 8,000
  (rows are joined by line breaks, where no trial was cut: each was counted whole, 7 s
  at 250,000 characters; see _tokens.cut_in);
- ``overlapping-no-offsets``: a document cut into windows that overlap by half,
  without offsets (neighbour merging cannot join them; the ledger looks for the
  cut sentences at each window's ends among all those sent before);
- ``common-endings``: news-like chunks without offsets, each opening with a cut
  sentence, every sentence ending " said in a statement." (the ledger walked every
  sent sentence ending alike for each chunk);
- ``templated-versions``: one short sentence in thousands of versions, a price in
  each, and near-duplicates of some (past 64 versions, later ones met nobody: no
  conflict marked, no near-duplicate dropped; now they meet the best-ranked eight
  and every version with their details, so the time is of the comparisons made);
- ``catalogue``: a catalogue's entries, one sentence in thousands of versions with four
  details each (item, price, days, desk) and one shared word between two of them: each
  version is compared with the best-ranked eight it meets, and the alignment, which
  judged most of them, is left to pairs that are not versions of one sentence (12 s at
  10,000; see _dedupe._details_apart).
- ``compress-capped``: compress=True with every role capped at 100 tokens, over windows of
  3,000 characters of prose (each compressed): each sentence's words were compared with every
  question term for a form of it (a third of compression's time); now only with the terms that
  open alike (see _represent._about);
- ``chunker-cjk`` and ``chunker-base64``: DocumentChunker("gpt-4o", max_tokens=256) over one
  document without spaces (Chinese without punctuation; a base64 blob), so every chunk is cut
  between characters: the search for each cut halved a range of max_tokens x 128 characters,
  counting 16,000 of them, then 8,000, ... for a piece of a few hundred (45 to 100 times a
  tokenizer pass: 5.9 s at 125,000 characters of Chinese); it now gallops up from the start
  (see chunking._last_fitting).
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import satchel  # noqa: E402
from bench._data import best_time, command_line, gold_paragraphs, load_nq  # noqa: E402
from bench.speed import tokenizer_pass  # noqa: E402
from satchel._tokens import TiktokenTokenizer  # noqa: E402

QUESTION = "What did the committee decide about the price in 1999?"
_WORD = re.compile(r"\S+")
_HAN = "东京都是日本的首都人口约一千四百万该市位于本州岛东部是世界上最大的都市圈之一经济文化中心"
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def prose() -> str:
    return " ".join(gold_paragraphs(load_nq()))


def shapes(text: str) -> dict[str, tuple[list[int], Callable[[int], tuple[list[str], Callable[[], Any]]]]]:
    """name -> (sizes, build(size) -> (texts to tokenize, the pack to time))."""
    words = [m.span() for m in _WORD.finditer(text)]

    def long_word(n: int) -> tuple[list[str], Callable[[], Any]]:
        t = "See the attached blob for the details " + "a" * n + " of the price."
        return [t], lambda: satchel.pack([{"id": "c", "text": t}], QUESTION)

    def no_5(n: int) -> tuple[list[str], Callable[[], Any]]:
        t = "No. 5 " * (n // 6)
        return [t], lambda: satchel.pack([{"id": "c", "text": t}], QUESTION)

    def windows(n: int, width: int, step: int) -> list[dict[str, Any]]:
        out = []
        for i in range(n):
            first = (i * step) % (len(words) - width - 1)
            s, e = words[first][0], words[first + width][0]
            out.append({"id": f"w{i}", "text": text[s:e], "doc_id": "doc", "start": s, "end": e})
        return out

    def two_windows(n: int) -> tuple[list[str], Callable[[], Any]]:
        cands = []
        for d in range(n):  # words 0-11 and 8-19 of a 20-word document; all firsts rank first
            first = (d * 20) % (len(words) - 21)
            base = words[first][0]
            doc = text[base : words[first + 19][1]]
            a_end, b_start = words[first + 11][1] - base, words[first + 8][0] - base
            cands.append({"id": f"d{d}a", "text": doc[:a_end], "doc_id": f"d{d}", "start": 0, "end": a_end})
            cands.append(
                {"id": f"d{d}b", "text": doc[b_start:], "doc_id": f"d{d}", "start": b_start, "end": len(doc)}
            )
        cands = cands[0::2] + cands[1::2]
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION)

    def window_blocks(n: int) -> tuple[list[str], Callable[[], Any]]:
        blocks = [c["text"] for c in windows(n, 20, 20)]

        def run() -> None:
            window = satchel.ContextWindow("gpt-4.1")  # (a window of 1,047,576 tokens)
            for i, b in enumerate(blocks):
                window.add_block(b, satchel.Priority.MEDIUM, f"b{i}")
            window.assemble(max_tokens=1_047_576)

        return blocks, run

    def touching(n: int, in_front: bool = False, **options: Any) -> tuple[list[str], Callable[[], Any]]:
        """Windows of one document, window i ending where window i + 1 starts, ranked in
        document order (each joins the source behind it) or in reverse (``in_front``)."""
        cands = windows(n, 40, 40)
        for i, c in enumerate(cands):
            c["score"] = i / n if in_front else 1 - i / n
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1", **options)

    def touching_lines(n: int, doc: str, in_front: bool = False) -> tuple[list[str], Callable[[], Any]]:
        """``doc`` cut into ``n`` windows of 600 characters that touch, ranked in document order
        (or in reverse: ``in_front``)."""
        doc = (doc * (600 * n // len(doc) + 1))[: 600 * n]
        cands = [
            {"id": f"w{i}", "text": doc[a : a + 600], "doc_id": "doc", "start": a, "end": a + 600}
            for i, a in enumerate(range(0, len(doc), 600))
        ]
        for i, c in enumerate(cands):
            c["score"] = i if in_front else -i
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1")

    sentences = [text[a:b] for a, b in satchel.split_sentences(text[:200_000])]
    # Markdown: a heading every six sentences, then prose lines of two sentences (one in
    # three opening with a year or holding "C#"), then a list of two items
    markdown = "".join(
        f"## Part {k}\n"
        + "".join(
            f"{'2019 saw this. ' if j % 3 == 0 else 'In C# too. ' if j % 3 == 1 else ''}{s} {t}\n"
            for j, (s, t) in enumerate(zip(*[iter(sentences[6 * k : 6 * k + 4])] * 2, strict=True))
        )
        + f"- {sentences[6 * k + 4]}\n- {sentences[6 * k + 5]}\n\n"
        for k in range(len(sentences) // 6)
    )
    table = "".join(f"| {s[:40]} | {s[40:80]} | {k} |\n" for k, s in enumerate(sentences))
    # technical docs: a paragraph of four sentences, then a fenced code block (one unit each)
    code = "".join(
        " ".join(sentences[4 * k : 4 * k + 4]) + f"\n\n```python\nimport acme\nacme.run({k})\n```\n\n"
        for k in range(len(sentences) // 4)
    )

    def overlapping_no_offsets(n: int) -> tuple[list[str], Callable[[], Any]]:
        """Windows of 40 words every 20 words, without offsets (each checked for sentences
        cut from those sent, against all sent before it)."""
        cands = [{"id": c["id"], "text": c["text"]} for c in windows(n, 40, 20)]
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1")

    plain_words = [w.lower() for w in re.findall(r"[A-Za-z]+", text[:400_000])]

    def common_endings(n: int) -> tuple[list[str], Callable[[], Any]]:
        """News-like chunks without offsets: a sentence cut at its start, then a whole one,
        both ending " said in a statement." (the ledger looks for the cut one among every
        sent sentence that ends alike)."""
        cands = []
        for i in range(n):
            a = " ".join(plain_words[(i * 18 + k) % len(plain_words)] for k in range(8))
            b = " ".join(plain_words[(i * 18 + 8 + k) % len(plain_words)] for k in range(10)).capitalize()
            cands.append({"id": f"n{i}", "text": f"{a} said in a statement. {b} said in a statement."})
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1")

    def templated_versions(n: int) -> tuple[list[str], Callable[[], Any]]:
        """One short sentence in ``n`` versions, a price in each (short texts are compared with
        their details masked: every version shares every shingle), and a near-duplicate of
        every tenth."""
        template = "The Plus plan costs ${}.99 per month and you can return it within thirty days{}."
        cands = [{"id": f"v{i}", "text": template.format(i, "")} for i in range(n)]
        cands += [{"id": f"d{i}", "text": template.format(i, " of delivery")} for i in range(0, n, 10)]
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1")

    def catalogue(n: int) -> tuple[list[str], Callable[[], Any]]:
        """``n`` entries of one catalogue: a sentence with four details, each a version of the others."""
        entry = "Item {} costs ${}.99 and ships in {} days. Contact desk {}."
        cands = [{"id": f"i{i}", "text": entry.format(i, i % 90, i % 5, i % 7)} for i in range(n)]
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, model="gpt-4.1")

    def compress_over(n: int) -> tuple[list[str], Callable[[], Any]]:
        t = text[:n]
        room = int(TiktokenTokenizer("o200k_base").count(t) * 0.9)
        options = {"compress": True, "source_budget": room}
        return [t], lambda: satchel.pack([{"id": "c", "text": t}], QUESTION, **options)

    def compress_table(n: int) -> tuple[list[str], Callable[[], Any]]:
        t = (table * (n // len(table) + 1))[:n]
        options = {"compress": True, "source_budget": 8_000, "model": "gpt-4.1"}
        return [t], lambda: satchel.pack([{"id": "t", "text": t}], QUESTION, **options)

    def compress_capped(n: int) -> tuple[list[str], Callable[[], Any]]:
        """``n`` windows of 3,000 characters, every role capped at 100 tokens (each compressed)."""
        cands = [
            {"id": f"p{i}", "text": text[3000 * i : 3000 * (i + 1)].strip(), "score": 1 - i / n}
            for i in range(n)
        ]
        caps = dict.fromkeys(("decisive", "supporting", "background"), 100)
        options = {"compress": True, "role_caps": caps, "source_budget": 400_000, "model": "gpt-4.1"}
        return [c["text"] for c in cands], lambda: satchel.pack(cands, QUESTION, **options)

    def chunker(n: int, alphabet: str) -> tuple[list[str], Callable[[], Any]]:
        """One document of ``n`` characters drawn from ``alphabet`` (no spaces), chunked."""
        rng = random.Random(0)
        doc = "".join(rng.choices(alphabet, k=n))
        cutter = satchel.DocumentChunker("gpt-4o", max_tokens=256)
        return [doc], lambda: cutter.chunk(doc, "doc")

    return {
        "long-word": ([4_000, 8_000, 16_000, 32_000, 64_000], long_word),
        "no-5": ([125_000, 250_000, 500_000, 1_000_000], no_5),
        "two-windows": ([1_000, 2_000, 4_000, 8_000], two_windows),
        "window-blocks": ([2_000, 4_000, 8_000, 16_000], window_blocks),
        "touching-windows": ([250, 500, 1_000], touching),
        "touching-in-front": ([250, 500, 1_000], functools.partial(touching, in_front=True)),
        "touching-neighbours": ([250, 500, 1_000], functools.partial(touching, dedupe=["neighbours"])),
        "touching-markdown": ([250, 500, 1_000], functools.partial(touching_lines, doc=markdown)),
        "touching-table": ([250, 500, 1_000], functools.partial(touching_lines, doc=table)),
        "touching-code": ([250, 500, 1_000], functools.partial(touching_lines, doc=code)),
        "touching-code-in-front": (
            [250, 500, 1_000],
            functools.partial(touching_lines, doc=code, in_front=True),
        ),
        "overlapping-no-offsets": ([2_000, 4_000, 8_000], overlapping_no_offsets),
        "compress-over": ([16_000, 32_000, 64_000], compress_over),
        "compress-table": ([62_500, 125_000, 250_000], compress_table),
        "common-endings": ([2_000, 4_000, 8_000, 16_000], common_endings),
        "templated-versions": ([1_000, 2_000, 4_000, 8_000], templated_versions),
        "catalogue": ([1_000, 2_000, 4_000, 8_000], catalogue),
        "compress-capped": ([100, 200, 400], compress_capped),
        "chunker-cjk": ([62_500, 125_000, 250_000, 500_000], functools.partial(chunker, alphabet=_HAN)),
        "chunker-base64": (
            [125_000, 250_000, 500_000, 1_000_000],
            functools.partial(chunker, alphabet=_BASE64),
        ),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    ap.add_argument("--cap", type=float, default=5.0, help="stop a shape after a size slower than this (s)")
    ap.add_argument("--shapes", default=None, help="comma-separated shape names (default: all)")
    ap.add_argument(
        "--memory", action="store_true", help="also run each pack once more under tracemalloc: its peak"
    )
    args = ap.parse_args(argv)
    print(f"$ {command_line('bench/adversarial.py', argv)}")
    table = shapes(prose())
    chosen = args.shapes.split(",") if args.shapes else list(table)
    memory = f" {'peak MB':>8} {'text MB':>8}" if args.memory else ""
    width = max(map(len, chosen))  # (the longest shape name)
    header = f"{'size':>9} {'tokenizer':>10} {'pack':>9} {'pack/tok':>9} {'growth':>7}{memory}"
    print(f"{'shape':<{width}} {header}")
    for name in chosen:
        sizes, build = table[name]
        previous = None
        for size in sizes:
            texts, run = build(size)
            tok = best_time(args.repeat, lambda texts=texts: tokenizer_pass(texts))
            pk = best_time(args.repeat, run)
            growth = f"{pk / previous:6.1f}x" if previous else ""
            if args.memory:
                memory = f" {peak_memory(run) / 1e6:8.1f} {sum(map(len, texts)) / 1e6:8.2f}"
            print(f"{name:<{width}} {size:>9,} {tok:9.4f}s {pk:8.3f}s {pk / tok:8.1f}x {growth:>7}{memory}")
            previous = pk
            if pk > args.cap:
                break
    print("\n(growth: this size's pack time over the previous size's; 2x is linear, 4x quadratic)")
    if args.memory:
        print("(peak MB: the most memory Python held during one pack, by tracemalloc; text MB: the")
        print(" candidates' text, in millions of characters)")


def peak_memory(run: Callable[[], Any]) -> int:
    """The peak of memory allocated through Python during ``run()``, in bytes (tracemalloc)."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


if __name__ == "__main__":
    main()

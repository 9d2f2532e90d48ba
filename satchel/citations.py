"""Citations: which sources an answer cites, checked against what was sent.

:func:`cite` parses ``[S1]``-style labels from a model's answer and maps them
through the pack's label map to chunk ids. Accepted forms, case-insensitive::

    [S1]   [S1, S3]   [S1; S3]   [S1 and S3]   [S1][S2]   [S1-S3]   [S1–S3]   [S1-3]   [S1 to S3]

A bracket counts only when it holds nothing but labels and what joins them, so
``[see S1]`` or a Markdown link's text ``[docs]`` is left alone (a link whose text
is a label, ``[S1](#s1)``, cites S1); so is code (```` `arr[s3]` ````, fenced blocks, in a
quote too, and blocks indented four spaces). A label the pack never sent (``[S9]`` of eight
sources) is *unknown*: the model invented it. Titles and sections for
references are the attributes each source showed the model
(``PackResult.sources``); a field left out of ``metadata=`` is ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ._errors import InputError
from ._manifest import PackResult

__all__ = ["Citations", "Reference", "cite"]

#: a bracket without brackets inside it
_BRACKET = re.compile(r"\[([^\[\]]+)\]")
#: a label ("S1"), or a range of them ("S1-S3", "S1-3", "S1 to S3"); labels are numbered
#: by their digits, so "S1S2" is two. (Up to 100 digits: with 9 at most, a model's made-up
#: "[S1-S1000000000]" or "[S99999999999999999999]" was no citation at all, so never reported
#: as a label not sent; past 100, no model means a label.)
_ITEMS = re.compile(r"s\s*(\d{1,100})(?:\s*(?:[-–—]|to\b)\s*(?:s\s*)?(\d{1,100}))?(?!\d)", re.IGNORECASE)
#: what may stand around and between labels: whitespace, commas, semicolons, "&" and "and".
#: (Checked in the gaps the labels leave, each step one character or the word: a regex for
#: the whole bracket backtracked over the ways to share whitespace out between its parts,
#: and an answer of 73 characters took minutes.)
_JOINS = re.compile(r"(?:[\s,;&]|and\b)*", re.IGNORECASE)
#: code, whose brackets are no citations: fenced blocks, from a line opening with ``` (or
#: more, and no other backtick on it: "```pip install x``` does it" is inline code) or ~~~
#: to the next line opening with as many (a block left open is not read as code to the
#: answer's end; fences of more than ten are not read, so that a run of ever shorter
#: ones cannot make the search quadratic), and inline spans
_CODE = re.compile(
    # (a fence may open and close inside a quote: "> ```"; an inline span may be opened by two
    # backticks and hold one: ``a ` b``)
    r"^[ \t]*(?:>[ \t]?)*(?:(`{3,10})[^`\n]*|(~{3,10})[^\n]*)\n.*?^[ \t]*(?:>[ \t]?)*(?:\1|\2)"
    r"|``(?!`)(?:[^`\n]|`(?!`))+?``|`[^`\n]+`",
    re.MULTILINE | re.DOTALL,
)
#: a line indented as code (four spaces or a tab), and a list item's first line
_INDENTED = re.compile(r"(?: {4}|\t)")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]")


def _without_code(answer: str) -> str:
    """``answer`` with its code blanked out: fenced blocks, inline spans, and indented blocks
    (lines indented four spaces or a tab after a blank line, but where they go on a list
    item, whose paragraphs are indented as much)."""
    text = _CODE.sub(" ", answer)
    if "    " not in text and "\t" not in text:
        return text
    lines = text.split("\n")
    code, blank, lead = False, True, ""  # (lead: the last line with text before a blank one)
    for k, line in enumerate(lines):
        if not line.strip():
            blank = True
            continue
        indented = _INDENTED.match(line) is not None
        if indented and (code or (blank and not _LIST_ITEM.match(lead) and not _INDENTED.match(lead))):
            code, lines[k] = True, ""
        else:
            code, lead = False, line
        blank = False
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Reference:
    """One cited chunk, with the title and section its source showed the model."""

    label: str
    chunk_id: str
    title: str | None
    section: str | None

    def describe(self) -> str:
        """``title § section`` (or whichever is known, else the chunk id)."""
        parts = [p for p in (self.title, self.section) if p]
        return " § ".join(parts) if parts else self.chunk_id

    def link(self, template: str) -> str:
        """A URL from ``template``, e.g. ``"https://help.example.com/{chunk_id}"``.

        ``{chunk_id}`` and ``{label}`` are filled in, URL-quoted.
        """
        return template.format(chunk_id=quote(self.chunk_id, safe=""), label=quote(self.label, safe=""))

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "chunk_id": self.chunk_id, "title": self.title, "section": self.section}


@dataclass(frozen=True, slots=True)
class Citations:
    """What one answer cites.

    ``cited_labels`` and ``unknown_labels`` are in order of first mention;
    ``cited_ids`` follows ``cited_labels``, a merged source giving all its chunk
    ids; ``uncited_labels`` are the sent labels the answer never mentions, in
    label order; ``references`` has one entry per cited chunk id.
    """

    cited_labels: tuple[str, ...]
    cited_ids: tuple[str, ...]
    unknown_labels: tuple[str, ...]
    uncited_labels: tuple[str, ...]
    references: tuple[Reference, ...]

    @property
    def valid(self) -> bool:
        """The answer cites at least one source and invents none."""
        return bool(self.cited_labels) and not self.unknown_labels

    def to_dict(self) -> dict[str, Any]:
        return {
            "cited_labels": list(self.cited_labels),
            "cited_ids": list(self.cited_ids),
            "unknown_labels": list(self.unknown_labels),
            "uncited_labels": list(self.uncited_labels),
            "references": [r.to_dict() for r in self.references],
        }


#: A range holding at most this many labels gives each of them (sent or not); a longer one
#: gives its sent labels and its ends ("[S1-S99999]" does not make 99999 labels).
_WHOLE_RANGE = 100


def _mentions(answer: str, sent: int) -> list[int]:
    """Label numbers in order of mention; a range gives the labels inside it (a long one: the
    sent ones and its ends; see _WHOLE_RANGE)."""
    out: list[int] = []
    for bracket in _BRACKET.finditer(_without_code(answer)):
        inside = bracket.group(1)
        items = list(_ITEMS.finditer(inside))
        if not _only_labels(inside, items):
            continue
        for item in items:
            first = int(item.group(1))
            if item.group(2) is None:
                out.append(first)
                continue
            lo, hi = sorted((first, int(item.group(2))))
            if hi - lo < _WHOLE_RANGE:  # "[S3-S6]" of four sources: S5 and S6 were invented
                out.extend(range(lo, hi + 1))
                continue
            # Labels are S1..Sn with no gaps, so the sent part of a range is an interval;
            # expanding only that keeps "[S1-S99999]" from producing 99999 labels.
            out.append(lo)
            out.extend(range(max(lo + 1, 1), min(hi, sent + 1)))
            out.append(hi)
    return out


def _only_labels(inside: str, items: list[re.Match[str]]) -> bool:
    """Whether a bracket holds ``items`` (labels and ranges found in it) and nothing else but
    what joins them (_JOINS)."""
    if not items:
        return False
    at = 0
    for item in items:
        if not _JOINS.fullmatch(inside, at, item.start()):
            return False
        at = item.end()
    return _JOINS.fullmatch(inside, at) is not None


def cite(answer: Any, result: PackResult) -> Citations:
    """Parse the ``[S1]``-style citations in ``answer`` (a string or an :class:`~satchel.clients.Answer`).

    Labels map to chunk ids through ``result.labels``; labels that were never
    sent are reported in ``unknown_labels``.
    """
    text = getattr(answer, "text", answer)
    if not isinstance(text, str):
        raise InputError(
            f"answer={answer!r} must be the model's answer text (a str) or a satchel.clients.Answer"
        )
    if not isinstance(result, PackResult):
        raise InputError(f"result must be the PackResult the prompt came from, got {type(result).__name__}")
    labels: Mapping[str, str | list[str]] = result.labels
    attrs = {source.label: dict(source.attributes) for source in result.sources}

    seen: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for n in _mentions(text, len(labels)):
        label = f"S{n}"
        (seen if label in labels else unknown)[label] = None

    ids: dict[str, None] = {}
    references = []
    for label in seen:
        target = labels[label]
        for chunk_id in [target] if isinstance(target, str) else target:
            if chunk_id in ids:
                continue
            ids[chunk_id] = None
            shown = attrs.get(label, {})
            references.append(Reference(label, chunk_id, shown.get("title"), shown.get("section")))
    return Citations(
        cited_labels=tuple(seen),
        cited_ids=tuple(ids),
        unknown_labels=tuple(unknown),
        uncited_labels=tuple(label for label in labels if label not in seen),
        references=tuple(references),
    )

"""The ledger: what admission has sent, so nothing is sent twice.

:class:`Ledger` works during admission and remembers what was actually sent:
sentences (seed 001's "drop sentences that were already sent"), with the pieces
of sentences a window cut at its ends. Working on what was sent, not on what was
retrieved, means a sentence is never removed because of a chunk that was later
skipped for lack of room. A sentence sent before stays where it says something
else than where it was sent (it refers back to other text) or where a short
answer follows it; a text left with only short pieces is not sent alone.
(Neighbours of one document are merged by admission: see _admit.)
"""

from __future__ import annotations

import itertools
import operator
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ._sentences import (
    _ENDS_SENTENCE,
    _HEADING,
    _ITEM_MARK,
    _ITEM_OR_ROW,
    _NUMBER_MARK,
    _OPENERS,
    OPENS_BLOCK,
    Nesting,
    SentenceCache,
    Split,
    _is_key,
    _sentence,
    code_of,
    may_hold_code,
    nested_otherwise,
    nesting_of,
    normalise,
    split_sentences,
    with_indent,
)

__all__ = ["Fresh", "Ledger"]


@dataclass(slots=True)  # not frozen: made for every candidate, and a frozen init costs 4x
class Fresh:
    """What is left of a candidate after removing what was already sent."""

    text: str
    #: for each removed sentence, the id of the source it was already sent in
    sent_in: tuple[str, ...]
    #: the keys of the sentences left, so recording them needs no second split
    keys: tuple[str, ...] | None = None
    #: the text as it came, its split, and where each of its sentences was sent (None:
    #: kept), for removed
    original: str = ""
    split: Split | None = None
    seen: tuple[str | None, ...] = ()
    #: how many of the removed were no sentence of their own, but a piece of one cut at
    #: the text's start or end (see Ledger)
    cut: int = 0
    #: what was left when it was too short to send alone (``text`` is then empty)
    alone: str = ""

    @property
    def removed(self) -> tuple[tuple[str, str], ...]:
        """(sentence, id of the source it was already sent in) for each removed sentence.

        Cut only when asked: admission needs just where they were sent.
        """
        if self.split is None:
            return ()
        gone = zip(itertools.compress(self.split.spans, self.seen), self.sent_in, strict=True)
        return tuple((self.original[s:e], where) for (s, e), where in gone)

    @property
    def run(self) -> tuple[int, int] | None:
        """Where the text left lies in the text as it came, when it is one run of it
        (only sentences at its ends were removed); else None."""
        if self.split is None:
            return (0, len(self.text))
        seen, kept = self.seen, self.seen.count(None)
        if not kept:
            return None
        first, last = seen.index(None), len(seen) - 1 - seen[::-1].index(None)
        if last - first + 1 != kept:
            return None  # a sentence was taken from between two kept ones
        # One run, cut as it stood: found by a search in C where it occurs once (a
        # repeated one is placed by its sentences' spans).
        start = self.original.find(self.text)
        if start < 0:
            return None
        if self.original.find(self.text, start + 1) != -1:
            start = self.split.spans[first][0]
        return start, start + len(self.text)


def _ends_alike(a: str, b: str) -> bool:
    """Whether one sentence ends the other (the same, or one a piece of the other cut at its start)."""
    return a.endswith(b) or b.endswith(a)


def _starts_alike(a: str, b: str) -> bool:
    """Whether one sentence starts the other (the same, or one a piece of the other cut at its end)."""
    return a.startswith(b) or b.startswith(a)


#: Characters a cut sentence must have (and by which sent sentences are indexed) for
#: the ledger to find it inside a longer sentence already sent (see Ledger.fresh).
_EDGE = 16
#: An edge shared by more sent sentences than this is read at twice its length (see _Edges).
_CROWDED = 8
#: a sentence's edge of _EDGE characters at its end, and at its start (see _Edges)
_EDGE_AT_END = operator.itemgetter(slice(-_EDGE, None))
_EDGE_AT_START = operator.itemgetter(slice(_EDGE))


def _keep_answered(
    normal: Sequence[str], seen: list[str | None], answers: set[str], questions: set[str]
) -> None:
    """Keep (set ``seen`` to None) each sentence already sent that a short answer follows
    here ("Is the plan refundable? No."), and each question already sent whose answer here
    stays ("Is the Basic plan refundable? Yes, within 30 days."): without it the answer
    says nothing, or answers the question before it. (From the last sentence back: a
    question kept makes the one it follows an answer kept.)"""
    for k in range(len(normal) - 2, -1, -1):
        after = normal[k + 1]
        # (a heading or a table row after a question answers nothing)
        answered = normal[k] in questions and not seen[k + 1] and after[0] not in "#|"
        if seen[k] and (after in answers or answered):
            seen[k] = None


def _keep_line_opening(text: str, split: Split, seen: list[str | None]) -> None:
    """Keep (set ``seen`` to None) each sentence already sent that stands, on its line, before
    one kept that opens with Markdown of a line's start ("。```python", ". # of users"): with
    it gone, the kept one would open the text or a line of its own, and read as a code
    fence, a heading or a list item it never was. (From the last sentence back: a sentence
    kept so may open a run itself.)"""
    for k in range(len(seen) - 1, 0, -1):
        if seen[k - 1] and not seen[k] and OPENS_BLOCK.match(_sentence(text, split, k)):
            at = split.spans[k][0]
            while at and text[at - 1] in " \t":
                at -= 1
            if at and text[at - 1] != "\n":  # (one that opened its line there opens it here too)
                seen[k - 1] = None


#: a list item (normalised: "- free shipping.", "2) press add.")
_ITEM = re.compile(f"{_ITEM_MARK}|{_NUMBER_MARK}")


def _item_leads(normal: Sequence[str], lead: str | None = None) -> dict[str, str]:
    """Each list item of a text's normalised sentences (in order), with what leads it: the
    heading or the line ending in ":" last before it ("## macos", "the enterprise plan
    includes:"), or ``lead`` (what leads the text's first items from before it); items
    before any are left out."""
    leads: dict[str, str] = {}
    for sentence in normal:
        if _leads_list(sentence):
            lead = _lead_name(sentence)
        elif lead is not None and _ITEM.match(sentence):
            leads.setdefault(sentence, lead)
    return leads


def _leads_list(line: str) -> bool:
    """Whether a line (or a normalised sentence) may lead a list: a heading, or one that
    ends in ":"."""
    return line.endswith(":") or (line[:1] == "#" and _HEADING.match(line) is not None)


def _lead_name(line: str) -> str:
    """A heading or lead-in line (normalised) as it names the list it leads: "## Features"
    and "Features:" lead one list alike."""
    return line.lstrip("#").strip(" :")


#: lines looked back over for what leads a window's first list items in the source it joins
_LEAD_LOOKBACK = 64


def _lead_before(text: str, at: int) -> str | None:
    """What leads a list that goes on at ``at`` in ``text``: the last heading or line ending
    in ":" before it, within _LEAD_LOOKBACK lines (normalised, see _lead_name); None if none."""
    end = at
    for _ in range(_LEAD_LOOKBACK):
        if end <= 0:
            return None
        start = text.rfind("\n", 0, end - 1) + 1
        line = text[start:end].strip()
        if _leads_list(line):
            return _lead_name(normalise(line))
        end = start
    return None


def _keep_items_led_elsewhere(normal: Sequence[str], seen: list[str | None], sent: dict[str, str]) -> None:
    """Keep (set ``seen`` to None) each list item already sent that stands here under another
    heading or lead-in line than where it was sent: "1. Download the installer." under
    "## macOS" is a step of another procedure than under "## Windows", and "- Priority
    support" under "Enterprise includes:" says what that plan has. Without it, the list
    here would lose steps or features it has. (An item before any such line, here or where
    it was sent, a window cut inside a list, cannot tell: it goes, as any sentence sent.)"""
    led_elsewhere = {
        item
        for item, lead in _item_leads(normal).items()
        if (where := sent.get(item)) is not None and where != lead
    }
    if led_elsewhere:
        for k in itertools.compress(range(len(normal)), map(led_elsewhere.__contains__, normal)):
            seen[k] = None


#: a field: a short name, a colon and a value with a figure or a name ("Plus: $3.99",
#: "Contact: Anna Berg"; "Except: not" is a piece of a sentence)
_FIELD = re.compile(r"[^\s:][^:\n]{0,30}: [^\n]*[0-9$€£A-Z]")


def _says_nothing_alone(text: str, answers: set[str]) -> bool:
    """Whether ``text``, what is left of a text that holds no sentence long enough to be a
    repeat, says nothing alone: each of its pieces is a heading (it labels what went), the
    end of a sentence cut at the text's start ("well.", "of meat."), the start of one cut
    at its end ("The address"), or an answer at its start to what came before the text
    ("Yes."). A list item, a table row, a figure or any other short sentence ("Windows
    only.", "Pro: $9.99.") says something, and is sent."""
    spans = split_sentences(text)
    for k, (start, end) in enumerate(spans):
        unit = text[start:end]
        if _HEADING.match(unit):
            continue
        if _ITEM_OR_ROW.match(unit):  # (a list item or a table row says something)
            return False
        # (a field, a piece that names what follows it, says something however it was cut:
        # "Plus: $3.99", "Contact: Anna Berg", "Version: 2.4.1")
        says = _FIELD.match(unit) is not None
        if k == 0 and unit.lstrip(_OPENERS)[:1].islower() and not says:
            continue
        if k == len(spans) - 1 and not _ENDS_SENTENCE.search(unit) and not says:
            continue
        if k == 0 and normalise(unit) in answers and not any(map(str.isdigit, unit)):
            continue
        return False
    return True


def _keep_antecedents(
    normal: Sequence[str], seen: list[str | None], refer_back: set[str], cut: Mapping[int, str]
) -> None:
    """Keep (set ``seen`` to None) each sentence already sent that a sentence kept right after
    it refers back to: "The warranty covers two years of use. However, this does not apply to
    batteries." sent its second sentence alone, after another source's, and "That claim is
    false for refurbished units." read as said of what stood before it there. From the last
    sentence back, so that a sentence kept for the one after it keeps its own in turn. (Not
    a piece a window cut from a sentence sent, ``cut``: kept, it sends half a sentence.)"""
    for k in range(len(normal) - 2, -1, -1):
        if seen[k] and seen[k + 1] is None and normal[k + 1] in refer_back and k not in cut:
            seen[k] = None


class Ledger:
    """The sentences admission has sent so far, and where each was first sent.

    A window cut from its document mid-sentence starts with the end of a sentence
    and ends with the start of one. When another source already sent that whole
    sentence, the piece is sent already too, though it is no sentence of its own.
    For a text that neighbour merging cannot join to the rest of its document (one
    without offsets), the ledger also finds a first sentence that reads as cut at
    the end of a longer sentence sent, and a last one at the start of one:
    overlapping windows without offsets would otherwise repeat their overlap in
    part. (A window with offsets keeps its edges: a neighbour may join it there, and
    the sentence it cuts is then whole again.)

    A sentence sent before is left in a text when it refers back ("That claim is
    false.") and stands between other sentences here than where it was sent: there
    it says something else (see _in_context).
    """

    def __init__(self, sentences: SentenceCache | None = None) -> None:
        self._sent: dict[str, str] = {}
        self._cache = sentences if sentences is not None else SentenceCache()
        # The cache's sets of the sentences that refer back, answer, ask, or open a block,
        # which it fills as it splits texts (see SentenceCache.refer_back and the others):
        # the same sets, bound once, not read through a property each time (four property
        # calls for each text asked about, 4% of the ledger's time)
        cache = self._cache
        self._refer_back, self._answers = cache.refer_back, cache.short_answers
        self._questions, self._opens_block = cache.questions, cache.opens_block
        # each sent sentence that refers back, and the ones before and after it where it was
        # sent (None: it opened, or closed, its text); see _in_context
        self._context: dict[str, tuple[str | None, str | None]] = {}
        # the sent sentences longer than _EDGE, by their last and first characters (see
        # _Edges), indexed when first asked (most packs' windows have offsets, and never ask)
        self._tails = _Edges(at_end=True)
        self._heads = _Edges(at_end=False)
        self._indexing = False  # (from the first time it is asked)
        # each list item sent under a heading or a line that leads into a list, and that
        # line where it was first sent (see _keep_items_led_elsewhere)
        self._leads: dict[str, str] = {}
        self._unindexed: list[Iterable[str]] = []  # sentences sent since it was last asked
        # the code each sent sentence that holds code holds, as written (see code_of): a
        # sentence normalised alike but for its code's case or spacing is no repeat of it
        self._code: dict[str, tuple[str, ...]] = {}
        # the lines and their nesting of each sent sentence that spans lines (see nesting_of):
        # one whose lines are indented otherwise (code, a nested list) is no repeat of it
        self._nesting: dict[str, Nesting] = {}

    def sent_whole(self, text: str) -> list[str]:
        """Where the sentences of ``text`` were sent (each source once, sorted), when every one
        of them was; else []. A look-up of each sentence alone, none of :meth:`fresh`'s rules:
        what admission says of a chunk it skipped for want of room, without the ledger's work.
        (Short sentences are never noted as sent: a text that holds one is never whole.)"""
        normal, sent = self._cache.split(text).normal, self._sent
        if not normal or not all(map(sent.__contains__, normal)):
            return []
        return sorted(set(map(sent.__getitem__, normal)))

    def fresh(
        self,
        text: str,
        own: set[str] | frozenset[str] = frozenset(),
        edges: bool = False,
        itself: str | None = None,
    ) -> Fresh:
        """``text`` without sentences already sent (but in the sources ``own``: the text
        joins them), nor, with ``edges``, a first or last sentence cut from a longer one
        already sent, nor, given the id of the candidate it is (``itself``), a sentence it
        has just said (see _said_before; that is then where it was sent); runs of kept
        sentences stay verbatim."""
        split = self._cache.split(text)
        sent = self._sent
        # (the same sentence several times in one text makes one detail look important,
        # as three overlapping windows do: seed 001; found in C, most texts have none)
        repeats = itself is not None and len(set(split.keys)) != len(split.keys)  # (said twice anywhere)
        if not sent and not repeats:
            return Fresh(text, (), split.keys)
        cut = self._cut_from_sent(text, split) if edges and sent else {}
        if not cut and not repeats and sent.keys().isdisjoint(split.normal):
            return Fresh(text, (), split.keys)
        seen = list(map(sent.get, split.normal))  # only sentences of MIN_SENTENCE_WORDS are in it
        for k, where in cut.items():
            seen[k] = where
        if self._code and may_hold_code(text):  # (code was sent, and this text may hold some)
            self._keep_other_code(text, split, seen)
        if self._nesting and "\n" in text:  # (a sentence of lines was sent, and this text has lines)
            self._keep_other_nesting(text, split, seen)
        if own:
            if own.issuperset(filter(None, seen)):  # (a merged source's text: found in C)
                return Fresh(text, (), split.keys)
            seen = [None if where in own else where for where in seen]
        if repeats:
            assert itself is not None
            self._said_before(split, seen, itself)
        refers = not self._refer_back.isdisjoint(split.normal)  # (found in C: most texts hold none)
        if refers:
            self._in_context(split.normal, seen)
        answers, questions = self._answers, self._questions
        if not (answers.isdisjoint(split.normal) and questions.isdisjoint(split.normal)):
            _keep_answered(split.normal, seen, answers, questions)
        if not any(seen):  # every sentence sent before stays (for its context): the text as it came
            return Fresh(text, (), split.keys)
        if not self._opens_block.isdisjoint(split.normal):  # (found in C: most texts have none)
            _keep_line_opening(text, split, seen)
        if self._leads and "\n" in text:
            _keep_items_led_elsewhere(split.normal, seen, self._leads)
        if refers:  # (last: a sentence kept above keeps its own)
            _keep_antecedents(split.normal, seen, self._refer_back, cut)
        if not any(seen):
            return Fresh(text, (), split.keys)
        keep = list(map(operator.not_, seen))  # source ids are never empty
        normal = list(itertools.compress(split.normal, keep))
        keys = self._cache.keys_of(normal)
        joined = self._cache.keep(text, split, keep, normal, keys)
        sent_in = tuple(filter(None, seen))
        cut_sent = sum(1 for k in cut if seen[k]) if cut else 0  # (few texts have a cut edge)
        if not keys and sent_in and joined and _says_nothing_alone(joined, self._answers):
            # All that is left is too short to be a repeat and says nothing alone (a heading,
            # "Yes.", a piece of a sentence the window cut): the text adds nothing that was
            # not sent.
            return Fresh("", sent_in, (), text, split, tuple(seen), cut_sent, alone=joined)
        return Fresh(joined, sent_in, keys, text, split, tuple(seen), cut_sent)

    def _keep_other_code(self, text: str, split: Split, seen: list[str | None]) -> None:
        """Keep (set ``seen`` to None) each sentence sent before whose code differs from the
        code sent under its normalised form (``ls -a`` where ``ls -A`` was sent)."""
        code = self._code
        for k, key in enumerate(split.normal):
            if seen[k] is not None and key in code and code_of(_sentence(text, split, k)) != code[key]:
                seen[k] = None

    def _keep_other_nesting(self, text: str, split: Split, seen: list[str | None]) -> None:
        """Keep (set ``seen`` to None) each sentence sent before that spans the same lines
        as the one sent under its normalised form, indented otherwise (``return 2`` in the
        body of an ``if`` or after it)."""
        nesting = self._nesting
        for k, key in enumerate(split.normal):
            if seen[k] is not None and key in nesting:
                lines = _lines_of(text, split.spans[k])
                if lines is not None and nested_otherwise(lines, nesting[key]):
                    seen[k] = None

    def _note_nesting(self, text: str, new: Sequence[str]) -> None:
        """Note the lines and nesting of each sentence of ``text`` first sent now (``new``,
        normalised) that spans lines."""
        split, new_keys = self._cache.split(text), set(new)
        for k, key in enumerate(split.normal):
            if key in new_keys and (lines := _lines_of(text, split.spans[k])) is not None:
                self._nesting.setdefault(key, lines)

    def _said_before(self, split: Split, seen: list[str | None], itself: str) -> None:
        """Mark (as sent in ``itself``) each sentence of ``split`` long enough to be a repeat
        that the text has just said: the same sentence again, right after itself. (Apart,
        a repeat stands under another heading, lead-in line, question or product, and says
        something there: "Email support." under Pro as under Basic. One that refers back
        or asks is never marked: "That is false." after each of two claims.)"""
        keys = set(split.keys)
        refer_back, questions = self._refer_back, self._questions
        normal = split.normal
        for k in range(1, len(normal)):
            repeat = normal[k]
            if repeat == normal[k - 1] and seen[k] is None and repeat in keys:
                if repeat not in refer_back and repeat not in questions:
                    seen[k] = itself

    def _note_code(self, text: str, new: Sequence[str]) -> None:
        """Note the code of each sentence of ``text`` first sent now (``new``, normalised)."""
        split, new_keys = self._cache.split(text), set(new)
        # (a key given for the text that is not one of its split's, as record allows, notes none)
        for k, key in enumerate(split.normal):
            if key in new_keys and may_hold_code(key) and (code := code_of(_sentence(text, split, k))):
                self._code.setdefault(key, code)

    def _note_context(self, normal: Sequence[str]) -> None:
        """Note, for each sentence of ``normal`` (a text's sentences, normalised, in order, short
        ones too: "Smith lied." is context) that refers back and is sent for the first time,
        the sentences around it (see _in_context). (Found in C: a merged text is recorded
        whole again with each window that joins it.)"""
        for key in self._refer_back.intersection(normal).difference(self._sent):
            at = normal.index(key)  # (in C; few of a text's sentences refer back)
            self._context[key] = (
                normal[at - 1] if at else None,
                normal[at + 1] if at + 1 < len(normal) else None,
            )

    def _in_context(self, normal: list[str], seen: list[str | None]) -> None:
        """Keep (set ``seen`` to None) each sentence already sent that refers back to what came
        before it ("That claim is false.") when it follows another sentence here than where it
        was sent, and the text does not go on there as here: it says something else. ("Smith
        said the bridge was safe. That claim is false." stays whole after "Jones said the dam
        was unsafe. That claim is false.") A passage shared on (the next sentence the same),
        or an occurrence that opens its text (a window starts where it was cut), says the
        same: it goes, as seed 001's example asks."""
        context = self._context
        # (only the sentences that refer back are looked at, found in C, and of them those sent:
        # told in C as well, the sent ones took three maps over every sentence, most of the
        # time this took)
        for k in itertools.compress(range(len(normal)), map(self._refer_back.__contains__, normal)):
            there = context.get(normal[k]) if seen[k] else None
            # (a window cut inside the sentence around it holds a piece of it: the end of the
            # one before, the start of the one after)
            if there is None or there[0] is None or not k or _ends_alike(there[0], normal[k - 1]):
                continue
            if k + 1 < len(normal) and there[1] is not None and _starts_alike(there[1], normal[k + 1]):
                continue
            seen[k] = None

    def _cut_from_sent(self, text: str, split: Split) -> dict[int, str]:
        """Where the first and the last sentence of ``text`` (split as ``split``) were sent,
        by their index, when that one was cut from a longer sentence sent: it is no
        sentence sent itself, it ends that one (first) or starts it (last), between
        words, and it reads as cut (first: it starts with a lower-case letter, after any
        opening quotes or brackets; last: it does not end as a sentence ends). (A whole
        sentence that ends another, as "The film failed." or "$5 million was raised."
        ends "Critics said the film failed.", says something of its own.)"""
        normal = split.normal
        if not normal:
            return {}
        last = len(normal) - 1
        cut_first = _sentence(text, split, 0).lstrip(_OPENERS)[:1].islower()
        cut_last = not _ENDS_SENTENCE.search(_sentence(text, split, last))
        if not (cut_first or cut_last):
            return {}
        self._index()
        first = self._inside(normal[0], at_end=True) if cut_first else None
        end = self._inside(normal[last], at_end=False) if cut_last else None
        # (in a text of one sentence both are that one; found as the start of one, it says so)
        return {k: where for k, where in ((0, first), (last, end)) if where is not None}

    def _index(self) -> None:
        """Index the sentences sent since the last time, longer than _EDGE, by their ends (see
        __init__); the first time, every sentence sent so far."""
        if not self._indexing:
            self._indexing = True
            self._unindexed.append(list(self._sent))
        sentences = list(itertools.chain.from_iterable(self._unindexed))
        self._unindexed.clear()
        longer = map(operator.gt, map(len, sentences), itertools.repeat(_EDGE))
        long = list(itertools.compress(sentences, longer))
        self._tails.add_all(long)
        self._heads.add_all(long)

    def _inside(self, piece: str, at_end: bool) -> str | None:
        """Where the first sent sentence that ``piece`` ends (``at_end``) or starts, between
        words, was sent; None when none does, or when ``piece`` is too short to say
        (_EDGE characters, MIN_SENTENCE_WORDS words) or is a sentence sent itself. (At a
        word's middle, "effective against ..." would be taken for the end of "...
        ineffective against ...".)"""
        if len(piece) < _EDGE or piece in self._sent or not _is_key(piece):
            return None
        n = len(piece)
        longer = (self._tails if at_end else self._heads).holding(piece)
        for sentence in longer:
            if len(sentence) > n and (
                _parts_words(sentence[-n - 1]) and sentence.endswith(piece)
                if at_end
                else _parts_words(sentence[n]) and sentence.startswith(piece)
            ):
                return self._sent[sentence]
        return None

    def record(
        self,
        text: str,
        source_id: str,
        keys: Sequence[str] | None = None,
        around: Sequence[str] | None = None,
        joined: tuple[str, int] | None = None,
    ) -> None:
        """Remember every sentence of ``text`` (or the given ``keys`` of it) as sent in ``source_id``;
        ``around``: the normalised sentences of the text :meth:`fresh` left it of, whose
        order says what stood around each sentence (see _in_context); ``joined``: the
        window that made ``text`` (a merged source) by joining it, and where it starts in
        ``text``: its list items are noted with what leads them there (a document's windows
        merging one by one were each read whole again)."""
        if keys is None or around is None:
            split = self._cache.split(text)  # (once, for either)
            keys = split.keys if keys is None else keys
            around = split.normal if around is None else around
        sent = self._sent
        self._note_context(around)
        items = around if joined is None else self._cache.split(joined[0]).normal
        # (a list item is led by a line before it; most texts hold none, found in C)
        if "\n" in text and not self._opens_block.isdisjoint(items):
            # (a window joining a source: its first items are led by what stands before it there)
            before = None if joined is None else _lead_before(text, joined[1])
            for key, lead in _item_leads(items, before).items():
                self._leads.setdefault(key, lead)
        # Only the new ones, found in C (a merged text is recorded whole again), are noted and
        # indexed: one indexed already is in its buckets at every level it needs (see _Edges).
        # (kept in the text's order, so which of two sentences alike at their ends the ledger
        # indexes never depends on the order of a set)
        new = list(itertools.filterfalse(sent.__contains__, keys))
        for key in new:  # (most texts add two or three: a dict of them made and merged cost more)
            sent[key] = source_id
        if new and may_hold_code(text):
            self._note_code(text, new)
        if new and "\n" in text:
            self._note_nesting(text, new)
        if self._indexing:
            self._unindexed.append(new)


def _lines_of(text: str, span: tuple[int, int]) -> Nesting | None:
    """:func:`nesting_of` the sentence of ``text`` at ``span``, from the start of its first
    line (its indentation counts), if it spans lines; else None."""
    start, end = span
    if text.find("\n", start, end) == -1:
        return None
    return nesting_of(text[with_indent(text, start) : end])


def _parts_words(character: str) -> bool:
    """Whether ``character``, standing where a piece of a sent sentence would end (or start),
    parts two words there: no letter or digit, nor a symbol ("Rating: ★" read as cut from
    "Rating: ★★★★★" at the second star, and the one-star rating went as already sent)."""
    return not character.isalnum() and unicodedata.category(character)[0] != "S"


class _Edges:
    """Sent sentences by their last (``at_end``) or first characters: _EDGE of them, and,
    where more than _CROWDED sentences share those, twice as many, and so on.

    A piece a window cut from a sent sentence is looked for among the sentences that
    share its edge, in the order sent. Many share the last 16 characters (" said in a
    statement." ends thousands of news sentences): each piece walked them all, and
    thousands of windows made that quadratic. A crowded edge is read longer the first
    time it is asked, each level at most twice the last and no longer than the piece,
    so every sentence the piece can be part of is still in the bucket it reads.
    """

    __slots__ = ("_at_end", "_buckets", "_split")

    def __init__(self, at_end: bool) -> None:
        self._at_end = at_end
        # edge -> the sentences that have it, in the order sent (a dict: a merged text is
        # recorded whole again); edges of different lengths are different keys
        self._buckets: dict[str, dict[str, None]] = {}
        self._split: set[str] = set()  # the crowded edges also read at twice their length

    def _edge(self, text: str, size: int) -> str:
        return text[-size:] if self._at_end else text[:size]

    def _put(self, sentence: str, size: int) -> str:
        """Index ``sentence`` by its edge of ``size`` characters; returns that edge."""
        edge = self._edge(sentence, size)
        self._buckets.setdefault(edge, {})[sentence] = None
        return edge

    def add(self, sentence: str) -> None:
        """Index ``sentence`` (longer than _EDGE) by its edge, and by the longer edges of the
        crowded ones it has."""
        size = _EDGE
        while self._put(sentence, size) in self._split and len(sentence) > 2 * size:
            size *= 2

    def add_all(self, sentences: Sequence[str]) -> None:
        """:meth:`add` each of ``sentences``, in order. Their edges are cut in C and put in
        one loop without a call per sentence (the speed benchmark's packs index some 2,600
        sentences on each side, and :meth:`add` for each was a tenth of the ledger's time);
        only those with a crowded edge go through :meth:`add`, for its longer edges. (Each
        bucket still gets its sentences in the order given: a sentence goes to its buckets
        at every level in that order.)"""
        buckets = self._buckets
        edges = list(map(_EDGE_AT_END if self._at_end else _EDGE_AT_START, sentences))
        for sentence, edge in zip(sentences, edges, strict=True):
            bucket = buckets.get(edge)
            if bucket is None:
                buckets[edge] = {sentence: None}
            else:
                bucket[sentence] = None
        if self._split and not self._split.isdisjoint(edges):
            for sentence in itertools.compress(sentences, map(self._split.__contains__, edges)):
                self.add(sentence)  # (its edge is there already: this adds the longer ones)

    def holding(self, piece: str) -> Iterable[str]:
        """The sent sentences (in the order sent) that may hold ``piece`` at their edge: every
        one that does, and few others."""
        size = _EDGE
        edge = self._edge(piece, size)
        bucket = self._buckets.get(edge, {})
        while len(bucket) > _CROWDED and 2 * size <= len(piece):
            if edge not in self._split:
                self._split.add(edge)
                for sentence in bucket:
                    if len(sentence) > 2 * size:
                        self._put(sentence, 2 * size)
            size *= 2
            edge = self._edge(piece, size)
            bucket = self._buckets.get(edge, {})
        return bucket

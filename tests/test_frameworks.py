"""Retrieved documents of LangChain, LlamaIndex and Haystack packed as they come (satchel._frameworks).

Here each framework's object is stood in for by a class of the same attributes (a seam:
none of the frameworks is installed by the test extra); tests/frameworks runs the same
packs on the frameworks' own classes and splitters (``pytest -m frameworks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import satchel

DOCUMENT = (
    "The warranty covers parts and labour for two years. Batteries are covered for six months. "
    "Claims need the receipt and the serial number. Repairs take up to ten working days."
)
#: two windows of DOCUMENT that overlap by one sentence
FIRST, SECOND = DOCUMENT[:139], DOCUMENT[91:]
END = len(DOCUMENT)
QUESTION = "How long does the warranty last?"


@dataclass
class LangChainDocument:  # langchain_core.documents.Document
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass
class TextNode:  # llama_index.core.schema.TextNode
    node_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    ref_doc_id: str | None = None
    start_char_idx: int | None = None
    end_char_idx: int | None = None

    def get_content(self) -> str:
        return self.text


@dataclass
class NodeWithScore:  # llama_index.core.schema.NodeWithScore
    node: TextNode
    score: float | None = None


@dataclass
class HaystackDocument:  # haystack.Document
    id: str
    content: str | None
    meta: dict[str, Any] = field(default_factory=dict)
    score: float | None = None


def test_windows_from_a_splitter_merge_as_dicts_with_their_offsets_would():
    # (a splitter's overlapping windows, with the document and offsets each framework notes:
    # they merge into one source and the overlap is sent once)
    expected = satchel.pack(
        [
            {"id": "warranty.md@0", "text": FIRST, "doc_id": "warranty.md", "start": 0, "end": 139},
            {"id": "warranty.md@91", "text": SECOND, "doc_id": "warranty.md", "start": 91, "end": END},
        ],
        QUESTION,
    )
    assert expected.text.count("Batteries are covered") == 1 and len(expected.sources) == 1
    lang = [
        LangChainDocument(FIRST, {"source": "warranty.md", "start_index": 0}),
        LangChainDocument(SECOND, {"source": "warranty.md", "start_index": 91}),
    ]
    llama = [
        NodeWithScore(TextNode("warranty.md@0", FIRST, {}, "warranty.md", 0, 139), 0.9),
        NodeWithScore(TextNode("warranty.md@91", SECOND, {}, "warranty.md", 91, END), 0.8),
    ]
    hay = [
        HaystackDocument("warranty.md@0", FIRST, {"source_id": "warranty.md", "split_idx_start": 0}),
        HaystackDocument("warranty.md@91", SECOND, {"source_id": "warranty.md", "split_idx_start": 91}),
    ]
    for documents in (lang, llama, hay):
        result = satchel.pack(documents, QUESTION)
        assert result.text == expected.text, type(documents[0]).__name__
        assert [e.id for e in result.manifest] == ["warranty.md@0", "warranty.md@91"]


def test_ids_scores_and_the_metadata_the_prompt_shows():
    # LangChain: no id of its own (most splitters set none): named after the source and its
    # start, else its place in the list; the title from the metadata shows in the tag
    docs = [
        LangChainDocument("Plus costs $3.99 a month.", {"source": "pricing.md", "title": "Pricing"}),
        LangChainDocument("There is no annual plan.", {"id": "faq-7", "page": 2}),
        LangChainDocument("Refunds take five days.", {}),
    ]
    result = satchel.pack(docs, "What does Plus cost?")
    assert [e.id for e in result.manifest] == ["pricing.md#1", "faq-7", "#3"]
    assert '<source_1 id="S1" chunk="pricing.md#1" title="Pricing">' in result.text
    assert result.entry("faq-7").provenance["page"] == 2  # (the rest of the metadata, as it was)
    # LlamaIndex and Haystack: their own ids and scores, higher first whatever the list order
    llama = [
        NodeWithScore(TextNode("n1", "Low scored text."), 0.2),
        NodeWithScore(TextNode("n2", "High."), 0.9),
    ]
    assert [s.ids for s in satchel.pack(llama, "q").sources] == [("n2",), ("n1",)]
    hay = [HaystackDocument("h1", "Low scored text.", score=1.5), HaystackDocument("h2", "High.", score=7.0)]
    assert [s.ids for s in satchel.pack(hay, "q").sources] == [("h2",), ("h1",)]
    # a bare node (no score) and a document without a score keep their place
    bare = satchel.pack([TextNode("a", "One."), TextNode("b", "Two.")], "q")
    assert [e.id for e in bare.manifest] == ["a", "b"]


def test_offsets_that_do_not_span_the_text_are_left_out():
    # (a splitter that strips whitespace notes where the window began, not where its text
    # does: the chunk packs as a window of no known place rather than failing)
    node = TextNode("n", "  padded", {}, "doc", 0, 6)
    chunk = satchel.pack([NodeWithScore(node, 1.0)], "q").entry("n").chunk
    assert chunk is not None and (chunk.doc_id, chunk.start, chunk.end) == ("doc", None, None)
    lang = LangChainDocument("Some text.", {"source": "a.md", "start_index": "7"})  # (not an int)
    chunk = satchel.pack([lang], "q").entry("a.md#1").chunk
    assert chunk is not None and chunk.start is None and chunk.metadata["start_index"] == "7"


def test_a_document_without_text_is_named():
    with pytest.raises(satchel.InputError, match=r"'img': a HaystackDocument whose content is NoneType"):
        satchel.pack([HaystackDocument("img", None)], "q")
    with pytest.raises(satchel.InputError, match=r"candidates\[0\]: a candidate must be a satchel.Chunk, a"):
        satchel.pack([object()], "q")

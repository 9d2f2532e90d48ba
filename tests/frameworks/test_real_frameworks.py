"""The retrievers' own documents, made by each framework's own splitter, packed as they come.

Run with ``pytest -m frameworks`` after ``pip install -e '.[test,peers]'`` (CI does). The
default suite covers the same reading with stand-in classes (tests/test_frameworks.py).
"""

from __future__ import annotations

import dataclasses
import os
import random

import pytest

import satchel
from bench import _data

pytestmark = pytest.mark.frameworks


def _imported(module: str):
    try:
        return pytest.importorskip(module)
    except pytest.skip.Exception:
        if os.environ.get("CI"):  # (CI installs the extra before this suite: a missing one fails)
            raise RuntimeError(f"{module} is not installed: pip install -e '.[peers]'") from None
        raise


@pytest.fixture(scope="module")
def paragraph() -> str:
    """A long real paragraph: nq-open-oracle's longest gold paragraph among its first 500."""
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"needs the shared data at {path}")
    return max(_data.gold_paragraphs(_data.load_nq(path))[:500], key=len)


def _check(documents, paragraph, question):
    """Packed as they come: the windows merge back into the paragraph, each word of it sent
    once, and the prompt is the one their fields written as dicts give. (A splitter that
    strips the whitespace between two windows leaves them apart: what stood between them
    is in neither, and a source holds only the document's own text.)"""
    result = satchel.pack(documents, question)
    assert len(documents) > 2 * len(result.sources)  # (several overlapping windows to each source)
    texts = sorted((s.text for s in result.sources), key=paragraph.index)
    assert " ".join(texts).split() == paragraph.split()
    assert all(e.status == "kept" for e in result.manifest)
    by_hand = [e.chunk.to_dict() for e in result.manifest]
    again = satchel.pack(by_hand, question)
    assert again.text == result.text
    return result


def test_langchain_documents_from_its_splitter(paragraph):
    documents = _imported("langchain_core.documents")
    splitters = _imported("langchain_text_splitters")
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=400, chunk_overlap=120, add_start_index=True
    )
    metadata = {"source": "nq.md", "title": "Freshman year"}
    source = documents.Document(page_content=paragraph, metadata=metadata)
    windows = splitter.split_documents([source])
    random.Random(1).shuffle(windows)  # (no score: the list's order is the rank)
    result = _check(windows, paragraph, "Which high school does Scott Hudson start at?")
    assert all(e.id.startswith("nq.md@") for e in result.manifest)
    assert 'title="Freshman year"' in result.text


def test_llama_index_nodes_from_its_splitter(paragraph):
    core = _imported("llama_index.core")
    parsers = _imported("llama_index.core.node_parser")
    schema = _imported("llama_index.core.schema")
    nodes = parsers.SentenceSplitter(chunk_size=120, chunk_overlap=40).get_nodes_from_documents(
        [core.Document(text=paragraph, metadata={"title": "Freshman year"})]
    )
    scored = [schema.NodeWithScore(node=n, score=1.0 - k / 10) for k, n in enumerate(nodes)]
    random.Random(2).shuffle(scored)  # (the scores rank them)
    result = _check(scored, paragraph, "Which high school does Scott Hudson start at?")
    assert [e.id for e in result.manifest][0] == nodes[0].node_id


def test_haystack_documents_from_its_splitter(paragraph):
    haystack = _imported("haystack")
    preprocessors = _imported("haystack.components.preprocessors")
    splitter = preprocessors.DocumentSplitter(split_by="word", split_length=60, split_overlap=20)
    splits = splitter.run(documents=[haystack.Document(content=paragraph, meta={"title": "Freshman year"})])
    # (scored as a retriever scores them: a copy of each with its score)
    documents = [dataclasses.replace(d, score=10.0 - k) for k, d in enumerate(splits["documents"])]
    result = _check(documents, paragraph, "Which high school does Scott Hudson start at?")
    assert {e.id for e in result.manifest} == {d.id for d in documents}

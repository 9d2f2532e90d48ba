"""What the retrievers of LangChain, LlamaIndex and Haystack return, read as candidates.

A user whose retriever belongs to one of these frameworks hands its results to
``pack`` as they come: LangChain's ``Document`` (``retriever.invoke(q)``),
LlamaIndex's ``NodeWithScore`` (``retriever.retrieve(q)``) or a bare node, and
Haystack's ``Document`` (a retriever's ``documents``). They are recognised by
their attributes and never imported: none of the frameworks is a dependency.

Each becomes the fields of a chunk (see Chunk.from_dict):

- ``id``: the framework's own id; a LangChain document often has none, and then
  it is named after where it comes from and its place in the list
  (``"guide.md@1200"`` with a start offset, else ``"guide.md#3"``, else ``"#3"``).
- ``text``, ``score`` (LlamaIndex's and Haystack's, where set; higher is better in
  both), and ``title``, ``section`` and ``updated`` from the metadata, where it has them.
- ``doc_id``, ``start``, ``end``: the document and the character offsets the
  framework's splitter noted (LangChain's ``source`` and ``start_index``,
  LlamaIndex's ``ref_doc_id``, ``start_char_idx`` and ``end_char_idx``, Haystack's
  ``source_id`` and ``split_idx_start``), so that neighbouring windows merge; left
  out where the offsets do not span exactly the text (a splitter that strips
  whitespace, say), as a chunk's offsets must.
- ``metadata``: the rest of the metadata, as it is (the manifest reports
  ``source``, ``url``, ``path``, ``file`` and ``page`` among it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import InputError

__all__ = ["document_fields"]

#: metadata keys read as a chunk's own fields (they are what the prompt shows of a source)
_SHOWN = ("title", "section", "updated")


def document_fields(item: Any, position: int) -> dict[str, Any] | None:
    """The fields of a chunk for ``item``, the candidate at 1-based ``position``, if it is a
    document these frameworks' retrievers return; else None."""
    node = getattr(item, "node", None)
    if node is not None and hasattr(item, "score"):  # LlamaIndex's NodeWithScore
        fields = _llama_index_node(node, item)
        if item.score is not None:
            fields["score"] = item.score
        return fields
    if hasattr(item, "node_id") and hasattr(item, "get_content"):  # a LlamaIndex node alone
        return _llama_index_node(item, item)
    if hasattr(item, "page_content"):  # LangChain's Document
        metadata = _metadata(item, "metadata")
        source = metadata.get("source")
        start = metadata.get("start_index")
        if getattr(item, "id", None) is not None:
            cid = item.id
        elif metadata.get("id") is not None:
            cid = metadata.pop("id")
        elif isinstance(source, str) and type(start) is int:
            cid = f"{source}@{start}"
        else:
            cid = f"{source}#{position}" if isinstance(source, str) else f"#{position}"
        text = _text(item, "page_content", cid)
        return _fields(cid, text, metadata, source, start)
    if hasattr(item, "content") and hasattr(item, "meta"):  # Haystack's Document
        metadata = _metadata(item, "meta")
        cid = item.id if getattr(item, "id", None) is not None else f"#{position}"
        fields = _fields(
            cid,
            _text(item, "content", cid),
            metadata,
            metadata.get("source_id"),
            metadata.get("split_idx_start"),
        )
        if getattr(item, "score", None) is not None:
            fields["score"] = item.score
        return fields
    return None


def _llama_index_node(node: Any, item: Any) -> dict[str, Any]:
    cid = node.node_id
    text = _text(node, "text", cid)
    fields = _fields(cid, text, _metadata(node, "metadata"), getattr(node, "ref_doc_id", None), None)
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    if "doc_id" in fields and _spans(start, end, text):
        fields["start"], fields["end"] = start, end
    return fields


def _fields(cid: Any, text: str, metadata: dict[str, Any], document: Any, start: Any) -> dict[str, Any]:
    """A chunk's fields: ``metadata`` with the shown keys taken out as fields, and the
    document and offsets where they are a document's name and the text's own offsets."""
    fields: dict[str, Any] = {"id": cid, "text": text}
    for name in _SHOWN:
        if metadata.get(name) is not None:
            fields[name] = metadata.pop(name)
    if isinstance(document, str) and document:
        fields["doc_id"] = document
        if type(start) is int and _spans(start, start + len(text), text):
            fields["start"], fields["end"] = start, start + len(text)
    fields["metadata"] = metadata
    return fields


def _spans(start: Any, end: Any, text: str) -> bool:
    """Whether ``start`` and ``end`` are character offsets that span exactly ``text``."""
    return type(start) is int and type(end) is int and 0 <= start and end - start == len(text)


def _metadata(item: Any, name: str) -> dict[str, Any]:
    metadata = getattr(item, name, None)
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def _text(item: Any, name: str, cid: Any) -> str:
    text = getattr(item, name, None)
    if not isinstance(text, str):
        raise InputError(
            f"candidate {cid!r}: a {type(item).__name__} whose {name} is {type(text).__name__}, "
            "not text; pass only documents that hold text (an image or a table node has none)"
        )
    return text

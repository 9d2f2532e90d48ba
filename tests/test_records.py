"""satchel._records.maker: the fast builder of frozen records gives the very objects the class would."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

import satchel
from satchel import Chunk, ManifestEntry, PackedSource
from satchel._errors import InputError
from satchel._records import maker


def test_made_records_are_the_frozen_class_itself():
    make = maker(ManifestEntry)
    values = {"id": "a", "status": "kept", "reason": "admitted", "stage": "admit", "tokens": 3, "rank": 1}
    made, built = make(**values), ManifestEntry(**values)
    assert type(made) is ManifestEntry
    assert made == built and hash(made) == hash(built)  # defaults filled the same way
    assert dataclasses.asdict(made) == dataclasses.asdict(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.status = "dropped"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(made)) == made
    assert dataclasses.replace(made, rank=2).rank == 2


def test_post_init_runs_on_made_chunks():
    make = maker(Chunk)
    chunk = make(id="c", text="Some text.", score=1, priority="high", updated="2024-05-01 ")
    assert type(chunk) is Chunk and chunk == Chunk(
        "c", "Some text.", score=1, priority="high", updated="2024-05-01"
    )
    assert isinstance(chunk.score, float) and chunk.priority is satchel.Priority.HIGH
    with pytest.raises(InputError, match=r"text is blank \(whitespace only\); drop empty chunks"):
        make(id="c", text="  ")
    with pytest.raises(InputError, match="text is empty; drop empty chunks"):
        make(id="c", text="")
    other = make(id="d", text="x")
    assert other.metadata == {} and other.metadata is chunk.metadata  # the shared empty mapping


def test_chunks_are_hashable_whatever_their_metadata():
    # (a frozen value: it goes into sets and dict keys; its metadata, a read-only dict, is
    # compared but not hashed)
    a, b, c = (Chunk("a", "x", metadata={"k": [n]}) for n in (1, 1, 2))
    assert hash(a) == hash(b) and a == b and a != c
    assert len({a, b, c}) == 2 and {a: "first"}[b] == "first"


def test_chunks_pickle_deep_copy_and_go_through_asdict():
    # (a worker process gets its chunks pickled; a read-only view of a dict cannot be)
    chunk = Chunk("a", "x", title="T", metadata={"k": [1, 2], "region": "EU"})
    for copied in (pickle.loads(pickle.dumps(chunk)), copy.deepcopy(chunk)):
        assert copied == chunk and type(copied.metadata) is type(chunk.metadata)
    assert pickle.loads(pickle.dumps(Chunk("b", "y"))).metadata == {}
    assert dataclasses.asdict(chunk)["metadata"] == {"k": [1, 2], "region": "EU"}
    # its metadata still cannot be changed, in any way a dict can
    for change in (
        lambda m: m.__setitem__("z", 1),
        lambda m: m.__delitem__("k"),
        lambda m: m.update(z=1),
        lambda m: m.pop("k"),
        lambda m: m.popitem(),
        lambda m: m.setdefault("z", 1),
        lambda m: m.clear(),
        lambda m: m.__ior__({"z": 1}),
    ):
        with pytest.raises(TypeError, match=r"dataclasses.replace\(chunk, metadata="):
            change(chunk.metadata)
    assert chunk.metadata == {"k": [1, 2], "region": "EU"}
    assert dataclasses.replace(chunk, text="y").metadata is chunk.metadata  # (shared, not copied)


def test_pack_hands_out_frozen_records():
    result = satchel.pack([{"id": "a", "text": "One."}, {"id": "b", "text": "Two."}], "q?")
    for record in (*result.manifest, *result.sources):
        assert type(record) in (ManifestEntry, PackedSource)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, "x")


def test_only_frozen_slots_dataclasses_are_made():
    @dataclasses.dataclass(slots=True)
    class Open:
        x: int

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    for cls in (Open, NoSlots, int):
        with pytest.raises(TypeError, match="not a frozen slots dataclass"):
            maker(cls)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived:
        x: int
        y: int = dataclasses.field(init=False, default=0)

    with pytest.raises(TypeError, match="Derived.y is not a plain init field"):
        maker(Derived)

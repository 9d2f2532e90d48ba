from __future__ import annotations

import pytest

import satchel
from satchel.citations import Reference

CANDIDATES = [
    {
        "id": "returns#1",
        "text": "You can return any product within 30 days of delivery.",
        "score": 0.9,
        "title": "Returns & refunds",
        "section": "How long you have",
    },
    {
        "id": "refunds#1",
        "text": "We refund the full price within 5 business days.",
        "score": 0.8,
        "title": "Returns & refunds",
        "section": "Refunds",
    },
    {
        "id": "ship#1",
        "text": "Orders ship from Rotterdam. Delivery takes two to four days.",
        "score": 0.7,
        "title": "Shipping",
    },
    # two neighbours of one document: packed as one source with two chunk ids
    {
        "id": "lamp#1",
        "text": "Hold the button for five seconds to pair the lamp. ",
        "score": 0.6,
        "doc_id": "lamp",
        "start": 0,
        "end": 51,
        "title": "Lamp setup",
        "section": "Pairing",
    },
    {
        "id": "lamp#2",
        "text": "The light blinks twice when pairing worked.",
        "score": 0.5,
        "doc_id": "lamp",
        "start": 51,
        "end": 94,
        "title": "Lamp setup",
        "section": "Pairing",
    },
]


@pytest.fixture(scope="module")
def result():
    out = satchel.pack(CANDIDATES, "How long do I have to return a lamp?", order="relevance")
    assert out.labels == {"S1": "returns#1", "S2": "refunds#1", "S3": "ship#1", "S4": ["lamp#1", "lamp#2"]}
    return out


def test_single_labels_map_to_ids_in_order_of_mention(result):
    c = satchel.cite("Refunds take five days [S2]. You have 30 days [S1].", result)
    assert c.cited_labels == ("S2", "S1")
    assert c.cited_ids == ("refunds#1", "returns#1")
    assert c.unknown_labels == ()
    assert c.uncited_labels == ("S3", "S4")
    assert c.valid


@pytest.mark.parametrize(
    "answer",
    [
        "Thirty days [S1, S3].",
        "Thirty days [S1; S3].",
        "Thirty days [S1][S3].",
        "Thirty days [s1] and [ s3 ].",
        "Thirty days [S1,S3,S1] and again [S3].",
        "Thirty days [S1 and S3].",
        "Thirty days [S1, & S3,].",
        "Thirty days [S1](#s1) and [S3](https://example.com/s3).",
    ],
)
def test_list_forms(result, answer):
    c = satchel.cite(answer, result)
    assert c.cited_labels == ("S1", "S3")
    assert c.cited_ids == ("returns#1", "ship#1")


@pytest.mark.parametrize(
    "answer",
    ["[S1-S3]", "[S1–S3]", "[S1 - S3]", "[S1-3]", "[S3-S1]", "[s1—s3]", "[S1 to S3]", "[S1, S2, and S3]"],
)
def test_ranges_expand(result, answer):
    c = satchel.cite(answer, result)
    assert c.cited_labels == ("S1", "S2", "S3")
    assert c.unknown_labels == ()


def test_range_beyond_the_sent_labels_reports_its_end_as_unknown(result):
    c = satchel.cite("See [S3-S99999].", result)
    assert c.cited_labels == ("S3", "S4")
    assert c.unknown_labels == ("S99999",)


def test_a_label_of_many_digits_is_reported_as_not_sent(result):
    # (with nine digits at most, these were no citations at all: nothing cited, nothing unknown)
    assert satchel.cite("See [S99999999999999999999].", result).unknown_labels == ("S99999999999999999999",)
    c = satchel.cite("See [S3-S1000000000].", result)
    assert c.unknown_labels == ("S1000000000",) and c.cited_ids


def test_a_short_range_reports_every_label_in_it_that_was_not_sent(result):
    # (only its end was reported: "[S3-S7]" of four sources invented S5 and S6 too)
    c = satchel.cite("See [S3-S7] and [S0-S1].", result)
    assert c.cited_labels == ("S3", "S4", "S1")
    assert c.unknown_labels == ("S5", "S6", "S7", "S0")


def test_merged_source_expands_to_all_its_ids(result):
    c = satchel.cite("Hold the button [S4].", result)
    assert c.cited_ids == ("lamp#1", "lamp#2")
    assert [r.chunk_id for r in c.references] == ["lamp#1", "lamp#2"]
    assert {r.label for r in c.references} == {"S4"}


def test_unknown_labels_are_flagged_in_order_and_not_cited(result):
    c = satchel.cite("Thirty days [S9]. Five days [S2][S0][S9][S7].", result)
    assert c.cited_labels == ("S2",)
    assert c.unknown_labels == ("S9", "S0", "S7")
    assert not c.valid


def test_brackets_that_hold_anything_but_labels_are_not_citations(result):
    c = satchel.cite("[see S1] [Source 2] [1] [S] [link](S3) S4 (S2) [S1 band S3] [xS1] [S1a]", result)
    assert c.cited_labels == ()
    assert c.unknown_labels == ()
    assert c.uncited_labels == ("S1", "S2", "S3", "S4")
    assert not c.valid


def test_references_carry_the_title_and_section_the_model_saw(result):
    c = satchel.cite("[S1] [S3]", result)
    assert c.references == (
        Reference("S1", "returns#1", "Returns & refunds", "How long you have"),
        Reference("S3", "ship#1", "Shipping", None),
    )
    assert c.references[0].describe() == "Returns & refunds § How long you have"
    assert c.references[1].describe() == "Shipping"
    assert (
        c.references[0].link("https://help.example.com/a/{chunk_id}")
        == "https://help.example.com/a/returns%231"
    )


def test_metadata_left_out_of_the_prompt_is_none_in_references():
    bare = satchel.pack(CANDIDATES[:1], "How long?", metadata=())
    c = satchel.cite("[S1]", bare)
    assert c.references == (Reference("S1", "returns#1", None, None),)
    assert c.references[0].describe() == "returns#1"


def test_an_answer_object_is_accepted(result):
    from satchel.clients import Answer

    answer = Answer("Thirty days [S1].", "m", 10, 3, 0.1, "stop")
    assert satchel.cite(answer, result) == satchel.cite(answer.text, result)


def test_to_dict_is_json_ready(result):
    c = satchel.cite("[S4] [S8]", result)
    assert c.to_dict() == {
        "cited_labels": ["S4"],
        "cited_ids": ["lamp#1", "lamp#2"],
        "unknown_labels": ["S8"],
        "uncited_labels": ["S1", "S2", "S3"],
        "references": [
            {"label": "S4", "chunk_id": "lamp#1", "title": "Lamp setup", "section": "Pairing"},
            {"label": "S4", "chunk_id": "lamp#2", "title": "Lamp setup", "section": "Pairing"},
        ],
    }


def test_bad_arguments_raise_input_error(result):
    with pytest.raises(satchel.InputError, match="answer=None"):
        satchel.cite(None, result)
    with pytest.raises(satchel.InputError, match="PackResult"):
        satchel.cite("[S1]", result.to_dict())


def test_citations_is_a_frozen_value(result):
    c = satchel.cite("[S1]", result)
    with pytest.raises(AttributeError):
        c.cited_labels = ()  # type: ignore[misc]


def test_brackets_in_code_are_not_citations(result):
    answer = "Index it with `arr[s3]`.\n```python\nx = arr[s2]\n```\nIt takes thirty days [S1]."
    assert satchel.cite(answer, result).cited_labels == ("S1",)
    # a line that opens with ``` but is inline code, or a fence never closed, is no block
    # to the end of the answer
    answer = "```pip install acme``` does it [S2].\n~~~ marks a strike [S4].\nThirty days [S1]."
    assert satchel.cite(answer, result).cited_labels == ("S2", "S4", "S1")
    assert satchel.cite("````md\n```\n[S2]\n```\n````\n[S1]", result).cited_labels == ("S1",)


@pytest.mark.parametrize(
    "code",
    [
        "Result:\n\n    x = arr[S2]\n    y = arr[S3]\n\nThirty days [S1].",  # an indented block
        "Use ``a ` b [S2]`` here. Thirty days [S1].",  # a span of two backticks holding one
        "> ```\n> y = m[S2]\n> ```\nThirty days [S1].",  # a fence inside a quote
    ],
)
def test_brackets_in_every_kind_of_code_are_not_citations(result, code):
    # (Markdown shows these as code; cite() read their brackets as citations)
    assert satchel.cite(code, result).cited_labels == ("S1",)


def test_a_list_items_indented_paragraph_is_no_code(result):
    # (indented as much as code, a list item's second paragraph still cites)
    assert satchel.cite("1. Returns\n\n    take thirty days [S1].\n", result).cited_labels == ("S1",)


def test_a_label_too_long_to_be_a_number_is_no_citation(result):
    # (int() refused its 5,000 digits: a raw ValueError)
    assert satchel.cite("It costs $2.99 [S" + "1" * 5000 + "].", result).cited_labels == ()


def test_a_long_bracket_of_labels_is_read_whole(result):
    # (brackets over 200 characters were skipped: the answer cited nothing)
    answer = "All agree [" + ", ".join(f"S{n % 4 + 1}" for n in range(60)) + "]."
    assert satchel.cite(answer, result).cited_labels == ("S1", "S2", "S3", "S4")


def test_a_bracket_almost_all_labels_is_read_in_linear_time(result):
    # Whitespace between labels could be shared out between the regex's parts in many ways,
    # and a bracket that ended in anything else made it try every one: 14 labels with three
    # spaces between them took a minute, with four it did not finish. Now it takes no time.
    for gap in ("   ", "    ", " , "):
        assert satchel.cite("[" + f"S1{gap}" * 5000 + "x]", result).cited_labels == ()

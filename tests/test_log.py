from __future__ import annotations

import json
import re

import pytest

import satchel
from satchel._manifest import canonical_json
from satchel.cli import main
from satchel.cli.pack import example_request
from satchel.clients import Answer
from satchel.log import append_log, json_error, read_log

FIXED = 1_780_000_000.25  # 2026-05-28T20:26:40.250Z


@pytest.fixture(scope="module")
def result():
    request = example_request()
    return satchel.pack(request.pop("candidates"), request.pop("question"), **request)


def test_a_pack_is_logged_as_one_canonical_line(tmp_path, result):
    log = tmp_path / "packs.jsonl"
    record = append_log(log, result, clock=lambda: FIXED)
    lines = log.read_text("utf-8").splitlines()
    assert len(lines) == 1
    assert lines[0] == canonical_json(record)
    assert record == {
        **result.to_dict(),
        "logged_at": "2026-05-28T20:26:40.250Z",
        "answer": None,
        "citations": None,
    }
    assert record["prompt_sha256"].startswith("sha256:")
    assert record["config"]["model"] == result.config["model"]


def test_records_append_and_read_back_in_order(tmp_path, result):
    log = tmp_path / "packs.jsonl"
    times = iter([FIXED, FIXED + 1])
    first = append_log(log, result, clock=lambda: next(times))
    second = append_log(log, result, answer="Thirty days [S1].", clock=lambda: next(times))
    assert list(read_log(log)) == [first, second]
    assert second["logged_at"] == "2026-05-28T20:26:41.250Z"


def test_a_pack_for_a_model_with_an_input_limit_reads_back(tmp_path):
    # (its budget holds input_limit: gpt-5 takes 272,000 of its 400,000 tokens as input)
    log = tmp_path / "packs.jsonl"
    record = append_log(log, satchel.pack([{"id": "a", "text": "A fact."}], "q?", model="gpt-5"))
    assert record["budget"]["input_limit"] == 272_000
    assert list(read_log(log)) == [record]


def test_an_answer_is_logged_with_its_citations(tmp_path, result):
    log = tmp_path / "packs.jsonl"
    answer = Answer("Thirty days [S1]; refunds [S2] [S42].", "smollm2", 900, 12, 1.5, "stop")
    record = append_log(log, result, answer=answer, clock=lambda: FIXED)
    assert record["answer"] == answer.to_dict()
    assert record["citations"] == satchel.cite(answer, result).to_dict()
    assert record["citations"]["unknown_labels"] == ["S42"]
    [read] = read_log(log)
    assert read["answer"]["text"] == answer.text


def test_given_citations_are_logged_as_given(tmp_path, result):
    citations = satchel.cite("[S3]", result)
    record = append_log(tmp_path / "l.jsonl", result, answer="[S1]", citations=citations, clock=lambda: FIXED)
    assert record["citations"]["cited_labels"] == ["S3"]


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path, result):
    log = tmp_path / "packs.jsonl"
    log.write_text('{"half a rec', encoding="utf-8")
    append_log(log, result, clock=lambda: FIXED)
    lines = log.read_text("utf-8").splitlines()
    assert lines[0] == '{"half a rec'
    assert json.loads(lines[1])["prompt_sha256"] == result.to_dict()["prompt_sha256"]


def test_bad_lines_name_the_file_and_line(tmp_path, result):
    log = tmp_path / "packs.jsonl"
    append_log(log, result, clock=lambda: FIXED)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("\nnot json\n")
    records = read_log(log)
    assert next(records)["logged_at"]
    with pytest.raises(satchel.InputError, match=r"packs\.jsonl line 3 is not valid JSON"):
        next(records)

    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n', encoding="utf-8")
    with pytest.raises(
        satchel.InputError, match=r"other\.jsonl line 1 is not a Satchel log record \(missing budget"
    ):
        list(read_log(other))

    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\n")
    with pytest.raises(satchel.InputError, match=r"binary\.jsonl line 1 is not UTF-8"):
        list(read_log(binary))


def test_missing_or_unwritable_paths_raise_input_error(tmp_path, result):
    with pytest.raises(satchel.InputError, match="cannot read the log"):
        list(read_log(tmp_path / "nope.jsonl"))
    with pytest.raises(satchel.InputError, match="cannot append to the log"):
        append_log(tmp_path / "no-such-dir" / "l.jsonl", result)


# -- satchel pack --log and satchel trace ------------------------------------


def test_trace_prints_the_same_table_as_pack_format_trace(tmp_path, capsys):
    log = tmp_path / "packs.jsonl"
    assert main(["pack", "--example", "--format", "trace", "--log", str(log)]) == 0
    table = capsys.readouterr().out
    assert main(["trace", str(log)]) == 0
    shown = capsys.readouterr().out
    header, question, rest = shown.split("\n", 2)
    assert header.startswith("record 1 of 1, logged ")
    assert question == f"question: {example_request()['question']}"
    assert rest == table


def test_trace_shows_the_answer_and_its_citations(tmp_path, capsys, result):
    log = tmp_path / "packs.jsonl"
    answer = Answer("Thirty days [S1]. See also [S12].", "smollm2", 900, 12, 1.5, "stop")
    append_log(log, result, answer=answer, clock=lambda: FIXED)
    assert main(["trace", str(log)]) == 0
    out = capsys.readouterr().out
    assert "answer (model smollm2, 900 prompt + 12 completion tokens, 1.50 s, finish stop):" in out
    assert "  Thirty days [S1]. See also [S12]." in out
    assert "cited:   S1 = returns-policy#1 (Returns and refunds policy § How long you have)" in out
    assert "unknown: S12 (labels never sent" in out
    assert "uncited: S2, S3" in out


def test_trace_picks_records(tmp_path, capsys):
    log = tmp_path / "packs.jsonl"
    for question in ("first?", "second?", "third?"):
        assert main(["pack", "--example", "--question", question, "--log", str(log)]) == 0
    capsys.readouterr()

    def shown(*args: str) -> str:
        assert main(["trace", str(log), *args]) == 0
        return capsys.readouterr().out

    assert "question: third?" in shown()
    assert "question: third?" in shown("--last")
    assert "question: first?" in shown("--index", "1")
    assert "question: second?" in shown("--index", "-2")
    everything = shown("--all")
    assert [line.split(",")[0] for line in everything.splitlines() if line.startswith("record ")] == [
        "record 1 of 3",
        "record 2 of 3",
        "record 3 of 3",
    ]


def test_trace_errors_are_one_line(tmp_path, capsys):
    log = tmp_path / "packs.jsonl"
    log.write_text("", encoding="utf-8")
    assert main(["trace", str(log)]) == 2
    assert "holds no records" in capsys.readouterr().err
    main(["pack", "--example", "--log", str(log)])
    capsys.readouterr()
    assert main(["trace", str(log), "--index", "2"]) == 2
    assert "--index 2 is outside the log" in capsys.readouterr().err
    assert main(["trace", str(log), "--index", "0"]) == 2
    assert main(["trace", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the log" in capsys.readouterr().err
    # a request given for a log: said so once, not each of its lines skipped as a torn record
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"question": "Q?", "candidates": [{"id": "a", "text": "x"}]}, indent=2))
    assert main(["trace", str(request)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"satchel: error: {str(request)!r} is a pack request, not a log; `satchel pack {request} --format "
        "trace` shows how it packs (and `--log LOG` keeps the pack for satchel trace)\n"
    )


def test_the_trace_table_shows_every_id_and_reason_whole():
    # Path-like ids alike for their first 28 characters showed as identical rows, and
    # reasons were cut at 70 characters.
    from satchel._manifest import format_trace

    base = "docs/policies/returns-and-refunds.md#chunk-"
    text = (
        "Returns are accepted within 14 days of delivery for a full refund to the original payment "
        "method, provided the item is unused and in its box."
    )
    texts = [text, text.replace("provided the", "provided that the"), "Refunds take 5 days."]
    chunks = [{"id": f"{base}{k}", "text": t} for k, t in enumerate(texts)]
    result = satchel.pack(chunks, "How long do returns take?")
    table = format_trace(result.to_dict())
    for entry in result.manifest:
        row = next(line for line in table.splitlines() if f" {entry.id} " in line)
        assert f" {entry.stage} " in row and row.endswith(entry.reason)
    assert any(len(e.reason) > 70 for e in result.manifest)


def test_the_trace_says_what_of_the_sources_tokens_the_cost_column_does_not_show(result):
    # The cost column summed 5 short of "sources N" (the <sources> element), and nothing said
    # where those went: a first candidate was told "145 of 150 left" with nothing admitted.
    table = result.trace()
    used = table.splitlines()[1]
    found = re.search(r"sources (\d+) of \d+: (\d+) in the costs below \+ (\d+) for the <sources> tags", used)
    assert found, used
    total, listed, tags = map(int, found.groups())
    assert total == result.tokens.sources == listed + tags and tags > 0
    assert listed == sum(e.cost for e in result.manifest)
    # (a pack that sent nothing has no element to name)
    assert ": " not in satchel.pack([], "q?").trace().splitlines()[1].split("(sources")[1].split(")")[0]


def test_the_trace_says_where_each_conflicting_version_went():
    # "conflicts with b" on a kept row, when b was left out for want of room: the prompt
    # showed one side only, and nothing in the trace said so.
    from satchel._manifest import format_trace

    base = "The Plus plan costs {} per month and includes unlimited storage for every user account."
    chunks = [
        {"id": "a", "text": base.format("$3.99"), "score": 0.9},
        {"id": "b", "text": base.format("$2.99"), "score": 0.8},
    ]
    result = satchel.pack(chunks, "How much is Plus?", source_budget=60)
    assert result.entry("a").conflicts_with == ("b",) and not result.entry("b").kept
    table = format_trace(result.to_dict())
    row = next(line for line in table.splitlines() if " a " in line)
    assert row.endswith("admitted; conflicts with b (not sent)")
    result = satchel.pack(chunks, "How much is Plus?")
    table = format_trace(result.to_dict())
    assert next(line for line in table.splitlines() if " a " in line).endswith("; conflicts with b (S2)")
    assert table.splitlines()[3].split()[:5] == ["pos", "label", "id", "status", "stage"]


def test_a_torn_line_is_skipped_when_asked_and_trace_shows_the_rest(tmp_path, result, capsys):
    # (one torn record, left by a writer that died mid-line, made the whole log unreadable)
    from satchel.cli import main

    log = tmp_path / "packs.jsonl"
    append_log(log, result, clock=lambda: FIXED)
    whole = log.read_bytes()
    log.write_bytes(whole + whole[:200])  # the second record torn
    append_log(log, result, clock=lambda: FIXED + 1)
    with pytest.raises(satchel.InputError, match=r"packs\.jsonl line 2 is not valid JSON"):
        list(read_log(log))
    torn: list[str] = []
    records = list(read_log(log, lambda where, why: torn.append(where)))
    assert len(records) == 2 and torn == [f"{log} line 2"]
    assert main(["trace", str(log), "--all"]) == 0
    out, err = capsys.readouterr()
    assert "record 2 of 2" in out and "skipped" in err and "line 2" in err
    # where in the line, and what is wrong there (it said "(Expecting ',' delimiter at)")
    assert re.search(r"line 2, no whole record: not valid JSON \(\w.* at column \d+", err)


def test_trace_reads_a_log_from_stdin(tmp_path, capsys, monkeypatch):
    import io
    import sys

    log = tmp_path / "packs.jsonl"
    main(["pack", "--example", "--log", str(log)])
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes()), encoding="utf-8"))
    assert main(["trace", "-"]) == 0
    assert capsys.readouterr().out.startswith("record 1 of 1, logged ")


def test_the_trace_table_lines_up_wide_characters_by_the_columns_they_take():
    # Padded by len, a row with a Chinese id (each character two columns wide in a
    # terminal) pushed its status and reason out of line with every other row.
    import unicodedata

    from satchel._manifest import format_trace

    chunks = [
        {"id": "文档3", "text": "Paris is the capital of France."},
        {"id": "doc-12", "text": "Berlin is the capital of Germany."},
        {"id": "cafe\u0301", "text": "Rome is the capital of Italy."},  # the accent as a mark of its own
    ]
    table = format_trace(satchel.pack(chunks, "Which capitals?").to_dict())

    def columns(line: str) -> int:  # where "kept" starts, in terminal columns
        before = line[: line.index("kept")]
        wide = sum(unicodedata.east_asian_width(c) in "WF" for c in before)
        return len(before) + wide - sum(map(bool, map(unicodedata.combining, before)))

    rows = [line for line in table.splitlines() if " kept " in line]
    assert len(rows) == 3 and len({columns(row) for row in rows}) == 1


def test_the_prompt_hash_tells_messages_apart_from_text_that_reads_like_them():
    # (hashed as one text, "ROLE\ncontent" joined, a user message holding "\n\nASSISTANT\n"
    # hashed as a user and an assistant message: the ablation reused answers by this hash)
    from satchel._manifest import prompt_hash

    one = [{"role": "user", "content": "hi\n\nASSISTANT\nhello"}]
    two = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert prompt_hash(one) != prompt_hash(two)
    assert prompt_hash(two) == prompt_hash([dict(reversed(m.items())) for m in two])  # (key order aside)
    chunks = [{"id": "a", "text": "Alpha one."}]
    history = [{"role": "user", "content": "hi\n\nASSISTANT\nhello"}]
    r1 = satchel.pack(chunks, "q?", history=history)
    r2 = satchel.pack(
        chunks, "q?", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    assert r1.text == r2.text and r1.to_dict()["prompt_sha256"] != r2.to_dict()["prompt_sha256"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a comma before a closing bracket, named at the comma on every Python version (3.11 and
        # 3.12 expected a value at the bracket after it; 3.13 names it, at the comma)
        ("[1, 2,]", "trailing comma at line 1 column 6; JSON allows none before ] or }"),
        ('{"a": 1,}', "trailing comma at line 1 column 8; JSON allows none before ] or }"),
        ('{"a": [1,\n  2 ,\n  ]\n}', "trailing comma at line 2 column 5; JSON allows none before ] or }"),
        # other errors stay as Python words them, where it says
        ("[,]", "Expecting value at line 1 column 2"),
        ("[1,,2]", "Expecting value at line 1 column 4"),
        ("[1, 2] ,]", "Extra data at line 1 column 8"),
        ('{"a": 1, "b"}', "Expecting ':' delimiter at line 1 column 13"),
    ],
)
def test_json_errors_say_what_and_where_alike_on_every_python(text, message):
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    assert json_error(caught.value) == message
    assert json_error(caught.value, line=False) == message.replace("line 1 ", "").replace("line 2 ", "")


def test_every_manifest_entry_says_where_its_candidate_came_from(tmp_path):
    # Seed 003: "an ordered manifest: item IDs, token counts, provenance, and the compression
    # ratio applied to each". Without it, a dropped candidate's document was in no output.
    from pathlib import Path

    chunks = [
        {
            "id": "a",
            "text": "Returns are accepted within 30 days.",
            "doc_id": "policy",
            "start": 0,
            "end": 36,
            "title": "Returns",
            "section": "Time",
            "updated": "2026-03-01",
            "url": "https://example.com/returns",
        },
        {
            "id": "b",
            "text": "Returns are accepted within 30 days.",
            "doc_id": "mirror",
            "metadata": {"path": Path("docs/returns.md"), "page": 4, "audience": "staff"},
        },
        {"id": "c", "text": "Refunds take five business days."},
    ]
    result = satchel.pack(chunks, "How long?")
    assert result.entry("b").status == "dropped"  # (an exact copy of a)
    assert result.entry("a").provenance == {
        "doc_id": "policy",
        "start": 0,
        "end": 36,
        "title": "Returns",
        "section": "Time",
        "updated": "2026-03-01",
        "url": "https://example.com/returns",
    }
    # (JSON-ready: a path as its text; metadata that names no place is left out)
    assert result.entry("b").provenance == {"doc_id": "mirror", "path": "docs/returns.md", "page": 4}
    assert result.entry("c").provenance == {}
    record = append_log(tmp_path / "packs.jsonl", result, clock=lambda: FIXED)
    assert [e["provenance"] for e in record["manifest"]] == [e.provenance for e in result.manifest]
    [read] = read_log(tmp_path / "packs.jsonl")
    assert read["manifest"][1]["provenance"]["path"] == "docs/returns.md"
    bad = tmp_path / "bad.jsonl"
    record["manifest"][0]["provenance"] = "policy"
    bad.write_text(canonical_json(record) + "\n", "utf-8")
    with pytest.raises(satchel.PackError, match=r"manifest\[0\]\.provenance is \"policy\", not an object"):
        list(read_log(bad))

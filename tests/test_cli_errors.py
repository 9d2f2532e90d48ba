"""Bad input to the command line: one line on stderr naming the file (and line or field), exit 2."""

from __future__ import annotations

import copy
import io
import json
import sys
from importlib import resources

import pytest

import satchel
from satchel.ablate import load_queries
from satchel.cli import main
from satchel.cli.pack import example_request
from satchel.clients import Answer
from satchel.log import append_log, read_log

CANDIDATE = '{"id": "a", "text": "Alpha."}\n'
QUERY = {"question": "Q?", "candidates": [{"id": "a", "text": "Alpha."}], "answers": ["Alpha"], "gold": ["a"]}
HUGE = "1" * 5000  # more digits than Python's int() takes from a string
DEEP = "[" * 100_000  # deeper than Python's JSON reader recurses


def fails(capsys, *argv: str, stdin: str | bytes | None = None, monkeypatch=None) -> str:
    """Run the command; assert it failed with one `satchel: error:` line and no output; return that line."""
    if stdin is not None:
        raw = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("satchel: error: ") and err.count("\n") == 1, err
    return err


def write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def queries_file(tmp_path) -> str:
    return write(tmp_path, "q.jsonl", json.dumps(QUERY) + "\n")


# -- 1. files that are not UTF-8 -----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"candidates": [{"id": "a", "text": "caf\u00e9"}]}'.encode("latin-1"), "byte 0xe9 at offset 40"),
        ('{"candidates": []}'.encode("utf-16"), "byte 0xff at offset 0"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)), "byte 0x80 at offset 8"),
        (CANDIDATE.encode() + b'{"id": "b", "text": "\xff"}\n', "byte 0xff at offset 51, line 2"),
    ],
    ids=["latin-1", "utf-16", "binary", "jsonl-one-bad-line"],
)
def test_pack_names_a_file_that_is_not_utf8(tmp_path, capsys, content, where):
    path = write(tmp_path, "req.json", content)
    err = fails(capsys, "pack", path, "--question", "Q?")
    assert f"{path} is not UTF-8 text ({where}); save it as UTF-8" in err


def test_pack_names_stdin_that_is_not_utf8(capsys, monkeypatch):
    err = fails(capsys, "pack", "-", "--question", "Q?", stdin=b"\xff\xfe", monkeypatch=monkeypatch)
    assert "stdin is not UTF-8 text (byte 0xff at offset 0)" in err


def test_ablate_names_a_query_set_or_options_file_that_is_not_utf8(tmp_path, capsys):
    latin = json.dumps({**QUERY, "question": "Caf\u00e9?"}, ensure_ascii=False).encode("latin-1")
    queries = write(tmp_path, "bad.jsonl", json.dumps(QUERY).encode() + b"\n" + latin + b"\n")
    err = fails(capsys, "ablate", queries, "--out", str(tmp_path / "out"))
    assert f"{queries} line 2 is not UTF-8 text (byte 0xe9 at offset 17); save it as UTF-8" in err

    options = write(tmp_path, "opts.json", '{"system": "S\u00e9"}'.encode("latin-1"))
    err = fails(capsys, "ablate", queries_file(tmp_path), "--options", options, "--out", str(tmp_path / "o"))
    assert f"--options {options!r} is not UTF-8 text (byte 0xe9 at offset 13)" in err


# -- 2. integers too long, nesting too deep ------------------------------------------------


def test_ablate_refuses_an_out_it_cannot_write_before_it_runs(tmp_path, capsys):
    # (the error came after the whole run, which with a real model may take hours)
    taken = write(tmp_path, "taken", "x")
    for out, problem in ((taken, "is a file"), (taken + "/sub", "is a file")):
        assert f"--out {out}: {taken} {problem}; give a directory" in fails(
            capsys, "ablate", queries_file(tmp_path), "--out", out
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f'{{"candidates": [], "question": "Q?", "max_sources": {HUGE}}}', "holds an integer longer than"),
        (DEEP, "nests arrays or objects deeper than"),
    ],
    ids=["huge-int", "deep"],
)
def test_json_python_cannot_read_is_named_everywhere(tmp_path, capsys, monkeypatch, text, message):
    path = write(tmp_path, "req.json", text)
    assert message in fails(capsys, "pack", path, "--question", "Q?")
    assert path in fails(capsys, "pack", path, "--question", "Q?")
    err = fails(capsys, "pack", "-", "--question", "Q?", stdin=text, monkeypatch=monkeypatch)
    assert err.startswith(f"satchel: error: stdin {message.split()[0]}")
    assert f"{path} line 1 {message.split()[0]}" in fails(capsys, "trace", path)
    assert f"{path} line 1 {message.split()[0]}" in fails(capsys, "ablate", path, "--out", str(tmp_path))
    err = fails(capsys, "ablate", queries_file(tmp_path), "--options", path, "--out", str(tmp_path))
    assert f"--options {path!r} {message.split()[0]}" in err


def test_a_query_line_with_a_key_ablate_does_not_read_is_refused(tmp_path):
    # (a per-query "order" or "system" was ignored: the run measured something else)
    path = write(tmp_path, "q.jsonl", json.dumps({**QUERY, "order": "edges"}) + "\n")
    with pytest.raises(satchel.PackError, match=r"q.jsonl line 1: unknown key\(s\) 'order'; a query holds"):
        load_queries(path)
    assert load_queries(write(tmp_path, "ok.jsonl", json.dumps({**QUERY, "id": 7}) + "\n"))[0].id == "7"


def test_a_huge_integer_on_a_later_query_line_names_that_line(tmp_path):
    path = write(tmp_path, "q.jsonl", json.dumps(QUERY) + "\n" + f'{{"id": {HUGE}}}\n')
    with pytest.raises(satchel.InputError, match=r"q\.jsonl line 2 holds an integer longer than"):
        load_queries(path)


# -- 3. log records satchel trace cannot show ----------------------------------------------


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """A logged pack with an answer and its citations, as `satchel trace` reads it."""
    request = example_request()
    result = satchel.pack(request.pop("candidates"), request.pop("question"), **request)
    log = tmp_path_factory.mktemp("log") / "packs.jsonl"
    append_log(log, result, answer=Answer("Thirty days [S1].", "smollm2", 900, 12, 1.5, "stop"))
    [logged] = read_log(log)
    return logged


def _broken(record, path: str, value) -> dict:
    """A copy of ``record`` with the field at ``path`` (``a.b.0.c``) set to ``value`` (or deleted: ...)."""
    out = copy.deepcopy(record)
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        ("manifest.0.status", ..., "manifest[0].status is missing"),
        ("budget", {}, "budget.context_window is missing"),
        ("answer", "a string", 'answer is "a string", not an object'),
        ("budget.context_window", None, "budget.context_window is null, not an integer"),
        ("tokens", None, "tokens is null, not an object"),
        ("question", 5, "question is 5, not a string"),
        ("manifest", 5, "manifest is 5, not a list"),
        ("manifest.1.tokens", "12", 'manifest[1].tokens is "12", not an integer'),
        ("manifest.0.position", "1", 'manifest[0].position is "1", not an integer'),
        ("citations.uncited_labels", ..., "citations.uncited_labels is missing"),
        ("citations.references.0.chunk_id", ..., "citations.references[0].chunk_id is missing"),
        ("answer.latency_s", "fast", 'answer.latency_s is "fast", not a number'),
        ("answer.text", 5, "answer.text is 5, not a string"),
        ("tokenizer", "o200k", 'tokenizer is "o200k", not an object'),
        ("labels.S1", 5, "labels is an object, not an object of label: chunk id"),
    ],
)
def test_trace_names_the_record_and_field_it_cannot_show(tmp_path, capsys, record, path, value, problem):
    log = tmp_path / "packs.jsonl"
    log.write_text(json.dumps(record) + "\n\n" + json.dumps(_broken(record, path, value)) + "\n")
    err = fails(capsys, "trace", str(log), "--all")
    assert f"packs.jsonl line 3 (record 2): {problem}" in err
    with pytest.raises(satchel.InputError, match=r"line 3 \(record 2\)"):
        list(read_log(log))


def test_trace_shows_a_record_whose_optional_fields_are_null(tmp_path, capsys, record):
    nulls = {**record, "config": None, "tokenizer": None, "labels": None, "question": None}
    nulls["citations"] = {**record["citations"], "references": None}
    log = tmp_path / "packs.jsonl"
    log.write_text(json.dumps(nulls) + "\n")
    assert main(["trace", str(log)]) == 0
    out = capsys.readouterr().out
    assert "tokenizer ? (exact)" in out and "kept, 1 dropped, order ?\n" in out
    assert "\ncited:   S1\n" in out  # without labels, the chunk ids are unknown


# -- 4. empty input -----------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "  \n\n\t\n"], ids=["empty", "blank"])
def test_an_empty_request_is_an_error(tmp_path, capsys, monkeypatch, content):
    path = write(tmp_path, "req.json", content)
    expected = 'is empty; give a JSON request with "candidates" or JSONL candidates'
    assert f"{path} {expected}" in fails(capsys, "pack", path, "--question", "Q?")
    err = fails(capsys, "pack", "-", "--question", "Q?", stdin=content, monkeypatch=monkeypatch)
    assert f"stdin {expected}" in err


# -- 5. a request without "candidates" ----------------------------------------------------


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
@pytest.mark.parametrize("question", [[], ["--question", "What?"]], ids=["", "with-question"])
def test_a_request_without_candidates_names_its_unknown_keys(tmp_path, capsys, indent, question):
    request = {"question": "What?", "cands": [{"id": "a", "text": "x"}], "order": "edges"}
    path = write(tmp_path, "req.json", json.dumps(request, indent=indent))
    err = fails(capsys, "pack", path, *question)
    assert f'{path} is a JSON object without "candidates" (unknown key(s) cands); a request holds' in err


def test_a_lone_object_is_a_request_unless_it_is_a_candidate(tmp_path, capsys):
    request = write(tmp_path, "req.json", '{"question": "What?"}')
    assert 'req.json is a JSON object without "candidates"; a request holds' in fails(capsys, "pack", request)
    candidate = write(tmp_path, "c.jsonl", CANDIDATE)  # one line of JSONL: still a candidate
    assert main(["pack", candidate, "--question", "Q?", "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["manifest"]] == ["a"]


def test_a_pretty_printed_request_with_a_syntax_error_is_named_where_it_is_wrong(tmp_path, capsys):
    # (not "line 1 is not valid JSON", as a JSONL file whose first line were "{")
    text = '{\n  "question": "Q?",\n  "candidates": [\n    {"id": "a", "text": "x"},\n  ]\n}\n'
    err = fails(capsys, "pack", write(tmp_path, "req.json", text))
    # (at the comma itself, named as one, on every Python version: 3.11 said "Expecting value
    # at line 5 column 3", the bracket after it)
    where = "req.json is not valid JSON: trailing comma at line 4 column 29"
    assert f"{where}; JSON allows none before ] or }}; fix it there" in err


def test_one_candidate_object_pretty_printed_is_a_candidate(tmp_path, capsys):
    # (read again line by line as JSONL, it was "line 1 is not valid JSON")
    path = write(tmp_path, "c.json", '{\n  "id": "a",\n  "text": "Alpha one."\n}\n')
    assert main(["pack", path, "--question", "Q?", "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["manifest"]] == ["a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # one line (a minified request): where it is wrong, not only "line 1"
        (
            '{"question": "Q?", "candidates": [{"id": "a", "text": "x"},]}',
            "line 1 is not valid JSON (trailing comma at column 59; JSON allows none before ] or })",
        ),
        # a raw tab in a string: how to write it
        (
            '{"question": "Q?", "candidates": [{"id": "a", "text": "x\ty"}]}',
            "line 1 is not valid JSON (Invalid control character at column 57; write a tab or line break "
            "inside a string as "
            "\\t or \\n",
        ),
    ],
)
def test_a_syntax_error_on_one_line_says_where_and_how_to_fix_it(tmp_path, capsys, text, message):
    assert message in fails(capsys, "pack", write(tmp_path, "req.json", text))


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"question": "Q?", "candidates": [{"id": "a", "text": "x"}], "candidates": []}', "candidates"),
        ('{"id": "a", "text": "first half", "text": "second half"}\n', "text"),
        (CANDIDATE + '{"id": "b", "text": "x", "id": "c"}\n', "id"),
    ],
)
def test_a_key_given_twice_is_refused_not_taken_last(tmp_path, capsys, text, key):
    # (Python's reader keeps the last: half a chunk, or other candidates, were packed)
    err = fails(capsys, "pack", write(tmp_path, "req.json", text), "--question", "Q?")
    assert f"gives the key {key!r} twice in one object; keep one of them" in err


def test_the_shipped_example_is_a_request_file_as_any_other(capsys):
    path = str(resources.files("satchel").joinpath("examples/brightgrid.json"))
    assert main(["pack", path, "--format", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["pack", "--example", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_file


# -- 6. JSONL lines that are JSON but not candidates --------------------------------------


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("5", "or Haystack document, got int: 5"),
        ('{"text": "y"}', "has no 'id'"),
    ],
)
def test_a_jsonl_line_that_is_not_a_candidate_is_named(tmp_path, capsys, line, problem):
    path = write(tmp_path, "c.jsonl", CANDIDATE + "\n" + line + "\n")
    err = fails(capsys, "pack", path, "--question", "Q?")
    assert f"{path} line 3: " in err and problem in err


def test_a_query_set_for_ablate_is_named_as_one(tmp_path, capsys):
    # (its first line read as a candidate "has no 'id'"; one line alone, as a request with
    # "unknown key(s) answers, gold")
    query = {
        "question": "Who?",
        "candidates": [{"id": "a", "text": "Anna."}],
        "answers": ["Anna"],
        "gold": ["a"],
    }
    for lines in (1, 2):
        path = write(tmp_path, "q.jsonl", "\n".join([json.dumps(query)] * lines) + "\n")
        err = fails(capsys, "pack", path)
        assert f"{path} is a query set for satchel ablate (each line a question with its candidates" in err
        assert "run satchel ablate FILE --out DIR, or pack one query's candidates with --question" in err


def test_a_jsonl_id_given_twice_names_both_lines(tmp_path, capsys):
    path = write(tmp_path, "c.jsonl", CANDIDATE + "\n" + '{"id": "b", "text": "y"}\n' + CANDIDATE)
    err = fails(capsys, "pack", path, "--question", "Q?")
    assert f"{path} line 4: candidate id 'a' is on line 1 too; ids must be unique" in err


def test_what_pack_refuses_in_a_request_file_names_the_file(tmp_path, capsys, monkeypatch):
    request = {"question": "Q?", "candidates": [{"id": "a", "text": "x"}, {"id": "b", "text": " "}]}
    path = write(tmp_path, "req.json", json.dumps(request))
    assert f"{path}: candidates[1]: candidate 'b': text is blank" in fails(capsys, "pack", path)
    err = fails(capsys, "pack", "-", stdin=json.dumps(request), monkeypatch=monkeypatch)
    assert err.startswith("satchel: error: stdin: candidates[1]: candidate 'b': text is blank")
    bad = {"question": "Q?", "candidates": [{"id": "a", "text": "x", "metadata": ["EU"]}]}
    err = fails(capsys, "pack", write(tmp_path, "m.json", json.dumps(bad)))
    assert "candidate 'a': metadata must be a dict, got list ['EU']; pass metadata as {'key': value}" in err


def test_jsonl_lines_split_at_newlines_only(tmp_path, capsys):
    path = write(tmp_path, "c.jsonl", '{"id": "a", "text": "one\u2028two"}\n' + '{"id": "b", "text": "x"}\n')
    assert main(["pack", path, "--question", "Q?", "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["manifest"]] == ["a", "b"]


# -- 7. blank option values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pack", "--example", "--question", ""], "--question '' is blank"),
        (["pack", "--example", "--question", "  "], "--question '  ' is blank"),
        (["pack", "FILE", "--question", ""], "--question '' is blank"),
        (["pack", "--example", "--log", ""], "--log '' is blank"),
        (["pack", "--example", "--tokenizer", ""], "--tokenizer '' is blank"),
        (["ablate", "/no/such.jsonl", "--out", "o", "--tokenizer", ""], "--tokenizer '' is blank"),
        (["ablate", "/no/such.jsonl", "--out", "o", "--pack-model", ""], "--pack-model '' is blank"),
    ],
)
def test_blank_option_values_are_refused(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "FILE", CANDIDATE)
    err = fails(capsys, *argv)
    assert message in err and "leave --" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "FILE"]  # no log written


def test_a_byte_order_mark_before_the_request_is_ignored(tmp_path, capsys):
    # (Windows editors write one; it is no part of the JSON)
    request = json.dumps({"candidates": [{"id": "a", "text": "Alpha."}], "question": "Q?"})
    for name, content in (("req.json", request), ("req.jsonl", CANDIDATE)):
        path = write(tmp_path, name, b"\xef\xbb\xbf" + content.encode("utf-8"))
        code = main(["pack", path, "--question", "Q?", "--format", "json"])
        out, _ = capsys.readouterr()
        assert code == 0 and json.loads(out)["labels"] == {"S1": "a"}, name


def test_ctrl_c_at_stdin_ends_quietly(capsys, monkeypatch):
    class Interrupted(io.BytesIO):
        def read(self, *args: object) -> bytes:
            raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Interrupted(), encoding="utf-8"))
    assert main(["pack", "-", "--question", "Q?"]) == 130
    assert capsys.readouterr() == ("", "satchel: interrupted\n")


def test_control_characters_in_an_id_reach_the_trace_written_out():
    # (an ANSI escape in a crawled id would act on the terminal the trace is printed to)
    r = satchel.pack([{"id": "a\x1b[31mred", "text": "x"}, {"id": "b\tc", "text": "y"}], "q?")
    rows = r.trace().splitlines()
    assert "\x1b" not in r.trace() and "\t" not in r.trace()
    assert any("a\\x1b[31mred" in row for row in rows) and any("b\\tc" in row for row in rows)


def test_a_model_name_in_other_case_is_suggested():
    with pytest.raises(satchel.UnknownModelError, match=r"unknown model 'GPT-4o'\. Did you mean 'gpt-4o'"):
        satchel.pack([{"id": "a", "text": "x"}], "q?", model="GPT-4o")


def test_a_blank_system_text_is_refused_in_the_options_terms(capsys):
    assert main(["pack", "--example", "--system", "  "]) == 2
    assert capsys.readouterr().err == (
        "satchel: error: --system '  ' is blank; give instructions, leave --system out for the "
        "default, or give --system '' to send no system message\n"
    )
    assert main(["pack", "--example", "--system", "", "--format", "messages"]) == 0
    assert '"role": "system"' not in capsys.readouterr().out

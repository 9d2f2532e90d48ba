from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import satchel
from satchel.cli import main
from satchel.cli.pack import example_request


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        import io

        # pack reads stdin's bytes (sys.stdin.buffer) so that it can name a byte that is not UTF-8
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example_text_is_the_library_prompt(capsys):
    code, out, _ = run(capsys, "pack", "--example", "--order", "edges", "--source-budget", "400")
    request = example_request()
    expected = satchel.pack(request["candidates"], request["question"], order="edges", source_budget=400)
    assert code == 0 and out == expected.text + "\n"


def test_json_request_file_with_options(tmp_path, capsys):
    path = tmp_path / "req.json"
    path.write_text(
        json.dumps(
            {
                "candidates": [{"id": "a", "text": "Alpha."}],
                "question": "What?",
                "order": "chronological",
                "reserve_answer": 100,
            }
        )
    )
    code, out, _ = run(capsys, "pack", str(path), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["config"]["order"] == "chronological" and data["budget"]["answer"] == 100
    assert [e["id"] for e in data["manifest"]] == ["a"]


def test_jsonl_from_stdin_with_question(capsys, monkeypatch):
    lines = "\n".join(json.dumps({"id": f"c{i}", "text": f"Fact {i}."}) for i in range(3))
    code, out, _ = run(
        capsys,
        "pack",
        "-",
        "--question",
        "Which fact?",
        "--format",
        "messages",
        stdin=lines,
        monkeypatch=monkeypatch,
    )
    messages = json.loads(out)
    assert code == 0 and [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"].endswith("<question>Which fact?</question>")


def test_trace_lists_every_candidate_and_the_budget(capsys):
    code, out, _ = run(capsys, "pack", "--example", "--format", "trace", "--source-budget", "300")
    assert code == 0 and out.startswith("budget: window 128000")
    for chunk in example_request()["candidates"]:
        assert chunk["id"][:20] in out
    assert "dropped" in out and "does not fit" in out and "duplicate" in out
    # the budget line is a sum that holds, with a source budget set or not
    for budget in ("300", None):
        argv = ["pack", "--example", "--format", "trace"] + (["--source-budget", budget] if budget else [])
        line = run(capsys, *argv)[1].splitlines()[0]
        window, parts = line.split(" = ")
        total = sum(int(part.split(" (")[0].split()[-1]) for part in parts.split(" + "))
        assert total == int(window.split()[-1]), line
    # a tokenizer given that is not the model's own: exact for that one, and the trace says so
    # (it said "exact" for gpt-4o counted with cl100k_base, 5 tokens apart from o200k_base)
    used = run(capsys, "pack", "--example", "--format", "trace", "--tokenizer", "cl100k_base")[1]
    assert "tokenizer cl100k_base (exact for cl100k_base, not gpt-4o's own o200k_base)" in used
    used = run(capsys, "pack", "--example", "--format", "trace", "--tokenizer", "o200k_base")[1]
    assert "tokenizer o200k_base (exact)\n" in used


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pack", "--example", "--model", "gpt-4x"], "unknown model 'gpt-4x'"),
        (
            ["pack", "/no/such/file.json"],
            "cannot read '/no/such/file.json': No such file or directory; give a JSON or JSONL file",
        ),
        (
            ["chunk", "/no/such/doc.md"],
            "cannot read '/no/such/doc.md': No such file or directory; give a UTF-8 text file",
        ),
        (["pack"], "give a request FILE"),
    ],
)
def test_errors_are_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("satchel: error: ") and message in err


def test_a_packs_recorded_config_replays_as_a_request(tmp_path, capsys):
    # The config of --format json (and of the log) holds role_rule as an object: fed back as
    # a request it was refused ("must be a satchel.RoleRule", which no JSON value is)
    code, out, _ = run(capsys, "pack", "--example", "--policy", "evidence", "--format", "json")
    first = json.loads(out)
    request = example_request()
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({**request, **first["config"]}), "utf-8")
    code, out, err = run(capsys, "pack", str(path), "--format", "json")
    assert code == 0, err
    again = json.loads(out)
    assert again["text"] == first["text"] and again["config"] == first["config"]
    # an abstractive compressor is Python's alone: the request says how else to compress
    path.write_text(json.dumps({**request, "compressor": "summarise"}), "utf-8")
    code, _, err = run(capsys, "pack", str(path))
    assert code == 2 and "compressor='summarise': an abstractive compressor is a Python callable" in err
    assert 'give "compress": true for the extractive one' in err


def test_jsonl_without_question(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n')
    code, _, err = run(capsys, "pack", str(path))
    assert code == 2 and "--question" in err


def test_console_script_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "satchel", "pack", "--example", "--format", "trace"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "kept" in out.stdout


def test_policy_options_reach_pack(capsys):
    code, out, _ = run(
        capsys,
        "pack",
        "--example",
        "--policy",
        "evidence",
        "--source-budget",
        "300",
        "--contract",
        "Answer in one sentence.",
        "--restate-contract",
        "--role-caps",
        "supporting=40,background=none",
        "--format",
        "json",
    )
    config = json.loads(out)["config"]
    assert code == 0 and config["compress"] and config["strip_boilerplate"] is True
    assert config["role_caps"] == {"decisive": None, "supporting": 40, "background": None}
    assert config["contract"] == "Answer in one sentence." and config["restate_contract"]


def test_bad_role_caps_are_reported(capsys):
    with pytest.raises(SystemExit):
        main(["pack", "--example", "--role-caps", "supporting"])
    assert "is not ROLE=CAP" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # (1e3 is a number; which kind of cap it means is not said)
        main(["pack", "--example", "--role-caps", "supporting=1e3"])
    assert "cap '1e3' for 'supporting' must be a whole number of tokens (120), a share of" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):  # (the last one was taken, unsaid)
        main(["pack", "--example", "--role-caps", "supporting=10, supporting=20"])
    assert "role 'supporting' is given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # (pack's own message spoke of Python's ints)
        main(["pack", "--example", "--role-caps", "supporting=120.0"])
    assert (
        "cap '120.0' for 'supporting' has a decimal point, so it is a share of the source budget, and a "
        "share is at most 1; give tokens without one (120) or a share such as 0.25"
    ) in capsys.readouterr().err


def test_output_is_utf8_whatever_the_locales_code_page():
    # (a Windows redirect to a file writes cp1252 by default: Chinese text raised
    # UnicodeEncodeError with a traceback)
    text = "退货期限为30天。"
    for fmt in ("text", "json", "trace"):
        out = subprocess.run(
            [sys.executable, "-m", "satchel", "pack", "-", "--question", "多久？", "--format", fmt],
            input=json.dumps([{"id": "政策", "text": text}]).encode(),
            capture_output=True,
            env={**os.environ, "PYTHONIOENCODING": "cp1252"},
        )
        assert out.returncode == 0, out.stderr.decode("utf-8", "replace")
        shown = out.stdout.decode("utf-8")
        assert "政策" in shown and (text in shown or fmt == "trace")  # (the trace shows no text)


def test_a_share_of_a_window_past_a_floats_range_is_worked_out_exactly():
    # (int(0.25 * budget) raised OverflowError past 1e308 tokens)
    r = satchel.pack(
        [{"id": "a", "text": "Alpha one."}], "q?", context_window=10**400, **satchel.EVIDENCE_POLICY
    )
    assert r.entry("a").kept and r.budget.sources > 10**399


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-sources", "0", "argument --max-sources: '0' must be a positive whole number"),
        ("--context-window", "abc", "argument --context-window: 'abc' must be a positive whole number"),
        ("--reserve-answer", "-5", "argument --reserve-answer: '-5' must be a whole number of 0 or more"),
        ("--min-score-ratio", "2", "argument --min-score-ratio: '2' must be a number above 0 and at most 1"),
    ],
)
def test_a_bad_option_is_named_as_it_was_typed(capsys, option, value, message):
    # (checked by pack, it was named by its Python keyword: "max_sources=0 must be a positive
    # whole number or None")
    with pytest.raises(SystemExit) as exit_:
        main(["pack", "--example", option, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


MANUAL = (
    "# Aurora lamp\n\nThe Aurora lamp has three modes. Night mode dims it to ten percent. Party mode "
    "cycles through colours every two seconds.\n\n## Warranty\n\nThe warranty covers parts and labour "
    "for two years from the date of purchase. It does not cover damage from water. Returns are "
    "accepted within 30 days of delivery.\n"
)


def test_chunk_cuts_a_document_into_candidates_that_pack_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "manual.md").write_text(MANUAL, "utf-8")
    code, out, err = run(
        capsys, "chunk", "manual.md", "--max-tokens", "30", "--overlap", "8", "--title", "Manual"
    )
    assert code == 0 and not err
    chunks = [json.loads(line) for line in out.splitlines()]
    assert [c["id"] for c in chunks] == [f"manual.md#{n}" for n in range(len(chunks))]
    assert all(MANUAL[c["start"] : c["end"]] == c["text"] and c["title"] == "Manual" for c in chunks)
    # (a heading opens the chunk of its section, and no overlap reaches back across it)
    assert chunks[1]["text"].lstrip().startswith("## Warranty") and not chunks[0]["text"].endswith(
        "## Warranty"
    )
    code, packed, _ = run(
        capsys,
        "pack",
        "-",
        "--question",
        "How long is the warranty?",
        "--format",
        "json",
        stdin=out,
        monkeypatch=monkeypatch,
    )
    result = json.loads(packed)
    # (the document whole again: the chunks that overlap, and those that touch, merged)
    assert code == 0 and len(result["sources"]) == 1
    assert "30 days of delivery" in result["text"] and result["text"].count("damage from water") == 1


def test_chunks_of_two_files_of_one_name_in_other_folders_are_two_documents(tmp_path, capsys, monkeypatch):
    # (named by the file's name alone, both were README.md#0..., and pack refused the ids)
    monkeypatch.chdir(tmp_path)
    for folder in ("lamp", "router"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(f"The {folder} manual. It says little.", "utf-8")
    ids = []
    for path in ("lamp/README.md", "./router/README.md"):
        code, out, _ = run(capsys, "chunk", path)
        ids += [json.loads(line)["id"] for line in out.splitlines()]
    assert ids == ["lamp/README.md#0", "router/README.md#0"]


def test_chunk_says_what_is_missing(tmp_path, capsys, monkeypatch):
    code, _, err = run(capsys, "chunk", "-", stdin="Some text.", monkeypatch=monkeypatch)
    assert code == 2 and "a document read from stdin has no name; give it one with --doc-id" in err
    empty = tmp_path / "empty.md"
    empty.write_text("  \n", "utf-8")
    code, _, err = run(capsys, "chunk", str(empty))
    assert code == 2 and f"{empty} is empty" in err
    doc = tmp_path / "doc.md"
    doc.write_text("Some text.", "utf-8")
    code, _, err = run(capsys, "chunk", str(doc), "--max-tokens", "0")
    assert code == 2 and "max_tokens=0 must be a positive whole number of tokens" in err


def test_pack_explain_prints_each_candidates_story(capsys):
    assert (
        main(
            [
                "pack",
                "--example",
                "--source-budget",
                "300",
                "--explain",
                "plus-price-2026",
                "--explain",
                "lamp-setup#1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    stories = out.split("\n\n")
    assert len(stories) == 2
    assert stories[0].startswith("plus-price-2026: kept at admit (S4)")
    assert stories[1].startswith("lamp-setup#1: dropped at admit (not sent): does not fit")
    assert main(["pack", "--example", "--explain", "plus-price-2062"]) == 2
    assert capsys.readouterr().err == (
        "satchel: error: --explain 'plus-price-2062': no candidate has that id; did you mean "
        "'plus-price-2026'?\n"
    )

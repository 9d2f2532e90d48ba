"""The ablation harness with a deterministic fake model: variants, scoring, the ladder, outputs, CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import satchel
from satchel.ablate import (
    ABLATION_SYSTEM,
    VARIANTS,
    Query,
    ablate_query,
    answer_correct,
    gold_position,
    load_queries,
    normalize_answer,
    render_report,
    run_ablation,
    write_outputs,
)
from satchel.cli import main
from satchel.cli.answering import option
from satchel.clients import Answer

_SOURCE = re.compile(r"<source_(\d+) [^>]*>\n(.*?)\n</source_\1>", re.DOTALL)


class FakeClient:
    """Answers with one source's text and cites it: the first source, or the last.

    Deterministic, instant, and sensitive to exactly what the harness varies:
    which sources were sent and where they sit.
    """

    def __init__(self, read: str = "first", model: str = "gpt-4o") -> None:
        self.read = read
        self.model = model
        self.calls: list[list[dict[str, str]]] = []

    def complete(self, messages, *, max_tokens=256, temperature=0.0):
        self.calls.append(messages)
        sources = _SOURCE.findall(messages[-1]["content"])
        if not sources:
            text = "I don't know."
        else:
            n, body = sources[0] if self.read == "first" else sources[-1]
            text = f"{body} [S{n}]"
        return Answer(text, "fake", None, None, 0.01, "stop")


def query(gold_rank: int = 1, n: int = 4, qid: str = "q") -> dict:
    """A question whose gold chunk sits at ``gold_rank`` among ``n`` scored candidates."""
    cands = []
    for r in range(1, n + 1):
        if r == gold_rank:
            text = "The Eiffel Tower is in Paris, France."
            cid = f"{qid}-gold"
        else:
            text = f"Distractor number {r} talks about towers in city {r}."
            cid = f"{qid}-d{r}"
        cands.append({"id": cid, "text": text, "score": float(n - r + 1)})
    return {
        "id": qid,
        "question": "Where is the Eiffel Tower?",
        "candidates": cands,
        "answers": ["Paris"],
        "gold": [f"{qid}-gold"],
    }


def fill_disk_at(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    """write_outputs fails for ``out`` as on a full disk (and writes anywhere else as ever)."""
    import satchel.ablate as harness

    write = harness.write_outputs

    def full_disk(result, out_dir, **kwargs):
        if str(out_dir) == str(out):
            raise OSError(28, "No space left on device")
        return write(result, out_dir, **kwargs)

    monkeypatch.setattr(harness, "write_outputs", full_disk)


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


# -- the query set ------------------------------------------------------------------


def test_load_queries_reads_each_line(tmp_path):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(qid="a"), query(qid="b")])
    path.write_text(path.read_text() + "\n\n")
    qs = load_queries(path)
    assert [q.id for q in qs] == ["a", "b"]
    assert isinstance(qs[0], Query) and qs[0].answers == ("Paris",) and qs[0].gold == ("a-gold",)
    assert isinstance(qs[0].candidates[0], satchel.Chunk)
    assert len(load_queries(path, limit=1)) == 1
    assert qs[0].to_dict()["candidates"][1]["id"] == "a-d2"


def test_missing_key_names_file_line_and_key(tmp_path):
    path = tmp_path / "q.jsonl"
    bad = query()
    del bad["gold"]
    write_jsonl(path, [query(), bad])
    with pytest.raises(satchel.InputError, match=r"q\.jsonl line 2: missing key\(s\) 'gold'"):
        load_queries(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"line 1 is not valid JSON"),
        ('["a"]', r"line 1: a query must be a JSON object"),
        (json.dumps({**query(), "answers": "Paris"}), r"line 1: 'answers' must be a list of strings"),
        (json.dumps({**query(), "answers": []}), r"line 1: 'answers' is empty"),
        (json.dumps({**query(), "candidates": [{"text": "x"}]}), r"line 1: candidates\[0\]: .* has no 'id'"),
        (json.dumps({**query(), "question": " "}), r"line 1: 'question' must be a non-empty string"),
        # an answer that normalises to nothing never matches (the run blamed generation)
        (json.dumps({**query(), "answers": ["the", "!!!"]}), r"line 1: no answer in .* could ever match"),
    ],
)
def test_bad_lines_are_clear_input_errors(tmp_path, line, message):
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(satchel.InputError, match=message):
        load_queries(path)


def test_missing_or_empty_file(tmp_path):
    with pytest.raises(satchel.InputError, match="cannot read the query set"):
        load_queries(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(satchel.InputError, match="holds no queries"):
        load_queries(tmp_path / "empty.jsonl")


# -- scoring ------------------------------------------------------------------------


def test_normalize_answer_is_squad_style_with_punctuation_as_spaces():
    assert normalize_answer("The  Eiffel-Tower, in PARIS!") == "eiffel tower in paris"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("3.5 kg, 1,000 people; $5 and 5%") == "3.5 kg 1000 people 5 and 5"


@pytest.mark.parametrize(
    ("text", "answers", "expected"),
    [
        ("It is in Paris, France [S1].", ["paris"], True),
        ("Wilhelm Conrad Röntgen won it.", ["Wilhelm Conrad Röntgen"], True),
        ("May 18, 2018.", ["May 18, 2018"], True),
        ("In 19012.", ["1901"], False),
        ("It is in Lyon.", ["Paris", "the city of Paris"], False),
        ("the", ["The"], False),
        # a decimal point is no thousands comma; a symbol no part of a number's word
        ("The answer is 3.5", ["35"], False),
        ("35 kg", ["3.5"], False),
        ("1,000 people came", ["1000"], True),
        ("Answer: $5", ["5"], True),
        ("It is the Eiffel Tower.", ["Eiffel-Tower"], True),
        # scripts written without spaces match anywhere
        ("東京です [S1]", ["東京"], True),
        ("大阪です", ["東京"], False),
    ],
)
def test_answer_correct(text, answers, expected):
    assert answer_correct(text, answers) is expected


def test_an_echo_of_the_question_is_no_answer():
    # (2 of 100 NQ queries scored when the model repeated the question, which held the answer)
    question = "Which asteroid is brighter, Vesta or Ceres?"
    assert not answer_correct("Which asteroid is brighter, Vesta or Ceres?", ["Vesta"], question)
    assert not answer_correct(
        "You ask: which asteroid is brighter, Vesta or Ceres? I don't know.", ["Vesta"], question
    )
    assert answer_correct("Which asteroid is brighter, Vesta or Ceres? Vesta is.", ["Vesta"], question)
    assert answer_correct("Vesta is brighter.", ["Vesta"], question)


def test_gold_position_counts_merged_sources():
    doc = "Alpha one two. Beta three four. Gamma five six."
    cands = [
        {"id": "x", "text": "Unrelated words here.", "score": 3.0},
        {"id": "w0", "text": doc[:15], "doc_id": "d", "start": 0, "end": 15, "score": 2.0},
        {"id": "w1", "text": doc[15:], "doc_id": "d", "start": 15, "end": len(doc), "score": 1.0},
    ]
    result = satchel.pack(cands, "q?")
    assert list(result.labels.values()) == ["x", ["w0", "w1"]]
    assert gold_position(result, ["w1"]) == 2
    assert gold_position(result, ["nope"]) is None


def test_a_gold_chunk_sent_as_its_copy_counts_as_present_and_cited():
    # Dropped as an exact copy of a higher-ranked chunk, its text is in the prompt: the
    # evidence is there, and an answer citing the copy cites it.
    text = "The Golden Bridge was opened in 1937 after four years of work."
    q = {
        "question": "When did the Golden Bridge open?",
        "answers": ["1937"],
        "gold": ["gold"],
        "candidates": [
            {"id": "other", "text": "Ferries crossed the strait before the bridge.", "score": 0.95},
            {"id": "copy", "text": text, "score": 0.9},
            {"id": "gold", "text": text, "score": 0.8},
        ],
    }
    run = {r.variant: r for r in ablate_query(q, FakeClient(read="last"), permutations=0).runs}["full"]
    assert (run.gold_position, run.evidence_present, run.cited_gold) == (2, True, True)


# -- variants -----------------------------------------------------------------------


def test_variants_change_one_decision_each():
    client = FakeClient()
    row = ablate_query(query(gold_rank=2, n=5), client, permutations=3, seed=7, model="gpt-4o")
    assert [r.variant for r in row.runs] == [*VARIANTS, "perm1", "perm2", "perm3"]
    full = row.run("full").sources
    assert [s[0] for s in full] == ["q-d1", "q-gold", "q-d3", "q-d4", "q-d5"]
    assert row.run("top1").sources == (("q-d1",),)
    assert row.run("reversed").sources == full[::-1]
    for perm in row.permutation_runs:
        assert sorted(perm.sources) == sorted(full)
    assert len({perm.sources for perm in row.permutation_runs} | {full}) > 1
    # the same seed and index give the same shuffles; the grounded short-answer system prompt is sent
    again = ablate_query(query(gold_rank=2, n=5), FakeClient(), permutations=3, seed=7, model="gpt-4o")
    assert [r.sources for r in again.permutation_runs] == [r.sources for r in row.permutation_runs]
    assert client.calls[0][0] == {"role": "system", "content": ABLATION_SYSTEM}


def test_reversed_follows_the_users_order():
    row = ablate_query(query(gold_rank=1, n=5), FakeClient(), permutations=0, order="edges", model="gpt-4o")
    full = [s[0] for s in row.run("full").sources]
    assert full == ["q-gold", "q-d3", "q-d5", "q-d4", "q-d2"]
    assert [s[0] for s in row.run("reversed").sources] == full[::-1]


def test_identical_prompts_are_asked_once():
    client = FakeClient()
    row = ablate_query(query(n=1), client, permutations=2, model="gpt-4o")
    # one source: every variant sends the same prompt, so the model answers once
    assert len(client.calls) == 1
    assert {r.reused_from for r in row.runs[1:]} == {"full"}
    assert len({r.prompt_sha256 for r in row.runs}) == 1


def test_uncompressed_equals_full_without_compression():
    client = FakeClient()
    row = ablate_query(query(gold_rank=2), client, permutations=0, model="gpt-4o")
    assert row.run("uncompressed").reused_from == "full"
    assert row.run("uncompressed").sources == row.run("full").sources
    assert len(client.calls) == 3  # full, top1, reversed


def test_variants_that_pack_a_few_candidates_strip_boilerplate_as_full_does():
    # A footer in five documents goes when all five are packed; packed alone (top1) or as
    # the two full kept (uncompressed), it recurred too rarely to go: one more decision changed.
    footer = "Copyright 2024 Example Corporation, all rights reserved worldwide."
    q = {
        "question": "Where is the tower?",
        "answers": ["Paris"],
        "gold": ["d0"],
        "candidates": [
            {
                "id": f"d{i}",
                "text": f"Fact {i}: the tower stands in city number {i}.\n{footer}",
                "score": 1 - i / 10,
            }
            for i in range(5)
        ],
    }
    row = ablate_query(q, FakeClient(), permutations=0, model="gpt-4o", strip_boilerplate=True, max_sources=2)
    assert row.run("uncompressed").prompt_sha256 == row.run("full").prompt_sha256
    assert row.run("uncompressed").reused_from == "full"
    assert "Copyright" not in row.run("top1").answer and row.run("top1").sources == (("d0",),)


def compressible(qid: str = "c") -> dict:
    """A distractor first, then a long gold chunk that fits only when compressed."""
    filler = " ".join(f"Sentence {i} is filler about iron beams and paint colours." for i in range(12))
    return {
        "id": qid,
        "question": "Where is the Eiffel Tower?",
        "candidates": [
            {"id": f"{qid}-d", "text": "Distractor about towers in Lyon and other cities.", "score": 3.0},
            {
                "id": f"{qid}-gold",
                "text": f"The tower opened in 1889. {filler} The Eiffel Tower is in Paris.",
                "score": 2.0,
            },
        ],
        "answers": ["Paris"],
        "gold": [f"{qid}-gold"],
    }


def test_uncompressed_sends_originals_when_full_compresses():
    client = FakeClient("last")
    result = run_ablation(
        [compressible()], client, permutations=0, model="gpt-4o", source_budget=80, compress=True
    )
    row = result.queries[0]
    full, unc = row.run("full"), row.run("uncompressed")
    assert full.compressed == 1 and unc.compressed == 0
    # The same items, sent as their originals: only the representation changed.
    assert full.sources == unc.sources == (("c-d",), ("c-gold",))
    assert unc.prompt_sha256 != full.prompt_sha256 and unc.prompt_tokens > full.prompt_tokens
    assert (full.correct, unc.correct) == (True, True)
    assert result.compression_active
    compression = rungs(result)["compression is the loss channel"]
    assert compression.holds is False and "uncompressed 100% vs full 100%" in compression.finding
    assert "equals (a)" not in render_report(result)


class NeedsTheWholeText(FakeClient):
    """Answers right only from the gold text as it was retrieved: the sentence its answer
    rests on is one that compression takes out (seed 003's "fluent, plausible, and wrong in
    exactly one detail")."""

    def complete(self, messages, *, max_tokens=256, temperature=0.0):
        self.calls.append(messages)
        whole = "Sentence 11 is filler" in messages[-1]["content"]
        return Answer("Paris [S2]" if whole else "Lyon [S1]", "fake", None, None, 0.01, "stop")


def test_ladder_compression_is_the_loss_channel_when_uncompressed_beats_full():
    # Seed 003: "If (d) beats (a), compression is the loss channel. Look at what the
    # summarizer dropped, and route high-risk evidence (numbers, negations, identifiers)
    # verbatim while compressing only the low-risk material."
    result = run_ablation(
        [compressible(f"c{i}") for i in range(6)],
        NeedsTheWholeText(),
        permutations=0,
        model="gpt-4o",
        source_budget=80,
        compress=True,
    )
    assert (result.summary("full").accuracy, result.summary("uncompressed").accuracy) == (0.0, 1.0)
    rung = rungs(result)["compression is the loss channel"]
    assert rung.holds is True and rung.verdict == "holds"
    assert "uncompressed 100% vs full 0%" in rung.finding and "not significant" not in rung.finding
    assert rung.numbers["uncompressed_only_correct"] == 6 and rung.numbers["significant"]
    assert rung.action == (
        "Look at what compression dropped; send numbers, negations and identifiers verbatim and "
        "compress only low-risk material."
    )
    assert "**compression is the loss channel (uncompressed vs full): HOLDS.**" in render_report(result)


def test_scores_per_variant():
    row = ablate_query(query(gold_rank=2), FakeClient("first"), permutations=0, model="gpt-4o")
    full, top1, rev = row.run("full"), row.run("top1"), row.run("reversed")
    assert (full.correct, full.cited_gold, full.gold_position) == (False, False, 2)
    assert full.cited_ids == ("q-d1",) and full.answer.endswith("[S1]")
    assert (top1.correct, top1.evidence_present, top1.gold_position) == (False, False, None)
    assert (rev.gold_position, rev.correct) == (3, False)
    assert (
        full.prompt_tokens
        == satchel.pack(
            [c for c in query(gold_rank=2)["candidates"]],
            "Where is the Eiffel Tower?",
            system=ABLATION_SYSTEM,
            reserve_answer=48,
        ).tokens.prompt
    )
    row = ablate_query(query(gold_rank=1), FakeClient("first"), permutations=0, model="gpt-4o")
    assert row.run("full").correct and row.run("full").cited_gold and row.run("full").gold_position == 1
    assert row.gold_in_candidates


def test_bad_arguments_are_config_errors():
    with pytest.raises(satchel.ConfigError, match="permutations=-1"):
        ablate_query(query(), FakeClient(), permutations=-1)
    with pytest.raises(satchel.ConfigError, match="permutations=1000000 must be a whole number from 0 to"):
        ablate_query(query(), FakeClient(), permutations=10**6)
    with pytest.raises(satchel.ConfigError, match="unknown pack option"):
        run_ablation([query()], FakeClient(), model="gpt-4o", nonsense=1)
    with pytest.raises(satchel.InputError, match="missing key"):
        ablate_query({"question": "q?"}, FakeClient())


# -- the ladder ---------------------------------------------------------------------


def rungs(result):
    return {r.name.split(" (")[0]: r for r in result.ladder()}


def test_ladder_packing_harm_when_top1_beats_full():
    # a model that reads the last source: the best-ranked gold is buried by every distractor after it
    result = run_ablation(
        [query(qid=f"q{i}") for i in range(4)], FakeClient("last"), permutations=3, model="gpt-4o"
    )
    full, top1 = result.summary("full"), result.summary("top1")
    assert (full.accuracy, top1.accuracy) == (0.0, 1.0)
    harm = rungs(result)["packing adds harm"]
    assert harm.holds is True
    assert "top1 100% vs full 0%" in harm.finding and "max_sources" in harm.action
    assert harm.numbers["top1_only_correct"] == 4 and harm.numbers["sign_test_p"] == 0.125
    # four queries cannot make a difference significant: the finding says so
    assert not harm.numbers["significant"] and "not significant" in harm.finding
    assert result.summary("reversed").accuracy == 1.0
    placement = rungs(result)["placement is a loss channel"]
    assert placement.holds == (result.order_sensitivity > 0)
    compression = rungs(result)["compression is the loss channel"]
    assert compression.holds is None and "equals (a) full" in compression.finding


def test_ladder_all_fail_points_upstream():
    lost = query(qid="lost")
    lost["gold"], lost["answers"] = ["not-retrieved"], ["Lyon"]
    result = run_ablation(
        [lost, query(gold_rank=3, n=5, qid="x")], FakeClient("first"), permutations=0, model="gpt-4o"
    )
    fail = rungs(result)["all variants fail"]
    assert fail.holds is True
    assert fail.numbers == {
        "all_fail": 2,
        "share": 1.0,
        "gold_not_retrieved": 1,
        "gold_not_sent": 0,
        "gold_sent_not_used": 1,
    }
    assert rungs(result)["packing adds harm"].holds is False
    # (without permutations, full and reversed are the orders compared: both wrong here)
    assert result.order_sensitivity == 0.0


def test_order_sensitivity_counts_queries_whose_correctness_flips():
    result = run_ablation(
        [query(gold_rank=2, n=6, qid=f"q{i}") for i in range(6)],
        FakeClient("first"),
        permutations=4,
        seed=1,
        model="gpt-4o",
    )
    flips = [q for q in result.queries if len({r.correct for r in q.permutation_runs}) > 1]
    assert result.order_sensitivity == len(flips) / 6
    assert 0 < result.order_sensitivity
    curve = {p["position"]: p for p in result.position_curve()["permutations"]}
    assert curve[1]["accuracy"] == 1.0  # the fake is right exactly when gold comes first
    assert all(p["accuracy"] == 0.0 for pos, p in curve.items() if pos != 1)


# -- outputs ------------------------------------------------------------------------


@pytest.fixture
def small_result():
    return run_ablation(
        [query(gold_rank=r, qid=f"q{r}") for r in (1, 2, 3)],
        FakeClient("first"),
        permutations=2,
        model="gpt-4o",
    )


def test_results_json_contract(tmp_path, small_result):
    written = write_outputs(small_result, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert list(data["variants"]) == [*VARIANTS, "perm1", "perm2"]
    for summary in data["variants"].values():
        assert {"accuracy", "citation_accuracy", "evidence_present_rate", "mean_prompt_tokens"} <= set(
            summary
        )
    assert data["variants"]["full"]["accuracy"] == pytest.approx(1 / 3, abs=1e-4)
    assert len(data["queries"]) == 3
    row = data["queries"][1]["variants"]["full"]
    assert {
        "correct",
        "cited_gold",
        "evidence_present",
        "gold_position",
        "prompt_tokens",
        "latency_s",
        "answer",
        "sources",
    } <= set(row)
    assert [r["name"] for r in data["ladder"]][0].startswith("packing adds harm")
    assert data["compression_active"] is False
    assert written["report"].endswith("report.md")


def test_run_is_timed_with_the_clock_seam():
    ticks = iter([10.0, 70.0])
    result = run_ablation(
        [query(n=1)], FakeClient(), permutations=0, model="gpt-4o", clock=lambda: next(ticks)
    )
    assert result.elapsed_s == 60.0
    data = result.to_dict()
    assert data["elapsed_s"] == 60.0 and data["model_calls"] == 1  # one source: one prompt for all
    assert "1 model calls in 1.0 minutes" in render_report(result)
    assert result.summary("top1").mean_latency_s is None  # every top1 answer was reused


def test_report_prints_the_ladder_with_numbers(small_result):
    report = render_report(small_result)
    assert "| full | 33% (1/3) |" in report
    assert "**packing adds harm (top1 vs full): does not hold.** top1 33% vs full 33%" in report
    assert "(d) `uncompressed` equals (a) `full`" in report
    assert "## Accuracy by the gold source's position" in report


def test_the_per_query_table_keeps_each_question_on_its_row():
    q = query(qid="m")
    q["question"] = "Where is\nthe | tower?"
    report = render_report(run_ablation([q], FakeClient(), permutations=0, model="gpt-4o"))
    assert "| 1 | Where is the \\| tower? | " in report and "\nthe" not in report


def test_an_interrupted_write_leaves_each_file_whole(tmp_path, small_result, monkeypatch):
    # (a second Ctrl+C while an interrupted run was written left a cut results.json where
    # the last run's whole one had been)
    import satchel.ablate as harness

    write_outputs(small_result, tmp_path)
    before = {name: (tmp_path / name).read_text() for name in ("results.json", "report.md")}

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_outputs(small_result, tmp_path, command="satchel ablate again")
    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert not list(tmp_path.glob("*.partial"))


def test_pngs_written(tmp_path, small_result):
    written = write_outputs(small_result, tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "accuracy_by_position.png",
        "accuracy_by_variant.png",
    ]
    assert written["plots_note"] is None


def test_without_matplotlib_the_report_says_how_to_get_plots(tmp_path, small_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    written = write_outputs(small_result, tmp_path)
    assert written["plots"] == [] and not list(tmp_path.glob("*.png"))
    assert "pip install 'satchel[plots]'" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "results.json").read_text())["plots_note"].startswith("PNG plots skipped")


# -- the command --------------------------------------------------------------------


@pytest.fixture
def fake_spec(monkeypatch):
    specs = []

    def client_from_spec(spec, base_url=None, **options):
        specs.append((spec, base_url, options))
        return FakeClient("first", model=spec.partition(":")[2] or "gpt-4o")

    monkeypatch.setattr("satchel.clients.client_from_spec", client_from_spec)
    return specs


def test_cli_writes_report_results_and_plots(tmp_path, fake_spec, capsys):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(gold_rank=r, qid=f"q{r}") for r in (1, 2, 3)])
    out = tmp_path / "out"
    code = main(
        [
            "ablate",
            str(path),
            "--model",
            "openai:gpt-4o-mini",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(out),
            "--permutations",
            "2",
            "--limit",
            "2",
            "--max-sources",
            "3",
        ]
    )
    assert code == 0
    assert fake_spec == [("openai:gpt-4o-mini", "http://127.0.0.1:9/v1", {"timeout": 60.0, "spell": option})]
    data = json.loads((out / "results.json").read_text())
    assert data["queries_total"] == 2
    assert data["config"]["model"] == "gpt-4o-mini" and data["config"]["max_sources"] == 3
    assert (out / "report.md").read_text().startswith("# Satchel ablation report")
    printed = capsys.readouterr()
    assert "full  accuracy" in printed.out and "wrote" in printed.out
    assert "ablate [" in printed.err  # the progress bar
    assert len(list(out.glob("*.png"))) == 2  # matplotlib is in the test extra


def test_queries_answered_before_the_model_fails_are_written(tmp_path, monkeypatch, capsys):
    # (one failure at query 90 of 100 lost the whole run)
    class Failing(FakeClient):
        def complete(self, messages, **kwargs):
            if len(self.calls) >= 5:
                raise satchel.ModelError("the server kept failing (HTTP 503)")
            return super().complete(messages, **kwargs)

    monkeypatch.setattr("satchel.clients.client_from_spec", lambda spec, base_url=None, **o: Failing())
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(gold_rank=r, qid=f"q{r}") for r in (1, 2, 3)])
    out = tmp_path / "out"
    code = main(["ablate", str(path), "--model", "openai:x", "--out", str(out), "--permutations", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "query 2 of 3 ('q2'): the server kept failing (HTTP 503)" in err
    assert f"the 1 queries answered before it are written to {out}" in err
    written = json.loads((out / "results.json").read_text())
    assert (written["queries_total"], written["queries_given"]) == (1, 3)
    # (and the report says it covers only those: read later, it passed for the whole set)
    assert written["stopped"].startswith("query 2 of 3 ('q2'): the server kept failing")
    assert (out / "report.md").read_text().split("\n")[2:4] == [
        "**Stopped early: 1 of 3 queries answered.** The run ended at query 2 of 3 ('q2'): the server "
        "kept failing (HTTP 503). Every figure and conclusion below covers only the 1 queries answered "
        "before it.",
        "",
    ]
    # --out cannot be written at the end: the results go elsewhere, and the error says both
    fill_disk_at(monkeypatch, out)
    code = main(["ablate", str(path), "--model", "openai:x", "--out", str(out), "--permutations", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "the server kept failing (HTTP 503)" in err
    rescue = Path(err.split("they are in ")[1].split()[0].rstrip(".;"))
    try:
        assert json.loads((rescue / "results.json").read_text())["queries_total"] == 1
    finally:
        shutil.rmtree(rescue)


def test_cli_takes_pack_options_from_json(tmp_path, fake_spec):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [compressible()])
    options = tmp_path / "options.json"
    options.write_text(json.dumps({"compress": True, "source_budget": 500, "system": "Be brief."}))
    out = tmp_path / "o"
    argv = ["ablate", str(path), "--model", "openai:gpt-4o", "--out", str(out), "--options", str(options)]
    assert main([*argv, "--source-budget", "80", "--permutations", "0"]) == 0
    data = json.loads((out / "results.json").read_text())
    assert (
        data["config"]["compress"] is True and data["config"]["source_budget"] == 80
    )  # the command line wins
    assert data["config"]["system"] == "Be brief."
    assert data["compression_active"] is True


def test_cli_options_that_are_the_harnesss_own_are_refused(tmp_path, fake_spec, capsys):
    # ("seed" in --options collided with --seed: a TypeError traceback)
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query()])
    for name in ("seed", "on_call", "clock", "permutations"):
        (tmp_path / "o.json").write_text(json.dumps({name: 5}))
        argv = ["ablate", str(path), "--out", str(tmp_path / "o"), "--options", str(tmp_path / "o.json")]
        assert main(argv) == 2
        assert f"unknown pack option(s) {name}" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_cli_out_that_cannot_be_written_is_refused_before_the_run(tmp_path, fake_spec, capsys):
    # (os.access says yes to root for /proc: the run went through, and its results were
    # lost at the end to a traceback)
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query()])
    assert main(["ablate", str(path), "--out", "/proc/satchel-nope"]) == 2
    assert "--out /proc/satchel-nope: cannot write there" in capsys.readouterr().err


def test_cli_permutations_out_of_range_are_refused_before_the_model_loads(tmp_path, fake_spec, capsys):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query()])
    assert main(["ablate", str(path), "--out", str(tmp_path / "o"), "--permutations", "101"]) == 2
    assert "--permutations 101 must be from 0 to 100" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_bad_options_file(tmp_path, fake_spec, capsys):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query()])
    (tmp_path / "o.json").write_text("[1]")
    assert (
        main(["ablate", str(path), "--out", str(tmp_path / "o"), "--options", str(tmp_path / "o.json")]) == 2
    )
    assert "must hold a JSON object of pack() options" in capsys.readouterr().err
    # (a syntax error said as the request readers say it: the same words on every Python)
    (tmp_path / "o.json").write_text('{"max_sources": 5,\n}')
    assert (
        main(["ablate", str(path), "--out", str(tmp_path / "o"), "--options", str(tmp_path / "o.json")]) == 2
    )
    err = capsys.readouterr().err
    assert "is not valid JSON (trailing comma at line 1 column 18; JSON allows none before ] or })" in err


def test_cli_local_model_gets_window_options(tmp_path, fake_spec):
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query()])
    assert (
        main(
            [
                "ablate",
                str(path),
                "--out",
                str(tmp_path / "o"),
                "--pack-model",
                "gpt-4o",
                "--n-threads",
                "1",
                "--permutations",
                "0",
            ]
        )
        == 0
    )
    assert fake_spec == [("local", None, {"n_ctx": 2048, "n_threads": 1, "spell": option})]


def test_cli_bad_query_file_is_one_line_error(tmp_path, fake_spec, capsys):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "q?", "candidates": []}) + "\n")
    assert main(["ablate", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "line 1: missing key(s) 'answers', 'gold'" in err
    assert fake_spec == []  # no model is loaded for a bad query set


def test_a_significant_difference_carries_no_caution():
    result = run_ablation(
        [query(qid=f"q{i}") for i in range(6)], FakeClient("last"), permutations=0, model="gpt-4o"
    )
    harm = rungs(result)["packing adds harm"]
    assert harm.numbers["sign_test_p"] == 0.0312 and harm.numbers["significant"]
    assert harm.holds and "not significant" not in harm.finding


def test_placement_counts_reversed_among_the_orders(monkeypatch):
    # (with 2+ permutations only they were compared: a model right in full and wrong reversed
    # on every query was read "Order does not change answers here")
    import satchel.ablate as harness

    monkeypatch.setattr(harness, "permuted_order", lambda base, seed: base)  # (each permutation as full)
    queries = [query(qid=f"q{i}") for i in range(10)]
    result = run_ablation(queries, FakeClient("first"), permutations=2, model="gpt-4o")
    assert result.summary("reversed").accuracy == 0.0 and result.summary("full").accuracy == 1.0
    placement = rungs(result)["placement is a loss channel"]
    assert placement.holds is True and result.order_sensitivity == 1.0
    assert "on 10 of 10 queries" in placement.finding and "sign test p=0.002)" in placement.finding
    # one source in every prompt: no order differs from another, and the rung says it was not tested
    alone = run_ablation([query(n=1, qid="one")], FakeClient("first"), permutations=2, model="gpt-4o")
    placement = rungs(alone)["placement is a loss channel"]
    assert placement.holds is None and placement.action.startswith("Not tested")


def test_a_query_that_cannot_be_packed_is_named_and_the_rows_before_it_kept():
    # (a question longer than the window on query 2 lost query 1's answers, and the error
    # named no query)
    too_long = query(qid="long")
    too_long["question"] = "Where is it? " * 3000
    with pytest.raises(harness_partial()) as caught:
        run_ablation([query(qid="ok"), too_long], FakeClient(), permutations=0, model="gpt-4")
    assert str(caught.value).startswith("query 2 of 2 ('long'): ")
    assert [q.id for q in caught.value.result.queries] == ["ok"]
    with pytest.raises(satchel.BudgetError, match=r"^query 1 of 1 \('long'\): "):
        run_ablation([too_long], FakeClient(), permutations=0, model="gpt-4")


def harness_partial():
    from satchel.ablate import PartialAblation

    return PartialAblation


def test_an_answer_reserve_below_max_tokens_is_refused():
    # (answers were cut at what the window left: top1 had more room to answer than full)
    with pytest.raises(satchel.ConfigError, match=r"reserve_answer=20 leaves less room than max_tokens=48"):
        run_ablation(
            [query()], FakeClient(), permutations=0, max_tokens=48, reserve_answer=20, model="gpt-4o"
        )
    assert run_ablation(
        [query()], FakeClient(), permutations=0, max_tokens=48, reserve_answer=48, model="gpt-4o"
    )


def test_compression_that_never_acted_is_told_apart_from_compression_off():
    # (with compress=True and nothing over budget, the ladder said "Turn compression on")
    on = rungs(run_ablation([query()], FakeClient(), permutations=0, model="gpt-4o", compress=True))
    off = rungs(run_ablation([query()], FakeClient(), permutations=0, model="gpt-4o"))
    assert on["compression is the loss channel"].holds is None
    assert on["compression is the loss channel"].action.startswith(
        "Compression was on, but nothing overflowed"
    )
    assert off["compression is the loss channel"].action == "Turn compression on (compress=True) to test it."


def test_the_compression_rung_counts_queries_where_the_originals_did_not_all_fit():
    # ((d) sends (a)'s items uncompressed; where the window cannot hold them all, (d) differs
    # by admission too, and the rung blamed or credited compression for it unsaid)
    long = " ".join(f"Sentence {k} says the tower at site {k} is tall and old." for k in range(30))
    q = query(n=1)
    q["candidates"] += [
        {"id": "d1", "score": 0.5, "text": long},
        {"id": "d2", "score": 0.4, "text": long.replace("tower", "bridge")},
    ]
    result = run_ablation(
        [q],
        FakeClient(),
        permutations=0,
        model="gpt-4o",
        context_window=700,
        compress=True,
        role_caps={"supporting": 0.3},
        reserve_answer=48,
    )
    rung = rungs(result)["compression is the loss channel"]
    assert rung.numbers["uncompressed_sent_fewer_items"] == 1
    assert "on 1 of 1 queries (d) could not send every item (a) sent" in rung.finding


def test_a_rung_that_holds_on_no_significant_difference_is_labelled_not_significant(
    tmp_path, fake_spec, capsys
):
    # (gold first on 4 queries: right in full, wrong reversed; p=0.125 was printed
    # "[HOLDS] placement is a loss channel: ... not significant ...: a hint ..., not a finding")
    result = run_ablation(
        [query(qid=f"q{i}") for i in range(4)], FakeClient(), permutations=0, model="gpt-4o"
    )
    placement = rungs(result)["placement is a loss channel"]
    assert placement.holds is True and not placement.numbers["significant"]
    assert placement.verdict == "not significant" and "not significant" in placement.finding
    assert "**placement is a loss channel (permutations, reversed): not significant.**" in render_report(
        result
    )
    assert result.to_dict()["ladder"][2]["verdict"] == "not significant"
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(qid=f"q{i}") for i in range(4)])
    argv = ["ablate", str(path), "--model", "openai:gpt-4o", "--out", str(tmp_path / "o")]
    assert main([*argv, "--permutations", "0"]) == 0
    printed = capsys.readouterr().out
    assert "[not significant] placement is a loss channel" in printed and "[HOLDS]" not in printed
    # ten such queries are significant (p=0.002): the rung holds
    result = run_ablation(
        [query(qid=f"q{i}") for i in range(10)], FakeClient(), permutations=0, model="gpt-4o"
    )
    assert rungs(result)["placement is a loss channel"].verdict == "holds"
    assert "**placement is a loss channel (permutations, reversed): HOLDS.**" in render_report(result)


class Interrupted(FakeClient):
    """Ctrl+C while the model answers its call number ``at`` (counted from 0)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def complete(self, messages, **kwargs):
        if len(self.calls) >= self.at:
            raise KeyboardInterrupt
        return super().complete(messages, **kwargs)


def test_queries_answered_before_ctrl_c_are_kept():
    from satchel.ablate import InterruptedAblation

    queries = [query(gold_rank=r, qid=f"q{r}") for r in (1, 2, 3)]
    with pytest.raises(InterruptedAblation) as caught:
        run_ablation(queries, Interrupted(at=5), permutations=0, model="gpt-4o")
    # (still a KeyboardInterrupt: a caller that does not look for it is interrupted as before)
    assert isinstance(caught.value, KeyboardInterrupt)
    assert str(caught.value) == "query 2 of 3 ('q2'): interrupted (Ctrl+C)"
    assert [q.id for q in caught.value.result.queries] == ["q1"]
    assert caught.value.result.queries_given == 3
    # nothing answered yet: nothing to keep, and Ctrl+C goes through as it came
    with pytest.raises(KeyboardInterrupt) as caught:
        run_ablation(queries, Interrupted(at=0), permutations=0, model="gpt-4o")
    assert type(caught.value) is KeyboardInterrupt


def test_cli_writes_the_queries_answered_before_ctrl_c_and_exits_130(tmp_path, monkeypatch, capsys):
    # (Ctrl+C four minutes into a run of an hour printed "satchel: interrupted" and left
    # --out empty: the queries already answered were lost)
    client = Interrupted(at=5)
    monkeypatch.setattr("satchel.clients.client_from_spec", lambda spec, base_url=None, **o: client)
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(gold_rank=r, qid=f"q{r}") for r in (1, 2, 3)])
    out = tmp_path / "out"

    def ablate(out_dir=out):
        client.calls.clear()
        argv = ["ablate", str(path), "--model", "openai:x", "--out", str(out_dir), "--permutations", "0"]
        return main(argv), capsys.readouterr().err

    code, err = ablate()
    assert code == 130
    assert "satchel: query 2 of 3 ('q2'): interrupted (Ctrl+C); writing the 1 queries answered" in err
    assert f"satchel: the 1 of 3 queries answered are written to {out} (report.md and results.json" in err
    written = json.loads((out / "results.json").read_text())
    assert (written["queries_total"], written["queries_given"]) == (1, 3)
    assert written["stopped"] == "query 2 of 3 ('q2'): interrupted (Ctrl+C)"
    report = (out / "report.md").read_text().split("\n")
    assert report[2].startswith("**Stopped early: 1 of 3 queries answered.** The run ended at query 2 of 3")

    # --out cannot be written after all: they go elsewhere, and the message says where
    fill_disk_at(monkeypatch, out)
    code, err = ablate()
    assert code == 130 and "cannot write the results there (No space left on device)" in err
    rescue = Path(err.split("they are in ")[1].split()[0])
    try:
        assert json.loads((rescue / "results.json").read_text())["queries_total"] == 1
    finally:
        shutil.rmtree(rescue)

    def interrupted_write(result, out_dir, **kwargs):
        raise KeyboardInterrupt

    # a second Ctrl+C while they are written aborts the writing
    monkeypatch.setattr("satchel.ablate.write_outputs", interrupted_write)
    code, err = ablate(tmp_path / "again")
    assert code == 130 and err.endswith("satchel: interrupted\n")
    # nothing answered yet: the message says nothing was written
    client.at = 0
    code, err = ablate(tmp_path / "none")
    assert code == 130
    assert (
        f"satchel: interrupted before any query was answered; nothing was written to {tmp_path / 'none'}"
        in err
    )


def test_cli_a_server_model_satchel_does_not_know_is_told_to_give_pack_model(tmp_path, fake_spec, capsys):
    # (vLLM's and Ollama's names are none Satchel knows: the README's "--model openai:NAME
    # --base-url URL" failed, and the advice named --context-window and --tokenizer, not --pack-model)
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [query(qid=f"q{i}") for i in range(2)])
    out = tmp_path / "o"
    argv = [
        "ablate",
        str(path),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        str(out),
        "--permutations",
        "0",
    ]
    assert main([*argv, "--model", "openai:llama3.1:8b"]) == 2
    err = capsys.readouterr().err
    assert "--model openai:llama3.1:8b: Satchel does not know 'llama3.1:8b'" in err
    assert "pass --pack-model with a model it knows whose window is no larger than the answering" in err
    assert "better some 10% smaller" in err
    assert not (out / "results.json").exists()
    # the advice works as given: packed for gpt-4o-mini in the server's window, answered by the server's model
    assert (
        main(
            [
                *argv,
                "--model",
                "openai:llama3.1:8b",
                "--pack-model",
                "gpt-4o-mini",
                "--context-window",
                "4096",
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    assert (data["model"], data["config"]["model"], data["config"]["context_window"]) == (
        "llama3.1:8b",
        "gpt-4o-mini",
        4096,
    )
    # a name close to one Satchel knows is named
    assert main([*argv, "--model", "openai:gpt4o"]) == 2
    assert "; did you mean --model openai:gpt-4o?" in capsys.readouterr().err

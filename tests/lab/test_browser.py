"""The real lab page in Debian's Chromium, driven by Playwright.

Needs ``pip install '.[lab,browser]'`` and ``/usr/bin/chromium`` (``apt-get install
chromium``; never a browser downloaded by Playwright). Screenshots go to
``$SATCHEL_ARTIFACTS`` (default ``./artifacts``); the Ask and Trace ones are also
copied to ``docs/screenshots/`` for the README.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

import satchel  # noqa: E402
from satchel.cli.pack import example_request  # noqa: E402
from satchel.lab.app import create_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("SATCHEL_ARTIFACTS") or "artifacts")
WAIT_MS = 20_000  # an upper bound on waiting for the page, not an assertion about speed

EXAMPLE = example_request()


def library(**options) -> satchel.PackResult:
    """What the library gives for the example under the page's settings."""
    return satchel.pack(
        EXAMPLE["candidates"], EXAMPLE["question"], model="gpt-4o", reserve_answer=512, dedupe=True, **options
    )


# -- a real server on a free loopback port --------------------------------------------------


@dataclass
class FakeAnswer:
    text: str
    model: str = "fake-model"
    prompt_tokens: int | None = 321
    completion_tokens: int | None = 12
    latency_s: float | None = 0.1
    finish_reason: str = "stop"


class FakeModel:
    model = "gpt-4o"  # (a server model Satchel knows: the lab packs for it)

    def complete(self, messages, max_tokens=512, temperature=0.0):
        return FakeAnswer("You have 30 days [S1]; refunds take 5 business days [S2]. Also [S99].")


def serve(app) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    ready = threading.Event()
    for _ in range(400):
        if server.started:
            ready.set()
            break
        ready.wait(0.025)
    assert server.started, "the lab server did not start"
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from serve(create_app(model="", allowed_hosts=["127.0.0.1", "localhost"]))


@pytest.fixture(scope="module")
def url_with_model() -> Iterator[str]:
    yield from serve(create_app(model="fake", client_factory=lambda spec: FakeModel()))


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (never `playwright install`)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Lab:
    page: object
    dialogs: list
    errors: list


@pytest.fixture
def open_lab(browser) -> Iterator[Callable[[str], Lab]]:
    contexts = []

    def opener(address: str) -> Lab:
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        lab = Lab(page, [], [])
        page.on("dialog", lambda d: (lab.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: lab.errors.append(str(e)))
        page.goto(address)
        page.wait_for_selector('body[data-ready="1"]', timeout=WAIT_MS)
        return lab

    yield opener
    for c in contexts:
        c.close()


def wait_for_pack(page, result: satchel.PackResult) -> None:
    """Wait until the page shows the pack whose prompt hash is ``result``'s."""
    sha = result.to_dict()["prompt_sha256"]
    page.wait_for_selector(f'#pack-status[data-sha="{sha}"]', state="attached", timeout=WAIT_MS)


def set_budget(page, value: int) -> None:
    page.fill("#budget", str(value))


def edges_at_300(open_lab, url):
    """The example packed at a source budget of 300 in the edges order, as several tests see
    it: the page once it shows that pack, and the library's result for it."""
    page = open_lab(url).page
    set_budget(page, 300)
    page.click('#orders button[data-order="edges"]')
    expected = library(source_budget=300, order="edges")
    wait_for_pack(page, expected)
    return page, expected


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# -- the tests ------------------------------------------------------------------------------------


def test_contract_controls_exist(open_lab, url):
    page = open_lab(url).page
    assert page.get_by_role("tab", name="Ask", exact=True).count() == 1
    assert page.get_by_role("tab", name="Trace", exact=True).count() == 1
    assert page.locator('input[type="range"]#budget').count() == 1
    assert page.get_by_label("Context budget").count() == 1
    orders = page.locator("#orders button").evaluate_all(
        "bs => bs.map(b => [b.dataset.order, b.textContent])"
    )
    assert sorted(o for o, _ in orders) == sorted(satchel.ORDERS)
    assert [o for o, _ in orders][:3] == ["relevance", "edges", "chronological"]
    assert dict(orders)["edges"] == "best at the edges"
    assert page.get_by_text("Retrieval settings").count() == 1


def test_slider_changes_the_pack(open_lab, url):
    lab = open_lab(url)
    page = lab.page
    start = int(page.input_value("#budget"))
    wait_for_pack(page, library(source_budget=start))
    kept_before = page.locator("#ask-kept .chip").count()
    set_budget(page, 120)
    small = library(source_budget=120)
    wait_for_pack(page, small)
    assert page.locator("#ask-kept .chip").count() == len(small.kept) < kept_before
    assert page.text_content("#budget-value") == "120 tokens"
    set_budget(page, int(page.get_attribute("#budget", "max")))
    wait_for_pack(page, library(source_budget=int(page.get_attribute("#budget", "max"))))
    assert lab.errors == []


def test_order_buttons_change_the_pack(open_lab, url):
    page = open_lab(url).page
    set_budget(page, 400)
    wait_for_pack(page, library(source_budget=400))
    texts = set()
    for name in sorted(satchel.ORDERS):
        page.click(f'#orders button[data-order="{name}"]')
        expected = library(source_budget=400, order=name)
        wait_for_pack(page, expected)
        assert page.get_attribute(f'#orders button[data-order="{name}"]', "aria-pressed") == "true"
        shown = page.locator("#ask-kept .chip").evaluate_all(
            "cs => cs.map(c => c.dataset.label + ' ' + c.textContent)"
        )
        assert [s.split(" ", 2)[2] for s in shown] == [e.id for e in expected.kept]
        texts.add(expected.text)
    assert len(texts) >= 3  # relevance, edges and chronological differ on the example


def test_trace_table_and_budget_bar_match_the_library(open_lab, url):
    page, expected = edges_at_300(open_lab, url)
    page.get_by_role("tab", name="Trace").click()

    rows = page.locator("#trace-table tbody tr").evaluate_all(
        "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
    )
    manifest = expected.kept + sorted(expected.dropped, key=lambda e: e.rank)
    for row, e in zip(rows, manifest, strict=True):
        pos, label, id_, status, reason, role, tokens, sent, cost, _ratio, rank = row
        assert id_ == e.id
        assert status == e.status
        assert reason.startswith(e.reason)
        assert pos == (str(e.position) if e.kept else "–")
        assert label == (e.label or "–")
        assert role == (e.role or "–")
        assert int(tokens) == e.tokens
        assert int(rank) == e.rank
        if e.kept:
            assert (int(sent), int(cost)) == (e.sent_tokens, e.cost)
    assert any(r[3] == "dropped" and "does not fit" in r[4] for r in rows)
    assert any(r[3] == "dropped" and "duplicate" in r[4] for r in rows)
    # each ID says where its candidate came from, kept or dropped (the manifest's provenance)
    where = page.locator("#trace-table td.id").evaluate_all("ts => ts.map(t => t.title)")
    for shown, e in zip(where, manifest, strict=True):
        p = e.provenance
        place = [f"{p['doc_id']}, characters {p['start']}–{p['end']}"] if "doc_id" in p else []
        assert shown == " · ".join([*place, p["title"], p["section"], f"updated {p['updated']}"]), shown
    assert any(", characters " in shown for shown in where)  # (the setup guide's windows)

    usage = expected.tokens.to_dict()
    legend = dict(
        page.locator("#budget-legend .item").evaluate_all(
            "is => is.map(i => [i.dataset.part, i.querySelector('.num').textContent])"
        )
    )
    for part in (
        "system",
        "question",
        "history",
        "framing",
        "sources",
        "answer_reserve",
        "free",
        "context_window",
    ):
        assert int(legend[part]) == usage[part], part
    segments = page.locator("#budget-bar .seg").evaluate_all(
        "ss => ss.map(s => [s.dataset.part, Number(s.dataset.tokens), s.getBoundingClientRect().width])"
    )
    bar_width = page.locator("#budget-bar").evaluate("b => b.clientWidth")
    assert sum(t for _, t, _ in segments) == usage["context_window"]
    for part, tokens, width in segments:
        assert tokens == usage[part]
        assert width == pytest.approx(bar_width * tokens / usage["context_window"], abs=1.5)
    zoom = page.locator("#budget-bar-zoom .seg").evaluate_all("ss => ss.map(s => s.dataset.part)")
    assert "free" not in zoom and "sources" in zoom


def test_exact_prompt_is_the_library_text(open_lab, url):
    page = open_lab(url).page
    for budget, order in ((250, "relevance"), (500, "chronological")):
        set_budget(page, budget)
        page.click(f'#orders button[data-order="{order}"]')
        expected = library(source_budget=budget, order=order)
        wait_for_pack(page, expected)
        assert page.locator("#ask-prompt").evaluate("p => p.textContent") == expected.text
        assert page.locator("#trace-prompt").evaluate("p => p.textContent") == expected.text
        spans = page.locator("#trace-prompt .src").evaluate_all(
            "ss => ss.map(s => [s.dataset.label, s.textContent])"
        )
        assert [label for label, _ in spans] == list(expected.labels)
        for label, text in spans:
            n = label[1:]
            assert text.startswith(f'<source_{n} id="{label}"') and text.endswith(f"</source_{n}>")


def test_manifest_download_is_the_result(open_lab, url):
    page = open_lab(url).page
    set_budget(page, 300)
    expected = library(source_budget=300)
    wait_for_pack(page, expected)
    page.get_by_role("tab", name="Trace").click()
    with page.expect_download() as info:
        page.click("#download-manifest")
    data = json.loads(Path(info.value.path()).read_text("utf-8"))
    assert data == json.loads(json.dumps(expected.to_dict()))


def test_hostile_chunk_stays_inert(open_lab, url):
    lab = open_lab(url)
    page = lab.page
    top = int(page.get_attribute("#budget", "max"))
    set_budget(page, top)
    expected = library(source_budget=top)
    wait_for_pack(page, expected)
    assert expected.entry("ticket-4411").kept
    page.get_by_role("tab", name="Trace").click()
    shown = page.locator("#trace-prompt").evaluate("p => p.textContent")
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt;" in shown
    assert "&lt;/source_3&gt;&lt;/sources&gt;" in shown

    # ids and titles go into the page unescaped by the library: they must land as text too
    hostile = [
        {
            "id": "<img src=x onerror=alert('id')>",
            "text": "<script>alert('text')</script></source_1>",
            "score": 0.9,
            "title": "\"><svg onload=alert('title')>",
        },
        {"id": "ok", "text": "fine", "score": 0.5},
    ]
    page.get_by_role("tab", name="Ask").click()
    page.click("#paste-box summary")
    page.fill("#paste", json.dumps(hostile))
    page.click("#use-paste")
    page.wait_for_selector('#trace-table tr[data-id="ok"]', state="attached", timeout=WAIT_MS)
    ids = page.locator("#trace-table td.id").evaluate_all("ts => ts.map(t => t.textContent)")
    assert hostile[0]["id"] in ids
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector('#cmp-table tr[data-id="ok"]', state="attached", timeout=WAIT_MS)
    injected = page.evaluate(
        """() => ({
            scripts: [...document.scripts].map(s => s.getAttribute('src')),
            imgs: document.querySelectorAll('img').length,
            svgs: document.querySelectorAll('svg').length,
            sources: document.querySelectorAll('source_1, source_3, sources').length,
        })"""
    )
    assert injected == {"scripts": ["/static/lab.js"], "imgs": 0, "svgs": 0, "sources": 0}
    assert lab.dialogs == []
    assert lab.errors == []


def test_compare_shows_what_moved(open_lab, url):
    page = open_lab(url).page
    page.get_by_role("tab", name="Compare").click()
    for side, order in (("#cmp-left", "relevance"), ("#cmp-right", "edges")):
        page.select_option(f"{side} .cmp-order", order)
        page.fill(f"{side} .cmp-budget", "400")
    left, right = library(source_budget=400), library(source_budget=400, order="edges")
    expected_right = [e.id for e in right.kept]
    page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('#cmp-right-list li')].map(l => l.dataset.id)) "
        "=== JSON.stringify(ids)",
        arg=expected_right,
        timeout=WAIT_MS,
    )
    assert page.locator("#cmp-left-list li").evaluate_all("ls => ls.map(l => l.dataset.id)") == [
        e.id for e in left.kept
    ]
    changes = dict(
        page.locator("#cmp-table tbody tr").evaluate_all(
            "rs => rs.map(r => [r.dataset.id, r.querySelector('.change').textContent])"
        )
    )
    for e in left.kept:
        moved = right.entry(e.id).position != e.position
        assert changes[e.id] == ("moved" if moved else "same")


def test_ask_without_a_model_says_so(open_lab, url):
    page = open_lab(url).page
    page.click("#ask-btn")
    page.wait_for_selector("#no-model", timeout=WAIT_MS)
    assert page.text_content("#no-model").startswith("No model is configured")
    assert page.text_content("#model-status") == "no model configured"
    assert page.locator("#ablate-btn").is_disabled()


def test_answer_citations_link_to_the_sources(open_lab, url_with_model):
    page = open_lab(url_with_model).page
    set_budget(page, 300)
    wait_for_pack(page, library(source_budget=300))
    page.click("#ask-btn")
    page.wait_for_selector("#answer .answer-text", timeout=WAIT_MS)
    assert page.text_content("#answer .answer-text") == FakeModel().complete([]).text
    links = page.locator("#answer a.cite").evaluate_all("as => as.map(a => a.dataset.label)")
    assert links == ["S1", "S2"]  # S99 was never sent: no link
    assert page.locator("#answer .cite.unknown").text_content() == "S99"
    page.click('#answer a.cite[data-label="S2"]')
    page.wait_for_selector('#ask-prompt .src.flash[data-label="S2"]', timeout=WAIT_MS)


def test_screenshot_each_tab(open_lab, url):
    page, _ = edges_at_300(open_lab, url)
    page.click("#ask-btn")
    page.wait_for_selector("#no-model", timeout=WAIT_MS)
    saved = {"ask": shot(page, "ask")}
    for name, tab in (("trace", "Trace"), ("compare", "Compare"), ("ablation", "Ablation")):
        page.get_by_role("tab", name=tab).click()
        if name == "compare":
            page.wait_for_selector("#cmp-table tbody tr", timeout=WAIT_MS)
        saved[name] = shot(page, name)
    docs = ROOT / "docs" / "screenshots"
    docs.mkdir(parents=True, exist_ok=True)
    for name in ("ask", "trace"):
        shutil.copyfile(saved[name], docs / f"{name}.png")
    assert all(p.stat().st_size > 10_000 for p in saved.values())


def test_ablation_view_runs_the_variants(open_lab, url_with_model):
    lab = open_lab(url_with_model)
    page = lab.page
    page.get_by_role("tab", name="Ablation").click()
    assert page.input_value("#ablate-answers") == "30 days"
    page.click("#ablate-btn")
    page.wait_for_selector("#ablate-table tbody tr", timeout=WAIT_MS)
    variants = page.locator("#ablate-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.variant)")
    assert variants[:4] == ["full", "top1", "reversed", "uncompressed"]
    shot(page, "ablation-run")
    assert lab.dialogs == [] and lab.errors == []


# -- loading files, refused input, and the controls -------------------------------------------


def upload(page, tmp_path, name: str, data) -> None:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), "utf-8")
    page.set_input_files("#upload", str(path))


def paste(page, data) -> None:
    if not page.is_visible("#paste"):
        page.click("#paste-box summary")
    page.fill("#paste", data if isinstance(data, str) else json.dumps(data))
    page.click("#use-paste")


def error_text(page) -> str:
    page.wait_for_selector("#error:not([hidden])", timeout=WAIT_MS)
    return page.text_content("#error")


def test_a_request_files_options_set_the_controls(open_lab, url, tmp_path):
    # (order, source_budget, reserve_answer and dedupe were dropped for the page's own, and
    # max_sources applied unseen: the lab packed something other than `satchel pack FILE`)
    lab = open_lab(url)
    page = lab.page
    options = {
        "order": "chronological",
        "source_budget": 305,
        "dedupe": False,
        "reserve_answer": 256,
        "max_sources": 3,
        "tokenizer": "cl100k_base",
    }
    upload(page, tmp_path, "cli_request.json", {**EXAMPLE, **options})
    wait_for_pack(page, satchel.pack(EXAMPLE["candidates"], EXAMPLE["question"], **options))
    assert page.input_value("#budget") == "305"
    assert page.input_value("#reserve-answer") == "256"
    assert not page.is_checked("#dedupe")
    assert page.input_value("#tokenizer") == "cl100k_base"
    assert page.get_attribute('#orders button[data-order="chronological"]', "aria-pressed") == "true"
    assert page.is_visible("#file-extra")
    assert page.text_content("#file-extra") == "From cli_request.json: max_sources=3"
    page.click("#clear-file-options")
    options.pop("max_sources")
    wait_for_pack(page, satchel.pack(EXAMPLE["candidates"], EXAMPLE["question"], **options))
    assert page.is_hidden("#file-extra")
    assert lab.errors == []


def test_the_slider_replaces_a_files_budget_it_could_not_show(open_lab, url, tmp_path):
    # (a source_budget of 2.5 was listed and kept over the slider: moving it changed nothing
    # until Clear)
    lab = open_lab(url)
    page = lab.page
    upload(page, tmp_path, "odd_budget.json", {**EXAMPLE, "source_budget": 2.5})
    page.wait_for_selector("#file-extra:not([hidden])", timeout=WAIT_MS)
    assert "source_budget=2.5" in page.text_content("#file-extra")
    set_budget(page, 300)
    wait_for_pack(page, satchel.pack(EXAMPLE["candidates"], EXAMPLE["question"], source_budget=300))
    assert page.is_hidden("#file-extra")


def test_the_labs_own_body_and_an_ablation_query_load(open_lab, url, tmp_path):
    # (both were refused with "unknown option(s)")
    page = open_lab(url).page
    body = {**EXAMPLE, "options": {"order": "edges", "source_budget": 300}}
    upload(page, tmp_path, "api_request.json", body)
    wait_for_pack(page, library(source_budget=300, order="edges"))
    assert page.get_attribute('#orders button[data-order="edges"]', "aria-pressed") == "true"
    query = {**EXAMPLE, "answers": ["a month", "30 days"], "gold": ["returns-policy#1", "returns-policy#3"]}
    upload(page, tmp_path, "query.json", query)
    page.wait_for_function(
        "() => document.querySelector('#candidates-status').textContent.includes('query.json')",
        timeout=WAIT_MS,
    )
    assert page.input_value("#ablate-answers") == "a month\n30 days"
    assert page.input_value("#ablate-gold") == "returns-policy#1\nreturns-policy#3"
    assert page.is_hidden("#error")


def test_a_refused_input_leaves_no_pack_that_looks_current(open_lab, url):
    # (the example's prompt, chips and Trace stayed, and Download gave the example's manifest)
    lab = open_lab(url)
    page = lab.page
    wait_for_pack(page, library(source_budget=int(page.input_value("#budget"))))
    assert page.is_enabled("#copy-prompt") and page.is_enabled("#download-manifest")
    bad = json.dumps([{"id": "mine#1", "text": "My own chunk."}, {"id": "mine#1", "text": "Another."}])
    paste(page, bad)
    assert "appears more than once" in error_text(page)
    page.wait_for_selector("#panel-ask.stale", state="attached", timeout=WAIT_MS)
    assert page.is_visible("#panel-ask .stale-note")
    assert page.locator("#pack-status").get_attribute("data-sha") is None
    assert page.is_disabled("#copy-prompt") and page.is_disabled("#download-manifest")
    assert page.input_value("#paste") == bad  # the input stays, to be fixed
    page.get_by_role("tab", name="Trace").click()
    assert page.is_visible("#panel-trace .stale-note")
    page.get_by_role("tab", name="Ask").click()
    page.fill("#paste", bad.replace('"mine#1", "text": "Another', '"mine#2", "text": "Another'))
    page.click("#use-paste")
    page.wait_for_selector("#panel-ask:not(.stale)", state="attached", timeout=WAIT_MS)
    assert page.is_hidden("#panel-ask .stale-note") and page.is_enabled("#download-manifest")
    for selector, refused, fine in (("#reserve-answer", "-5", "512"), ("#question", "  ", "Which?")):
        page.fill(selector, refused)
        page.wait_for_selector("#panel-ask.stale", state="attached", timeout=WAIT_MS)
        assert page.is_disabled("#copy-prompt") and page.input_value(selector) == refused
        page.fill(selector, fine)
        page.wait_for_selector("#panel-ask:not(.stale)", state="attached", timeout=WAIT_MS)
    assert lab.errors == []


def test_a_role_cap_typed_as_a_share_stays_a_share(open_lab, url):
    # (0.25 was rounded to a cap of 0 tokens)
    page = open_lab(url).page
    set_budget(page, 200)
    page.fill("#cap-supporting", "0.25")
    wait_for_pack(page, library(source_budget=200, role_caps={"supporting": 0.25}))
    page.fill("#cap-supporting", "30")
    wait_for_pack(page, library(source_budget=200, role_caps={"supporting": 30}))


def test_a_cap_that_is_no_number_is_refused_not_dropped(open_lab, url):
    # (a number field holding what is no number reads as empty: "1e" typed as the supporting
    # cap packed without a cap, and said nothing)
    lab = open_lab(url)
    page = lab.page
    set_budget(page, 200)
    page.fill("#cap-supporting", "30")
    wait_for_pack(page, library(source_budget=200, role_caps={"supporting": 30}))
    page.fill("#cap-supporting", "")
    page.type("#cap-supporting", "1e")  # (keys, as a user types them: fill() refuses no number)
    page.wait_for_selector("#panel-ask.stale", state="attached", timeout=WAIT_MS)
    assert page.text_content("#error") == (
        "the supporting cap is not a number; give whole tokens (120), a share of the source budget "
        "(0.25), or nothing"
    )
    page.fill("#cap-supporting", "0.25")
    wait_for_pack(page, library(source_budget=200, role_caps={"supporting": 0.25}))
    assert page.is_hidden("#error") and lab.errors == []


def test_a_role_cap_of_1_0_is_the_whole_budget_from_a_file_or_typed(open_lab, url, tmp_path):
    # (the page read 1.0 as the JavaScript number 1 and sent that: a cap of 1 token, where
    # `satchel pack FILE` and `--role-caps supporting=1.0` give the whole budget)
    lab = open_lab(url)
    page = lab.page
    caps = {"supporting": 1.0, "decisive": 1.0}  # (decisive has no field: listed, and sent)
    upload(page, tmp_path, "rc1.json", {**EXAMPLE, "source_budget": 400, "role_caps": caps})

    def pack(**role_caps):
        return satchel.pack(
            EXAMPLE["candidates"], EXAMPLE["question"], source_budget=400, role_caps=role_caps
        )

    wait_for_pack(page, pack(**caps))
    assert page.input_value("#cap-supporting") == "1.0"
    assert page.text_content("#file-extra") == "From rc1.json: role_caps.decisive=1.0"
    page.fill("#cap-supporting", "1")
    wait_for_pack(page, pack(supporting=1, decisive=1.0))
    page.fill("#cap-supporting", "1.0")
    wait_for_pack(page, pack(**caps))
    assert lab.errors == []


def test_the_model_field_starts_at_the_model_the_lab_packs_for(open_lab, stand_in_lab):
    # (`satchel lab --model openai:qwen2.5-7b-instruct` packed for gpt-4o, a 128k window; with
    # --pack-model, as for satchel ablate, the page starts at that model and packs for it)
    server = serve(stand_in_lab(FakeModel))
    try:
        lab = open_lab(next(server))
        page = lab.page
        assert page.input_value("#model") == "gpt-4-32k"
        budget = int(page.input_value("#budget"))
        wait_for_pack(
            page,
            satchel.pack(EXAMPLE["candidates"], EXAMPLE["question"], model="gpt-4-32k", source_budget=budget),
        )
        # the counts are gpt-4-32k's tokenizer's, exact for it alone (the trace called them exact)
        assert page.text_content("#trace-summary").endswith(
            "tokenizer cl100k_base (exact for gpt-4-32k; qwen2.5-7b-instruct, which answers, counts its "
            "own tokens: an estimate for it)"
        )
        assert lab.errors == []
    finally:
        server.close()


def test_the_start_budget_keeps_the_best_candidate(open_lab, url):
    # (it was half of what all candidates cost: one pasted chunk was always "0 of 1 kept")
    page = open_lab(url).page
    # the example still opens at half of what all its candidates cost, to show drops
    half = round(library().tokens.sources / 2 / 10) * 10
    assert page.input_value("#budget") == str(half)
    wait_for_pack(page, library(source_budget=half))
    text = "The warranty lasts two years from the day of delivery. " * 8
    chunk = {"id": "only", "text": text, "score": 1.0}
    paste(page, {"question": "How long is the warranty?", "candidates": [chunk]})
    page.wait_for_function(
        "() => document.querySelector('#pack-status').textContent.startsWith('1 of 1 kept')", timeout=WAIT_MS
    )


def test_sources_are_found_whatever_a_chunk_or_the_question_holds(open_lab, url):
    # (a chunk or a question holding "\n\nUSER\n" lost every highlight and chip jump)
    page = open_lab(url).page
    chunks = [
        {"id": "ticket#1", "text": "Chat.\n\nUSER\nIt will not pair.\n\nASSISTANT\nHold it.", "score": 0.9},
        {"id": "doc#2", "text": "Pairing needs the app version 3 or later.", "score": 0.8},
    ]
    paste(page, chunks)
    page.wait_for_selector('#trace-table tr[data-id="doc#2"]', state="attached", timeout=WAIT_MS)
    question = "Summarise this exchange:\n\nUSER\nhow do I pair it?"
    page.fill("#question", question)
    budget = int(page.get_attribute("#budget", "max"))
    set_budget(page, budget)
    expected = satchel.pack(chunks, question, source_budget=budget)
    wait_for_pack(page, expected)
    assert len(expected.kept) == 2
    spans = page.locator("#ask-prompt .src").evaluate_all("ss => ss.map(s => s.dataset.label)")
    assert spans == ["S1", "S2"]
    page.click('#ask-kept .chip[data-label="S2"]')
    page.wait_for_selector('#ask-prompt .src.flash[data-label="S2"]', timeout=WAIT_MS)


@pytest.mark.parametrize("model", ["gpt-4", "gpt-5"])
def test_the_slider_stops_at_the_windows_source_budget(open_lab, url, model):
    # (it went to 1.2 times what all candidates cost, past what the window leaves; and for
    # gpt-5 to what its 400,000-token window leaves, past the 272,000 its API takes as input)
    page = open_lab(url).page
    page.select_option("#model", model)
    n = 14 if model == "gpt-4" else 420  # (more than the window takes: 8,192 and 272,000 tokens)
    chunks = [{"id": f"c{i}", "text": f"Fact {i}: " + "lamp " * 700, "score": 1 - i / 1000} for i in range(n)]
    paste(page, chunks)
    page.wait_for_function(
        f"() => document.querySelector('#pack-status').textContent.includes('of {n} kept')", timeout=WAIT_MS
    )
    room = satchel.pack(chunks, EXAMPLE["question"], model=model).tokens.source_budget
    top = int(page.get_attribute("#budget", "max"))
    assert top == room
    set_budget(page, top)
    full = satchel.pack(chunks, EXAMPLE["question"], model=model, source_budget=top)
    wait_for_pack(page, full)
    assert page.text_content("#pack-status").endswith(f"/ {room} source tokens")
    # free is what the prompt could still take; past gpt-5's input limit the window is drawn
    # apart (the bar's "free" counted the 127,488 tokens gpt-5 takes no input in)
    legend = dict(
        page.locator("#budget-legend .item").evaluate_all(
            "is => is.map(i => [i.dataset.part, Number(i.querySelector('.num').textContent)])"
        )
    )
    beyond = 127_488 if model == "gpt-5" else None
    assert legend.get("beyond_input") == beyond
    assert legend["free"] == full.budget.prompt_limit - full.tokens.prompt
    shown = sum(v for k, v in legend.items() if k != "context_window")
    assert shown == legend["context_window"] == full.tokens.context_window


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            '[\n  {"id": "a", "text": "alpha"},\n  {"id": "b", "text": "beta"},\n]',
            ["trailing comma at line 3 column 30"],
        ),
        ('{"question": "q", "chunks": [{"id": "a", "text": "x"}]}', ['without "candidates"', "chunks"]),
        ("null", ["null", "give a JSON list of candidates"]),
    ],
)
def test_pasted_text_errors_say_what_is_wrong(open_lab, url, text, needles):
    # (a pretty-printed list with a trailing comma was "line 1 is not valid JSON"; null and a
    # request with "chunks" were "no candidates found" or worse)
    page = open_lab(url).page
    paste(page, text)
    message = error_text(page)
    for needle in needles:
        assert needle in message
    assert page.input_value("#paste") == text


def test_compare_says_an_empty_budget_is_empty(open_lab, url):
    # (an emptied field was packed as budget 0)
    page = open_lab(url).page
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#cmp-table tbody tr", timeout=WAIT_MS)
    page.get_by_role("spinbutton", name="A budget").fill("")
    page.wait_for_selector("#cmp-error:not([hidden])", timeout=WAIT_MS)
    assert page.text_content("#cmp-error").startswith("A: the budget is empty")
    page.get_by_role("spinbutton", name="A budget").fill("300")
    page.wait_for_selector("#cmp-error", state="hidden", timeout=WAIT_MS)
    assert "300 source tokens" in page.text_content("#cmp-left-summary")


ACCENT = "rgb(47, 91, 211)"
RING = (
    "e => { const s = getComputedStyle(e); return [s.outlineStyle, s.outlineColor, "
    "parseFloat(s.outlineWidth)]; }"
)


def test_focused_controls_show_a_ring(open_lab, url):
    # (the ring was the pale accent, all but invisible)
    page = open_lab(url).page
    for selector in ("#question", "#budget", "#dedupe", "#model", "#reserve-answer", "#cap-supporting"):
        page.focus(selector)
        style, color, width = page.locator(selector).evaluate(RING)
        assert (style, color) == ("solid", ACCENT) and width >= 2, selector


def test_the_upload_control_shows_its_focus(open_lab, url):
    # (the file input is hidden, and its label showed nothing when it had the focus)
    page = open_lab(url).page
    page.focus("#use-example")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "upload"
    style, color, _ = page.locator('label[for="upload"]').evaluate(RING)
    assert (style, color) == ("solid", ACCENT)


def test_trace_rows_work_by_keyboard(open_lab, url):
    # (a row showed its source on a click only)
    page = open_lab(url).page
    page.get_by_role("tab", name="Trace").click()
    row = page.locator('#trace-table tbody tr[data-label="S2"]')
    assert row.get_attribute("tabindex") == "0"
    page.locator('#trace-table tbody tr[data-label="S1"]').focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.dataset.label") == "S2"
    page.keyboard.press("Enter")
    page.wait_for_selector('#trace-prompt .src.flash[data-label="S2"]', timeout=WAIT_MS)
    page.locator('#trace-table tbody tr[data-label="S3"]').focus()
    page.keyboard.press(" ")
    page.wait_for_selector('#trace-prompt .src.flash[data-label="S3"]', timeout=WAIT_MS)


def test_the_tab_bar_works_by_arrow_keys(open_lab, url):
    # (a tab list: the arrows did nothing; each tab was a stop of its own in the Tab order)
    page = open_lab(url).page
    page.get_by_role("tab", name="Ask").focus()

    def shown() -> tuple[str, str]:
        selected = page.locator('[role="tab"][aria-selected="true"]').get_attribute("id")
        return selected, page.evaluate("() => document.activeElement.id")

    for key, tab in (
        ("ArrowRight", "tab-trace"),
        ("End", "tab-ablation"),
        ("ArrowRight", "tab-ask"),
        ("ArrowLeft", "tab-ablation"),
        ("Home", "tab-ask"),
    ):
        page.keyboard.press(key)
        assert shown() == (tab, tab), key
        assert not page.locator(f"#{page.locator(f'#{tab}').get_attribute('aria-controls')}").is_hidden()
    assert [t.get_attribute("tabindex") for t in page.locator('[role="tab"]').all()] == [
        "0",
        "-1",
        "-1",
        "-1",
    ]


def test_compare_sides_have_their_own_names(open_lab, url):
    # (both sides' controls were named "order", "budget" and "dedupe")
    page = open_lab(url).page
    page.get_by_role("tab", name="Compare").click()
    for side in ("A", "B"):
        for role, name in (("combobox", "order"), ("spinbutton", "budget"), ("checkbox", "dedupe")):
            assert page.get_by_role(role, name=f"{side} {name}", exact=True).count() == 1


def test_trace_reasons_read_as_the_cli_trace(open_lab, url):
    # (a conflict was "conflicts with plus-price-2026", not where that version went)
    page, expected = edges_at_300(open_lab, url)
    reasons = dict(
        page.locator("#trace-table tbody tr").evaluate_all(
            "rs => rs.map(r => [r.dataset.id, r.querySelector('td.reason').textContent])"
        )
    )
    trace = expected.trace()
    conflicting = [e for e in expected.manifest if e.conflicts_with]
    assert conflicting
    for e in conflicting:
        assert reasons[e.id] in trace and reasons[e.id].endswith(")")


def test_long_ids_wrap_in_their_chips(open_lab, url):
    # (an id without a break point ran out of its chip and card)
    page = open_lab(url).page
    paste(page, [{"id": "x" * 300, "text": "alpha", "score": 0.9}, {"id": "ok", "text": "beta"}])
    page.wait_for_function(
        "() => document.querySelector('#ask-kept .chip').textContent.endsWith('x'.repeat(300))",
        timeout=WAIT_MS,
    )
    overflow = page.locator("#ask-kept .chip").evaluate_all(
        "cs => cs.map(c => c.getBoundingClientRect().right - c.parentElement.getBoundingClientRect().right)"
    )
    assert overflow and max(overflow) <= 0.5


def test_a_trace_row_shows_where_each_of_its_sentences_went(open_lab, url):
    # (the trace counted what the ledger or a copy took out of a chunk, never which text)
    page, expected = edges_at_300(open_lab, url)
    page.get_by_role("tab", name="Trace").click()
    dropped = next(e for e in expected.manifest if e.status == "dropped" and e.reason.startswith("duplicate"))
    versions: list[str] = []
    for entry in (dropped, next(e for e in expected.manifest if e.sentences_removed and e.status == "kept")):
        page.click(f'#trace-table tbody tr[data-id="{entry.id}"]')
        page.wait_for_selector("#trace-explain .explain-sentences", timeout=WAIT_MS)
        page.wait_for_function(
            "id => document.querySelector('#trace-explain b').textContent === id",
            arg=entry.id,
            timeout=WAIT_MS,
        )
        rows = page.locator("#trace-explain li").evaluate_all(
            "ls => ls.map(l => [l.dataset.where, l.querySelector('.text').textContent,"
            " [...l.querySelectorAll('.otherwise')].map(o => o.textContent)])"
        )
        assert [(where, text) for where, text, _ in rows] == expected.whereabouts(entry.id)
        assert any(where != entry.label for where, _, _ in rows)  # (something went elsewhere, or nowhere)
        # under a sentence a conflicting candidate states otherwise, explain's ≠ line
        lines = expected.explain(entry.id).splitlines()
        said = [f"≠ {line.split(None, 1)[1]}" for line in lines if line.lstrip().startswith("≠ ")]
        assert [o for _, _, otherwise in rows for o in otherwise] == said
        versions += said
    assert versions  # (the kept one conflicts with another version, in one sentence)

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
    page = open_lab(url).page
    set_budget(page, 300)
    page.click('#orders button[data-order="edges"]')
    expected = library(source_budget=300, order="edges")
    wait_for_pack(page, expected)
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
    page = open_lab(url).page
    set_budget(page, 300)
    page.click('#orders button[data-order="edges"]')
    wait_for_pack(page, library(source_budget=300, order="edges"))
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

"""Dedupe stage: near-duplicates against conflicts, sketch recall, sentences, boilerplate."""

from __future__ import annotations

import itertools
import json
import random
import re
import string

import pytest

import satchel
from bench import _data
from satchel import _dedupe
from satchel._dedupe import (
    DedupeReport,
    _masked_words,
    difference,
    find_duplicates,
    strip_boilerplate,
)
from satchel._ledger import Ledger
from satchel._sentences import split_sentences


def paragraphs(n: int) -> list[str]:
    """The first ``n`` nq-open-oracle gold paragraphs of more than 120 words."""
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"{path} not found; put ../shared beside the repo (or set SATCHEL_DATA)")
    texts = (r["nq_annotated_gold"]["long_answer"] for r in _data.load_nq(path))
    return [t for t in texts if len(t.split()) > 120][:n]


def differs_in_details(a, b):
    return difference(a, b) == "detail"


@pytest.mark.parametrize(
    ("a", "b", "differs"),
    [
        ("Plus costs $2.99 a month.", "Plus costs $3.99 a month.", True),
        ("The lamp is waterproof and sturdy.", "The lamp is not waterproof and sturdy.", True),
        ("The plan was approved by Anna last week.", "The plan was approved by Brian last week.", True),
        # (windows of one document stop at the same words alike: "eps" ends no sentence in either)
        ("Alpha beta gamma delta Omega 1990 eps", "gamma delta Omega 1990 eps zeta Eta 2001.", False),
        # a sentence one ends where the other goes on with a qualifier or a detail says something else
        (
            "Returns are free. Support answers by email and chat on weekdays.",
            "Returns are free. Support answers by email and chat on weekdays only.",
            True,
        ),
        # (but a window that runs on past a sentence both end is a shift, as ever)
        (
            "Returns are free. Support answers by email and chat on weekdays.",
            "Support answers by email and chat on weekdays. Refunds take 5 days.",
            False,
        ),
        ("It is ready. Then open the app.", "It is ready.  Then open the app!", False),
        ("The price is $2.99", "The price is $3.99", True),
        ("It costs $2.99", "It costs $3.99 plus tax and shipping", True),
        # a detail at an end against any other word: the two say different things
        ("The price is $2.99", "The price is unknown", True),
        (
            "He won the prize in 1921 for his work on light.",
            "Einstein won the prize in 1921 for his work on light.",
            True,
        ),
        # numbers in words, and words turned around by a prefix
        ("Returns are accepted for thirty days.", "Returns are accepted for fourteen days.", True),
        ("Returns are accepted for twenty-one days.", "Returns are accepted for twenty-two days.", True),
        ("The lamp is available in every store.", "The lamp is unavailable in every store.", True),
        ("Shipping is free for members here.", "Shipping is free for non-members here.", True),
        # any word replaced by another not spelled alike changes what a text says
        ("Returns are accepted within the month.", "Returns are accepted after the month.", True),
        (
            "Revenue increased sharply in the last quarter.",
            "Revenue decreased sharply in the last quarter.",
            True,
        ),
        ("The flood displaced hundreds of residents.", "The flood displaced thousands of residents.", True),
        ("Add 1 tbsp of salt to the water.", "Add 1 tsp of salt to the water.", True),
        # but words spelled another way, contracted, or articles swapped, are edits
        (
            "The colour of the lamp can be changed in the app.",
            "The color of the lamp can be changed in the app.",
            False,
        ),
        ("Returns are accepted if it is unused.", "Returns are accepted if it's unused.", False),
        ("Press the button on the base of the lamp.", "Press a button on the base of the lamp.", False),
        # a negation changed at either end, as inside
        (
            "The warranty covers the first owner and is refundable.",
            "The warranty covers the first owner and is non-refundable.",
            True,
        ),
        ("Members of the club can renew online.", "Members of the club cannot renew online.", True),
        ("Members of the club can renew.", "Members of the club can't renew.", True),
        ("Members of the club always renew.", "Members of the club never renew.", True),
        ("The lamp is sold to members.", "The lamp is sold to non-members.", True),
        ("Available in every store in the country.", "Unavailable in every store in the country.", True),
        ("The lamp ships refundable", "The lamp ships non-refundable to every country in Europe", True),
        ("Members of the club can renew.", "Members of the club can renew online.", False),
        # a date or name joined to a word by a dash; qualifiers, units, polarity, direction
        (
            "Jesse Bennett (July 10, 1769 —July 13, 1842) was a physician.",
            "Jesse Bennett (July 10, 1769 —June 13, 1842) was a physician.",
            True,
        ),
        (
            "The ceremony was held in mid-January at the hall.",
            "The ceremony was held in mid-February at the hall.",
            True,
        ),
        ("The fee is always refunded after the check.", "The fee is rarely refunded after the check.", True),
        ("The crate weighs 500 kg when it is full.", "The crate weighs 500 lb when it is full.", True),
        ("The plan is free for every student here.", "The plan is paid for every student here.", True),
        ("Rain fell in the northern valley overnight.", "Rain fell in the southern valley overnight.", True),
        # a word put in or left out inside qualifies what a text says (seed 003: "a threshold of
        # 500 became 'around 500'"), but an article, a preposition or "also" does not
        (
            "A bulk order has a minimum value of 500 pounds.",
            "A bulk order has a minimum value of around 500 pounds.",
            True,
        ),
        ("The order has a minimum of 500 pounds.", "The order has a minimum of up to 500 pounds.", True),
        (
            "Late deliveries are refunded in full on request.",
            "Late deliveries are refunded on request.",
            True,
        ),
        (
            "Payment is due within thirty days of the invoice.",
            "Payment is due within thirty working days of the invoice.",
            True,
        ),
        (
            "Bulk orders need a signed purchase agreement first.",
            "Bulk orders need a purchase agreement first.",
            True,
        ),
        (
            "Payment is due within thirty days of the invoice.",
            "Payment is due within thirty days of invoice.",
            False,
        ),
        ("Prices were reduced 50% in the sale.", "Prices were reduced by 50% in the sale.", False),
        ("Shipping is free for members here.", "Shipping is also free for members here.", False),
        # one passage in two surroundings (nq2530: a passage, and a window whose text
        # the source wrote without a space after the first period)
        (
            "The Ministry of Corporate Affairs (MCA) is an Indian government ministry. This ministry "
            "is primarily concerned with administration of the Companies Act 2013.",
            "ministry.This ministry is primarily concerned with administration of the Companies Act 2013.",
            False,
        ),
        (
            "Mick Jones wrote it. The band released the record in the spring and toured the north.",
            "Uralic languages are spoken there. The band released the record in the spring and toured "
            "the north.",
            False,
        ),
    ],
)
def test_differs_in_details(a, b, differs):
    assert differs_in_details(a, b) is differs


def test_contained_windows_are_duplicates_extended_ones_are_not_and_edits_conflict():
    texts = paragraphs(40)
    rng = random.Random(7)
    originals = texts[:20]
    inside, extended, edited = [], [], []
    for text in originals:
        words = text.split()
        inside.append(" ".join(words[6:]))  # a window that starts later and adds nothing
        extended.append(" ".join(words[6:] + ["and", "more", "words", "here", "at", "end"]))
        k = rng.randrange(20, len(words) - 20)
        edited.append(" ".join(words[:k] + ["1999" if not words[k].isdigit() else "2000"] + words[k + 1 :]))
    report = find_duplicates(originals + inside + extended + edited + texts[20:])
    for i in range(20):
        assert report.duplicate_of.get(20 + i, (None,))[0] == i  # nothing new: a duplicate
        assert 40 + i not in report.duplicate_of  # new words at its end: left to the sentence ledger
        assert i not in report.conflicts.get(40 + i, ())
        assert 60 + i not in report.duplicate_of  # one number changed inside: never a duplicate...
        assert i in report.conflicts.get(60 + i, ())  # ...but marked as conflicting
    for i in range(80, 100):  # unrelated paragraphs stay
        assert i not in report.duplicate_of


def test_a_shared_passage_the_ledger_cannot_take_out_is_sent_for_its_other_ending():
    # One long sentence with another ending: the ledger, which removes whole sentences,
    # sends the second nearly whole, the price of its ending (judged a near-duplicate,
    # that ending never reached the prompt). Neither is it a conflict: a passage in
    # other surroundings.
    run_on = (
        "the lamp pairs with the app over bluetooth and then switches to your home network so keep "
        "the phone within a few metres of the lamp during setup and make sure the network uses the "
        "slower band because the lamp cannot join the faster band and if pairing fails unplug the lamp "
        "and try again from the start of the guide while the light blinks blue"
    )
    chunks = [{"id": "a", "text": run_on + " and then press add device."}]
    chunks.append({"id": "b", "text": run_on + " and then tap the plus icon."})
    r = satchel.pack(chunks, "q?")
    assert r.entry("b").reason == "admitted" and r.entry("b").conflicts_with == ()
    # The same passage in sentences of its own is left to the ledger, which sends the rest.
    split = (
        run_on.replace(" so keep", ". So keep").replace(" and make", ". And make").replace(" and if", ". If")
    )
    chunks = [{"id": "a", "text": split + ". Then press add device."}]
    chunks.append({"id": "b", "text": split + ". Then tap the plus icon."})
    r = satchel.pack(chunks, "q?")
    assert r.entry("b").kept and r.sources[1].text == "Then tap the plus icon."
    # A window that runs on past the other's end is kept however its text is cut: the
    # words it adds may be the answer.
    words = paragraphs(1)[0].replace(".", "").split()
    chunks = [{"id": "a", "text": " ".join(words[:100])}, {"id": "b", "text": " ".join(words[6:106])}]
    assert satchel.pack(chunks, "q?").entry("b").kept
    chunks[1]["text"] = " ".join(words[6:100])  # (without those words it is a duplicate)
    assert satchel.pack(chunks, "q?").entry("b").reason.startswith("duplicate: near-duplicate")


def test_versions_of_a_short_table_are_marked_conflicting():
    # (a table opens and ends with "|": each version read as the other shifted by all but
    # one word, a window with words of its own, and was never compared)
    a = "| Plan | Price |\n|---|---|\n| Plus | $2.99 |"
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": a.replace("$2.99", "$3.99")}], "q?")
    assert r.entry("b").kept and r.entry("b").conflicts_with == ("a",)
    assert difference(a, a.replace("$2.99", "$3.99")) == "detail"


def test_long_versions_with_one_year_changed_are_marked_conflicting():
    # Long texts are compared on a sample of their shingles: one changed year in a text of
    # 64 to 140 words measured below 0.8 at times, and the pair went unmarked (9 of the 346
    # nq-open-oracle paragraphs here). Told apart a little below the threshold, at most 1.
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"{path} not found; put ../shared beside the repo (or set SATCHEL_DATA)")
    unmarked = versions = 0
    for paragraph in dict.fromkeys(r["nq_annotated_gold"]["long_answer"] for r in _data.load_nq(path)):
        words = paragraph.split()
        year = next((k for k, w in enumerate(words) if re.fullmatch(r"1[0-9]{3}", w)), None)
        if not 64 <= len(words) <= 140 or year is None:
            continue
        other = " ".join([*words[:year], str(int(words[year]) + 1), *words[year + 1 :]])
        versions += 1
        unmarked += 1 not in find_duplicates([paragraph, other]).conflicts
    assert versions > 300 and unmarked <= 1, unmarked


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # an answer "Yes." against "No." (a "no" was masked as a negation, a "yes" was not,
        # so the two short texts shared too few shingles to meet)
        ("Is the setup fee refundable? Yes.", "Is the setup fee refundable? No."),
        # a name in quotes (not masked as a name: the two never met)
        (
            "The largest desert in Africa is the 'Sahara' by area.",
            "The largest desert in Africa is the 'Kalahari' by area.",
        ),
        # a long Chinese text with one place name changed (its sentences, without spaces,
        # were one shingle each)
        (
            "长城是中国古代的军事防御工程，东起山海关，西至嘉峪关，全长约两万一千多公里。明代的长城大多修建在"
            "燕山山脉的山脊上，沿线设有许多关隘和烽火台。每年都有大量游客前来参观，其中八达岭和慕田峪是最受欢迎的地段。",
            "长城是中国古代的军事防御工程，东起山海关，西至嘉峪关，全长约两万一千多公里。明代的长城大多修建在"
            "太行山山脉的山脊上，沿线设有许多关隘和烽火台。每年都有大量游客前来参观，其中八达岭和慕田峪是最受欢迎的地段。",
        ),
        # short sentences that differ in one plain word: too few shingles alike to meet
        (
            "She has a son who lives in Paris with her family.",
            "She has a daughter who lives in Paris with her family.",
        ),
        (
            "Members of the club can renew online every year.",
            "Members of the club cannot renew online every year.",
        ),
        ("The refund was approved.", "The refund was rejected."),
    ],
)
def test_versions_that_never_met_are_marked_conflicting(a, b):
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
    assert r.entry("b").kept and r.entry("b").conflicts_with == ("a",)


def test_one_word_answers_are_no_versions_of_each_other():
    r = satchel.pack([{"id": "a", "text": "Approved."}, {"id": "b", "text": "Rejected."}], "q?")
    assert r.entry("b").kept and r.entry("b").conflicts_with == ()


def test_short_windows_moved_by_two_words_are_a_shift():
    # (needing three shared words, "2014 Germany" was no shift, and the second went as a
    # near-duplicate with the 2018 winner)
    r = satchel.pack(
        [{"id": "a", "text": "2010 Spain, 2014 Germany."}, {"id": "b", "text": "2014 Germany, 2018 France."}],
        "Who won in 2018?",
    )
    assert r.entry("b").kept and "2018 France" in r.text


def test_overlapping_windows_without_offsets_are_a_shift_on_a_few_words():
    # (overlapping by 15 of 33 words, the second was no longer read as the first moved
    # along, and went as a near-duplicate with the age it adds)
    w7 = (
        "2013 Brazilian Grand Prix. Max Verstappen is the youngest winner of a Grand Prix; he was 18 years "
        "and 227 days old when he won the 2016 Spanish Grand Prix. Luigi Fagioli is the oldest winner of a "
        "Formula One"
    )
    w8 = (
        "the 2016 Spanish Grand Prix. Luigi Fagioli is the oldest winner of a Formula One Grand Prix; he "
        "was 53\xa0years and 22\xa0days old when he won the 1951 French Grand Prix."
    )
    r = satchel.pack([{"id": "w7", "text": w7}, {"id": "w8", "text": w8}], "Who is the oldest winner?")
    assert r.entry("w8").kept and "53\xa0years" in r.text


def test_figures_in_other_sentences_before_a_shared_passage_are_no_changed_detail():
    shared = (
        "The dynasty was founded by the Jurchen clan in the north. It ruled the country for nearly three "
        "centuries and left a large body of written records behind."
    )
    a = f"Fiori in 2009. {shared}"
    b = (
        "Toronto Maple Leafs. The Rangers were the first franchise in the United States to win the cup, "
        f"which they last won in 1993–94. {shared}"
    )
    assert difference(a, b) == "surroundings"
    assert find_duplicates([a, b]).conflicts == {}


@pytest.mark.parametrize(
    ("word", "other"),
    [
        ("male", "female"),
        ("hypertension", "hypotension"),
        ("interstate", "intrastate"),
        ("megabits", "megabytes"),
    ],
)
def test_words_alike_but_for_a_prefix_or_a_unit_are_other_words(word, other):
    # (their letters are 0.8 alike: they were taken for one word spelled two ways)
    text = "The study enrolled {} patients from the northern clinics over two years of follow-up."
    assert difference(text.format(word), text.format(other)) == "detail"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "It is possible to change the plan at any time from the account page.",
            "It's possible to change the plan at any time from the account page.",
        ),
        (
            "There is a fee for changing the plan more than twice a year.",
            "There's a fee for changing the plan more than twice a year.",
        ),
    ],
)
def test_a_contraction_that_opens_a_text_is_an_edit(a, b):
    # ("It's" read as a name, capitalised and not a common opening word: a changed detail)
    assert difference(a, b) is None


def test_a_long_passage_respelled_is_judged_without_comparing_every_word_pair():
    # (each word of a long replacement was compared with each of the other: 2,000 words
    # respelled took 30 s; now the words are paired one for one)
    rng = random.Random(3)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(1500)]
    respelled = [w[:-1] + ("a" if w[-1] != "a" else "b") for w in words]  # (each 0.875 alike)
    left, right = ["Start", "here", *words, "end", "now."], ["Start", "here", *respelled, "end", "now."]
    assert not _dedupe._replaced(words, respelled) and _dedupe._replaced(words, list(reversed(words)))
    assert difference(" ".join(left), " ".join(right)) is None


def test_hundreds_of_copies_of_one_text_are_all_near_duplicates_of_the_first():
    # Every copy shares most of its sketch with all the others; only the first, which
    # may be sent, is compared with the later ones, so the copies do not pile up past
    # the posting cap and hide from each other.
    rng = random.Random(1)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(5)) for _ in range(300)]
    base = " ".join(rng.choice(vocab) for _ in range(180))
    words = base.split()
    # (each copy with two of the words spelled another way, three or more apart: every pair
    # differs in words respelled, an edit; words taken out inside would qualify what it says)
    cuts = rng.sample(list(itertools.combinations(range(0, 180, 3), 2)), 300)  # (no two alike)
    texts = [" ".join(w + "s" if k in cut else w for k, w in enumerate(words)) for cut in cuts]
    report = find_duplicates(texts)
    assert set(report.duplicate_of) == set(range(1, 300))
    assert {j for j, _ in report.duplicate_of.values()} == {0}


def test_an_extended_window_sends_only_its_new_part():
    base = "The lamp ships in May. It has three modes. The base is made of oak. Each mode is dimmable."
    longer = base + " A travel case is sold separately."
    result = satchel.pack(
        [{"id": "a", "text": base, "score": 0.9}, {"id": "b", "text": longer, "score": 0.8}], "q?"
    )
    assert [s.text for s in result.sources] == [base, "A travel case is sold separately."]
    assert result.entry("b").sentences_removed == 4


def test_near_duplicate_search_is_deterministic_across_hash_seeds():
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from satchel._dedupe import find_duplicates\n"
        "texts = json.load(sys.stdin)\n"
        "r = find_duplicates(texts)\n"
        "print(sorted(r.duplicate_of.items()), sorted(r.conflicts.items()))\n"
    )
    texts = paragraphs(30)
    texts += [t.replace(" the ", " a ", 1) for t in texts[:10]]
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            check=True,
            env={**__import__("os").environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1 and "(30, (0," in outs.pop()


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Then open the app. Press Add device.", ["Then open the app.", "Press Add device."]),
        (
            "It costs $2.99 a month. Dr. Smith said no. See No. 5.",
            ["It costs $2.99 a month.", "Dr. Smith said no.", "See No. 5."],
        ),
        ("J. R. R. Tolkien wrote it. Really?", ["J. R. R. Tolkien wrote it.", "Really?"]),
        ("He lives in the U.S. now. Fine.", ["He lives in the U.S. now.", "Fine."]),
        ("Heading\n\nBody text here", ["Heading", "Body text here"]),
        ("Heading  \n \n\n  Body. Text", ["Heading", "Body.", "Text"]),
        (
            'End here.\n\nNew one (approx. $2.50) ok!  "Quoted." Done',
            ["End here.", "New one (approx. $2.50) ok!", '"Quoted."', "Done"],
        ),
        ("Growth was 55.5\xa0percent. Next one", ["Growth was 55.5\xa0percent.", "Next one"]),
        ("  Wait... What? Yes!!", ["Wait...", "What?", "Yes!!"]),
        ("See e.g. Smith; he said no. 5 is wrong", ["See e.g. Smith; he said no. 5 is wrong"]),
        ("See Eq. 2 and Ref. 12. Then go.", ["See Eq. 2 and Ref. 12.", "Then go."]),
        ("   \n\n  ", []),
        # any whitespace starts a word: an abbreviation after a tab or a no-break space
        # stays one, and a unit after a no-break space ends its sentence
        ("Ask\tDr. Smith today. Ok.", ["Ask\tDr. Smith today.", "Ok."]),
        ("\x0bDr. Who said no. It is not.", ["Dr. Who said no.", "It is not."]),
        ("It weighs 4.0\xa0oz. The frame is metal.", ["It weighs 4.0\xa0oz.", "The frame is metal."]),
        # a price ends its sentence (it was read as a dotted word, "U.S.")
        ("It costs $9.99. Then go.", ["It costs $9.99.", "Then go."]),
        # so does a number with one decimal or a version (they were dotted words too)
        ("Requires Python 3.9. Install it.", ["Requires Python 3.9.", "Install it."]),
        ("It is $9.9. Use v1.2.3. Done", ["It is $9.9.", "Use v1.2.3.", "Done"]),
        ("See a.1. Or x.y. Then", ["See a.1. Or x.y. Then"]),
        # and so does a file, a domain or an address; a dotted abbreviation does not
        (
            "Edit config.yaml. Mail help@acme.com. Visit shop.ca. Use Node.js. Ok",
            ["Edit config.yaml.", "Mail help@acme.com.", "Visit shop.ca.", "Use Node.js.", "Ok"],
        ),
        ("She has a Ph.D. She lives in the U.S. Now", ["She has a Ph.D. She lives in the U.S. Now"]),
        ("J.-P. Sartre met Lt.Col. Smith. Ok", ["J.-P. Sartre met Lt.Col. Smith.", "Ok"]),
        # a fenced code block is one unit, fences and all; one left open runs to the end
        (
            "Setup:\n```bash\n# install\npip install acme\n```\nThen run it. Done",
            ["Setup:", "```bash\n# install\npip install acme\n```", "Then run it.", "Done"],
        ),
        ("Run:\n~~~\nx = 1. y = 2.\n", ["Run:", "~~~\nx = 1. y = 2."]),
        # a period after a bracket or a quote that closes the word is no abbreviation's
        ('It needs Python (3.9). Open "util.h". Go', ["It needs Python (3.9).", 'Open "util.h".', "Go"]),
        # A Markdown heading ends at its line break, as a blank line ends a sentence; list
        # items and table rows start units of their own. (A heading was read as the start of
        # the sentence after it, which then never met the same sentence elsewhere.)
        (
            "## Pricing\nPlus costs $2.99 a month. It renews.",
            ["## Pricing", "Plus costs $2.99 a month.", "It renews."],
        ),
        (
            "Plans:\n- Basic is free\n- Plus costs $2.99\n* Pro costs $9",
            ["Plans:", "- Basic is free", "- Plus costs $2.99", "* Pro costs $9"],
        ),
        ("Steps\n1. Open the app\n2) Press Add", ["Steps", "1. Open the app", "2) Press Add"]),
        (
            "| Plan | Price |\n| Plus | $2.99 |\nPrices include tax.",
            ["| Plan | Price |", "| Plus | $2.99 |", "Prices include tax."],
        ),
        # a blank line written with Windows line ends
        ("Heading\r\n\r\nBody text here", ["Heading", "Body text here"]),
        # hard-wrapped prose stays one sentence; so does a "#" inside a line
        ("The price of the\nPlus plan is high. Yes.", ["The price of the\nPlus plan is high.", "Yes."]),
        ("It ranked\n#1 in sales\nthat year.", ["It ranked\n#1 in sales\nthat year."]),
        ("Call -\nor write.", ["Call -\nor write."]),
        # Chinese and Japanese sentences end at 。, ！ and ？ without a space (a whole window
        # was one sentence, never a repeat)
        (
            "价格是每月2.99美元。它每月自动续订。可以随时取消！",
            ["价格是每月2.99美元。", "它每月自动续订。", "可以随时取消！"],
        ),
        ("これはペンです。あれは本ですか？ はい。", ["これはペンです。", "あれは本ですか？", "はい。"]),
        # an end inside quotes goes on with the sentence that quotes it
        ("彼は「行く。」と言った。次の日に出発した。", ["彼は「行く。」と言った。", "次の日に出発した。"]),
        ("Apple 的价格上涨了。 The price rose.", ["Apple 的价格上涨了。", "The price rose."]),
    ],
)
def test_sentence_splitter(text, sentences):
    assert [text[s:e] for s, e in split_sentences(text)] == sentences


def test_ledger_removes_only_sentences_already_sent_and_keeps_runs_verbatim():
    ledger = Ledger()
    ledger.record("It blinks blue when it is ready.", "a")
    fresh = ledger.fresh("Plug in the lamp.\nIt blinks blue when it is ready.  Then open the app.")
    assert fresh.text == "Plug in the lamp.\nThen open the app."  # (the line break stays)
    assert fresh.removed == (("It blinks blue when it is ready.", "a"),)
    assert ledger.fresh("Nothing in common here at all.").removed == ()


def test_the_ledger_finds_pieces_of_sentences_sent_after_it_last_looked():
    ledger = Ledger()
    ledger.record("Prices rose five percent in the spring of that year.", "a")
    assert ledger.fresh("in the spring of that year. Then it fell.", edges=True).removed == (
        ("in the spring of that year.", "a"),
    )
    ledger.record("Then it fell sharply in the winter that followed it.", "b")
    fresh = ledger.fresh("of that year. Something new. Then it fell sharply in the", edges=True)
    assert fresh.text == "of that year. Something new."  # ("of that year." is too short to say)
    assert fresh.removed == (("Then it fell sharply in the", "b"),) and fresh.cut == 1
    # a whole sentence sent, and a piece of one: two removed, one of them cut
    fresh = ledger.fresh(
        "percent in the spring of that year. Then it fell sharply in the winter that followed it.", edges=True
    )
    assert (len(fresh.removed), fresh.cut, fresh.text) == (2, 1, "")
    assert ledger.fresh("Then it fell sharply in the", edges=False).removed == ()
    # sentences sent later that end alike do not hide an earlier one
    ledger.record("Her office said the minister resigned, her office said in a statement.", "d")
    ledger.record("Shares fell sharply on Monday, the firm said in a statement.", "e")
    fresh = ledger.fresh("resigned, her office said in a statement. New text follows here.", edges=True)
    assert fresh.removed == (("resigned, her office said in a statement.", "d"),)
    # a text the ledger left before (its sentences known by their places only)
    ledger.record("Old news was here today.", "c")
    left = ledger.fresh("Old news was here today.\nNew words came in.\n\nThen it fell sharply in the").text
    assert left == "New words came in.\n\nThen it fell sharply in the"
    assert ledger.fresh(left, edges=True).text == "New words came in."


def test_a_whole_sentence_at_a_windows_edge_is_kept_though_it_ends_or_starts_one_sent():
    # only a piece that reads as cut (no capital to start it, no period to end it) goes
    ledger = Ledger()
    ledger.record("Critics said the film was a failure. The film was a failure at first, they said.", "a")
    fresh = ledger.fresh("The film was a failure. But it later found an audience.", edges=True)
    assert fresh.removed == ()
    fresh = ledger.fresh("It found an audience. The film was a failure at first", edges=True)
    assert fresh.removed == (("The film was a failure at first", "a"),)
    fresh = ledger.fresh("It found an audience. The film was a failure at first.", edges=True)
    assert fresh.removed == ()  # (a sentence of its own, ended)
    ledger.record('Critics wrote: "The audience left early." In 1901 the prize went to a physicist.', "b")
    for whole in ('"The audience left early." Then', "1901 the prize went to a physicist. Then"):
        assert ledger.fresh(whole, edges=True).removed == ()  # (opened by a quote; by a digit)
    assert ledger.fresh("the prize went to a physicist. Then", edges=True).removed != ()
    # a sentence may open with "$", and a piece must end or start the longer one at a space
    # between words ("effective ..." is no end of "... ineffective ...")
    ledger.record("The mayor confirmed that $5 million was raised by the city.", "m")
    ledger.record("The vaccine was ineffective against the new variant. They voted to bank it.", "v")
    for whole in (
        "$5 million was raised by the city. Then",
        "effective against the new variant. Then",
        "Then. They voted to ban",
    ):
        assert ledger.fresh(whole, edges=True).removed == (), whole
    assert ledger.fresh("against the new variant. Then", edges=True).removed != ()


def test_ledger_keeps_a_blank_line_where_one_stood():
    # a heading ends at a blank line, not a period: joined by a space it would run
    # into the sentence after the one removed
    ledger = Ledger()
    ledger.record("Who said no to it.", "a")
    fresh = ledger.fresh("Heading\n\nWho said no to it. Then left it.")
    assert fresh.text == "Heading\n\nThen left it."
    assert [fresh.text[s:e] for s, e in split_sentences(fresh.text)] == ["Heading", "Then left it."]


def test_a_blank_line_stays_when_the_text_was_cut_into_counting_pieces():
    # A space before the blank line makes it a place where counting pieces are cut; the
    # ledger still keeps the blank line, for one candidate and for merged neighbours.
    doc = "Aa bb cc. Dd ee ff. \n\nGg hh ii. Jj kk ll."
    sent = {"id": "S", "text": "Gg hh ii.", "score": 0.9}
    whole = [sent, {"id": "w", "text": doc, "score": 0.8}]
    windows = [
        sent,
        {"id": "w1", "text": doc[:19], "doc_id": "d", "start": 0, "end": 19, "score": 0.8},
        {"id": "w2", "text": doc[19:], "doc_id": "d", "start": 19, "end": len(doc), "score": 0.7},
    ]
    for chunks in (whole, windows):
        result = satchel.pack(chunks, "q?", source_budget=1000)
        assert [s.text for s in result.sources] == ["Gg hh ii.", "Aa bb cc. Dd ee ff.\n\nJj kk ll."]


def test_kept_spans_land_where_the_joined_text_holds_them():
    from satchel._sentences import _join_kept

    rng = random.Random(3)
    pieces = ["Alpha beta gamma.", "Heading", "Dr. Who said no.", "\n\n", "\n", " ", "  ", "\t", "It is."]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        spans = [span for span in split_sentences(text) if rng.random() < 0.6]
        joined, moved = _join_kept(text, spans)
        assert [joined[a:b] for a, b in moved] == [text[a:b] for a, b in spans]
        assert [joined[a:b] for a, b in split_sentences(joined)] == [text[a:b] for a, b in spans], text


def _counting_pieces(text):
    """``text`` cut where a sentence ends before a space or a tab, and where one opens a line
    with other than "/" (see SentenceCache.pieces)."""
    spans = split_sentences(text)
    ends = {end for _, end in spans[:-1] if text[end] in " \t"}
    lines = {start for start, _ in spans[1:] if text[start - 1] == "\n" and text[start] != "/"}
    cuts = [0, *sorted(ends | lines), len(text)]
    return tuple(text[a:b] for a, b in zip(cuts, cuts[1:], strict=False))


def test_the_ledger_leaves_what_join_kept_leaves_and_knows_its_sentences():
    # fresh() puts what is left of a line together from its counting pieces, and joins
    # the kept spans of other texts (_join_kept); either way the text, the split and
    # the pieces it records, and the sentences it reports removed must be the true ones.
    from satchel._sentences import SentenceCache, _join_kept, normalise, refers_back

    rng = random.Random(4)
    pieces = ["Alpha beta gamma.", "Heading", "Dr. Who said no.", "It is.", "Why?", "Q&A is <b>."]
    spaces = [" ", " ", "  ", "\t", " \t", "\xa0", "\n", "\n\n", ""]
    runs = lines = 0
    for _ in range(4000):
        text = "".join(rng.choice(pieces) + rng.choice(spaces) for _ in range(rng.randrange(1, 10)))
        cache = SentenceCache()
        ledger = Ledger(cache)
        sentences = [text[a:b] for a, b in split_sentences(text)]
        for sentence in sentences:
            if rng.random() < 0.4:
                ledger.record(sentence, "earlier")
        fresh = ledger.fresh(text)
        spans = split_sentences(text)
        normal = [normalise(text[a:b]) for a, b in spans]
        gone_at = [n in ledger._sent for n in normal]
        # a short answer ("It is.", not "Why?") keeps what it follows, and a question its answer
        for k in range(len(normal) - 2, -1, -1):
            after = normal[k + 1]
            if len(after.split()) < 3 and after.startswith("it ") and after[-1] in ".!?":
                gone_at[k] = False
            elif len(normal[k].split()) >= 3 and normal[k].endswith("?") and not gone_at[k + 1]:
                gone_at[k] = False
            elif len(after.split()) >= 3 and refers_back(after) and not gone_at[k + 1]:
                gone_at[k] = False  # (one kept that refers back keeps what it refers to)
        kept = [span for span, gone in zip(spans, gone_at, strict=True) if not gone]
        gone = [(text[a:b], "earlier") for (a, b), out in zip(spans, gone_at, strict=True) if out]
        assert list(fresh.removed) == gone, text
        if not fresh.removed:  # nothing already sent: the text goes as it came
            assert fresh.text == text and len(kept) == len(sentences)
            continue
        left = _join_kept(text, kept)[0]
        if all(len(normalise(text[a:b]).split()) < 3 for a, b in kept):  # nothing left to send alone?
            units = [left[a:b] for a, b in split_sentences(left)]
            # a bare answer at its start ("It is."), or a sentence cut at its end ("Heading")
            alone = all(
                (k == 0 and unit == "It is.") or (k == len(units) - 1 and unit[-1] not in ".?!")
                for k, unit in enumerate(units)
            )
            assert (fresh.text, fresh.alone) == (("", left) if alone else (left, "")), text
            continue
        assert fresh.text == left, text
        assert cache.split(fresh.text).spans == split_sentences(fresh.text), text
        want = _counting_pieces(fresh.text)
        assert cache.pieces(fresh.text) == want, text
        runs += len(kept) > 1 and fresh.text == text[kept[0][0] : kept[-1][1]]
        lines += "\n" not in text
    assert runs > 100 and lines > 300


def test_boilerplate_counts_documents_not_windows():
    cookie = "We use cookies on this site."
    same_doc = strip_boilerplate([f"{cookie} A.", f"{cookie} B.", f"{cookie} C."], ["d", "d", "d"])
    assert [n for _, n in same_doc] == [0, 0, 0]
    three_docs = strip_boilerplate(
        [f"{cookie} Alpha one.", f"{cookie} Beta two.", f"{cookie} Gamma three."], ["a", "b", "c"]
    )
    assert three_docs == [("Alpha one.", 1), ("Beta two.", 1), ("Gamma three.", 1)]


def test_a_short_piece_of_a_footer_goes_with_it_and_only_with_it():
    # "Contact us." is under three words: alone at the end of three documents it stays (a
    # bare "Yes." may answer something), but beside the footer piece that goes, it goes too.
    bodies = ["Plus costs $3.99 a month.", "Refunds take 5 business days.", "The lamp blinks when ready."]
    docs = ["a", "b", "c"]
    for footer in ("\nWas this article helpful? Contact us.", "\nContact us. Was this article helpful?"):
        out = strip_boilerplate([b + footer for b in bodies], docs)
        assert out == [(b, 2) for b in bodies], footer
    # (a text of one piece, that piece boilerplate: found by a fuzzing pass, an IndexError)
    texts = [b + "\nWas this article helpful? Contact us." for b in bodies] + ["Was this article helpful?"]
    assert strip_boilerplate(texts, [*docs, "d"])[-1] == ("", 1)
    alone = strip_boilerplate([b + " Contact us." for b in bodies], docs)
    assert alone == [(b + " Contact us.", 0) for b in bodies]
    # (nor beside a piece that stays: each document's own question, answered "Yes.")
    faq = [f"Is {b[:-1].lower()}? Yes." for b in bodies]
    assert strip_boilerplate(faq, docs) == [(t, 0) for t in faq]


def test_long_texts_keep_the_shingles_whose_first_word_has_an_uncommon_initial():
    # The regex sample equals picking, sentence by sentence and word by word, the
    # 3-shingles of each normalised sentence (cut short at its end) whose first word
    # starts with a digit 0-4 or a letter outside "aeghilnorstuw" (any character
    # beyond ASCII counts as uncommon), each kept as the CRC-32 of its UTF-8 bytes.
    import random
    import zlib

    from satchel._sentences import SentenceCache

    rng = random.Random(5)
    pieces = [
        "Go.",
        "It is.",
        "alpha",
        "Beta",
        "X y z.",
        "Dr. Who said no.",
        "$2.99 each!",
        "\n\n",
        "Ωmega",
        "(bracket",
        "“quoted”",
        "été",
        "\ud800lone",
    ]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randrange(20, 120))) for _ in range(300)]
    cache = SentenceCache()
    tiny = 0
    for text in texts:
        split = cache.split(text)
        want = set()
        for sentence in split.normal:
            words = sentence.split(" ")
            tiny += len(words) < 3
            want |= {
                zlib.crc32(" ".join(words[k : k + 3]).encode("utf-8", "surrogatepass"))
                for k in range(len(words))
                if words[k][0] in "01234bcdfjkmpqvxyz" or not words[k][0].isascii()
            }
        assert cache.marks(split) == want, text
    assert tiny > 100  # sentences of one or two words are shingles too


def test_a_long_text_of_short_sentences_still_finds_its_near_copy():
    # Shingles stop at sentence ends, so a text of one- and two-word sentences
    # (a list of names, say) must still have marks to be compared by.
    letters = "bcdfjkmpqvxyz"
    items = [f"But b{a}{b}." for a in letters for b in letters[:6]]  # "But bbc. But bbd. ..."
    names = " ".join(items)
    copy = names.replace("But bmd. ", "But bmds. ")  # (one name spelled another way)
    found = find_duplicates([names, copy])
    assert found.duplicate_of == {1: (0, found.duplicate_of[1][1])}


def test_texts_that_differ_in_a_negation_at_their_end_are_both_kept_as_conflicting():
    # ("non-" is masked, so the two meet as identical; their last words then tell them apart)
    base = "The Aurora lamp warranty covers parts and labour for the first owner and is "
    for end, other in [
        ("refundable.", "non-refundable."),
        ("valid.", "not valid."),
        ("available.", "unavailable."),
    ]:
        report = find_duplicates([base + end, base + other])
        assert report.conflicts == {0: (1,), 1: (0,)} and not report.duplicate_of, end


@pytest.mark.parametrize(
    ("symbol", "other"),
    [("<", ">"), ("≤", "≥"), ("=", "≠"), ("$", "€"), ("✓", "✗")],
)
def test_a_symbol_replaced_by_another_is_a_changed_detail(symbol, other):
    # ("x < 5" / "x > 5": punctuation and symbols were both taken for what joins words, so
    # the two read as one text stopped another way, and the second was dropped as a copy)
    text = (
        "The device ships with a charger and a cable in the box. Setup takes a few minutes. "
        "Support is available by phone and email during business hours. The limit applies "
        "only when x {} 5 holds for the reading. Customers should keep the receipt for any claim."
    )
    a = _versions_conflict(text, symbol, other)
    # spaced or stopped another way, the same symbols are still an edit
    assert difference(a, a.replace(f"x {symbol} 5", f"x {symbol} 5,")) is None


@pytest.mark.parametrize(
    ("address", "other"),
    [
        ("https://example.com/a", "https://example.com/b"),
        ("example.com/lamp-pro", "example.com/lamp-mini"),
        ("support@example.com", "sales@example.com"),
        ("/etc/lamp/pro.conf", "/etc/lamp/mini.conf"),
        ("lamp-pro.pdf", "lamp-mini.pdf"),
    ],
)
def test_an_address_replaced_by_another_is_a_changed_detail(address, other):
    # ("example.com/a" / "example.com/b" read as one word spelled two ways: the second
    # version's text was dropped as a near-duplicate, its address lost)
    text = (
        "The setup guide explains pairing, firmware updates and resetting the lamp to factory "
        "settings. Download the latest firmware from {} before you start. Keep the lamp "
        "plugged in while it updates, and do not switch it off."
    )
    _versions_conflict(text, address, other)


def _versions_conflict(template: str, mine: str, theirs: str) -> str:
    """Assert that ``template`` filled with ``mine`` and with ``theirs`` differ in a detail: both
    stay, marked conflicting with each other. Returns the first version."""
    a, b = template.format(mine), template.format(theirs)
    assert difference(a, b) == "detail"
    report = find_duplicates([a, b])
    assert report.conflicts == {0: (1,), 1: (0,)} and not report.duplicate_of
    return a


@pytest.mark.parametrize(
    ("spaced", "glued"), [("world/ But", "world/But"), ("ministry. This", "ministry.This")]
)
def test_words_glued_by_a_slash_or_a_stop_are_no_address(spaced, glued):
    # (windows of one nq-open-oracle paragraph spaced otherwise: the same words, an edit)
    text = (
        "The series was filmed across the {} the second season moved to a new studio in the "
        "north of the city, where most of the cast lived during the shoot."
    )
    assert difference(text.format(spaced), text.format(glued)) is None


def test_a_near_duplicate_is_never_reported_as_an_exact_copy():
    # "a" for "the", inside shingles the sketch does not sample: similarity 1.0 on what
    # is compared, but the texts differ; "exact copy" is for the same text only.
    filler = " ".join(f"bright cats jump quickly over lazy dogs{k}" for k in range(10))
    a = f"They lived in the new house near the river. {filler}."
    b = a.replace("in the new house", "in a new house")
    for dedupe in (True, ["near"]):
        reason = (
            satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?", dedupe=dedupe)
            .manifest[1]
            .reason
        )
        assert reason == "duplicate: near-duplicate (similarity 0.999) of a, which ranks higher"
    copy = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": a.upper()}], "q?", dedupe=["near"])
    assert (
        copy.manifest[1].reason
        == "duplicate: copy in other case, spacing or quote marks of a, which ranks higher"
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "The report on the new bridge was written by Anna Schmidt in the spring.",
            "The report on the new bridge was written by Brian Schmidt in the spring.",
        ),
        (
            "The plan for the new bridge was approved by the city council last week.",
            "The plan for the new bridge was unapproved by the city council last week.",
        ),
        ("Written by Anna Schmidt.", "Written by Brian Schmidt."),
    ],
)
def test_the_shortest_texts_that_differ_in_a_name_or_a_prefix_that_negates_are_marked_conflicting(a, b):
    # (one changed word in a dozen left too few shingles alike for the two to meet)
    assert find_duplicates([a, b]) == DedupeReport(conflicts={0: (1,), 1: (0,)})


def test_short_texts_that_differ_in_a_name_are_found_as_conflicting():
    # Names are not masked, so the two share only part of their shingles: the
    # candidate search must still bring them together.
    texts = [
        "The support ticket was closed on Monday by Anna after the customer confirmed the fix.",
        "The support ticket was closed on Monday by Brian after the customer confirmed the fix.",
    ]
    report = find_duplicates(texts)
    assert report.conflicts == {0: (1,), 1: (0,)} and not report.duplicate_of


def test_a_long_near_duplicate_is_found_whatever_its_edits_sort_like():
    # A word put in before every 40th word of a 1,000-word text (similarity still above 0.8),
    # each one that sorts before all others: the sketch must not be crowded by them.
    import random

    rng = random.Random(11)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9)))
        for _ in range(300)
    ]
    words = [rng.choice(vocabulary) for _ in range(1000)]
    edited = [
        ("baaa" + "abcdefghijklmnopqrstuvwxyz"[k // 40 % 26] * 2 + " " + w) if k % 40 == 0 else w
        for k, w in enumerate(words)
    ]
    report = find_duplicates([" ".join(words), " ".join(edited)])
    # (they meet; a word put in inside qualifies what the text says: conflicting versions)
    assert report.conflicts == {0: (1,), 1: (0,)}
    # the same words put in place of every 40th one: the two meet as well, and the words
    # replaced make them conflicting versions
    replaced = [w if k % 40 else e.split()[0] for k, (w, e) in enumerate(zip(words, edited, strict=True))]
    assert find_duplicates([" ".join(words), " ".join(replaced)]).conflicts == {0: (1,), 1: (0,)}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # the same words stopped, cased or contracted another way: a dozen words hold too few
        # shingles for one change to leave them near (0.6), and both went into the prompt
        ("It blinks blue when it is ready.", "It blinks blue when it's ready."),
        (
            "Returns are accepted within 30 days of delivery. Refunds take 5 business days.",
            "Returns are accepted within 30 days of delivery; refunds take 5 business days.",
        ),
        (
            "Returns are accepted within 30 days of delivery. Refunds take 5 business days.",
            "Returns are accepted within 30 days of delivery! Refunds take 5 business days.",
        ),
        # (marked conflicting: "month" is a unit, though it was not what changed)
        ("Plus costs $3.99 a month.", "Plus costs $3.99 a month!"),
        # (marked conflicting: one number, in digits and in words)
        ("Returns are accepted within 30 days.", "Returns are accepted within thirty days."),
    ],
)
def test_short_copies_written_otherwise_are_near_duplicates(a, b):
    report = find_duplicates([a, b])
    assert report.duplicate_of == {1: (0, 0.999)} and not report.conflicts


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # met as copies written otherwise ("he's"), told apart by the word replaced
        ("He is a doctor in town.", "He has a doctor in town."),
        # three words, one of them replaced: versions of one statement
        ("Shipping is free.", "Shipping is paid."),
    ],
)
def test_short_versions_met_by_their_words_are_marked_conflicting(a, b):
    report = find_duplicates([a, b])
    assert not report.duplicate_of and report.conflicts == {0: (1,), 1: (0,)}


def test_a_long_version_with_a_qualifier_put_in_is_sent_and_marked_conflicting():
    # Seed 003: "A threshold of 500 became 'around 500.'" Dropped as a near-duplicate of
    # the exact figure (similarity 0.93), the version with the qualifier never reached the
    # prompt, nor did the manifest say there were two.
    doc = (
        "Brightgrid sells smart lamps and a companion app. Orders ship from our warehouse in Leeds. "
        "Most orders arrive within three working days. You can track every parcel in the app. "
        "Late deliveries are refunded in full on request. Business customers may order in bulk. "
        "Bulk orders need a signed purchase agreement. The agreement lists every lamp model ordered. "
        "A bulk order has a minimum value of 500 pounds. Invoices are sent by email each month. "
        "Payment is due within thirty days of the invoice. Our support team answers within a day."
    )
    for qualifier in ("around ", "about ", "up to ", "over ", "under "):
        other = doc.replace("of 500", "of " + qualifier + "500")
        result = satchel.pack(
            [{"id": "A", "text": doc, "score": 0.9}, {"id": "B", "text": other, "score": 0.8}],
            "What is the minimum bulk order?",
        )
        assert result.entry("B").kept and result.entry("A").conflicts_with == ("B",), qualifier
        # (only the sentence that differs is sent again: the ledger takes out the rest)
        assert f"of {qualifier}500 pounds." in result.text and result.text.count("Leeds") == 1


def test_a_passage_in_other_surroundings_is_neither_a_duplicate_nor_a_conflict():
    # Two pages quote the same long passage with different words around it: the
    # second is kept (not a near-duplicate, not conflicting) and the sentence
    # ledger sends only what it adds.
    passage = (
        "The committee met every spring to review the budget of the society. Its members read the "
        "accounts line by line and wrote a short report for the annual meeting. The report was then "
        "printed and sent to every member of the society before the summer break. Members could "
        "answer in writing, and their letters were read aloud at the next meeting of the committee."
    )
    first = "Mick Jones kept the minutes for years. " + passage
    second = "Uralic Press printed a longer account of the same period in Tallinn. " + passage
    assert difference(first, second) == "surroundings"
    report = find_duplicates([first, second])
    assert not report.duplicate_of and not report.conflicts
    result = satchel.pack([{"id": "a", "text": first}, {"id": "b", "text": second}], "Who kept the minutes?")
    assert result.labels == {"S1": "a", "S2": "b"}
    assert result.sources[1].text == "Uralic Press printed a longer account of the same period in Tallinn."


def test_what_counts_as_a_changed_detail_in_long_windows():
    shared = (
        "the team won the title again and the city held a parade through the old town while the players "
        "waved from an open bus and thousands of fans lined the streets to cheer them on for hours"
    )
    # a number changed inside a long shared text, with a small edit near the start: a detail
    a = f"Revenue rose from $1.9 billion as {shared}."
    b = f"Revenue rose of $1.8 billion as {shared}."
    assert difference(a, b) == "detail"
    # two different openings, each with figures next to the shared words: other surroundings
    c = f"He was drafted in 2008 after his final NCAA season in 2008-09, and {shared}."
    d = f"The Reds have appeared in 9 series and won 5 of them by 1990, and {shared}."
    assert difference(c, d) == "surroundings"
    assert find_duplicates([c, d]).conflicts == {}
    # windows cut from two different continuations, a lone "the" shared in their
    # tails: other surroundings, though one tail has a date (found on the speed
    # benchmark's windows)
    e = f"{shared} while the crowd sang The Glory"
    f = f"{shared} while the crowd sang Principal photography started April 26, 1965, at the 20th Century"
    assert difference(e, f) == "surroundings"
    assert find_duplicates([e, f]).conflicts == {}
    # a few words against many with figures next to the shared words: still a changed detail
    g, h = f"{shared}; entry costs $2.99", f"{shared}; entry costs $3.99 plus tax and the fees"
    assert difference(g, h) == "detail"


def test_long_texts_with_a_lone_surrogate_are_compared_as_any_other():
    # A str may hold a lone surrogate (JSON "\ud800" decodes to one). pack() refuses
    # it (tests/test_errors.py), but the dedupe functions take any str: shingles are
    # hashed from their UTF-8 bytes, which must not raise on it.
    vocabulary = "bold calm dark fond jolly kind mild pure quick vast warm zesty".split()
    words = [f"{vocabulary[i % 12]} beta x\ud800y {vocabulary[i * 5 % 12]}" for i in range(30)]
    edited = [*words[:15], words[15] + "s", *words[16:]]  # (one word spelled another way)
    report = find_duplicates([" ".join(words), " ".join(edited)])
    assert 1 in report.duplicate_of


def test_the_sketch_threshold_misses_no_pair_at_the_near_duplicate_similarity():
    # _least_shared bounds how few sketch entries two texts of similarity 0.8 can
    # share (but for a chance of one in a million). Check it on the worst case, one
    # text inside the other at exactly 0.8, and on two equal-sized texts at 0.8,
    # with random marks: every such pair must meet in the index.
    import math

    from satchel._dedupe import _SKETCH, _least_shared

    rng = random.Random(17)
    near, checked = 0.8, 0
    for size in (24, 30, 56, 120, 400):
        for _ in range(1000):
            marks = rng.sample(range(1 << 32), size + size // 4)
            big = set(marks[:size])
            inside = set(rng.sample(sorted(big), math.ceil(near * size)))  # similarity 0.8, inside big
            shared_by_one = math.ceil(size * 2 * near / (1 + near))  # two texts of `size`, similarity 0.8
            equal = set(marks[:shared_by_one]) | set(marks[size : size + size - shared_by_one])
            for other in (inside, equal):
                assert len(big & other) / len(big | other) >= near
                shared = len(set(sorted(big)[:_SKETCH]) & set(sorted(other)[:_SKETCH]))
                need = min(_least_shared(near, len(big)), _least_shared(near, len(other)))
                assert shared >= need, (size, shared, need)
                checked += 1
    assert checked == 10000
    # and it is far stricter than the old binomial bound of 9 for the texts a pack usually sees
    assert _least_shared(0.8, 56) >= 12


def test_normalise_folds_case_and_every_kind_of_whitespace():
    # normalise skips splitting for text with single spaces only; it must agree
    # with splitting at every whitespace character and joining with one space.
    from satchel._sentences import normalise

    rng = random.Random(6)
    alphabet = ["A", "b", " ", "  ", "\t", "\n", "\xa0", "\u2028", "\x0b", "\x85", "\u3000", "İ", "ΟΔΟΣ"]
    alphabet += ["\u200b", "\x00"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 10)))
        assert normalise(text) == " ".join(text.lower().split()), repr(text)
    assert normalise("Plus Costs  $2.99\ta month") == "plus costs $2.99 a month"


def test_the_one_scan_splitter_agrees_with_the_two_scans_it_replaces():
    # split_sentences finds every end in one re.split (_BOUNDARY). It replaced two
    # finditer scans, one for ends the regex decides and one for periods _period_ends
    # decides, merged with the blank lines; both must find the same sentences.
    import re

    from satchel._sentences import (
        _FOLD,
        _RUN,
        _STARTS,
        SentenceCache,
        _period_ends,
        _plain,
        normalise,
    )

    # ends the regex decides: "!", "?" or "…", or a period after seven characters with
    # no whitespace, period or opening quote or bracket; and periods _period_ends decides
    clear = r"""[.!?…](?:(?<=[^\s.!?…"'“‘(\[]{7}\.)|(?<=[!?…]))(?<![.!?…].)"""
    maybe = r"""\.(?<![^\s.!?…"'“‘(\[]{7}\.)(?<![.!?…].)"""
    close = _RUN + r"(?=(\s+)" + _STARTS[3:]
    clear_end, maybe_end = re.compile(clear + close), re.compile(maybe + close)

    def line_start(text, at):
        return text.rfind("\n", 0, at) + 1

    def line_ends(text):
        """Line breaks that end a sentence: blank lines, and breaks before a heading, list
        item or table row, or after a heading or table row."""
        for m in re.finditer(r"[ \t\r]*\n\s*", text):
            line = text[line_start(text, m.start()) : m.start()].lstrip(" \t")
            number = re.match(r"(\d{1,3})[.)][ \t]", text[m.end() :])  # a list starts at 1 or goes on
            if (
                m.group().count("\n") > 1
                or re.match(r"#{1,6}[ \t]|[-*+•][ \t]|\|", text[m.end() :])
                or re.match(r"#{1,6}[ \t]|\|", line)
                or (number and (number.group(1) == "1" or re.match(r"\d{1,3}[.)][ \t]", line)))
            ):
                yield m.span()

    def two_scans(text):
        gaps = [m.span(1) for m in clear_end.finditer(text)]
        gaps += [m.span(1) for m in maybe_end.finditer(text) if _period_ends(text, m.start())]
        spans, start = [], len(text) - len(text.lstrip())
        for end, after in sorted(gaps + list(line_ends(text)) if "\n" in text else gaps):
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                spans.append((start, end))
            start = max(start, after)
        if len(text.rstrip()) > start:
            spans.append((start, len(text.rstrip())))
        # a numbered list item's number ("1." of "1. Open") joins the rest of its line
        joined = []
        for s, e in spans:
            if joined and "\n" in text:
                ps, pe = joined[-1]
                number = re.fullmatch(r"\d{1,3}\.", text[ps:pe])
                at_line_start = line_start(text, ps) > 0 and not text[line_start(text, ps) : ps].strip(" \t")
                if number and at_line_start and "\n" not in text[pe:s]:
                    joined[-1] = (ps, e)
                    continue
            joined.append((s, e))
        return joined

    rng = random.Random(8)
    words = ["Dr.", "No.", "no.", "No", "5", "5.", "1901.", "war.", "Sept.", "approx.", "fig.", "U.S."]
    words += ["a.", "K.", "ab1.", "PP.", "é.", "(2013).", '"man".', "(A).", "Why?!", "…", "”", ")", "’"]
    words += ["A", "Smith", "x", "ſt.", "(Dr.", "x(A.", "a.b.", "“A”.", "Mrs.", "MR.", "St."]
    marks = [" ", "  ", "\t", "\xa0", "\u3000", "\x0b", "\u2028", "", "(", '"', "‘", "$", "#", "["]
    marks += ["\n", "\n\n", " \n \t\n", "\r\n", "\n# ", "\n- ", "\n1. ", "\n|", "\r\n\r\n", "\n  12) "]
    for _ in range(8000):
        text = "".join(rng.choice(words) + rng.choice(marks) for _ in range(rng.randrange(0, 16)))
        cache = SentenceCache()
        split = cache.split(text)
        assert split_sentences(text) == two_scans(text) == split.spans, repr(text)
        folded = text.translate(str.maketrans(dict(_FOLD)))  # (curly quotes read as straight ones)
        assert split.normal == [" ".join(folded[a:b].lower().split()) for a, b in split.spans]
        assert cache.words(split) == len(text.split())
        assert cache.plain_words(split) == _plain(normalise(text))
        assert cache.pieces(text) == _counting_pieces(text)


def test_long_runs_are_read_once():
    # Shapes that were quadratic (found by an audit of adversarial input): a period after
    # "No." or inside a dotted word is looked at back to the period before it only, and the
    # sentences such periods join are joined in one pass; a long word without a digit is
    # masked from its start only (32 KB of it took 6 s). Checked here by their results at
    # sizes the old code took seconds to minutes for.
    assert split_sentences("No. 5 " * 100_000) == [(0, 599_999)]
    assert split_sentences("x.yz." * 100_000) == [(0, 500_000)]
    text = "Refunds take 5 days. " + "See No. 5 and p. 12. " * 50_000
    assert len(split_sentences(text)) == 50_001
    word = "a" * 200_000
    assert _masked_words(f"The code {word} costs 5 euros.") == ["the", "code", word, "costs", "#", "euros."]
    result = satchel.pack([{"id": "a", "text": f"See {word} now."}], "q?", source_budget=100)
    assert result.entry("a").status == "dropped"


def _split_as_a_whole(cache, text, found):
    """Whether ``found``, a split of ``text`` from ``cache``, is what a split of it alone gives."""
    from satchel._sentences import SentenceCache

    alone = SentenceCache()
    split = alone.split(text)
    assert found.spans == split.spans, repr(text)
    assert found.normal == split.normal and found.keys == split.keys
    assert found.sentences == [text[a:b] for a, b in split.spans]
    assert cache.pieces(text) == alone.pieces(text)


def _hostile_texts(rng: random.Random, words: list[str] | None = None) -> list[str]:
    """4,000 texts of words and marks the sentence splitter must decide with care, then 60
    real paragraphs."""
    tricky = words or ["Dr.", "No.", "no.", "5", "1901.", "war.", "Sept.", "U.S.", "a.", "K.", "(2013)."]
    words = [*tricky, "Why?!", "…", "A", "Smith", "x", "(Dr.", "a.b.", "“A”.", "Mrs.", "St.", "The", "sent"]
    words += ["it", "&", "<b>"]
    marks = [" ", " ", " ", "  ", "\t", "\xa0", "", "(", '"', "\n", "\n\n", " \n \t\n", "\r\n"]
    # a quarter of them with Markdown structure (code fences too) and Chinese sentence ends
    # (see split_sentences)
    markdown = [*marks, "\n# ", " # ", "\n- ", "\n1. ", "\n| ", " | ", "。", "是的。", "！」", "？ "]
    markdown += ["\n```\n", "\n~~~py\n"]
    texts = [
        "".join(
            rng.choice(words) + rng.choice(markdown if n % 4 == 0 else marks)
            for _ in range(rng.randrange(1, 40))
        )
        for n in range(4000)
    ]
    return texts + paragraphs(60)


def test_a_text_split_after_a_prefix_is_split_as_a_whole():
    # Neighbours merging one by one make a longer text each time; split_grown splits only
    # what follows the prefix's last piece. It must give what a split of the whole gives:
    # texts of hostile words and marks cut at random places, and real paragraphs; the
    # prefix split as given, or as the ledger left it (a source that lost sentences).
    from satchel._sentences import SentenceCache

    same = _split_as_a_whole
    rng = random.Random(11)
    texts = _hostile_texts(rng)
    for text in texts:
        cache = SentenceCache()
        cut = rng.randrange(1, len(text) + 1)
        prefix = text[:cut]
        if prefix.strip():
            cache.split(prefix)
            same(cache, text, cache.split_grown(text, prefix))
            grown = cache.grown(text)  # what the text's token count is worked out from
            if grown is not None:
                before, last, tail = grown
                assert before is prefix and prefix.endswith(last) and prefix[: -len(last)] + tail == text
                # and a merged text let go of takes its tail (nearly all of it, when a
                # window joined in front) with it
                assert cache.forget(text) == [text, tail]
                assert cache.pieces(text) is cache.pieces(tail) is cache.grown(text) is None
        # the prefix as the ledger left it, then more text after it (the sentences around a
        # removed one may read as one alone: split whole again)
        cache = SentenceCache()
        ledger = Ledger(cache)
        split = cache.split(text)
        if len(split.keys) < 2:
            continue
        ledger.record(split.keys[0], "S1", keys=[split.keys[0]])
        left = ledger.fresh(text).text
        more = left + " " + rng.choice(texts[:50])
        if left.strip():
            same(cache, more, cache.split_grown(more, left))


def test_a_text_split_before_a_suffix_is_split_as_a_whole():
    # A window joining a source in front: split_grown splits only the text up to the end
    # of the suffix's first piece, and must give what a split of the whole gives (the
    # words include pieces that make one word with what is put in front: ".S.", "S.").
    from satchel._sentences import SentenceCache

    rng = random.Random(12)
    reused = 0
    for text in _hostile_texts(rng, ["U", ".S.", "S.", ".", "etc.", "e.g.", "1.", "Dr", "No", "no"]):
        cache = SentenceCache()
        cut = rng.randrange(0, len(text))
        suffix = text[cut:]
        if not suffix.strip():
            continue
        cache.split(suffix)
        _split_as_a_whole(cache, text, cache.split_grown(text, suffix))
        grown = cache.grown(text)  # what the text's token count is worked out from
        if grown is not None and not text.startswith(suffix):  # (else grown behind, as above)
            reused += 1
            known, piece, part = grown
            assert known is suffix and suffix.startswith(piece) and part + suffix[len(piece) :] == text
            assert cache.forget(text) == [text, part]
            assert cache.pieces(text) is cache.pieces(part) is cache.grown(text) is None
    # (the texts with enough of a suffix reuse its split; those with a code fence are split
    # whole, see split_grown)
    assert reused > 200


def test_windows_of_a_technical_document_joining_in_front_reuse_the_split():
    # Windows of paragraphs and fenced code blocks, each joining the source in front of it:
    # the suffix's first piece often ends in the blank line after a paragraph, or is a whole
    # code block. Both were split whole again at each join (a line break just before the
    # cut, a fence before it), 16 s for 1,000 windows; now the split is reused there, and
    # must still give what a split of the whole gives. (A window that ends inside a block
    # still makes the whole text be split again: its fences pair otherwise there.)
    from satchel._sentences import SentenceCache

    doc = "".join(
        f"{paragraph}\n\n```python\nimport acme\nacme.run({k})\n```\n\n"
        for k, paragraph in enumerate(paragraphs(40))
    )
    for width in (600, 450):
        cache = SentenceCache()
        starts = list(range(0, len(doc), width))
        text = doc[starts[-1] :]
        cache.split(text)
        reused = 0
        for a in reversed(starts[:-1]):
            longer = doc[a:]
            _split_as_a_whole(cache, longer, cache.split_grown(longer, text))
            reused += cache.grown(longer) is not None
            text = longer
        assert reused > 0.85 * (len(starts) - 1), (width, reused, len(starts))  # (74% before)


def test_curly_and_straight_quotes_are_the_same_text():
    # ("Nintendo’s" against "Nintendo's" was sent twice and marked conflicting)
    a = "The console sold well in Japan. Nintendo's profits rose sharply that year. Analysts said “wow”."
    b = a.replace("'", "’").replace("“", '"').replace("”", '"')
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
    assert (
        r.entry("b").reason
        == "duplicate: copy in other case, spacing or quote marks of a, which ranks higher"
    )
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b + " A new line follows."}], "q?")
    assert [s.text for s in r.sources] == [a, "A new line follows."] and not r.entry("b").conflicts_with


def test_a_sentence_that_refers_back_after_a_linking_word_stays_too():
    # ("However, this ..." refers back as "This ..." does: removed, Jones's claim went unrefuted)
    a = "Smith claimed that the bridge was safe for heavy trucks. However, this was later shown to be false."
    b = "Jones claimed that the new dam could hold back a flood. However, this was later shown to be false."
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
    assert [s.text for s in r.sources] == [a, b]


def test_a_sentence_that_refers_back_stays_after_other_text_than_where_it_was_sent():
    # "That claim is false." after Jones's claim says nothing of Smith's: removed from the
    # second document, it flipped what the source says. After the same sentence, or where
    # either occurrence opens its text (seed 001's windows), it goes as any repeat.
    dam = "Jones said the old dam on the river was unsafe. That claim is false."
    bridge = "Smith said the new bridge over the highway was safe. That claim is false."
    r = satchel.pack([{"id": "dam", "text": dam}, {"id": "bridge", "text": bridge}], "q?")
    assert [s.text for s in r.sources] == [dam, bridge]
    r = satchel.pack(
        [{"id": "dam", "text": dam}, {"id": "again", "text": dam + " The river is wide here."}], "q?"
    )
    assert [s.text for s in r.sources] == [dam, "The river is wide here."]
    first = "That claim is false. Everyone agreed on it later."
    r = satchel.pack([{"id": "a", "text": first}, {"id": "b", "text": bridge}], "q?")
    assert [s.text for s in r.sources] == [first, "Smith said the new bridge over the highway was safe."]
    r = satchel.pack([{"id": "b", "text": bridge}, {"id": "a", "text": first}], "q?")
    assert [s.text for s in r.sources] == [bridge, "Everyone agreed on it later."]
    # a short sentence before it is context too (it is no repeat itself)
    for lead in ("", "The report came out. "):
        a, b = f"{lead}Smith lied. That claim is false.", f"{lead}Jones erred. That claim is false."
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
        assert [s.text for s in r.sources][1].endswith("Jones erred. That claim is false.")


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Das ist gut. Über alles geht es. Ça va bien.",
            ["Das ist gut.", "Über alles geht es.", "Ça va bien."],
        ),
        ("Это хорошо. Всё нормально.", ["Это хорошо.", "Всё нормально."]),
        ("Η Αθήνα είναι μεγάλη. Ελλάδα είναι ωραία.", ["Η Αθήνα είναι μεγάλη.", "Ελλάδα είναι ωραία."]),
        ("Jest dobrze. Łódź jest duża.", ["Jest dobrze.", "Łódź jest duża."]),
        ("He said it. über-cool is lower case.", ["He said it. über-cool is lower case."]),
    ],
)
def test_sentences_start_at_capitals_of_other_alphabets(text, sentences):
    # (only A-Z started one: German, Russian and Greek windows resent their overlap whole)
    assert [text[s:e] for s, e in split_sentences(text)] == sentences


def test_a_heading_is_no_repeat_and_stays_on_its_own_line():
    a = "## Pricing\nPlus costs $2.99 per month. It renews every month."
    b = "## Pricing\nPlus costs $2.99 per month. Annual plans cost $29.99 per year."
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
    assert [s.text for s in r.sources] == [a, "## Pricing\nAnnual plans cost $29.99 per year."]


@pytest.mark.parametrize(
    ("sent", "rest"),
    [
        # after a Chinese full stop anything may start a sentence: a fence, an item, a row
        ("这是第一个很长的句子内容。", "```python 这不是代码块的开始。\n下一行的文字也很长。"),
        ("这是第一个很长的句子内容。", "- 第二项的内容也写得很长。"),
        ("这是第一个很长的句子内容。", "| 第二项 | 内容 |"),
        ("The company was founded in Ohio in 1990. ", "# of users grew to five million."),
    ],
)
def test_a_sentence_sent_stays_before_one_that_would_open_a_line_as_markdown(sent, rest):
    # Without the sentence before it, the kept one would open the text: a code fence, a
    # list item, a table row or a heading it never was. The sentence sent stays (it
    # repeats; the text keeps its meaning).
    a = {"id": "a", "text": sent.strip() + " The plant closed in 2001."}
    r = satchel.pack([a, {"id": "b", "text": sent + rest}], "q?")
    assert [s.text for s in r.sources] == [a["text"], sent + rest]
    assert r.entry("b").reason == "admitted"


def test_list_items_stay_under_another_heading_or_lead_in_than_where_they_were_sent():
    # Steps 1 and 3 of the macOS procedure went, sent under "## Windows": the procedure
    # lost them; the Enterprise plan's list lost a feature the Pro plan's list had sent.
    win = "## Windows\n1. Download the installer.\n2. Run it as administrator.\n3. Restart the computer."
    mac = "## macOS\n1. Download the installer.\n2. Drag the app into Applications.\n3. Restart the computer."
    pro = "The Pro plan includes:\n- Priority email support within 24 hours.\n- Ten projects."
    ent = "The Enterprise plan includes:\n- Priority email support within 24 hours.\n- Unlimited projects."
    for first, second in ((win, mac), (pro, ent)):
        r = satchel.pack([{"id": "a", "text": first}, {"id": "b", "text": second}], "q?")
        assert [s.text for s in r.sources] == [first, second]
    # under the same heading (windows of one list without offsets) an item sent goes
    a = "## macOS\n1. Download the installer.\n2. Drag the app into Applications."
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": mac}], "q?")
    assert [s.text for s in r.sources] == [a, "## macOS\n3. Restart the computer."]
    # and so does one in a window cut inside a list, where nothing here leads it
    cut = "- Ten projects.\n- Two seats for the team."
    r = satchel.pack([{"id": "a", "text": pro}, {"id": "b", "text": cut}], "q?")
    assert [s.text for s in r.sources] == [pro, "- Two seats for the team."]


def test_a_list_item_sent_where_nothing_led_it_or_under_the_same_name_goes():
    items = "- Offline maps for every country.\n- Ten saved places."
    cut = {"id": "a", "text": items}  # a window cut inside the list: nothing leads it
    r = satchel.pack([cut, {"id": "b", "text": f"## Features\n{items}\n- A night mode."}], "q?")
    assert [s.text for s in r.sources] == [items, "## Features\n- A night mode."]
    # "## Features" and "Features:" name one list alike
    r = satchel.pack(
        [
            {"id": "a", "text": f"Features:\n{items}"},
            {"id": "b", "text": f"## Features\n{items}\n- A night mode."},
        ],
        "q?",
    )
    assert [s.text for s in r.sources][1] == "## Features\n- A night mode."


def test_whether_a_list_item_goes_does_not_hang_on_another_source():
    # (an unrelated list with a lead-in line, ranked first, made the items of a list sent
    # without one stay, where without it they went)
    c1 = "- Unlimited projects for the team.\n- Priority email support within a day.\n- Weekly backups."
    c2 = "The Enterprise plan includes:\n- Unlimited projects for the team.\n- Weekly backups.\n- SSO."
    other = "Other notes:\n- Gift cards never expire here."
    alone = satchel.pack([{"id": "c1", "text": c1}, {"id": "c2", "text": c2}], "q?")
    beside = satchel.pack(
        [{"id": "o", "text": other}, {"id": "c1", "text": c1}, {"id": "c2", "text": c2}], "q?"
    )
    assert alone.sources[-1].text == beside.sources[-1].text == "The Enterprise plan includes:\n- SSO."


def test_a_piece_with_a_colon_but_nothing_said_after_it_is_no_field():
    a = "The new pricing takes effect on 1 March."
    for piece in ("Except: not", "Note: never"):
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": f"{a} {piece}"}], "q?")
        assert [s.text for s in r.sources] == [a]


def test_a_list_item_in_a_window_that_joins_a_source_is_led_by_the_heading_before_it():
    # (noted from the window alone, the Windows step had no heading, and "went as any
    # repeat" from the macOS procedure)
    doc = "## Windows\n- Open the Start menu.\n- Search for Settings.\n- Download the installer.\n- Go.\n"
    cut, start = doc.index("- Download"), doc.index("- Search")
    w1 = {"id": "w1", "doc_id": "win", "start": 0, "end": cut, "text": doc[:cut], "score": 0.9}
    w2 = {"id": "w2", "doc_id": "win", "start": start, "end": len(doc), "text": doc[start:], "score": 0.8}
    mac = "## macOS\n- Download the installer.\n- Drag the app to Applications."
    for order in ([w1, w2], [w2, w1]):
        r = satchel.pack([*order, {"id": "mac", "text": mac, "score": 0.7}], "q?")
        assert r.sources[-1].text == mac


def test_markdown_that_opened_its_own_line_loses_the_sentence_sent_before_it():
    sent = "这是第一个很长的句子内容。"
    a = {"id": "a", "text": sent + "这里还有别的句子。"}
    for rest in ("```python\nprint(1)\n```", "- 第二项的内容也写得很长。", "| 第二项 | 内容 |"):
        r = satchel.pack([a, {"id": "b", "text": sent + "\n" + rest}], "q?")
        assert [s.text for s in r.sources] == [a["text"], rest]


def test_a_short_answer_keeps_the_sentence_it_answers():
    # "No." alone says nothing, and sent without its question it said the opposite of what
    # the other source says: the question goes with it, though it was sent before.
    yes = "Is the Plus plan refundable? Yes, within 30 days."
    no = "Is the Plus plan refundable? No. Plans bought on sale are final."
    r = satchel.pack([{"id": "yes", "text": yes}, {"id": "no", "text": no}], "q?")
    assert [s.text for s in r.sources] == [yes, no]


def test_a_short_field_is_sent_however_it_was_cut():
    # (read as the start of a sentence a window cut, "Plus: $3.99" was dropped as saying
    # nothing alone, and the price never reached the prompt; a piece of a sentence stays
    # out, whatever it holds: on real windows, "Charlie Adlard" and "The Carolingian")
    a = "The new pricing takes effect on 1 March."
    for last in ("Plus: $3.99", "Version: 2.4.1", "Contact: Anna Berg"):
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": f"{a}\n{last}"}], "q?")
        assert [s.text for s in r.sources] == [a, last]
    for piece in ("The address", "Charlie Adlard", "The Carolingian"):
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": f"{a}\n{piece}"}], "q?")
        assert [s.text for s in r.sources] == [a]


def test_what_is_left_only_short_sentences_is_not_sent_alone():
    a = "Plus costs $2.99 per month. It renews every month."
    for b, left in (
        ("Yes. Plus costs $2.99 per month. It renews every month.", "Yes."),
        ("## Pricing\nPlus costs $2.99 per month. It renews every month.", "## Pricing"),
    ):
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
        assert [s.text for s in r.sources] == [a]
        entry = r.entry("b")
        assert entry.status == "dropped" and entry.duplicate_of == "a"
        assert entry.reason.endswith(f"was already sent (in a) but {left!r}, which says nothing alone")


def test_chinese_windows_without_offsets_do_not_repeat_their_overlap():
    a = "该计划每月收费2.99美元。订阅每月自动续订一次。"
    b = "订阅每月自动续订一次。年度计划每年收费29.99美元。"
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "多少钱？")
    assert [s.text for s in r.sources] == [a, "年度计划每年收费29.99美元。"]
    # a sentence of a few characters is too short to count as a repeat, as "Yes." is
    r = satchel.pack([{"id": "a", "text": "是的。" + a}, {"id": "b", "text": "是的。" + b}], "多少钱？")
    assert [s.text for s in r.sources][1] == "是的。年度计划每年收费29.99美元。"


def test_chinese_texts_are_compared_character_by_character():
    # (with no spaces, a Chinese text was one word, masked whole for holding a digit:
    # any two that held numbers were near-duplicates or conflicting)
    price = "该计划每月收费2.99美元，包括所有功能。"
    r = satchel.pack(
        [{"id": "a", "text": price}, {"id": "b", "text": "东京的人口在2020年超过了1400万人。"}], "q?"
    )
    assert [(e.status, e.conflicts_with) for e in r.manifest] == [("kept", ()), ("kept", ())]
    r = satchel.pack([{"id": "a", "text": price}, {"id": "b", "text": price.replace("2.99", "3.99")}], "q?")
    assert [(e.status, e.conflicts_with) for e in r.manifest] == [("kept", ("b",)), ("kept", ("a",))]


def test_what_is_left_is_sent_when_it_holds_a_figure_a_negation_or_a_table():
    # (the rule for what says nothing alone dropped a pricing table and "Pro: $9.99.")
    intro = "Prices are listed below for all plans."
    a = intro + " Contact sales for discounts."
    for left in (
        "| Plan | Price |\n|---|---|\n| Pro | $9.99 |\n| Team | $19 |",
        "Pro: $9.99.",
        "Refunds: none.",
    ):
        b = intro + "\n" + left
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "How much is Pro?")
        assert [s.text for s in r.sources] == [a, left]
    c = "该计划的价格如下所示。专业版九元。"
    r = satchel.pack([{"id": "a", "text": "该计划的价格如下所示。"}, {"id": "c", "text": c}], "q?")
    assert [s.text for s in r.sources][1] == "专业版九元。"


def test_chinese_and_japanese_texts_that_differ_anywhere_are_never_merged():
    # (compared character by character, "can be refunded" / "cannot be" met at 0.81 and the
    # second was dropped: the negation checks know English words only)
    for a, b in (
        (
            "このプランは購入後三十日以内であれば返金できます。",
            "このプランは購入後三十日以内であれば返金できません。",
        ),
        ("该计划的价格包含所有的高级功能和服务。", "该计划的价格不包含所有的高级功能和服务。"),
    ):
        r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
        assert [(e.status, e.conflicts_with) for e in r.manifest] == [("kept", ("b",)), ("kept", ("a",))]


def test_a_run_of_chinese_ends_is_one_end():
    assert [t for t in ("他走了。。。", "真的吗？！")] == [
        "他走了。。。"[s:e] for s, e in split_sentences("他走了。。。")
    ] + ["真的吗？！"[s:e] for s, e in split_sentences("真的吗？！")]
    text = "他说：「真的吗？！」我点头。下一句。"
    assert [text[s:e] for s, e in split_sentences(text)] == ["他说：「真的吗？！」我点头。", "下一句。"]


def test_a_number_opens_a_list_item_only_where_a_list_starts_or_goes_on():
    # (hard-wrapped prose "The total was\n42. That is all." was cut as a list)
    for text, sentences in (
        ("The total was\n42. That is all.", ["The total was\n42.", "That is all."]),
        ("Steps\n1. Open it\n2. Press Add", ["Steps", "1. Open it", "2. Press Add"]),
        # (at a text's start "1." may end a sentence a window was cut from, "25. Sentence
        # ...", but not where the next line goes on with "2.")
        ("1. Open it\n2. Press Add\n3. Done", ["1. Open it", "2. Press Add", "3. Done"]),
        ("25. Sentence 26\n2. Press Add", ["25.", "Sentence 26", "2. Press Add"]),
    ):
        assert [text[s:e] for s, e in split_sentences(text)] == sentences


def test_kept_runs_joined_across_a_line_stay_apart():
    # (removing the list item between them left two lines that read as one sentence,
    # found in no chunk)
    b = "Overview of plans\n- Plus costs $2.99 a month.\nAll plans renew monthly."
    r = satchel.pack([{"id": "a", "text": "- Plus costs $2.99 a month."}, {"id": "b", "text": b}], "q?")
    sent = r.sources[1].text
    assert [sent[s:e] for s, e in split_sentences(sent)] == ["Overview of plans", "All plans renew monthly."]


def test_a_question_sent_before_stays_with_the_answer_after_it():
    # (the Basic plan's question went, as already sent, and its answer then read as the
    # Pro plan's)
    a = "Is the Basic plan refundable? No."
    b = "Is the Pro plan refundable? No. Is the Basic plan refundable? Yes, within 30 days."
    r = satchel.pack([{"id": "a", "text": a}, {"id": "b", "text": b}], "q?")
    assert [s.text for s in r.sources] == [a, b]
    # a list item's number is no short answer: the item before it goes as any repeat
    a = "Steps:\n1. Plug the lamp into the wall."
    c = "Steps:\n1. Plug the lamp into the wall.\n2. Wait."
    r = satchel.pack([{"id": "a", "text": a}, {"id": "c", "text": c}], "q?")
    assert r.entry("c").sentences_removed == 1


def test_a_join_never_reads_as_one_sentence_of_two():
    # A period that ended a sentence before a removed one may end none before the next: "No."
    # before "2) ..." reads as "No. 2", and "$9.99." before a line that no longer opens a list
    # reads as prose going on. (Found by fuzzing: the sent text held a "sentence" that is in
    # no chunk.) Such runs are kept apart by a blank line.
    for sent, text in (
        ("That claim is false.", "No. |---|---| No. That claim is false.\n2) Really？\n- 不。"),
        ("- 5 users asked anyway.", "Pro: $9.99.\n- 5 users asked anyway.\n2) Dr. Smith approved it. No."),
    ):
        r = satchel.pack([{"id": "a", "text": sent}, {"id": "b", "text": text}], "q?")
        kept = r.sources[1].text
        assert [kept[s:e] in text for s, e in split_sentences(kept)] == [True] * len(split_sentences(kept))


def test_the_second_review_of_the_sentence_rules():
    # (each case from a review of the rules above; what each got wrong is said beside it)
    def sent(*texts):
        return [
            s.text
            for s in satchel.pack([{"id": f"c{k}", "text": t} for k, t in enumerate(texts)], "q?").sources
        ]

    # one line: "No." and "30 days ..." joined read "No. 30", a sentence in no chunk
    a = "The Pro plan is not refundable after purchase."
    b = "Can I get a refund? No. The Pro plan is not refundable after purchase. 30 days is the limit here."
    kept = sent(a, b)[1]
    assert all(kept[s:e] in b for s, e in split_sentences(kept))
    # a Chinese question stays with its answer, as an English one does
    assert sent(
        "基础版可以退款吗？不可以。", "专业版可以退款吗？可以。基础版可以退款吗？不可以，三十天内除外。"
    )[1] == ("专业版可以退款吗？可以。基础版可以退款吗？不可以，三十天内除外。")
    # Chinese texts that differ only in punctuation or spacing are copies, not a conflict
    base = "该计划的价格包含所有的高级功能和服务，每月自动续订。"
    assert sent(base, base.replace("，", "， ")) == [base]
    # what is left is sent when it is a list, or a short sentence of its own
    intro = "Supported platforms are listed below for you."
    for left in ("- Windows\n- macOS\n- Linux", "Windows only.", "仅限会员。", "#1 again."):
        assert sent(intro + " More soon.", intro + "\n" + left)[1] == left
    # a heading after a question answers nothing: the question goes as any repeat
    assert sent("How do I reset my password?", "How do I reset my password?\n## Billing\nPay by card.")[
        1
    ] == ("## Billing\nPay by card.")


def test_long_texts_are_told_apart_by_the_words_one_has_more_often():
    # (aligning two 40 KB editions of one page word by word took 50 s)
    from satchel._dedupe import difference

    page = " ".join(f"Plan {k} renews every month for all users." for k in range(400))
    assert difference(page, page.replace("Plan 7 ", "Plan 8 ")) == "detail"
    assert difference(page, page.replace("renews", "repeats", 1)) is None


def test_a_line_of_code_is_never_taken_out_of_its_block():
    # A shell block shared its install line with an earlier chunk's: the ledger took that
    # line out as "already sent", and the block sent read "# install the tool" with nothing
    # under it. A code block is one unit: sent whole, or left out whole when sent before.
    setup = "Setup:\n\n```bash\n# install the tool\npip install acme-tool\nacme start\n```"
    upgrade = "Upgrade:\n\n```bash\n# install the tool\npip install acme-tool\nacme migrate --all\n```"
    r = satchel.pack([{"id": "a", "text": setup}, {"id": "b", "text": upgrade}], "How do I upgrade?")
    assert [s.text for s in r.sources] == [setup, upgrade]
    again = satchel.pack([{"id": "a", "text": setup}, {"id": "c", "text": "Later:\n" + setup[8:]}], "q?")
    assert again.entry("c").status == "dropped"  # the same block, sent already: out whole


def test_code_blocks_stay_whole_in_compression_boilerplate_and_nested_lists():
    # (found by a review of the change that made a block one unit: three paths still read
    # blocks line by line)
    from satchel._represent import compress

    count = satchel.Packer().count
    # compression of "key: value" lines worked field by field, into the block
    block = "```yaml\nname: acme\nversion: 1.2\nport: 8080\nhost: example.org\n```"
    for cap in (8, 30):
        kept = compress(block + "\nSet the port first. It is 8080 by default.", "What port?", cap, count)
        assert kept is None or "```" not in kept.text or block in kept.text
    # boilerplate took a line of code out of a block that recurs across documents
    chunks = [
        {
            "id": f"c{d}",
            "doc_id": f"d{d}",
            "text": f"Guide {d} explains step {d} in depth.\n\n```sh\npip install acme\nacme init\n```",
        }
        for d in range(3)
    ]
    result = satchel.pack(chunks, "q?", strip_boilerplate=True)
    assert all("```" not in s.text or "acme init" in s.text for s in result.sources)
    # a fence indented as a list item nested twice is a fence
    nested = "- Set up:\n\n    1. Make it:\n\n        ```sh\n        # make it\n        acme do\n        ```"
    assert [nested[a:b] for a, b in split_sentences(nested)][-1].startswith("```sh\n        # make it")


@pytest.mark.parametrize("versions", [60, 66, 500])
def test_the_versions_of_one_templated_sentence_meet_however_many(versions):
    # Short texts are shingled with their details masked: every version of a templated
    # sentence shares every shingle, and past 64 of them (the cap that keeps boilerplate
    # from making the search quadratic) later versions met nobody: not marked conflicting,
    # and a near-duplicate of one not dropped.
    template = (
        "The Plus plan costs ${}.99 per month and you can return it within thirty days "
        "of delivery if it is unused and {}in its box."
    )
    texts = [template.format(i, "") for i in range(versions)]
    texts += [template.format(3, "also "), template.format(versions - 1, "also ")]  # (an edit)
    report = find_duplicates(texts)
    assert report.duplicate_of.keys() == {versions, versions + 1}
    assert report.duplicate_of[versions][0] == 3
    assert report.duplicate_of[versions + 1][0] == versions - 1
    assert set(report.conflicts) == set(range(versions))  # every version is marked
    last = report.conflicts[versions - 1]
    # with the best-ranked versions (every one, up to 64; then the first eight)
    assert last == tuple(range(versions - 1)) if versions <= 65 else last == tuple(range(8))


def test_words_swapped_one_for_one_inside_are_judged_without_aligning_them():
    # the quick path for texts of as many words: a detail swapped inside is a detail
    assert difference("It costs $2.99 a month, said Anna.", "It costs $3.99 a month, said Anna.") == "detail"
    assert difference("Plus costs $2.99 a month today.", "Plus costs $2.99 a week today.") == "detail"
    # a word spelled another way, or at an end: judged as before, by the alignment
    assert difference("The lamp has a bright colour today.", "The lamp has a bright color today.") is None
    # any other word swapped is a changed word, as the alignment finds it
    assert difference("The lamp is bright and warm today.", "The lamp is bright and cosy today.") == "detail"
    assert difference("It costs $2.99", "It costs $3.99") == "detail"
    # a word taken out in one place and one put in elsewhere moves the words between
    # ("Berlin", "40"): no swap; an edit where the words are articles ...
    middle = "within a while and the office in Berlin handles 40 of those"
    a = f"Our team answers the ticket {middle} requests here."
    b = f"Our team answers ticket {middle} the requests here."
    assert difference(a, b) is None
    # ... and a changed detail where a word put in inside qualifies what the text says
    assert difference(a, f"Our team answers ticket {middle} printed requests here.") == "detail"


def test_a_copy_with_a_comma_more_is_a_near_duplicate_however_many_versions_came_first():
    template = (
        "The Plus plan costs ${}.99 a month for each seat and the Basic plan stays free for small "
        "teams of up to five people who sign up before the end of the current quarter through the "
        "web shop{} while larger teams should ask the sales desk for a quote on the yearly terms"
    )
    for versions in (10, 70, 150):
        # (a copy of the last version: past 64, not one of the eight best-ranked it meets)
        texts = [template.format(i, "") for i in range(versions)] + [template.format(versions - 1, ",")]
        assert find_duplicates(texts).duplicate_of.get(versions, (None,))[0] == versions - 1, versions


def test_a_piece_cut_from_one_of_many_sentences_that_end_alike_is_found_in_a_short_walk():
    # Thousands of news sentences end " said in a statement.": a window without offsets
    # opening inside one of them walked every one, for every window (quadratic). A crowded
    # edge is read longer, and the piece is still found where its sentence was sent.
    import satchel._ledger as ledgers

    rng = random.Random(3)
    names = ["".join(rng.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(400)]
    ledger = Ledger()
    for k, name in enumerate(names):
        ledger.record(f"The minister of {name} affairs said in a statement.", f"s{k}")
    piece = f"{names[250]} affairs said in a statement."
    fresh = ledger.fresh(f"{piece} Prices rose again in March.", edges=True)
    assert fresh.sent_in == ("s250",) and fresh.text == "Prices rose again in March."
    assert len(ledger._tails.holding(piece)) <= ledgers._CROWDED
    # the openings too, and sentences sent after an edge was read longer
    ledger.record("According to the report, the figures for March were revised.", "late")
    start = "According to the report, the figures for"
    for k in range(30):
        ledger.record(f"According to the report, the {names[k]} figures were final.", f"r{k}")
    fresh = ledger.fresh(f"Prices rose. {start}", edges=True)
    assert fresh.sent_in == ("late",) and fresh.text == "Prices rose."
    revised = "according to the report, the figures for march were revised."
    assert list(ledger._heads.holding(start.lower())) == [revised]


_WESTPHALIA = (
    "The Peace of Westphalia is the collective name for two peace treaties. "
    "They were signed in October 1648 in the Westphalian cities of Osnabrück and Münster. "
    "The treaties ended the Thirty Years' War and brought peace to the Holy Roman Empire. "
    "The delegates numbered 109 and came from many European powers."
)


def test_a_duplicate_of_a_candidate_not_sent_has_a_turn_in_its_place():
    # A window that would join its document's source for a few tokens was dropped as a copy
    # of a better-ranked copy from another index, which then did not fit: "109" never
    # reached the prompt (2 nq-open-oracle questions lost their answer so at 300 tokens).
    doc = _WESTPHALIA
    a1, b0 = doc.index("The treaties ended") - 1, doc.index("They were signed")
    w0 = {"id": "doc#w0", "text": doc[:a1], "doc_id": "doc", "start": 0, "end": a1, "score": 0.9}
    w1 = {"id": "doc#w1", "text": doc[b0:], "doc_id": "doc", "start": b0, "end": len(doc), "score": 0.7}
    copy = {"id": "other#7", "text": doc[b0:], "score": 0.8}  # the same passage, without offsets
    filler = {"id": "filler", "text": "Weather report for the valley: rain, then sun. " * 5, "score": 0.85}
    r = satchel.pack([w0, copy, w1, filler], "How many delegates were there?", source_budget=103)
    assert r.entry("other#7").reason.startswith("does not fit")
    assert r.entry("doc#w1").kept and "109" in r.text
    # (copies take no role of their own: it goes under its original's, and the manifest says which)
    assert r.entry("doc#w1").role == r.entry("other#7").role == "supporting"
    assert r.entry("doc#w1").reason.endswith(
        "; in place of other#7, which ranks higher but was not sent: it is its exact copy"
    )
    # another copy of it goes as a copy of the one sent; and with room for the original,
    # its copies are copies of it
    again = {**copy, "id": "other#8", "score": 0.6}
    r = satchel.pack([w0, copy, w1, filler, again], "How many delegates were there?", source_budget=103)
    assert r.entry("other#8").reason == (
        "duplicate: exact copy of other#7, which ranks higher and was not sent; doc#w1, another copy "
        "of it, was sent in its place"
    )
    assert r.entry("other#8").duplicate_of == "doc#w1"
    r = satchel.pack([w0, copy, w1, filler, again], "How many delegates were there?")
    assert r.entry("doc#w1").reason == "duplicate: exact copy of other#7, which ranks higher"


def test_an_original_left_out_names_the_copy_sent_in_its_place():
    # An on-call engineer follows the chunk that held the answer: read alone, the original's
    # "does not fit" said the prompt lost it, though its copy carried the text in.
    doc = _WESTPHALIA
    a1, b0 = doc.index("The treaties ended") - 1, doc.index("They were signed")
    w0 = {"id": "doc#w0", "text": doc[:a1], "doc_id": "doc", "start": 0, "end": a1, "score": 0.9}
    w1 = {"id": "doc#w1", "text": doc[b0:], "doc_id": "doc", "start": b0, "end": len(doc), "score": 0.7}
    copy = {"id": "other#7", "text": doc[b0:], "score": 0.8}
    filler = {"id": "filler", "text": "Weather report for the valley: rain, then sun. " * 5, "score": 0.85}
    r = satchel.pack([w0, copy, w1, filler], "How many delegates were there?", source_budget=103)
    reason = r.entry("other#7").reason
    assert reason.startswith("does not fit: needs ")
    assert reason.endswith("; doc#w1, its exact copy, was sent in its place")
    # (a copy left out too puts nothing on its original)
    r = satchel.pack([w0, copy, {**copy, "id": "c2"}, filler], "q?", source_budget=60)
    assert "in its place" not in r.entry("other#7").reason


def test_a_copy_that_differs_in_case_or_spacing_says_so():
    r = satchel.pack([{"id": "a", "text": _WESTPHALIA}, {"id": "b", "text": _WESTPHALIA.upper()}], "q?")
    assert (
        r.entry("b").reason
        == "duplicate: copy in other case, spacing or quote marks of a, which ranks higher"
    )


def test_a_copy_left_out_like_its_original_says_both():
    chunks = [{"id": "a", "text": _WESTPHALIA}, {"id": "b", "text": _WESTPHALIA}]
    r = satchel.pack(chunks, "q?", source_budget=40)
    assert r.entry("a").reason.startswith("does not fit")
    assert r.entry("b").reason.startswith("does not fit")
    assert r.entry("b").reason.endswith(
        "; it is an exact copy of a, which ranks higher and was not sent either"
    )


def test_a_copy_of_an_original_a_role_cap_held_out_stays_out():
    # Only a copy of an original left out for want of room (or of a place under max_sources)
    # goes in its place: a role cap of 0 on the original was got round by its copy.
    text = "The warranty covers the battery for 24 months from the date of purchase."
    chunks = [
        {
            "id": "top",
            "score": 0.9,
            "text": "Our lamps ship worldwide from two warehouses.",
            "role": "decisive",
        },
        {"id": "orig", "score": 0.8, "text": text, "role": "background"},
        {"id": "copy", "score": 0.7, "text": text},
    ]
    caps = {"decisive": None, "supporting": 0.25, "background": 0}
    r = satchel.pack(chunks, "How long is the battery covered?", role_caps=caps)
    assert r.entry("orig").reason.startswith("role cap: background items get 0 tokens")
    # (and says that the original was not sent either: it read as if it had been)
    assert r.entry("copy").reason == (
        "duplicate: exact copy of orig, which ranks higher and was not sent either (role cap: "
        "background items get 0 tokens (role_caps)), nor its copies"
    )


def test_a_copy_whose_original_went_in_after_all_is_its_duplicate():
    # The original, left out by max_sources, was tried again once a merge freed a place, and
    # sent; its copy, left out meanwhile, said the original "was not sent either".
    doc = (
        "The lamp has three modes. Night mode dims it to ten percent. Party mode cycles colours. "
        "Reading mode is warm white."
    )

    def window(cid, first, last):
        start, end = doc.index(first), doc.index(last) + len(last)
        return {"id": cid, "doc_id": "lamp", "start": start, "end": end, "text": doc[start:end]}

    text = "The battery is covered for 24 months."
    chunks = [
        window("A", "The lamp", "modes."),
        window("B", "Party", "white."),
        {"id": "O", "text": text},
        {"id": "C", "text": text},
        window("M", "modes.", "Party"),
    ]
    r = satchel.pack(chunks, "q?", max_sources=2)
    assert r.entry("O").kept and r.text.count("24 months") == 1
    assert r.entry("C").reason == "duplicate: exact copy of O, which ranks higher"
    assert r.entry("C").duplicate_of == "O"


def test_a_copy_of_an_original_that_was_all_boilerplate_has_a_turn():
    # (read as "its turn is yet to come", the copy went as a duplicate of text never sent,
    # and "$4.99" was nowhere in the prompt)
    fact = "Fact one says the lamp costs $4.99 in Europe."
    chunks = [
        {"id": "c0", "text": f"{fact} Fact five says the switch costs $8.99 in Chile.", "score": 0.34},
        {"id": "c1", "text": "Fact two says the bulb costs $5.99 in Asia.", "score": 0.78},
        {"id": "c2", "text": fact, "score": 0.58},
        {"id": "c3", "doc_id": "D1", "start": 5, "end": 45, "text": fact[5:]},
        {"id": "c4", "text": f"{fact} Fact eight says the sensor costs $2.99 in Italy.", "score": 0.3},
    ]
    # (a question about the lamp's price would keep the fact: see asks_about)
    r = satchel.pack(chunks, "Which shop sells the sensor?", strip_boilerplate=True)
    assert r.entry("c2").reason.startswith("boilerplate")
    assert r.entry("c3").kept and "$4.99" in r.text
    assert r.entry("c3").reason.endswith(
        "; in place of c2, which ranks higher but was not sent: it is its near-duplicate (similarity 0.88)"
    )


@pytest.mark.parametrize(
    "words",
    [_dedupe.NUMBER_WORDS, _dedupe.NEGATIONS, ("un", "in", "im", "il", "ir", "dis"), ("a", "ab", "abc", "b")],
)
def test_a_word_list_as_one_regex_matches_its_words_and_no_other(words):
    # (the number words and negations are matched through a trie of their letters: every
    # word, and nothing that is only its beginning or goes on past it)
    pattern = re.compile(_dedupe._alternation(words))
    near = {w[:k] for w in words for k in range(len(w))} | {w + c for w in words for c in "aenst-"}
    for word in set(words) | near:
        assert bool(pattern.fullmatch(word)) == (word in words), word
    both = re.compile(rf"\b(?:{_dedupe._alternation(words)})\b")
    text = " ".join(sorted(set(words) | near))
    assert {m.group() for m in both.finditer(text)} == set(words)  # ("one-" holds "one")


def test_a_numbered_list_that_opens_the_text_keeps_its_first_items_number():
    # ("1." was split off as a sentence of its own at the text's start: the ledger took the
    # item's sentence, sent before, and "1." went alone on its line)
    steps = "1. Plug in the lamp.\n2. Press Add device in the app.\n3. Wait for the blue light."
    assert [steps[s:e] for s, e in split_sentences(steps)] == steps.split("\n")
    loose = "1. Plug in the lamp.\n\n  2. Press Add device."
    assert [loose[s:e] for s, e in split_sentences(loose)] == ["1. Plug in the lamp.", "2. Press Add device."]
    cands = [
        {"id": "setup", "score": 0.9, "text": "Plug in the lamp. It blinks blue when it is ready."},
        {"id": "quickstart", "score": 0.8, "text": steps},
    ]
    assert satchel.pack(cands, "How do I pair the lamp?").sources[1].text == steps
    # a window that starts after the number ending a sentence is cut there as before
    cut = "25. Sentence number 26 is here.\nMore text."
    assert [cut[s:e] for s, e in split_sentences(cut)][0] == "25."


def test_a_sentence_a_text_says_again_is_sent_once():
    # (seed 001: the same sentence three times "made one minor detail look very important";
    # the built-in example's manual sent its dusting advice six times)
    dust = "Dust the lamp shade with a dry cloth and never use water on it."
    text = f"{dust} {dust} {dust} The 2019 model had a 14-day return window."
    r = satchel.pack([{"id": "manual", "text": text}], "q?")
    assert r.sources[0].text == f"{dust} The 2019 model had a 14-day return window."
    assert r.entry("manual").reason == "admitted without 2 repeat(s) of its own sentences"
    assert r.entry("manual").sentences_removed == 2
    # with sentences already sent too, the reason tells the two apart
    first = {"id": "first", "score": 0.9, "text": "The 2019 model had a 14-day return window."}
    r = satchel.pack([first, {"id": "manual", "score": 0.5, "text": text}], "q?")
    assert r.sources[1].text == dust
    assert r.entry("manual").reason == (
        "admitted without 1 sentence(s) already sent in first and 2 repeat(s) of its own sentences"
    )
    # a sentence said again apart, under another heading, lead-in or question, says something
    # there and stays (review: "Email support" went from the Pro plan, step 1 from macOS)
    for apart in (
        "## Basic plan\n- Email support within two business days\n- 10 GB of storage\n\n"
        "## Pro plan\n- Email support within two business days\n- 100 GB of storage",
        "The Basic lamp ships in a cardboard box. Shipping is free within the United States. "
        "The Pro lamp ships in a wooden crate. Shipping is free within the United States.",
    ):
        assert satchel.pack([{"id": "c", "text": apart}], "q?").sources[0].text == apart
    # a window neighbours may join stays one slice of its document (without its repeat it
    # could not merge, and the overlap went twice); CRITICAL text is sent as given
    doc = (
        "Keep the lamp dry at all times. Keep the lamp dry at all times. The base holds a battery "
        "that lasts ten hours. A full charge takes about two hours with the supplied cable."
    )
    cut = doc.index(" A full charge")
    start = doc.index("a battery")
    windows = [
        {"id": "w0", "text": doc[:cut], "doc_id": "d", "start": 0, "end": cut, "score": 2},
        {"id": "w1", "text": doc[start:], "doc_id": "d", "start": start, "end": len(doc), "score": 1},
    ]
    r = satchel.pack(windows, "q?")
    assert [s.text for s in r.sources] == [doc] and r.text.count("a battery") == 1
    pinned = satchel.pack([{"id": "c", "text": text, "priority": satchel.Priority.CRITICAL}], "q?")
    assert pinned.sources[0].text == text
    # a sentence that refers back says something else after each claim, and stays
    claims = "Smith said the bridge was safe. That is false. Jones said the dam was safe. That is false."
    assert satchel.pack([{"id": "c", "text": claims}], "q?").sources[0].text == claims


def test_a_qualifier_that_goes_on_a_sentence_the_other_ends_is_a_conflict():
    # ("... on weekdays only." ranked first, and "... on weekdays." went as its near-duplicate
    # (similarity 0.91); the other way round both went, unmarked)
    base = (
        "Brightgrid lamps ship with a standard plug and a printed quick start guide in the box. "
        "The lamp connects to the app over Bluetooth and then joins your home network. "
        "Firmware updates are installed automatically at night when the lamp is idle. "
        "Customer support answers questions by email and chat on weekdays{}."
    )
    for first, second in ((" only", ""), ("", " only")):
        chunks = [
            {"id": "a", "score": 0.9, "text": base.format(first)},
            {"id": "b", "score": 0.8, "text": base.format(second)},
        ]
        r = satchel.pack(chunks, "q?")
        assert r.entry("b").kept and r.entry("b").conflicts_with == ("a",)
        assert "on weekdays only." in r.text and "on weekdays." in r.text


def test_a_snippet_cut_with_dots_does_not_conflict_with_its_page():
    # ("the Declaration of..." read as a sentence end where the page goes on "... Independence
    # was approved.": marked conflicting, the cut sentence went again)
    page = (
        "The Second Continental Congress voted to approve a resolution of independence on July 2, 1776. "
        "But Independence Day is actually celebrated on July 4, the date that the Declaration of "
        "Independence was approved."
    )
    for dots in ("...", "…"):
        snippet = page[: page.index(" Independence was")] + dots
        r = satchel.pack(
            [{"id": "page", "text": page, "score": 2}, {"id": "snippet", "text": snippet, "score": 1}], "q?"
        )
        assert not r.entry("page").conflicts_with and not r.entry("snippet").conflicts_with
        assert r.entry("snippet").duplicate_of == ("page" if dots == "..." else None)


def test_a_copy_of_a_copy_whose_text_was_sent_does_not_say_it_was_not():
    # (its original was dropped as a near-duplicate of a text that was sent: "was not sent
    # either" was false, and such reasons nested)
    sent = " ".join(
        f"Fact {k} says the lamp model {k} ships from warehouse {k + 7} in May." for k in range(12)
    )
    near = sent[: sent.index(" Fact 11")]  # (a window inside it, without offsets)
    chunks = [
        {"id": "a", "score": 0.9, "text": sent},
        {"id": "b", "score": 0.8, "text": near},
        {"id": "c", "score": 0.7, "text": near},
    ]
    r = satchel.pack(chunks, "q?")
    assert r.entry("b").duplicate_of == "a"
    assert r.entry("c").reason == "duplicate: exact copy of b, which ranks higher"


# --- one sentence stated otherwise by two texts that share a passage ------------------------

_STADIUM = (
    "The stadium will host the home games of the city football club from next season. "
    "Construction of the $1.8 billion stadium began in September 2017 and is expected to end in 2020. "
    "Its roof can be closed in under eight minutes, and the pitch slides out on rails."
)
_BEFORE = (
    "Planning for a new home ground began after the old arena failed an inspection in 2012. "
    "Several sites near the river were studied before the council settled on the rail yards. "
    "Local residents raised concerns about traffic on match days during the public hearings. "
)
_AFTER = (
    " Tickets for the opening match will go on sale in the spring through the club's website. "
    "Season ticket holders from the old arena keep priority for the first two seasons. "
    "The club also plans a museum of its history beside the main entrance of the ground."
)


def _editions(old_sentence: str, new_sentence: str) -> list[dict[str, str]]:
    """Two editions of one page, windowed apart: too unlike as wholes to meet as
    near-duplicates, with one passage in common and one sentence in it changed."""
    old = _BEFORE + _STADIUM
    new = _STADIUM.replace(old_sentence, new_sentence) + _AFTER
    assert new != _STADIUM + _AFTER or old_sentence == new_sentence
    return [{"id": "old", "text": old}, {"id": "new", "text": new}]


@pytest.mark.parametrize(
    ("old_sentence", "new_sentence"),
    [
        ("the $1.8 billion stadium", "the $1.9 billion stadium"),  # a number changed
        ("is expected to end in 2020", "is expected to end in 2021"),
        ("is expected to end", "is not expected to end"),  # a negation put in
        ("is expected to end", "isn't expected to end"),
    ],
)
def test_one_sentence_stated_otherwise_marks_both_conflicting(old_sentence, new_sentence):
    cands = _editions(old_sentence, new_sentence)
    found = find_duplicates([c["text"] for c in cands])
    assert found.duplicate_of == {}  # (too unlike as wholes: the near stage does not meet them)
    result = satchel.pack(cands, "When will the stadium be finished?")
    assert result.entry("old").conflicts_with == ("new",) and result.entry("new").conflicts_with == ("old",)
    assert result.entry("old").kept and result.entry("new").kept  # both stay: their sentences differ
    assert "conflicts with new (S" in result.trace()


def test_cannot_is_no_negation_put_in():
    # "can" / "cannot" differ in a word, not by "not" put in before one: no version key of theirs
    # leaves a negation out ("cannot" keeps its "not")
    groups = _dedupe.version_groups(
        ["it can be closed in under eight minutes.", "it cannot be closed in under eight minutes."]
    )
    assert groups == []


@pytest.mark.parametrize(
    "case",
    ["two places changed", "no passage in common", "short sentence", "one document", "one text states both"],
)
def test_sentences_of_one_pattern_are_not_marked(case):
    cands = _editions(
        "the $1.8 billion stadium began in September 2017", "the $1.9 billion stadium began in September 2018"
    )
    if case == "two places changed":
        pass  # two numbers changed: most often two statements of one pattern
    elif case == "no passage in common":
        # two squadrons, each on its own page: "VP-29 was ..." / "VP-25 was ..."
        cands = [
            {
                "id": "a",
                "text": _BEFORE + "VP-29 was a patrol squadron of the United States Navy during the war.",
            },
            {
                "id": "b",
                "text": "VP-25 was a patrol squadron of the United States Navy during the war." + _AFTER,
            },
        ]
    elif case == "short sentence":
        cands = [
            {"id": "a", "text": _BEFORE + "Champions: 1966-67 season."},
            {"id": "b", "text": _BEFORE.split(". ")[0] + ". Champions: 1970-71 season." + _AFTER},
        ]
    elif case == "one document":
        cands = _editions("the $1.8 billion stadium", "the $1.9 billion stadium")
        cands = [{**c, "doc_id": "page"} for c in cands]
    else:
        cands = _editions("the $1.8 billion stadium", "the $1.9 billion stadium")
        cands[1]["text"] += (
            " Construction of the $1.8 billion stadium began in September 2017"
            " and is expected to end in 2020."
        )
    result = satchel.pack(cands, "When will the stadium be finished?")
    assert all(e.conflicts_with == () for e in result.manifest), [
        (e.id, e.conflicts_with) for e in result.manifest
    ]


def test_stated_otherwise_reads_the_sentences_word_for_word():
    assert _dedupe.stated_otherwise("over 132 million followers.", "over 135 million followers.")
    assert _dedupe.stated_otherwise("it is included.", "it is not included.")
    assert _dedupe.stated_otherwise("it is never included.", "it is included.")
    assert not _dedupe.stated_otherwise("q1 revenue was $5m.", "q2 revenue was $6m.")
    assert not _dedupe.stated_otherwise("it is included.", "it is not yet included.")
    groups = _dedupe.version_groups(
        [
            "it is included.",
            "it is not included.",
            "it isn't included.",
            "costs $2.99 a month.",
            "costs $13.49 a month.",
            "other.",
        ]
    )
    assert groups == [
        ["it is included.", "it is not included.", "it isn't included."],
        ["costs $2.99 a month.", "costs $13.49 a month."],
    ]


def test_editions_in_real_data_are_marked():
    # nq-open-oracle holds two editions of some Wikipedia paragraphs ("the $1.8 billion stadium" /
    # "the $1.9 billion stadium"); each windowed with another paragraph, as wholes they are too
    # unlike to meet as near-duplicates, and only the changed sentence tells they disagree
    path = _data.data_dir() / _data.NQ_FILE
    if not path.is_file():
        pytest.skip(f"{path} not found; put ../shared beside the repo (or set SATCHEL_DATA)")
    paragraphs_ = _data.gold_paragraphs(_data.load_nq(path))
    old = next(p for p in paragraphs_ if "$1.8 billion stadium" in p)
    new = next(p for p in paragraphs_ if "$1.9 billion stadium" in p)
    filler = [p for p in paragraphs_ if "stadium" not in p]
    cands = [{"id": "old", "text": old + " " + filler[0]}, {"id": "new", "text": filler[1] + " " + new}]
    assert find_duplicates([c["text"] for c in cands], near=None).conflicts == {}
    result = satchel.pack(cands, "How much did the stadium cost?")
    assert result.entry("old").conflicts_with == ("new",)


def test_explain_shows_the_sentence_stated_otherwise():
    result = satchel.pack(_editions("the $1.8 billion stadium", "the $1.9 billion stadium"), "How much?")
    lines = result.explain("new").splitlines()
    at = next(k for k, line in enumerate(lines) if "$1.9 billion" in line)
    assert lines[at].split()[0] == "S2"
    assert (
        lines[at + 1].split()[:4] == ["≠", "old", "(S1)", "says:"] and "$1.8 billion stadium" in lines[at + 1]
    )
    assert sum("≠" in line for line in lines[1:-1]) == 1  # (the shared and the own sentences have none)


# -- indentation: structure that normalising folds ---------------------------------

_IF_THEN = "def price(plan):\n    if plan.yearly:\n        return 30\n    return 3\n"
_ALWAYS = "def price(plan):\n    if plan.yearly:\n        return 30\n        return 3\n"


def _fates(*texts: str, question: str = "What does price return?") -> dict[str, tuple[str, tuple[str, ...]]]:
    result = satchel.pack([{"id": f"v{n}", "text": t} for n, t in enumerate(texts, 1)], question)
    return {e.id: (e.status, e.conflicts_with) for e in result.manifest}


def test_code_indented_otherwise_is_no_copy():
    # (normalised, "return 3" in the if's body or after it read alike: the second version
    # went as a "copy in other spacing", and the code that returns 3 for every plan with
    # it; the model never saw that the two versions differ)
    assert _fates(_IF_THEN, _ALWAYS) == {"v1": ("kept", ("v2",)), "v2": ("kept", ("v1",))}
    # a nested list item and the same item one level up: the same words, another list
    plans = "Plans:\n- Basic\n  - only in the EU\n- Plus\n"
    assert _fates(plans, plans.replace("  - only", "- only")) == {
        "v1": ("kept", ("v2",)),
        "v2": ("kept", ("v1",)),
    }


def test_code_indented_with_tabs_or_two_spaces_is_still_a_copy():
    # (levels, not widths: the same program whatever it is indented with)
    for other in (_IF_THEN.replace("    ", "\t"), _IF_THEN.replace("    ", "  "), _IF_THEN.upper()):
        assert _fates(_IF_THEN, other)["v2"][0] == "dropped", other
    # prose wrapped again keeps its indentation, and its lines break elsewhere: a copy
    wrapped = "   The plan renews each month\n   unless it is cancelled first.\n"
    again = "   The plan renews each month unless\n   it is cancelled first.\n"
    assert _fates(wrapped, again)["v2"][0] == "dropped"


def test_a_sentence_of_code_sent_indented_otherwise_is_sent_again():
    # The same function under other prose: no copy as a whole, and the ledger read its code
    # (one sentence: no full stop ends a line of it) as already sent.
    first = "The price helper, as of March, in billing.py.\n\n" + _IF_THEN
    second = "The price helper after the refactoring of the billing module.\n\n" + _ALWAYS
    result = satchel.pack([{"id": "old", "text": first}, {"id": "new", "text": second}], "q")
    assert result.entry("new").status == "kept"
    assert "        return 30\n        return 3\n" in result.text
    # indented alike (with tabs), the function is already sent: the ledger takes it out
    tabs = second.replace(_ALWAYS, _IF_THEN.replace("    ", "\t"))
    again = satchel.pack([{"id": "old", "text": first}, {"id": "new", "text": tabs}], "q")
    assert "\treturn 3" not in again.text and again.entry("new").sentences_removed == 1

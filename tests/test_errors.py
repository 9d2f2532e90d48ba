"""Bad input raises a PackError subclass whose message names the value and the fix."""

from __future__ import annotations

import json
import re

import pytest

import satchel
from satchel import BudgetError, ConfigError, InputError, PackError, TokenizerError, UnknownModelError

OK = {"id": "a", "text": "Some text."}


@pytest.mark.parametrize(
    ("candidates", "match"),
    [
        ([OK, {"id": "a", "text": "Other."}], r"'a' appears more than once \(candidates\[0\] and \[1\]\)"),
        ([OK, {"id": "b", "text": "x"}, 5], r"candidates\[2\]: a candidate must be a satchel.Chunk"),
        ([{"id": "a", "text": "   "}], r"text is blank \(whitespace only\)"),
        ([{"id": "a", "text": 42}], "text must be a string"),
        ([{"id": "", "text": "x"}], "non-empty string"),
        ([{"id": 7, "text": "x"}], "non-empty string"),
        ([{"id": "a", "text": "x", "score": float("nan")}], r"score=nan is not finite"),
        ([{"id": "a", "text": "x", "score": "high"}], "not a number"),
        ([{"id": "a", "text": "x", "rank": -1}], "rank=-1"),
        ([{"id": "a", "text": "x", "rank": 1.5}], "rank=1.5 must be a non-negative integer"),
        ([{"id": "a", "text": "x", "score": 10**400}], "score=1000.* is too large for a float"),
        ([{"id": "a", "text": "x", "score": True}], "score=True is not a number"),
        ([{"id": "a", "text": "x", "updated": "March 1st"}], "updated='March 1st' is not an ISO date"),
        ([{"id": "a", "text": "x", "updated": "2026-13-01"}], "YYYY-MM-DD"),
        ([{"id": "a", "text": "x", "role": "main"}], "role='main'"),
        ([{"id": "a", "text": "x", "priority": 9}], "priority=9"),
        (
            [{"id": "a", "text": "abc", "doc_id": "d", "start": 0, "end": 5}],
            "end - start = 5 but the text has 3",
        ),
        ([{"id": "a", "text": "abc", "start": 0, "end": 3}], "without doc_id"),
        ([{"text": "no id"}], "no 'id'"),
        (["just a string"], "must be a satchel.Chunk, a dict or a LangChain"),
        ({"id": "a", "text": "x"}, "list of chunks"),
        (None, "list of chunks or dicts, got NoneType"),
        (5, "got int"),
        # a lone surrogate (JSON "\ud800") cannot be sent, logged or hashed as UTF-8
        ([{"id": "a", "text": "Caf\ud800 open."}], r"text holds a lone surrogate '\\ud800' at character 3"),
        ([{"id": "a\udfff", "text": "x"}], "candidate id .* holds a lone surrogate"),
        ([{"id": "a", "text": "x", "title": "T\ud800"}], "'a': title holds a lone surrogate"),
        ([{"id": "a", "text": "x", "region": "\udc80"}], "'a': metadata 'region' holds a lone surrogate"),
        # inside a list or dict a tag may show
        (
            [{"id": "a", "text": "x", "metadata": {"type": ["\ud800"]}}],
            "metadata 'type' holds a lone surrogate",
        ),
        (
            [{"id": "a", "text": "x", "metadata": {"k": {"j": ("b", ["\udc80"])}}}],
            "metadata 'k' holds a lone",
        ),
        # metadata that is no dict, also beside keys that go into it
        ([{"id": "a", "text": "x", "metadata": "abc", "url": "u"}], "'a': metadata must be a dict, got str"),
        (
            [{"id": "a", "text": "x", "metadata": [["k", "v"]], "url": "u"}],
            "metadata must be a dict, got list",
        ),
        ([{"id": "a", "text": "x", "metadata": 5}], "'a': metadata must be a dict, got int"),
    ],
)
def test_bad_candidates(candidates, match):
    with pytest.raises(InputError, match=match) as info:
        satchel.pack(candidates, "q?")
    assert isinstance(info.value, PackError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"model": "gpt-4x"}, UnknownModelError, "Did you mean"),
        ({"order": "random"}, ConfigError, "unknown order 'random'; choose one of"),
        ({"source_budget": -5}, ConfigError, "source_budget=-5"),
        ({"reserve_answer": -1}, ConfigError, "reserve_answer=-1"),
        ({"context_window": 0}, ConfigError, "context_window=0"),
        ({"max_sources": 0}, ConfigError, "max_sources=0"),
        ({"near_duplicate": 1.5}, ConfigError, "near_duplicate=1.5"),
        ({"dedupe": ["exact", "fuzzy"]}, ConfigError, "fuzzy"),
        ({"tokenizer": "gpt2"}, ConfigError, "tokenizer='gpt2'"),
        ({"metadata": ["title", 'x"y']}, ConfigError, "cannot be an attribute"),
        ({"colour": "blue"}, ConfigError, "unknown option"),
        ({"order": lambda sources: None}, ConfigError, "order '<lambda>' returned NoneType; it must return"),
        ({"tokenizer": lambda text: 1 / 0}, TokenizerError, r"failed on a text .*ZeroDivisionError"),
        (
            {"order": lambda sources: 1 / 0},
            ConfigError,
            r"order '<lambda>' failed on 1 sources \(ZeroDivision",
        ),
        ({"dedupe": 5}, ConfigError, r"dedupe=5 must be a list of stage names \(or True for all, False"),
        ({"dedupe": [["exact"]]}, ConfigError, r"dedupe=\[\['exact'\]\] must be a list of stage names"),
        ({"metadata": None}, ConfigError, r"metadata=None must be a list of field names.*\[\] for none"),
        ({"metadata": 5}, ConfigError, "metadata=5 must be a list"),
        ({"metadata": ["title", "title"]}, ConfigError, "metadata lists 'title' twice"),
        ({"compressor_roles": 5}, ConfigError, "compressor_roles=5 must be a list of roles: decisive"),
        ({"role_caps": {"decisive": float("nan")}}, ConfigError, r"role_caps\['decisive'\]=nan"),
        # "false" is true in Python: a string must not switch compression on
        ({"compress": "false"}, ConfigError, "compress='false' must be True or False"),
        ({"restate_contract": "no"}, ConfigError, "restate_contract='no' must be True or False"),
        # only None means the model's own tokenizer
        ({"tokenizer": ""}, ConfigError, "tokenizer='' is neither an encoding"),
        ({"tokenizer": 0}, ConfigError, "tokenizer=0 is not usable"),
        ({"tokenizer": False}, ConfigError, "tokenizer=False is not usable"),
        ({"contract": "Be brief\ud800"}, InputError, "contract holds a lone surrogate"),
    ],
)
def test_bad_options(options, error, match):
    with pytest.raises(error, match=match):
        satchel.pack([OK], "q?", **options)


def test_window_too_small_for_the_reserves_names_the_numbers():
    with pytest.raises(
        BudgetError,
        match=r"reserves need \d+ tokens but the window holds 300 \(system \d+, question \d+, answer 512\)",
    ):
        satchel.pack([OK], "q?", context_window=300)
    with pytest.raises(ConfigError, match=r"context_window='2048' must be a positive whole number"):
        satchel.Budget(context_window="2048")
    with pytest.raises(BudgetError, match="reserves need 1100 tokens but the window holds 1000"):
        satchel.Budget(context_window=1000, system=100, answer=1000)
    # the fix names what holds the tokens: a contract of 9,801 is shortened, not the system text
    # alone; and a window given by hand is raised, not only changed for a model with a larger one
    with pytest.raises(
        BudgetError,
        match=r"\(system 50, answer 512, contract 9801\); shorten the system text or the output "
        r"contract, lower reserve_answer, or give a larger context_window \(a model with a larger window\)",
    ):
        satchel.Budget(context_window=10_000, system=50, answer=512, contract=9801)


def test_bad_question_history_and_system():
    with pytest.raises(InputError, match="question"):
        satchel.pack([OK], "")
    with pytest.raises(InputError, match=r"history\[0\]"):
        satchel.pack([OK], "q?", history=[{"role": "robot", "content": "hi"}])
    with pytest.raises(InputError, match="system must be a string"):
        satchel.pack([OK], "q?", system=["x"])
    # keys that would go uncounted, or be lost (a tool message without its call is refused by APIs)
    tool = {"role": "tool", "content": "42", "tool_call_id": "call_1"}
    with pytest.raises(InputError, match=r"history\[1\] has 'tool_call_id' besides role and content"):
        satchel.pack([OK], "q?", history=[{"role": "user", "content": "hi"}, tool])
    for history in ("hello", {"role": "user", "content": "hi"}):
        with pytest.raises(
            InputError, match=f"history must be a list of messages, got {type(history).__name__}"
        ):
            satchel.pack([OK], "q?", history=history)


def test_critical_candidate_that_cannot_fit_raises():
    chunks = [{"id": "law", "text": "word " * 500, "priority": "critical"}]
    with pytest.raises(BudgetError, match="CRITICAL candidate 'law' needs"):
        satchel.pack(chunks, "q?", source_budget=100)


def test_a_critical_candidate_is_never_dropped_when_the_budget_runs_out():
    # The first CRITICAL chunk fills the budget: the second cannot fit, whether the room
    # left is below its enclosure (1 token) or only below its text (9 tokens).
    chunks = [
        {"id": "law-1", "text": "word " * 40, "priority": "critical"},
        {"id": "law-2", "text": "The fine is 500 euros.", "priority": "critical"},
    ]
    # (the numbers are those of the source budget set: the <sources> tags take 5 of it)
    for source_budget, left in ((67, 1), (74, 8)):
        with pytest.raises(
            BudgetError,
            match=f"CRITICAL candidate 'law-2' needs 27 tokens but only {left} of the {source_budget}-token",
        ):
            satchel.pack(chunks, "What is the fine?", source_budget=source_budget)
    # not CRITICAL: dropped with its reason
    chunks[1]["priority"] = "high"
    entry = satchel.pack(chunks, "What is the fine?", source_budget=67).entry("law-2")
    assert entry.status == "dropped" and entry.reason == "does not fit: needs 27 tokens, 1 of 67 left"


def test_a_candidate_that_fits_exactly_is_admitted():
    # Its last piece merges with the close tag (".\n" is one token), so the source takes a
    # token less than its tags and its text apart: the room check counts the source (one
    # that fit exactly was dropped for a lower-ranked one, and a CRITICAL one raised).
    chunks = [{"id": "policy", "text": "Refunds take 5 business days.", "priority": "critical"}]
    needs = satchel.pack(chunks, "When is my refund?").tokens.sources
    result = satchel.pack(chunks, "When is my refund?", source_budget=needs)
    assert result.entry("policy").kept and result.tokens.sources == needs
    words = f"needs {needs - 5} tokens but only {needs - 6} of the {needs - 1}-token"
    with pytest.raises(BudgetError, match=words):
        satchel.pack(chunks, "When is my refund?", source_budget=needs - 1)
    chunks += [{"id": "other", "text": "Refunds are quick here.", "score": 0.1}]
    chunks[0].update(priority="medium", score=0.9)
    result = satchel.pack(chunks, "When is my refund?", source_budget=needs)
    assert result.entry("policy").kept and result.entry("other").reason.startswith("does not fit")


def test_numbers_of_any_integer_or_real_type_and_nulls_are_accepted():
    # A dataframe's rows carry numpy numbers, and JSON says null for "not given".
    np = pytest.importorskip("numpy")
    chunk = {
        "id": "a",
        "text": "Plug in the lamp.",
        "score": np.float32(0.5),
        "rank": np.int64(3),
        "priority": np.int64(1),
        "doc_id": np.int64(7),
        "start": np.int64(0),
        "end": np.int64(17),
        "metadata": None,
    }
    result = satchel.pack([chunk, {"id": "b", "text": "It glows.", "priority": None}], "q?")
    a = satchel.Chunk.from_dict(chunk)
    assert (a.score, a.rank, a.doc_id, a.start, a.end, a.priority) == (
        0.5,
        3,
        "7",
        0,
        17,
        satchel.Priority.HIGH,
    )
    assert [type(v) for v in (a.score, a.rank, a.start, a.end)] == [float, int, int, int]
    assert result.entry("b").priority == "MEDIUM" and dict(a.metadata) == {}


def test_a_dataframes_gaps_are_fields_not_given_and_its_numbers_stay_numbers():
    # pandas' gaps: NaT in a column of dates passed for a date and reached the prompt as
    # updated="NaT" (and failed later, in the chronological order); NA showed as "<NA>"; NaN
    # in a provenance key made the log's "canonical JSON" no JSON; np.int64(4) came out as '4'.
    # (pandas' own types, as their names tell them apart: pandas is not installed here)
    import datetime
    import json

    np = pytest.importorskip("numpy")
    nat_type = type("NaTType", (datetime.datetime,), {"isoformat": lambda self, *a: "NaT"})
    na_type = type("NAType", (), {"__str__": lambda self: "<NA>"})
    nat, na = nat_type(2000, 1, 1), na_type()
    chunks = [
        {"id": "a", "text": "Returns take 30 days.", "updated": "2026-01-01", "page": np.int64(4)},
        {"id": "b", "text": "Refunds take 5 days.", "updated": nat, "page": np.nan, "region": na},
    ]
    for order in ("relevance", "chronological"):
        result = satchel.pack(chunks, "How long?", order=order)
        assert "NaT" not in result.text and "<NA>" not in result.text and "region" not in result.text
        assert result.entry("b").provenance == {} and result.entry("a").provenance["page"] == 4
        json.dumps(result.to_dict(), allow_nan=False)  # (no NaN, which JSON has no word for)
    assert satchel.Chunk.from_dict(chunks[1]).updated is None


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("2024-05-01", "2024-05-01"),
        ("2024-05-01T00:00:00.000000000", "2024-05-01"),  # (a column of dates: nanoseconds)
        ("2024-05-01T10:30:05.123456789", "2024-05-01T10:30:05.123456"),
        ("NaT", None),  # numpy's gap, as pandas' own
    ],
)
def test_numpy_dates_are_dates(value, shown):
    # (updated=np.datetime64(...), a dataframe's dates through .to_numpy(), was refused as
    # "must be an ISO date string or a date")
    np = pytest.importorskip("numpy")
    result = satchel.pack(
        [{"id": "a", "text": "Returns take 30 days.", "updated": np.datetime64(value)}], "q?"
    )
    assert result.entry("a").provenance.get("updated") == shown
    assert dict(result.sources[0].attributes).get("updated") == shown


def test_a_dataframe_given_whole_is_asked_for_as_records():
    # (iterated, a dataframe gives its column names: "got str: 'id'" said nothing of rows)
    class DataFrame:
        columns = ["id", "text"]

        def __iter__(self):
            return iter(self.columns)

        def to_dict(self, orient="dict"):
            return [{"id": "a", "text": "Returns take 30 days."}]

    with pytest.raises(InputError, match=r"candidates is a DataFrame, .* pass df.to_dict\('records'\)"):
        satchel.pack(DataFrame(), "q?")


def test_a_registered_profile_is_checked_when_registered():
    # (a negative overhead was taken, and the first pack refused an option never passed)
    for profile, message in (
        (satchel.ModelProfile("mine", 4096, "o200k_base", message_overhead=-5), "message_overhead=-5"),
        (satchel.ModelProfile("mine", 4096, "o200k_base", reply_overhead=1.5), "reply_overhead=1.5"),
        (satchel.ModelProfile("mine", 4096, "o200k_base", input_limit=9000), "input_limit=9000 is more"),
    ):
        with pytest.raises(ConfigError, match=rf"model 'mine': {re.escape(message)}"):
            satchel.register_model(profile)
    assert "mine" not in satchel.known_models()


def test_decimal_scores_and_whole_float_offsets_are_numbers():
    # A database's NUMERIC column comes as Decimal; a dataframe column with gaps, or a JSON
    # writer, gives offsets and ranks as 3.0. A fraction stays refused.
    from decimal import Decimal

    a = satchel.Chunk.from_dict(
        {
            "id": "a",
            "text": "x",
            "score": Decimal("0.5"),
            "rank": 3.0,
            "doc_id": "d",
            "start": 0.0,
            "end": 1.0,
        }
    )
    assert (a.score, a.rank, a.start, a.end) == (0.5, 3, 0, 1)
    assert [type(v) for v in (a.score, a.rank, a.start, a.end)] == [float, int, int, int]
    with pytest.raises(InputError, match="rank=3.5 must be a non-negative integer"):
        satchel.Chunk.from_dict({"id": "a", "text": "x", "rank": 3.5})
    with pytest.raises(InputError, match="score=nan is not finite"):
        satchel.Chunk.from_dict({"id": "a", "text": "x", "score": Decimal("NaN")})
    with pytest.raises(InputError, match="split_sentences takes a str, got int"):
        satchel.split_sentences(5)  # type: ignore[arg-type]


def test_user_code_that_fails_is_named_and_kept_as_the_cause():
    text = "".join(
        f"The lamp blinks {colour} when the battery is low and needs charging soon. "
        for colour in ("blue", "pink", "gray", "teal")  # (a sentence said again is sent once)
    )
    chunks = [{"id": "a", "text": text, "role": "decisive"}]
    options = {"compressor_roles": ["decisive"], "role_caps": {"decisive": 10}}

    def broken(text, question, limit):
        raise RuntimeError("api down")

    with pytest.raises(
        ConfigError,
        match=r"the compressor 'broken' failed on a text of 280 characters \(RuntimeError: api down\)",
    ) as info:
        satchel.pack(chunks, "q?", compressor=broken, **options)
    assert isinstance(info.value.__cause__, RuntimeError)
    # text that cannot be sent leaves the candidate out, with its reason
    entry = satchel.pack(chunks, "q?", compressor=lambda t, q, n: "short \ud800", **options).entry("a")
    assert entry.status == "dropped" and "lone surrogate" in entry.reason
    # and one that returns no text is a bug, said as its errors are (not a quiet drop)
    with pytest.raises(
        ConfigError, match=r"the compressor '<lambda>' returned NoneType None on a text of 280"
    ):
        satchel.pack(chunks, "q?", compressor=lambda t, q, n: None, **options)
    entry = satchel.pack(chunks, "q?", compressor=lambda t, q, n: " ", **options).entry("a")
    assert entry.status == "dropped" and entry.reason == "the compressor returned no text"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: satchel.Packer(colour="blue"), r"Packer\(\) got unknown option\(s\) colour"),
        (lambda: satchel.RoleRule(max_decisive="2"), r"RoleRule\(max_decisive='2'\) must be a whole number"),
        (lambda: satchel.RoleRule(decisive_gap="x"), r"RoleRule\(decisive_gap='x'\) must be a number"),
        (
            lambda: satchel.register_model(satchel.ModelProfile("m", "1000", "o200k_base")),
            "context_window='1000' must be a positive whole number",
        ),
    ],
)
def test_bad_configuration_objects(make, match):
    with pytest.raises(ConfigError, match=match):
        make()


def test_asking_a_result_for_a_candidate_it_did_not_pack():
    result = satchel.pack([OK], "q?")
    with pytest.raises(InputError, match="no candidate 'zzz' was packed here; the candidates were 'a'"):
        result.entry("zzz")


def test_unknown_model_works_with_window_and_tokenizer():
    result = satchel.pack([OK], "q?", model="my-private-llm", context_window=4096, tokenizer="cl100k_base")
    assert result.budget.context_window == 4096 and result.tokenizer == "cl100k_base"


def test_every_error_class_is_a_packerror():
    for name in (
        "BudgetError",
        "ConfigError",
        "InputError",
        "ModelError",
        "TokenizerError",
        "UnknownModelError",
    ):
        assert issubclass(getattr(satchel, name), PackError)


@pytest.mark.parametrize(
    ("parts", "match"),
    [
        ({"question": "Why\ud800?"}, "question holds a lone surrogate"),
        ({"system": "Be brief\udfff."}, "system holds a lone surrogate"),
        ({"history": [{"role": "user", "content": "Hi \ud83d"}]}, r"history\[0\] content holds a lone"),
    ],
)
def test_prompt_parts_with_a_lone_surrogate(parts, match):
    parts = {"question": "q?", **parts}
    with pytest.raises(InputError, match=match):
        satchel.pack([OK], parts.pop("question"), **parts)


@pytest.mark.parametrize("name", ["escape_text", "escape_attr", "unescape"])
@pytest.mark.parametrize("value", [5, None, b"a&b", ["a&b"]])
def test_the_public_escaping_functions_refuse_what_is_not_text(name, value):
    function = getattr(satchel, name)
    wanted = rf"{name}\(\) takes a str, got {type(value).__name__} .*str\(value\)"
    with pytest.raises(InputError, match=wanted):
        function(value)
    with pytest.raises(TypeError):  # (as str's own functions raise)
        function(value)
    assert function("a &amp; <b>") == getattr(satchel._render, name)("a &amp; <b>")  # the same for text


def test_whole_floats_are_whole_numbers_for_options_as_for_chunk_fields():
    # (a JSON writer gives 500.0; chunk offsets and ranks took it, the options refused it)
    r = satchel.pack(
        [{"id": "a", "text": "x"}], "q?", reserve_answer=500.0, source_budget=1e3, max_sources=2.0
    )
    assert (r.config["reserve_answer"], r.config["source_budget"], r.config["max_sources"]) == (500, 1000, 2)
    with pytest.raises(satchel.PackError, match=r"reserve_answer=500\.5 must be a non-negative whole number"):
        satchel.pack([{"id": "a", "text": "x"}], "q?", reserve_answer=500.5)


def test_a_year_or_a_month_is_an_iso_date_too():
    chunks = [{"id": "a", "text": "x", "updated": "2026-03"}, {"id": "b", "text": "y", "updated": "2025"}]
    r = satchel.pack(chunks, "q?", order="chronological")
    assert r.labels == {"S1": "b", "S2": "a"} and dict(r.sources[1].attributes) == {"updated": "2026-03"}
    with pytest.raises(
        satchel.PackError, match=r"updated='2026-13' is not an ISO date; write it as YYYY-MM-DD"
    ):
        satchel.pack([{"id": "a", "text": "x", "updated": "2026-13"}], "q?")


def test_nan_in_a_field_of_text_is_a_field_not_given():
    # (a dataframe's gap in a column of text; a NaN score stays refused)
    nan = float("nan")
    chunk = {"id": "a", "text": "x", "title": nan, "section": nan, "doc_id": nan, "updated": nan, "role": nan}
    r = satchel.pack([chunk], "q?")
    assert r.entry("a").kept and r.sources[0].attributes == ()
    numpy = pytest.importorskip("numpy")
    r = satchel.pack([{"id": "a", "text": "x", "title": numpy.float32("nan")}], "q?")
    assert r.sources[0].attributes == ()
    with pytest.raises(satchel.PackError, match="score=nan is not finite"):
        satchel.pack([{"id": "a", "text": "x", "score": nan}], "q?")


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        # a key that is no field went to metadata, where the metadata's own value won
        (
            {"id": "a", "text": "x", "type": "ticket", "metadata": {"type": "article"}},
            r"'type' is given twice, as 'ticket' and as 'article' in metadata; give it once",
        ),
        # and a field beat the same key in metadata
        (
            {"id": "a", "text": "x", "title": "Top", "metadata": {"title": "Meta"}},
            r"title is given twice, as 'Top' and as 'Meta' in metadata; give it once",
        ),
    ],
)
def test_a_value_given_twice_and_not_alike_is_refused(chunk, message):
    with pytest.raises(InputError, match=message):
        satchel.pack([chunk], "q?")


def test_a_value_given_twice_alike_or_once_with_a_gap_is_taken():
    nan = float("nan")
    alike = {"id": "a", "text": "x", "title": "T", "region": "EU", "metadata": {"title": "T", "region": "EU"}}
    gaps = [
        {"id": "b", "text": "y", "title": nan, "region": nan, "metadata": {"title": "T", "region": "EU"}},
        {"id": "c", "text": "z", "title": "T", "region": "EU", "metadata": {"title": nan, "region": nan}},
    ]
    r = satchel.pack([alike, *gaps], "q?", dedupe=False)
    assert [dict(s.attributes) for s in r.sources] == [{"title": "T", "region": "EU"}] * 3
    # a NaN section in metadata is not given, as a NaN section is (it was refused as no string)
    r = satchel.pack([{"id": "a", "text": "x", "metadata": {"section": nan}}], "q?")
    assert r.sources[0].attributes == ()


def test_a_value_given_twice_written_alike_is_taken():
    import datetime

    numpy = pytest.importorskip("numpy")
    chunk = {
        "id": "a",
        "text": "x",
        "updated": "2024-01-01",
        "v": numpy.array([1, 2]),
        "metadata": {"updated": datetime.date(2024, 1, 1), "v": numpy.array([1, 2])},
    }
    assert satchel.pack([chunk], "q?").entry("a").kept


def test_options_take_numpys_numbers_and_flags_as_pythons():
    # (token counts took numpy ints, but a share, a similarity or a flag from the same
    # dataframe or config was refused: "role_caps['supporting']=np.float32(0.25) must be
    # None, whole tokens, or a share ...")
    np = pytest.importorskip("numpy")
    chunks = [{"id": "a", "text": "Refunds take 5 days.", "score": 0.9}, {"id": "b", "text": "Ships."}]
    given = {
        "min_score_ratio": np.float32(0.5),
        "near_duplicate": np.float64(0.9),
        "role_caps": {"supporting": np.float32(0.25), "background": np.int64(10)},
        "strip_boilerplate": np.int64(3),
        "compress": np.True_,
        "restate_contract": np.False_,
    }
    config = satchel.pack(chunks, "q?", **given).config
    assert config["min_score_ratio"] == 0.5 and config["near_duplicate"] == 0.9
    assert config["role_caps"] == {"decisive": None, "supporting": 0.25, "background": 10}
    assert config["strip_boilerplate"] == 3 and config["compress"] is True
    assert config["restate_contract"] is False
    json.dumps(config)  # (Python's own types)
    with pytest.raises(satchel.ConfigError, match="must be True or False"):
        satchel.pack(chunks, "q?", compress=np.int64(1))
    with pytest.raises(satchel.ConfigError, match=r"near_duplicate=1.5 must be a similarity"):
        satchel.pack(chunks, "q?", near_duplicate=np.float64(1.5))

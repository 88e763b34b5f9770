"""The trace: JSON round trip, save/load, and clear errors for malformed traces."""
from __future__ import annotations

import copy
import json

import pytest

from spotviz import trace as trace_mod
from spotviz.engine import decode
from spotviz.samplers.config import DecodeConfig
from spotviz.trace import MAX_TRACE_BYTES, TRACE_FORMAT, TRACE_VERSION, Trace, TraceError


@pytest.fixture(scope="module")
def trace(tiny_block_target) -> Trace:
    cfg = DecodeConfig(mode="threshold", threshold=0.03, temperature=1.0, seed=11, gen_length=24)
    return decode(tiny_block_target, "ROMEO.\nO fair Juliet, ‘tis thee", cfg)


@pytest.fixture
def d(trace) -> dict:
    return copy.deepcopy(trace.to_dict())


def test_json_round_trip(trace):
    text = trace.to_json()
    again = Trace.from_json(text)
    assert again.to_dict() == trace.to_dict()
    assert again == trace
    assert Trace.from_json(text.encode("utf-8")).to_dict() == trace.to_dict()
    assert Trace.from_json(trace.to_json(indent=2)) == trace
    assert "‘" in again.meta.prompt  # non-ASCII survives
    assert again.format == TRACE_FORMAT and again.version == TRACE_VERSION


def test_trace_contents(trace):
    assert trace.meta.mode == "threshold" and trace.meta.temperature == 1.0 and trace.meta.seed == 11
    assert trace.meta.attention == "block" and trace.meta.drafter == "none"
    assert trace.counters.target_passes == len(trace.passes) > 0
    assert trace.counters.generated_tokens == len(trace.tokens)
    every = set(trace.meta.prompt_tokens) | set(trace.tokens) | {c.token for p in trace.passes for c in p.commits}
    assert every <= {int(k) for k in trace.token_text}  # every id in the trace has a display string
    assert trace.label(trace.meta.mask_id) == "[MASK]"
    assert len({c.position for p in trace.passes for c in p.commits}) == trace.counters.commits


def test_save_and_load(trace, tmp_path):
    path = tmp_path / "run.trace.json"
    trace.save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == TRACE_FORMAT
    assert Trace.load(path).to_dict() == trace.to_dict()
    assert Trace.load(str(path)) == trace


def test_load_missing_file(tmp_path):
    with pytest.raises(TraceError, match="no trace file"):
        Trace.load(tmp_path / "nope.json")
    with pytest.raises(TraceError, match="no trace file"):
        Trace.load(tmp_path)  # a folder


def test_huge_file(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # a sparse file: cheap to make, too large to read
        f.truncate(MAX_TRACE_BYTES + 1)
    with pytest.raises(TraceError, match="limit"):
        Trace.load(big)
    with pytest.raises(TraceError, match="limit"):
        Trace.from_json(b" " * (MAX_TRACE_BYTES + 1))


@pytest.mark.parametrize("text, match", [
    ("", "not valid JSON"),
    ("{", "not valid JSON"),
    ("not json at all", "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not valid JSON"),
    ("[" * 100_000, "not valid JSON"),
    ("[]", "JSON object"),
    ("42", "JSON object"),
    ('"a trace"', "JSON object"),
    ("null", "JSON object"),
    ("{}", "not a spotviz trace"),
])
def test_malformed_text(text, match):
    with pytest.raises(TraceError, match=match):
        Trace.from_json(text)


def test_malformed_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{\"format\": \"spotviz-trace\", ")
    with pytest.raises(TraceError, match="not valid JSON"):
        Trace.load(p)


def test_not_json_says_where_in_words():
    """Where a file stops being JSON, as line and column (Python's own "Expecting value: line 1 column 1 (char 0)"
    reached the app's status); bytes that are not text are said to be so."""
    with pytest.raises(TraceError) as e:
        Trace.from_json('{"format": "spotviz-trace",\n  oops}')
    assert str(e.value) == "trace is not valid JSON (the first error at line 2, column 3)"
    with pytest.raises(TraceError, match="the file is not UTF-8 text$"):
        Trace.from_json(b"\xff\xfe\x00garbage")


def expect(d, match):
    with pytest.raises(TraceError, match=match) as e:
        Trace.from_dict(d)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 500
    with pytest.raises(TraceError, match=match):
        Trace.from_json(json.dumps(d))


def test_wrong_format(d):
    d["format"] = "something-else"
    expect(d, "not a spotviz trace")


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_wrong_version(d, version):
    d["version"] = version
    expect(d, "version")


@pytest.mark.parametrize("field", ["meta", "passes", "tokens", "text", "counters"])
def test_missing_top_level_field(d, field):
    del d[field]
    expect(d, f"missing the field '{field}'")


def test_missing_nested_field(d):
    del d["meta"]["seed"]
    expect(d, "missing")


def test_missing_commit_field(d):
    del d["passes"][0]["commits"][0]["position"]
    expect(d, "missing")


def test_unknown_field(d):
    d["meta"]["colour"] = "red"
    expect(d, "unknown field")


@pytest.mark.parametrize("path, value, match", [
    (("meta", "seed"), "eleven", r"meta\.seed must be an integer"),
    (("meta", "seed"), True, r"meta\.seed must be an integer"),
    (("meta", "temperature"), "hot", r"meta\.temperature must be a number"),
    (("meta", "model"), 7, r"meta\.model must be a string"),
    (("meta", "prompt_tokens"), "1 2 3", r"meta\.prompt_tokens must be a list"),
    (("counters", "target_passes"), 1.5, r"counters\.target_passes must be an integer"),
    (("counters", "acceptance_per_depth"), {}, "must be a list"),
    (("passes",), {"0": {}}, "must be a list"),
    (("meta",), [], "must be an object"),
    (("counters",), "many", "must be an object"),
    (("tokens",), "abc", "must be a list"),
    (("tokens",), ["a", "b"], "malformed trace"),
    (("token_text",), [], "must be an object"),
])
def test_wrong_types(d, path, value, match):
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    expect(d, match)


def test_wrong_commit_types(d):
    d["passes"][0]["commits"][0]["position"] = "3"
    expect(d, "must be an integer")
    d["passes"][0]["commits"][0] = [1, 2]
    expect(d, "must be an object")
    d["passes"][0]["commits"] = {}
    expect(d, "must be a list")


def test_inconsistent_pass_count(d):
    d["counters"]["target_passes"] += 1
    expect(d, "inconsistent counters: target_passes")


def test_pass_removed(d):
    d["passes"].pop()
    expect(d, "inconsistent counters")


def test_inconsistent_commit_count(d):
    d["counters"]["commits"] -= 1
    expect(d, "inconsistent counters: commits")


def test_a_token_id_the_run_did_not_decode(d):
    """A tampered id (999999, in no vocabulary) was replayed and rendered without a word."""
    assert d["token_text"]
    d["tokens"][0] = 999999
    expect(d, "token id 999999 is not among the trace's token_text ids")


def test_position_committed_twice(d):
    first = d["passes"][0]["commits"][0]
    d["passes"][-1]["commits"].append(dict(first))
    d["counters"]["commits"] += 1
    expect(d, f"position {first['position']} is committed twice")


def test_walk_end_is_one_of_the_reasons(d):
    d["passes"][0]["walk_end"] = "luck"
    expect(d, "unknown walk_end 'luck'")
    d["passes"][0]["walk_end"] = "budget"
    assert Trace.from_dict(d).walk_ends() == {"budget": 1}
    del d["passes"][0]["walk_end"]  # a trace written before the field loads as passes without a reason
    assert Trace.from_dict(d).walk_ends() == {}


@pytest.mark.parametrize("field, value", [("wall_s", -1.0), ("tokens_per_s", float("nan")),
                                          ("mean_accepted_length", float("inf"))])
def test_bad_counter_values(d, field, value):
    d["counters"][field] = value
    with pytest.raises(TraceError, match="inconsistent counters|must be a finite number"):
        Trace.from_dict(d)


@pytest.mark.parametrize("where, value, message", [
    (("meta", "temperature"), float("nan"), "meta.temperature must be a finite number"),
    (("meta", "prompt_tokens"), ["a"], "meta.prompt_tokens must be a list of integers"),
    (("meta", "coupled_noise"), "yes", "meta.coupled_noise must be true or false"),
])
def test_a_tampered_field_is_refused(d, where, value, message):
    d[where[0]][where[1]] = value
    with pytest.raises(TraceError, match=message):
        Trace.from_dict(d)


def test_a_tree_that_names_a_node_it_does_not_hold_is_refused(tiny_block_target):
    d = decode(tiny_block_target, "ROMEO.\nO", DecodeConfig(drafter="training-free", budget=4, gen_length=16)).to_dict()
    tree_pass = next(p for p in d["passes"] if len(p["tree"]) > 1)
    tree_pass["tree"][1]["parent"] = 99
    with pytest.raises(TraceError, match="names a node it does not hold"):
        Trace.from_dict(d)
    tree_pass["tree"][1]["parent"] = 0
    tree_pass["accepted_path"] = [0, 99]
    with pytest.raises(TraceError, match="names a node it does not hold"):
        Trace.from_dict(d)


def test_valid_dict_loads(d, trace):
    assert Trace.from_dict(d) == trace


def test_limit_is_read_at_call_time(trace, monkeypatch):
    monkeypatch.setattr(trace_mod, "MAX_TRACE_BYTES", 100)
    with pytest.raises(TraceError, match="limit"):
        Trace.from_json(trace.to_json())

"""The embedded models' data and training: the Python corpus, code prompts, the training dtype, --init-from,
and the quality measures that tell a real model from a degenerate one."""
from __future__ import annotations

import json
import sys

import pytest
import torch
from safetensors.torch import load_file

from spotviz.training import target as training
from spotviz.embedded.corpus import EOT, load_python_files, split_named_corpus, split_python_corpus
from spotviz.embedded.prompts import HELDOUT_FILES, code_prompts, load_prompts, training_prompts
from spotviz.eval.quality import OutputQuality, summarise, token_stats, valid_line_share


@pytest.fixture(scope="module")
def python_split():
    return split_python_corpus()


# ------------------------------------------------------------------------------------------- corpus
def test_python_corpus_is_the_stdlib_without_tests_or_site_packages():
    files = load_python_files()
    names = [f.name for f in files]
    assert names == sorted(names) and len(names) > 100
    assert "json/decoder.py" in names or "json/__init__.py" in names
    for n in names:
        parts = n.split("/")
        assert not {"test", "tests", "idle_test", "site-packages", "pydoc_data"} & set(parts[:-1]), n
    assert all(EOT not in f.text and "\t" not in f.text and "\r" not in f.text for f in files)


def test_python_split_is_disjoint_and_recorded(python_split):
    src = python_split["source"]
    assert src["python_version"] == sys.version.split()[0]
    assert src["train_files"] + src["val_files"] + src["heldout_files"] == src["files"]
    assert len(src["file_list_sha256"]) == 64
    assert python_split["heldout_files"] and src["heldout_files"] == len(python_split["heldout_files"])
    train_docs = set(python_split["train"].split(EOT))
    for doc in python_split["heldout"].split(EOT):
        assert doc not in train_docs
    # deterministic: the same split twice
    assert split_python_corpus()["source"] == src


def test_named_corpus_refuses_unknown_names():
    with pytest.raises(ValueError, match="unknown corpus"):
        split_named_corpus("klingon")


def test_code_tokenizer_round_trips_indentation_exactly(python_split):
    from spotviz.embedded.tokenizer import train_tokenizer

    tok = train_tokenizer(python_split["train"][:200_000], 400)
    src = 'class A:\n    def f(self, x):\n        """Doc."""\n\n        if x:\n            return {"k": [1, 2]}\n'
    ids = tok(src, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == src


# ------------------------------------------------------------------------------------------ prompts
def test_code_prompts_are_definition_starts_of_the_given_sources():
    src = ('"""Module doc."""\nimport os\n\n\ndef add(a, b):\n    """Add two numbers and return the sum."""\n'
           '    return a + b\n\n\nclass Box:\n    # a comment\n    size = 1\n\n\nif __name__ == "__main__":\n'
           '    print(add(1, 2))\n')
    ps = code_prompts([src, "def broken(:\n"], 10, seed=0, per_file=10)
    assert ps and all(p.strip() for p in ps)
    heads = {p.split("\n")[0] for p in ps}
    assert heads <= {"def add(a, b):", "class Box:", 'if __name__ == "__main__":', '"""Module doc."""'}
    for p in ps:
        if p.startswith("def add"):
            assert p.startswith('def add(a, b):\n    """')  # signature + the start of the docstring
        if p.startswith("class Box"):
            assert p == "class Box:\n"  # the comment between header and body is not part of the prompt
    assert code_prompts([src], 10, seed=0, per_file=10) == ps  # deterministic


def test_shipped_python_prompts_come_from_held_out_files(python_split):
    prompts = load_prompts(HELDOUT_FILES["python"])
    assert len(prompts) >= 20 and len(set(prompts)) == len(prompts)
    meta = HELDOUT_FILES["python"].parent.parent / "models" / "python-bd" / "training.json"
    info = json.loads(meta.read_text()) if meta.is_file() else {}
    if info.get("corpus", {}).get("python_version", sys.version.split()[0]) != sys.version.split()[0]:
        pytest.skip("another Python version: its standard library differs from the one the prompts came from")
    held = python_split["heldout"]
    train = python_split["train"]
    for p in prompts:
        assert p in held, p
    assert sum(p in train for p in prompts) < len(prompts)  # generic lines may recur, the set as a whole does not


def test_training_prompts_follow_the_corpus():
    py = training_prompts(5, corpus="python")
    assert len(py) == 5 and all(p.split("\n")[0].strip() for p in py)
    sh = training_prompts(3)
    assert all("." in p.split("\n")[0] for p in sh)  # "SPEAKER." lines


# ------------------------------------------------------------------------------------ training dtype
def test_training_dtype_is_chosen_by_the_cpu(monkeypatch):
    monkeypatch.setattr(training, "cpu_has_native_bf16", lambda: False)
    assert training.training_dtype("auto") == "float32"  # AVX2-only CPUs: bf16 is emulated, 6-10x slower
    monkeypatch.setattr(training, "cpu_has_native_bf16", lambda: True)
    assert training.training_dtype("auto") == "bfloat16"
    assert training.training_dtype("fp32") == "float32" and training.training_dtype("bf16") == "bfloat16"
    with pytest.raises(ValueError):
        training.training_dtype("fp8")


def _tiny_python_cfg(out, **kw):
    base = dict(out=str(out), corpus="python", vocab_size=320, hidden_size=32, num_hidden_layers=1,
                num_attention_heads=2, intermediate_size=64, block_size=16, seq_len=64, batch_size=2, max_steps=3,
                warmup_steps=1, eval_every=10_000, checkpoint_every=10_000, corpus_fraction=0.01, seed=0,
                save_dtype="float32", amp="fp32")
    return training.TrainTargetConfig(**(base | kw))


def test_train_on_python_then_continue_with_init_from(tmp_path):
    res = training.train_target(_tiny_python_cfg(tmp_path / "a"), log=lambda *a: None)
    first = tmp_path / "a" / "final"
    meta = json.loads((first / "training.json").read_text())
    assert meta["corpus"]["corpus"] == "python" and meta["training_dtype"] == "float32"
    assert meta["corpus"]["python_version"] == sys.version.split()[0] and res["steps"] == 3
    # lr 0: continuing must start from (and here keep) exactly the given weights and tokenizer
    training.train_target(_tiny_python_cfg(tmp_path / "b", init_from=str(first), lr=0.0), log=lambda *a: None)
    a, b = load_file(str(first / "model.safetensors")), load_file(str(tmp_path / "b" / "final" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (first / "tokenizer.json").read_text() == (tmp_path / "b" / "final" / "tokenizer.json").read_text()
    # the continued model says what it continued from, and its totals count both runs
    cont = json.loads((tmp_path / "b" / "final" / "training.json").read_text())
    assert cont["continued_from"]["steps"] == 3 and cont["continued_from"]["folder"] == str(first)
    assert cont["total_steps"] == 6 and cont["total_minutes"] >= cont["minutes"]
    # a snapshot of the running training keeps the corpus, so drafters and prompts follow it
    from spotviz.embedded.prompts import corpus_of
    from spotviz.registry import load_target

    snap = training.export_checkpoint(tmp_path / "a", tmp_path / "snap", dtype="float32")
    assert corpus_of(load_target(str(snap))) == "python" and corpus_of(load_target(str(first))) == "python"
    with pytest.raises(ValueError, match="init-from"):
        training.train_target(_tiny_python_cfg(tmp_path / "c", init_from=str(first), block_size=8),
                              log=lambda *a: None)
    # a folder's cached corpus is reused only with the settings it was drawn with (it was trained on another
    # corpus, and labelled with this run's, when the settings were ignored); the same settings resume
    before = {f.name: f.stat().st_mtime_ns for f in (tmp_path / "a").iterdir() if f.is_file()}
    for other, said in ((dict(corpus="shakespeare"), "--corpus 'python' there, 'shakespeare' here"),
                        (dict(vocab_size=400), "--vocab-size 320 there, 400 here"),
                        (dict(corpus_fraction=0.02), "--corpus-fraction 0.01 there, 0.02 here")):
        with pytest.raises(ValueError, match="holds a corpus drawn with other settings") as e:
            training.train_target(_tiny_python_cfg(tmp_path / "a", **other), log=lambda *a: None)
        assert said in str(e.value)
    assert {f.name: f.stat().st_mtime_ns for f in (tmp_path / "a").iterdir() if f.is_file()} == before
    assert training.train_target(_tiny_python_cfg(tmp_path / "a", max_steps=4), log=lambda *a: None)["steps"] == 4
    # the same --init-from folder spelled another way is the same corpus (tmp_path/b was drawn with str(first))
    other_spelling = str(first.parent / ".." / first.parent.name / "final") + "/"
    assert training.train_target(_tiny_python_cfg(tmp_path / "b", init_from=other_spelling, lr=0.0, max_steps=4),
                                 log=lambda *a: None)["steps"] == 4


# ------------------------------------------------------------------------------------------ quality
def test_token_stats_and_degeneracy():
    assert token_stats([]) == (0.0, 0.0, 0)
    d, top, run = token_stats([5, 5, 5, 1, 2, 5])
    assert (d, top, run) == (0.5, 4 / 6, 3)
    loop = OutputQuality(20, *token_stats([7] * 20))
    assert loop.degenerate
    ok = OutputQuality(20, *token_stats(list(range(20))))
    assert not ok.degenerate
    s = summarise([loop, ok])
    assert s["degenerate_outputs"] == 1 and s["max_longest_run"] == 20


def test_valid_line_share_cuts_at_the_last_complete_statement():
    assert valid_line_share("def f(x):\n", "    return x\n") == 1.0
    # an open block at the end is closed with `pass`; the broken tail is cut
    share = valid_line_share("def f(x):\n", "    if x:\n        y = 1\n    z = (\n")
    assert 0.5 <= share < 1.0
    assert valid_line_share("def f(x):\n", "") == 0.0
    assert valid_line_share("x = 1\n", ")))))\n((((\n") == 0.0

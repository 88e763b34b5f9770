"""Adapters for published DLMs (targets/published.py), tested on tiny models built here from configs.

Each fixture writes a folder the way the published repository lays it out (config.json with the published
model_type / architectures / auto_map, safetensors weights under the published tensor names, tokenizer files),
plus decoy remote-code files that would leave a marker file if they were ever executed.
"""
from __future__ import annotations

import copy
import json
import pickle
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from spotviz.registry import ModelLoadError, known_models, load_target
from spotviz.targets import hub
from spotviz.targets.adapters import BlockCausalTarget, FullAttentionTarget, MaskedLMTarget
from spotviz.targets.base import PrefixCache
from spotviz.targets.invariance import NOT_GUARANTEED, batch_invariance
from spotviz.targets.families import detect_family
from spotviz.targets.published import PUBLISHED, load_published

VOCAB = 40  # model vocabulary; the tokenizers have fewer tokens (like Qwen's padded embeddings)
WORDS = ("the a of and to in is it you that he was for on are with as his they be at one have this from "
         "some prompt").split()
ATOL = 1e-5


# ---------------------------------------------------------------------------------------------- builders
def write_tokenizer(folder: Path, specials: list[str], **special_tokens) -> dict[str, int]:
    """A word-level tokenizer (tokenizer.json + tokenizer_config.json); returns the vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(specials + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", **special_tokens)
    fast.save_pretrained(str(folder))
    return vocab


def write_decoy(folder: Path, filename: str) -> Path:
    """A remote-code file that leaves a marker if anything ever imports it."""
    marker = folder / f"EXECUTED-{filename}"
    (folder / filename).write_text(f"open({str(marker)!r}, 'w').write('remote code ran')\n")
    return marker


def patch_json(path: Path, **updates) -> None:
    data = json.loads(path.read_text())
    data.update(updates)
    path.write_text(json.dumps(data))


def block_causal_additive(n: int, b: int) -> torch.Tensor:
    pos = torch.arange(n)
    allowed = (pos[None, :] // b) <= (pos[:, None] // b)
    return torch.zeros(n, n).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]


def random_states(vocab: dict, mask_id: int, rows: int, length: int, masked_from: int, seed: int = 0):
    """Rows of real word tokens, MASK on about half of the positions from `masked_from` on."""
    g = torch.Generator().manual_seed(seed)
    word_ids = torch.tensor([vocab[w] for w in WORDS])
    states = word_ids[torch.randint(len(word_ids), (rows, length), generator=g)]
    holes = torch.rand(rows, length, generator=g) < 0.5
    holes[:, :masked_from] = False
    return states.masked_fill(holes, mask_id)


@pytest.fixture(scope="module")
def sdar_dir(tmp_path_factory) -> Path:
    """SDAR layout: Qwen3 weights, model_type "sdar", block_size 4, `<|MASK|>` only as a vocabulary token."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    folder = tmp_path_factory.mktemp("published") / "tiny-sdar"
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
                      tie_word_embeddings=True, initializer_range=0.1, eos_token_id=1)
    Qwen3ForCausalLM(cfg).save_pretrained(str(folder))
    patch_json(folder / "config.json", model_type="sdar", architectures=["SDARForCausalLM"], block_size=4,
               auto_map={"AutoConfig": "configuration_sdar.SDARConfig",
                         "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"})
    write_tokenizer(folder, ["<|endoftext|>", "<|im_end|>", "<|MASK|>", "<unk>"], eos_token="<|im_end|>")
    write_decoy(folder, "modeling_sdar.py")
    write_decoy(folder, "configuration_sdar.py")
    return folder


@pytest.fixture(scope="module")
def dream_dir(tmp_path_factory) -> Path:
    """Dream layout: Qwen2 weights, model_type "Dream", mask_token_id in config, custom tokenizer class."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("published") / "tiny-dream"
    torch.manual_seed(1)
    cfg = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      tie_word_embeddings=False, initializer_range=0.1)
    Qwen2ForCausalLM(cfg).save_pretrained(str(folder))
    vocab = write_tokenizer(folder, ["<|endoftext|>", "<|im_end|>", "<|mask|>", "<unk>"],
                            eos_token="<|endoftext|>", mask_token="<|mask|>")
    patch_json(folder / "config.json", model_type="Dream", architectures=["DreamModel"],
               mask_token_id=vocab["<|mask|>"], eos_token_id=vocab["<|endoftext|>"],
               auto_map={"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"})
    patch_json(folder / "tokenizer_config.json", tokenizer_class="DreamTokenizer",
               auto_map={"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]})
    write_decoy(folder, "modeling_dream.py")
    write_decoy(folder, "tokenization_dream.py")
    return folder


LLADA_CONFIG = {
    "model_type": "llada", "architectures": ["LLaDAModelLM"],
    "auto_map": {"AutoConfig": "configuration_llada.LLaDAConfig", "AutoModel": "modeling_llada.LLaDAModelLM"},
    "d_model": 64, "n_heads": 4, "n_kv_heads": 4, "n_layers": 2, "mlp_hidden_size": 128, "mlp_ratio": 4,
    "vocab_size": VOCAB, "embedding_size": VOCAB, "max_sequence_length": 128, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "rope": True, "rope_full_precision": True, "alibi": False, "block_type": "llama",
    "activation_type": "silu", "layer_norm_type": "rms", "layer_norm_with_affine": True,
    "attention_layer_norm": False, "include_bias": False, "include_qkv_bias": False, "bias_for_layer_norm": False,
    "input_emb_norm": False, "scale_logits": False, "weight_tying": False, "block_group_size": 1,
    "flash_attention": False, "eos_token_id": 0, "pad_token_id": 0,
}


def llada_weights(seed: int = 2) -> dict[str, torch.Tensor]:
    """Random weights under LLaDA's own (OLMo-style) tensor names."""
    g = torch.Generator().manual_seed(seed)
    d, f, v = LLADA_CONFIG["d_model"], LLADA_CONFIG["mlp_hidden_size"], VOCAB

    def rnd(*shape, std=0.1):
        return torch.randn(*shape, generator=g) * std

    w = {"model.transformer.wte.weight": rnd(v, d), "model.transformer.ff_out.weight": rnd(v, d),
         "model.transformer.ln_f.weight": 1 + rnd(d)}
    for i in range(LLADA_CONFIG["n_layers"]):
        p = f"model.transformer.blocks.{i}."
        w.update({p + "q_proj.weight": rnd(d, d), p + "k_proj.weight": rnd(d, d), p + "v_proj.weight": rnd(d, d),
                  p + "attn_out.weight": rnd(d, d), p + "ff_proj.weight": rnd(f, d), p + "up_proj.weight": rnd(f, d),
                  p + "ff_out.weight": rnd(d, f), p + "attn_norm.weight": 1 + rnd(d), p + "ff_norm.weight": 1 + rnd(d)})
    return w


def llada_reference_logits(w: dict, ids: torch.Tensor) -> torch.Tensor:
    """LLaDA's forward written from its modeling code: RMSNorm, RoPE (rotate-half, theta from config),
    attention without any mask, SwiGLU MLP (silu(ff_proj) * up_proj -> ff_out), untied output ff_out."""
    c = LLADA_CONFIG
    d, h = c["d_model"], c["n_heads"]
    hd, (b, n) = d // h, ids.shape

    def rms(x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["rms_norm_eps"]))

    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(n).float(), inv)
    cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()

    def rope(t):
        t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
        return t * cos + torch.cat([-t2, t1], -1) * sin

    x = w["model.transformer.wte.weight"][ids]
    for i in range(c["n_layers"]):
        p = f"model.transformer.blocks.{i}."
        a = rms(x, w[p + "attn_norm.weight"])
        q, k, v = (F.linear(a, w[p + s + ".weight"]).view(b, n, h, hd).transpose(1, 2)
                   for s in ("q_proj", "k_proj", "v_proj"))
        att = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=False)
        x = x + F.linear(att.transpose(1, 2).reshape(b, n, d), w[p + "attn_out.weight"])
        m = rms(x, w[p + "ff_norm.weight"])
        x = x + F.linear(F.silu(F.linear(m, w[p + "ff_proj.weight"])) * F.linear(m, w[p + "up_proj.weight"]),
                         w[p + "ff_out.weight"])
    return F.linear(rms(x, w["model.transformer.ln_f.weight"]), w["model.transformer.ff_out.weight"])


def llada_reference_logits_bf16(w: dict, ids: torch.Tensor, rope_full_precision: bool) -> torch.Tensor:
    """The same forward in bfloat16 as LLaDA's code runs it: RMSNorm in float32 then the weight in bf16; RoPE
    in float32 (queries and keys upcast, float32 cos/sin, cast back) when `rope_full_precision`, else in bf16
    with bf16 cos/sin; attention with an additive zero mask (as the adapter passes one)."""
    c, dt = LLADA_CONFIG, torch.bfloat16
    d, h = c["d_model"], c["n_heads"]
    hd, (b, n) = d // h, ids.shape
    w = {k: v.to(dt) for k, v in w.items()}

    def rms(x, weight):
        x32 = x.float()
        return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + c["rms_norm_eps"])).to(dt)

    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(n).float(), inv)
    cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()

    def rope(t):
        t, cs, sn = (t.float(), cos, sin) if rope_full_precision else (t, cos.to(dt), sin.to(dt))
        t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
        return (t * cs + torch.cat([-t2, t1], -1) * sn).to(dt)

    x = w["model.transformer.wte.weight"][ids]
    for i in range(c["n_layers"]):
        p = f"model.transformer.blocks.{i}."
        a = rms(x, w[p + "attn_norm.weight"])
        q, k, v = (F.linear(a, w[p + s + ".weight"]).view(b, n, h, hd).transpose(1, 2)
                   for s in ("q_proj", "k_proj", "v_proj"))
        att = F.scaled_dot_product_attention(rope(q), rope(k), v, attn_mask=torch.zeros(1, 1, n, n, dtype=dt))
        x = x + F.linear(att.transpose(1, 2).reshape(b, n, d), w[p + "attn_out.weight"])
        m = rms(x, w[p + "ff_norm.weight"])
        x = x + F.linear(F.silu(F.linear(m, w[p + "ff_proj.weight"])) * F.linear(m, w[p + "up_proj.weight"]),
                         w[p + "ff_out.weight"])
    return F.linear(rms(x, w["model.transformer.ln_f.weight"]), w["model.transformer.ff_out.weight"]).float()


def write_llada(folder: Path, config: dict) -> dict[str, int]:
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file(llada_weights(), str(folder / "model.safetensors"), metadata={"format": "pt"})
    vocab = write_tokenizer(folder, ["<|endoftext|>", "<|eot_id|>", "<|mdm_mask|>", "<unk>"], eos_token="<|endoftext|>")
    (folder / "config.json").write_text(json.dumps({**config, "mask_token_id": vocab["<|mdm_mask|>"]}))
    write_decoy(folder, "modeling_llada.py")
    write_decoy(folder, "configuration_llada.py")
    return vocab


@pytest.fixture(scope="module")
def llada_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("published") / "tiny-llada"
    write_llada(folder, LLADA_CONFIG)
    return folder


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory) -> Path:
    """A ModernBERT masked LM (stock transformers architecture) with a [MASK] / [SEP] tokenizer."""
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    folder = tmp_path_factory.mktemp("published") / "tiny-modernbert"
    vocab = write_tokenizer(folder, ["[PAD]", "[SEP]", "[MASK]", "<unk>"], mask_token="[MASK]", sep_token="[SEP]",
                            pad_token="[PAD]")
    torch.manual_seed(3)
    cfg = ModernBertConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, max_position_embeddings=128, local_attention=16,
                           global_attn_every_n_layers=2, pad_token_id=0, bos_token_id=1, eos_token_id=1,
                           cls_token_id=1, sep_token_id=1, mask_token_id=vocab["[MASK]"], initializer_range=0.1)
    ModernBertForMaskedLM(cfg).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def sdar(sdar_dir):
    return load_published(str(sdar_dir), device="cpu")


@pytest.fixture(scope="module")
def dream(dream_dir):
    return load_published(str(dream_dir), device="cpu")


@pytest.fixture(scope="module")
def llada(llada_dir):
    return load_published(str(llada_dir), device="cpu")


@pytest.fixture(scope="module")
def mlm(mlm_dir):
    return load_published(str(mlm_dir), device="cpu")


def vocab_of(target) -> dict[str, int]:
    return target.tokenizer.get_vocab()


ADAPTERS = ["sdar", "dream", "llada", "mlm"]


# ---------------------------------------------------------------------------------------------- specs
def test_published_names_and_specs():
    expected = {"sdar-1.7b-chat": "JetLM/SDAR-1.7B-Chat", "sdar-8b-chat": "JetLM/SDAR-8B-Chat",
                "llada-8b-instruct": "GSAI-ML/LLaDA-8B-Instruct", "dream-7b-instruct": "Dream-org/Dream-v0-Instruct-7B"}
    for name, repo in expected.items():
        assert PUBLISHED[name]["repo"] == repo
    for spec in PUBLISHED.values():
        assert spec["family"] in ("sdar", "llada", "dream", "mlm") and spec["block_size"] == 32
    assert set(PUBLISHED) <= set(known_models())


@pytest.mark.parametrize("config, hint, family", [
    ({"model_type": "sdar"}, "", "sdar"),
    ({"model_type": "qwen3", "block_size": 4}, "", "sdar"),
    ({"model_type": "qwen3"}, "JetLM/SDAR-1.7B-Chat", "sdar"),
    ({"model_type": "qwen3"}, "Qwen/Qwen3-0.6B", "mlm"),
    ({"model_type": "llada"}, "", "llada"),
    ({"model_type": "other", "architectures": ["LLaDAModelLM"]}, "", "llada"),
    ({"model_type": "Dream"}, "", "dream"),
    ({"model_type": "qwen2", "mask_token_id": 151666}, "", "dream"),
    ({"model_type": "qwen2"}, "", "mlm"),
    ({"model_type": "modernbert"}, "", "mlm"),
])
def test_detect_family(config, hint, family):
    assert detect_family(config, hint) == family


# ---------------------------------------------------------------------------------------------- SDAR
def test_sdar_info_and_no_remote_code(sdar, sdar_dir):
    v = vocab_of(sdar)
    assert isinstance(sdar, BlockCausalTarget)
    assert type(sdar.model).__name__ == "Qwen3ForCausalLM"
    info = sdar.info
    assert (info.attention, info.block_size, info.logit_shift, info.vocab_size) == ("block", 4, 0, VOCAB)
    assert info.mask_id == v["<|MASK|>"]  # found by name: the tokenizer has no mask_token set
    assert set(info.eos_ids) == {v["<|endoftext|>"], v["<|im_end|>"]}
    assert info.extra["family"] == "sdar" and info.source == str(sdar_dir)
    assert not list(sdar_dir.glob("EXECUTED-*"))


def sdar_reference_logits(sdar, states: torch.Tensor) -> torch.Tensor:
    """SDAR's own semantics (its generate.py): the row padded with MASK to whole blocks, one uncached pass with
    the block-causal mask over the padded row, RoPE positions 0..; logits of the real positions."""
    n, b = states.shape[1], sdar.info.block_size
    total = -(-n // b) * b
    padded = torch.cat([states, states.new_full((states.shape[0], total - n), sdar.info.mask_id)], 1)
    with torch.no_grad():
        return sdar.model(input_ids=padded, attention_mask=block_causal_additive(total, b),
                          position_ids=torch.arange(total)[None]).logits[:, :n]


def test_sdar_cached_windows_match_full_block_causal_recompute(sdar):
    """Window by window with the exact prefix cache == one uncached pass with an explicit block-causal mask
    over the row padded to whole blocks (the last window [12, 14) is ragged)."""
    n, b = 14, sdar.info.block_size
    states = random_states(vocab_of(sdar), sdar.info.mask_id, rows=1, length=n, masked_from=6)
    ref = sdar_reference_logits(sdar, states)
    cache = sdar.empty_cache()
    for lo, hi in sdar.windows(6, n):  # [4, 8), [8, 12), [12, 14): the first holds the prompt's tail
        out = sdar.forward(states, lo, hi, cache)
        assert out.logits.shape == (1, hi - lo, VOCAB) and out.logits.dtype == torch.float32
        torch.testing.assert_close(out.logits, ref[:, lo:hi], atol=ATOL, rtol=0)
        cache = sdar.extend_cache(cache, out, 0, hi if hi % b == 0 else lo)
    assert cache.length == 12 and len(cache.kv) == 2 and cache.kv[0][0].shape[:3] == (1, 2, 12)


@pytest.mark.parametrize("length", [13, 14, 15])
def test_sdar_ragged_last_block_attends_to_mask_pads_like_sdar(sdar, length):
    """prompt + gen_length not a multiple of the block size: the last block's logits are those of SDAR's padded
    row (its positions attend to MASK pads up to the block boundary), for one row, a batch and with a cache;
    cutting the block short instead gives different logits."""
    b = sdar.info.block_size
    states = random_states(vocab_of(sdar), sdar.info.mask_id, rows=3, length=length, masked_from=8, seed=5)
    states[:, :8] = states[0, :8]
    ref = sdar_reference_logits(sdar, states)
    lo = (length // b) * b
    cache = sdar.extend_cache(sdar.empty_cache(), sdar.forward(states[:1], 4, 8, sdar.empty_cache()), 0, 8)
    for c in (sdar.empty_cache(), cache):
        batched = sdar.forward(states, lo, length, c).logits
        torch.testing.assert_close(batched, ref[:, lo:], atol=ATOL, rtol=0)
        for i in range(3):
            assert torch.equal(sdar.forward(states[i: i + 1], lo, length, c).logits[0], batched[i])
    with torch.no_grad():  # the cut-short block (no pads) is not SDAR's computation
        cut = sdar.model(input_ids=states, attention_mask=block_causal_additive(length, b),
                         position_ids=torch.arange(length)[None]).logits
    assert (cut[:, lo:] - ref[:, lo:]).abs().max() > 1e-3


def test_sdar_batched_forward_equals_single_and_keeps_cache(sdar):
    v, b = vocab_of(sdar), sdar.info.block_size
    states = random_states(v, sdar.info.mask_id, rows=3, length=12, masked_from=8, seed=1)
    states[1:, :8] = states[0, :8]  # rows share the cached prefix, differ in the window
    cache = sdar.extend_cache(sdar.empty_cache(), sdar.forward(states[:1], 8, 12, sdar.empty_cache()), 0, 8)
    before = [(k.clone(), v_.clone()) for k, v_ in cache.kv]
    pointers = [(k.data_ptr(), v_.data_ptr()) for k, v_ in cache.kv]
    batched = sdar.forward(states, 8, 12, cache)
    for i in range(3):
        single = sdar.forward(states[i: i + 1], 8, 12, cache)
        torch.testing.assert_close(batched.logits[i: i + 1], single.logits, atol=ATOL, rtol=0)
    assert cache.length == 8 and [(k.data_ptr(), v_.data_ptr()) for k, v_ in cache.kv] == pointers
    for (k, v_), (k0, v0) in zip(cache.kv, before):
        assert torch.equal(k, k0) and torch.equal(v_, v0) and k.shape[2] == 8


def test_sdar_extend_cache_from_a_batch_row_then_forward_equals_recompute(sdar):
    v = vocab_of(sdar)
    states = random_states(v, sdar.info.mask_id, rows=3, length=16, masked_from=4, seed=2)
    states[:, :4] = states[0, :4]
    base = sdar.extend_cache(sdar.empty_cache(), sdar.forward(states[:1], 4, 8, sdar.empty_cache()), 0, 4)
    out = sdar.forward(states, 4, 8, base)  # three candidate states of block [4, 8)
    grown = sdar.extend_cache(base, out, 2, 8)  # row 2's block is finished: keep its keys/values
    assert grown.length == 8 and base.length == 4 and base.kv[0][0].shape[2] == 4
    row = states[2:3].clone()
    row[:, 8:] = sdar.info.mask_id
    cached = sdar.forward(row, 8, 12, grown)
    fresh = sdar.forward(row, 8, 12, sdar.empty_cache())  # recompute from position 0
    torch.testing.assert_close(cached.logits, fresh.logits, atol=ATOL, rtol=0)
    with pytest.raises(ValueError):
        sdar.extend_cache(base, out, 0, 6)  # not a block boundary
    with pytest.raises(ValueError):
        sdar.forward(row, 2, 4, grown)  # window before the cache end


def test_sdar_attention_is_bidirectional_inside_a_block_and_causal_across(sdar):
    states = random_states(vocab_of(sdar), sdar.info.mask_id, rows=1, length=14, masked_from=14)
    changed = states.clone()
    changed[0, 13] = vocab_of(sdar)["prompt"] if states[0, 13] != vocab_of(sdar)["prompt"] else vocab_of(sdar)["the"]
    a = sdar.forward(states, 0, 14, sdar.empty_cache()).logits
    c = sdar.forward(changed, 0, 14, sdar.empty_cache()).logits
    assert torch.equal(a[:, :12], c[:, :12])  # earlier blocks never see block [12, 16)
    assert not torch.allclose(a[:, 12], c[:, 12], atol=1e-6)  # position 12 sees 13: same block


# ---------------------------------------------------------------------------------------------- Dream
def test_dream_info_tokenizer_without_remote_code(dream, dream_dir):
    v = vocab_of(dream)
    assert isinstance(dream, FullAttentionTarget) and type(dream.model).__name__ == "Qwen2ForCausalLM"
    info = dream.info
    assert (info.attention, info.block_size, info.logit_shift) == ("full", 32, 1)
    assert info.mask_id == v["<|mask|>"] and set(info.eos_ids) == {v["<|endoftext|>"], v["<|im_end|>"]}
    assert not list(dream_dir.glob("EXECUTED-*"))  # neither the model nor the DreamTokenizer code ran


def test_a_tokenizer_that_only_autotokenizer_reads_is_loaded(tmp_path):
    """A folder with a WordPiece vocab.txt and no tokenizer.json: only AutoTokenizer reads it (it used to fail on
    every folder, hidden behind the fallbacks, so such a tokenizer could not load at all)."""
    from transformers import BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(WORDS)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(str(tmp_path / "tok"))
    (tmp_path / "tok" / "tokenizer.json").unlink(missing_ok=True)
    shutil.copy(tmp_path / "vocab.txt", tmp_path / "tok" / "vocab.txt")
    tok = hub.load_tokenizer(tmp_path / "tok", "wordpiece")
    assert tok.encode("the prompt", add_special_tokens=False) == [vocab.index("the"), vocab.index("prompt")]


def test_dream_logits_are_shifted_by_one(dream):
    states = random_states(vocab_of(dream), dream.info.mask_id, rows=2, length=12, masked_from=4)
    with torch.no_grad():
        ref = dream.model(input_ids=states, attention_mask=torch.zeros(1, 1, 12, 12)).logits  # bidirectional
    torch.testing.assert_close(dream.forward(states, 4, 9, PrefixCache()).logits, ref[:, 3:8], atol=ATOL, rtol=0)
    first = dream.forward(states, 0, 3, PrefixCache()).logits  # position 0 reuses output 0, as Dream does
    torch.testing.assert_close(first, ref[:, [0, 0, 1]], atol=ATOL, rtol=0)


def test_full_attention_sees_positions_after_the_window(dream):
    v = vocab_of(dream)
    states = random_states(v, dream.info.mask_id, rows=1, length=12, masked_from=12)
    changed = states.clone()
    changed[0, 11] = v["prompt"] if states[0, 11] != v["prompt"] else v["the"]
    a, c = (dream.forward(s, 4, 8, PrefixCache()).logits for s in (states, changed))
    assert not torch.allclose(a, c, atol=1e-6)


# ---------------------------------------------------------------------------------------------- LLaDA
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_load_probes_batch_invariance_and_runs_say_what_it_found(adapter, request):
    """The load-time probe ran at the default dtype (float32 on the CPU). Whether float32 batched passes are bit
    for bit one-row passes depends on the CPU's kernels (these tiny models multiply matrices of a few rows; on some
    AVX-512 CPUs a batch's rows differ from one-row passes in the last bit), so the test asserts the probe's
    verdict and what follows from it, not the hardware: the flag is what the probe finds, the note says it, and a
    run's trace claims identity only if the probe proved it."""
    from spotviz.samplers import DecodeConfig, decode_standard

    target = request.getfixturevalue(adapter)
    assert next(target.model.parameters()).dtype == torch.float32  # nothing to upcast: flagged if it fails
    report = batch_invariance(target)
    assert target.info.batch_invariant is report.invariant
    if report.invariant:
        assert "bit-identical" in target.info.extra["invariance"]
    else:
        assert target.info.extra["invariance"].startswith(NOT_GUARANTEED) and report.max_abs_diff > 0
    trace = decode_standard(target, "some prompt", DecodeConfig(gen_length=4))
    assert trace.meta.identity_guaranteed is report.invariant


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_one_row_pass_of_a_two_token_sequence_multiplies_at_least_16_rows(adapter, request):
    """BLAS multiplies a matrix of 1-3 rows by other kernels than a batch's (targets/base.enough_rows): every linear
    layer of a one-row pass over a whole sequence of 2 tokens (a one-token prompt, one to generate) sees at least 16
    rows, the output head included (session 51: the full-attention head got the 2 rows of one sequence back)."""
    target = request.getfixturevalue(adapter)
    seen = []
    hooks = [m.register_forward_pre_hook(lambda mod, args: seen.append((type(mod).__name__, args[0].shape)))
             for m in target.model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        v = vocab_of(target)
        states = torch.tensor([[v["the"], target.info.mask_id]])
        target.forward(states, 1, 2, target.empty_cache())
    finally:
        for h in hooks:
            h.remove()
    assert seen and all(shape[:-1].numel() >= 16 for _, shape in seen), seen


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_bf16_published_target_is_made_invariant_or_flagged(adapter, request):
    folder = request.getfixturevalue(f"{adapter}_dir")
    target = load_published(str(folder), device="cpu", dtype=torch.bfloat16)
    dtype = next(target.model.parameters()).dtype
    assert target.info.batch_invariant is not None
    if target.info.batch_invariant:  # only float32 is guaranteed
        assert dtype == torch.float32 and "upcast to float32" in target.info.extra["invariance"]
    else:
        assert target.info.extra["invariance"].startswith("identity not guaranteed")


def test_llada_maps_onto_llama_and_matches_its_reference_forward(llada, llada_dir):
    assert isinstance(llada, FullAttentionTarget) and type(llada.model).__name__ == "LlamaForCausalLM"
    v = vocab_of(llada)
    info = llada.info
    assert (info.attention, info.logit_shift, info.mask_id, info.vocab_size) == ("full", 0, v["<|mdm_mask|>"], VOCAB)
    assert set(info.eos_ids) == {v["<|endoftext|>"], v["<|eot_id|>"]}
    states = random_states(v, info.mask_id, rows=2, length=10, masked_from=3)
    ref = llada_reference_logits(llada_weights(), states)
    torch.testing.assert_close(llada.forward(states, 3, 10, PrefixCache()).logits, ref[:, 3:10], atol=ATOL, rtol=0)
    assert not list(llada_dir.glob("EXECUTED-*"))


@pytest.mark.parametrize("full_precision", [True, False])
def test_llada_rope_full_precision_is_mapped_in_bf16(tmp_path, full_precision):
    """bf16 logits equal LLaDA's own bf16 computation bit for bit, with RoPE in float32 when the config says
    rope_full_precision (LLaDA's setting) and in bf16 when it does not; the two differ on a long row."""
    folder = tmp_path / "llada"
    write_llada(folder, {**LLADA_CONFIG, "rope_full_precision": full_precision, "max_sequence_length": 512})
    target = load_published(str(folder), device="cpu", dtype=torch.bfloat16, check_invariance=False)
    states = random_states(vocab_of(target), target.info.mask_id, rows=2, length=300, masked_from=3)
    got = target.forward(states, 3, 300, PrefixCache()).logits
    same = llada_reference_logits_bf16(llada_weights(), states, full_precision)[:, 3:]
    other = llada_reference_logits_bf16(llada_weights(), states, not full_precision)[:, 3:]
    assert torch.equal(got, same)
    assert (got - other).abs().max() > 0


# ---------------------------------------------------------------------------------------------- masked LM
def test_masked_lm_matches_the_plain_model(mlm, mlm_dir):
    from transformers import AutoModelForMaskedLM

    v = vocab_of(mlm)
    assert isinstance(mlm, MaskedLMTarget)
    assert (mlm.info.attention, mlm.info.logit_shift, mlm.info.mask_id) == ("full", 0, v["[MASK]"])
    assert mlm.info.eos_ids == (v["[SEP]"],)  # no EOS token: [SEP] ends a BERT-style text
    plain = AutoModelForMaskedLM.from_pretrained(str(mlm_dir), use_safetensors=True).eval()
    states = random_states(v, mlm.info.mask_id, rows=2, length=12, masked_from=4)
    with torch.no_grad():
        ref = plain(input_ids=states).logits
    torch.testing.assert_close(mlm.forward(states, 4, 12, PrefixCache()).logits, ref[:, 4:12], atol=ATOL, rtol=0)


# ---------------------------------------------------------------------------------------------- all adapters
@pytest.mark.parametrize("adapter", ["dream", "llada", "mlm"])
@pytest.mark.parametrize("lo, hi", [(5, 12), (11, 12), (6, 8)])
def test_full_attention_batched_forward_equals_single(adapter, lo, hi, request):
    """Bit for bit, also for narrow windows (one or two positions)."""
    target = request.getfixturevalue(adapter)
    states = random_states(vocab_of(target), target.info.mask_id, rows=3, length=12, masked_from=5, seed=4)
    batched = target.forward(states, lo, hi, target.empty_cache())
    for i in range(3):
        single = target.forward(states[i: i + 1], lo, hi, PrefixCache())
        assert torch.equal(batched.logits[i], single.logits[0])
    assert target.extend_cache(PrefixCache(), batched, 0, lo) == PrefixCache()  # nothing to cache


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_speculative_runs_on_every_adapter_are_the_standard_decoders_where_the_probe_says_so(adapter, request):
    """SPOT's verifier on each published adapter, with trees of every shape (a proposer of random valid candidates:
    random orders, tokens and sets) and the training-free drafter, at several budgets, both modes and temperatures:
    the tokens are the standard decoder's wherever the load-time probe proved batched passes bit-identical to one-row
    passes (what the trace then claims); where it did not, the trace says identity is not guaranteed."""
    from spotviz.drafter.registry import register_proposer, unregister_proposer
    from spotviz.engine import decode
    from spotviz.samplers import DecodeConfig

    from helpers import RandomProposer

    target = request.getfixturevalue(adapter)
    register_proposer("random-valid", lambda t, m, f: RandomProposer(7, t.info.vocab_size, t.info.mask_id),
                      modes=("exact", "threshold"))
    try:
        for i, (mode, tau, T, budget, drafter) in enumerate([
                ("exact", 0.9, 0.0, 4, "random-valid"), ("exact", 0.9, 1.0, 16, "random-valid"),
                ("threshold", 0.05, 1.0, 8, "random-valid"), ("exact", 0.9, 1.0, 8, "training-free"),
                ("threshold", 0.05, 0.0, 4, "training-free")]):
            cfg = DecodeConfig(mode=mode, threshold=tau, temperature=T, seed=i, gen_length=12)
            standard = decode(target, "the cat", cfg)
            run = decode(target, "the cat", replace(cfg, drafter=drafter, budget=budget))
            assert run.meta.identity_guaranteed is (target.info.batch_invariant is True)
            if target.info.batch_invariant:
                assert run.tokens == standard.tokens, (adapter, mode, T, budget, drafter)
    finally:
        unregister_proposer("random-valid")


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_standard_decoder_commits_every_position_once(adapter, request):
    from spotviz.samplers import DecodeConfig, decode_standard

    target = copy.copy(request.getfixturevalue(adapter))
    target.info = replace(target.info, eos_ids=())  # random weights may emit EOS early; decode every window
    trace = decode_standard(target, "some prompt", DecodeConfig(gen_length=8))
    prompt_len = len(target.encode("some prompt"))
    positions = sorted(c.position for p in trace.passes for c in p.commits)
    assert positions == list(range(prompt_len, prompt_len + 8))
    assert trace.counters.target_passes == 8  # exact mode: one commit per pass


def test_chat_template_wraps_the_prompt(sdar):
    target = copy.copy(sdar)
    target.tokenizer = copy.deepcopy(sdar.tokenizer)
    target.tokenizer.chat_template = ("{% for m in messages %}the {{ m['content'] }} you{% endfor %}"
                                      "{% if add_generation_prompt %} he{% endif %}")
    target.chat_template = True
    v = vocab_of(sdar)
    assert target.encode("some prompt") == [v[w] for w in ("the", "some", "prompt", "you", "he")]
    assert sdar.encode("some prompt") == [v["some"], v["prompt"]]


def test_bos_for_plain_prompts_where_the_model_expects_it(llada):
    target = copy.copy(llada)
    target.tokenizer = copy.deepcopy(llada.tokenizer)
    target.tokenizer.bos_token = "<|endoftext|>"
    target.prepend_bos = True
    v = vocab_of(llada)
    assert target.encode("some prompt") == [v["<|endoftext|>"], v["some"], v["prompt"]]
    assert llada.encode("some prompt") == [v["some"], v["prompt"]]


def test_a_local_copy_decodes_as_the_published_model_it_is(sdar_dir, llada_dir, tmp_path):
    """A folder used to get no chat template, no BOS and no context cap whatever it held: now a copy in the Hugging
    Face cache (or whose config names its repository) gets its published spec, and another folder uses its
    tokenizer's chat template unless its name says "base"."""
    from transformers import AutoTokenizer

    def copy_with_template(src, dest):
        shutil.copytree(src, dest)
        tok = AutoTokenizer.from_pretrained(str(dest))
        tok.chat_template = "{% for m in messages %}the {{ m['content'] }}{% endfor %}"
        tok.save_pretrained(str(dest))
        return dest

    chat = load_target(str(copy_with_template(sdar_dir, tmp_path / "my-sdar-chat")), device="cpu")
    assert chat.chat_template and chat.info.extra["chat_template"] and "recognised_as" not in chat.info.extra
    base = load_target(str(copy_with_template(sdar_dir, tmp_path / "my-sdar-base")), device="cpu")
    assert not base.chat_template
    cached = tmp_path / "hub" / "models--JetLM--SDAR-1.7B-Chat" / "snapshots" / "0123abc"
    cached.parent.mkdir(parents=True)
    target = load_target(str(copy_with_template(sdar_dir, cached)), device="cpu")
    assert target.info.extra["recognised_as"] == "JetLM/SDAR-1.7B-Chat" and target.chat_template
    llada_base = tmp_path / "copy"
    shutil.copytree(llada_dir, llada_base)
    patch_json(llada_base / "config.json", _name_or_path="GSAI-ML/LLaDA-8B-Base")
    target = load_target(str(llada_base), device="cpu")
    assert target.info.extra["recognised_as"] == "GSAI-ML/LLaDA-8B-Base" and target.prepend_bos
    assert not target.chat_template


def test_registry_routes_a_published_folder(sdar_dir):
    from spotviz.embedded.prompts import corpus_of, heldout_prompts

    target = load_target(str(sdar_dir), device="cpu")
    assert isinstance(target, BlockCausalTarget) and target.info.block_size == 4
    # bench and train-drafter give a published-family model word problems (they gave it play text)
    assert corpus_of(target) == "math" and heldout_prompts(target)[0].endswith("?")


def test_block_size_override(llada_dir, sdar_dir, tiny_block_dir):
    assert load_published(str(llada_dir), device="cpu", block_size=8).info.block_size == 8
    assert load_target(str(sdar_dir), device="cpu", block_size=8).info.block_size == 8  # (its config says 4)
    with pytest.raises(ModelLoadError, match="embedded model: it decodes at the block size it was trained with"):
        load_target(str(tiny_block_dir), block_size=8)


# ---------------------------------------------------------------------------------------------- errors
def test_load_target_says_what_is_wrong_with_a_path(tmp_path, monkeypatch):
    """A path that is no folder gets the folder's own message from load_target (the CLI's and the library's entry),
    not "unknown model"; a bare word that names nothing still gets the list of known models."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights.safetensors").write_bytes(b"")
    for name, match in (("./missing", f"model folder '{tmp_path / 'missing'}' does not exist"),
                        (str(tmp_path / "a" / "b"), "does not exist"),
                        (str(tmp_path / "weights.safetensors"), "is a file, not a model folder"),
                        ("no-such-model", "unknown model 'no-such-model'; known models: .*math-bd"),
                        ("math-db", r"unknown model 'math-db' \(did you mean 'math-bd'\?\); known models")):
        with pytest.raises(ModelLoadError, match=match):
            load_target(name)


def test_published_weights_with_nan_are_refused(sdar_dir, tmp_path):
    """As for the embedded models (SECURITY.md): a published checkpoint with a NaN loaded and decoded nothing."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "sdar-nan"
    shutil.copytree(sdar_dir, folder)
    weights = load_file(str(folder / "model.safetensors"))
    key = next(k for k in sorted(weights) if "q_proj" in k)
    weights[key][0, 0] = float("nan")
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match="tensor .*q_proj.* has NaN or infinite values"):
        load_target(str(folder))


def test_a_model_without_a_usable_mask_says_where_it_looked(sdar_dir, tmp_path):
    folder = tmp_path / "sdar-nomask"
    shutil.copytree(sdar_dir, folder)
    patch_json(folder / "config.json", mask_token_id=999)
    with pytest.raises(ModelLoadError, match=r"no usable mask token \(got 999, vocabulary 40\); a sdar model's mask "
                                             r"comes from config.json's mask_token_id, else the tokenizer's <\|MASK\|>"):
        load_target(str(folder))


def test_unknown_names_and_missing_folders(tmp_path):
    with pytest.raises(ModelLoadError, match="unknown published model"):
        load_published("no-such-model")
    with pytest.raises(ModelLoadError, match="empty"):
        load_published("  ")
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_published(str(tmp_path / "missing" / "folder"))
    (tmp_path / "weights.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="not a model folder"):
        load_published(str(tmp_path / "weights.safetensors"))
    with pytest.raises(ModelLoadError, match="config.json is missing"):
        load_published(str(tmp_path))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="not valid JSON"):
        load_published(str(tmp_path))


def test_hub_repo_not_cached_offline():
    with pytest.raises(ModelLoadError, match="could not be downloaded"):
        load_published("nobody-here/not-a-model-xyz")


def test_corrupt_and_missing_weights(sdar_dir, tmp_path):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(sdar_dir, corrupt)
    data = (corrupt / "model.safetensors").read_bytes()
    (corrupt / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="corrupt or truncated"):
        load_published(str(corrupt))
    garbage = tmp_path / "garbage"
    shutil.copytree(sdar_dir, garbage)
    (garbage / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="corrupt or truncated"):
        load_published(str(garbage))
    mismatch = tmp_path / "mismatch"
    shutil.copytree(sdar_dir, mismatch)
    config = json.loads((mismatch / "config.json").read_text())
    config.pop("layer_types", None)
    (mismatch / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))  # weights: 2 layers
    with pytest.raises(ModelLoadError, match="does not match Qwen3ForCausalLM"):
        load_published(str(mismatch))


def test_a_llada_folder_with_a_llama_layout_config_is_told_what_llada_needs(tmp_path):
    """A Llama config relabelled model_type "llada" lacks LLaDA's OLMo-style keys: the message names them (it
    pointed at remote code, the wrong lever), and no remote code is looked at."""
    folder = tmp_path / "tiny-llada-llama-config"
    config = {k: v for k, v in LLADA_CONFIG.items() if k not in ("d_model", "n_heads", "n_layers")}
    write_llada(folder, {**config, "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2})
    with pytest.raises(ModelLoadError, match="lacks the keys of LLaDA's OLMo-style config: d_model, n_heads, n_layers"):
        load_published(str(folder))
    assert not list(folder.glob("EXECUTED-*"))


@pytest.mark.parametrize("name", ["plain-qwen3", "my-sdar"])  # (a folder's name is no evidence of a family)
def test_a_causal_lm_without_diffusion_hints_is_refused(sdar_dir, tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(sdar_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    for key in ("block_size", "auto_map", "architectures"):
        config.pop(key)
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "qwen3"}))
    with pytest.raises(ModelLoadError, match="no masked-LM head"):
        load_published(str(folder))


class _Tripwire:
    """Unpickling this creates a file: proves that a pickle was opened."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickle_weights_are_refused_unopened(sdar_dir, tmp_path):
    folder = tmp_path / "pickled"
    shutil.copytree(sdar_dir, folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "UNPICKLED"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Tripwire(str(marker))))
    with pytest.raises(ModelLoadError, match="safetensors only"):
        load_published(str(folder))
    assert not marker.exists()


def test_remote_code_refused_for_local_folders_and_unlisted_repos(tmp_path, monkeypatch):
    odd = tmp_path / "llada-sequential"
    write_llada(odd, {**LLADA_CONFIG, "block_type": "sequential"})  # not expressible as LLaMA
    with pytest.raises(ModelLoadError, match="trust_remote_code") as err:
        load_published(str(odd))
    assert "block_type='sequential'" in str(err.value) and "GSAI-ML/LLaDA-8B-Instruct" in str(err.value)

    custom = tmp_path / "custom-dlm"
    custom.mkdir()
    (custom / "config.json").write_text(json.dumps({"model_type": "my-custom-dlm", "auto_map": {"AutoModel": "m.M"}}))
    write_tokenizer(custom, ["[MASK]", "<unk>"], mask_token="[MASK]")
    marker = write_decoy(custom, "m.py")
    with pytest.raises(ModelLoadError, match="trust_remote_code"):
        load_published(str(custom))
    assert not marker.exists() and not list(odd.glob("EXECUTED-*"))

    # A Hub repo that is not on the allow-list: its code is not even downloaded, and it is refused.
    fetched = {}

    def fake_snapshot(repo, allow_patterns, local_files_only=False):
        fetched[repo] = allow_patterns
        return str(odd)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    with pytest.raises(ModelLoadError, match="not for repository 'someone/LLaDA-8B-Instruct-copy'"):
        load_published("someone/LLaDA-8B-Instruct-copy")
    assert "*.py" not in fetched["someone/LLaDA-8B-Instruct-copy"]
    assert not any(p.endswith((".bin", ".pt", ".pth", ".ckpt")) for p in fetched["someone/LLaDA-8B-Instruct-copy"])


def test_remote_code_runs_only_for_allow_listed_repos(tmp_path, monkeypatch):
    odd = tmp_path / "llada-sequential"
    write_llada(odd, {**LLADA_CONFIG, "block_type": "sequential"})
    fetched, calls = {}, []

    def fake_snapshot(repo, allow_patterns, local_files_only=False):
        fetched[repo] = allow_patterns
        return str(odd)

    def fake_auto_model(path, **kwargs):
        calls.append(kwargs)
        raise RuntimeError("stop here")

    import huggingface_hub
    import transformers

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fake_auto_model)
    with pytest.raises(ModelLoadError, match="remote code"):
        load_published("llada-8b-instruct")
    assert "*.py" in fetched["GSAI-ML/LLaDA-8B-Instruct"]
    assert calls == [{"trust_remote_code": True, "use_safetensors": True, "dtype": torch.float32}]
    assert hub.remote_code_allowed("GSAI-ML/LLaDA-8B-Base") and not hub.remote_code_allowed(None)


def test_a_published_folder_named_like_a_shipped_model_is_named_by_its_path(sdar_dir, tmp_path):
    """A published-architecture folder called python-bd must not take python-bd's shipped drafters, its cached
    cost curve or its name (as a spotviz folder of that name does not: registry.load_target)."""
    import shutil

    from spotviz.drafter.store import uses_fallback
    from spotviz.registry import load_target
    from spotviz.samplers.forward_cost import cacheable

    folder = tmp_path / "python-bd"
    shutil.copytree(sdar_dir, folder)
    target = load_target(str(folder), device="cpu")
    assert target.info.name == str(folder.resolve()) and uses_fallback(target.info.name) and not cacheable(target)
    assert load_published(str(sdar_dir), device="cpu").info.name == "tiny-sdar"  # (any other name is kept)


def test_a_block_size_the_context_cannot_hold_is_refused_when_loading(sdar_dir):
    from spotviz.targets.base import ModelLoadError

    with pytest.raises(ModelLoadError, match="block size 65 leaves too little of its context of 128 tokens"):
        load_published(str(sdar_dir), device="cpu", block_size=65)

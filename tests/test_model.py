"""The embedded model: HF round trip, bf16 weights, attention kinds, the exact prefix cache, loading errors."""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from transformers import AutoConfig, AutoModelForMaskedLM

from spotviz.embedded.modeling import SpotDLMConfig, SpotDLMForMaskedLM
from spotviz.registry import ModelLoadError, load_embedded, load_target
from spotviz.training.target import export_model


def random_states(target, n: int, length: int, seed: int = 0) -> torch.Tensor:
    """n rows of random ordinary tokens (no special ids), the same on positions [0, 32), MASK on [36, length)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(3, target.info.vocab_size, (n, length), generator=g)
    x[:, :32] = x[0, :32].clone()
    x[:, 36:] = target.info.mask_id
    return x


# ---------------------------------------------------------------------------------------- HF format
@pytest.mark.parametrize("attention", ["block", "full"])
def test_save_and_auto_load_round_trip(attention, tiny_targets, tmp_path):
    model = tiny_targets[attention].model
    model.save_pretrained(str(tmp_path), safe_serialization=True)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["model_type"] == "spotviz-dlm" and "auto_map" not in cfg  # loads without remote code
    assert AutoConfig.from_pretrained(str(tmp_path)).attention == attention
    loaded = AutoModelForMaskedLM.from_pretrained(str(tmp_path), use_safetensors=True, dtype=torch.float32).eval()
    assert isinstance(loaded, SpotDLMForMaskedLM)
    x = random_states(tiny_targets[attention], 2, 48)
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    assert loaded.lm_head.weight.data_ptr() == loaded.embed.weight.data_ptr()  # tied


def test_bfloat16_weights_load_as_float32(tiny_block_target, tiny_block_dir, tmp_path):
    model, tok = tiny_block_target.model, tiny_block_target.tokenizer
    export_model(model, tok, tmp_path / "bf16", "bfloat16")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "bf16" / "model.safetensors"), framework="pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.bfloat16}
    loaded = load_embedded(tmp_path / "bf16", device="cpu")
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}
    # the same as the float32 model with every weight rounded to bf16
    ref = SpotDLMForMaskedLM(model.config).eval()
    ref.load_state_dict({k: v.to(torch.bfloat16).float() for k, v in model.state_dict().items()})
    x = random_states(tiny_block_target, 2, 48)
    with torch.no_grad():
        assert torch.equal(loaded.model(x), ref(x))
        assert not torch.equal(loaded.model(x), model(x))  # the rounding did happen


def test_config_rejects_unknown_attention():
    with pytest.raises(ValueError, match="attention"):
        SpotDLMConfig(attention="sparse")


# ------------------------------------------------------------------------------------- attention kinds
@pytest.mark.parametrize("attention", ["block", "full"])
def test_later_blocks_influence(attention, tiny_targets):
    target = tiny_targets[attention]
    x = random_states(target, 1, 48, seed=1)
    y = x.clone()
    y[0, 32:48] = torch.randint(3, target.info.vocab_size, (16,), generator=torch.Generator().manual_seed(5))
    a = target.forward(x, 0, 48, target.empty_cache()).logits
    b = target.forward(y, 0, 48, target.empty_cache()).logits
    if attention == "block":  # blocks 0 and 1 never see block 2
        assert torch.allclose(a[:, :32], b[:, :32], atol=1e-6, rtol=0)
    else:  # full attention: every position sees the change
        assert (a[:, :32] - b[:, :32]).abs().amax(-1).min() > 1e-5
    assert (a[:, 32:] - b[:, 32:]).abs().max() > 1e-3


def test_block_attention_is_bidirectional_inside_a_block(tiny_block_target):
    x = random_states(tiny_block_target, 1, 48, seed=2)
    y = x.clone()
    y[0, 31] = (x[0, 31] + 1 - 3) % (tiny_block_target.info.vocab_size - 3) + 3  # last position of block 1
    a = tiny_block_target.forward(x, 16, 32, tiny_block_target.empty_cache()).logits
    b = tiny_block_target.forward(y, 16, 32, tiny_block_target.empty_cache()).logits
    assert (a[0, 0] - b[0, 0]).abs().max() > 1e-5  # the block's first position sees its last one


# --------------------------------------------------------------------------------------- prefix cache
def test_cached_forward_equals_recompute(tiny_block_target):
    t = tiny_block_target
    x = random_states(t, 1, 48, seed=3)
    empty = t.empty_cache()
    full = t.forward(x, 32, 48, empty).logits  # recompute the whole prefix
    # cache built block by block
    o0 = t.forward(x, 0, 16, empty)
    c16 = t.extend_cache(empty, o0, 0, 16)
    o1 = t.forward(x, 16, 32, c16)
    c32 = t.extend_cache(c16, o1, 0, 32)
    assert c32.length == 32 and c16.length == 16
    stepwise = t.forward(x, 32, 48, c32).logits
    # cache built in one go, and the fused pass (cache one block behind the window)
    c32b = t.extend_cache(empty, t.forward(x, 0, 32, empty), 0, 32)
    one_go = t.forward(x, 32, 48, c32b).logits
    fused = t.forward(x, 32, 48, c16).logits
    for other in (stepwise, one_go, fused):
        assert torch.allclose(full, other, atol=1e-5, rtol=0)
    # and the same as the raw model under a block-causal mask
    from spotviz.embedded.modeling import block_causal_mask

    pos = torch.arange(48)
    with torch.no_grad():
        raw = t.model(x, attention_mask=block_causal_mask(pos, pos, 16).view(1, 1, 48, 48))[:, 32:48]
    assert torch.allclose(full, raw, atol=1e-5, rtol=0)


def test_a_call_over_two_windows_gives_each_window_the_numbers_of_its_own_call(tiny_block_target):
    """The block forward computes a call's last block apart, so a window's logits do not depend on how far a call
    reaches: the first window of a call over two equals a call over it alone, and the second equals a call over it
    with the first one cached (from a call whose second window was all masked, as the standard decoder fills its
    cache). Bit for bit for one row (the same computations by construction); for a batch of rows too wherever the
    load-time probe found batched passes bit-identical (it probes batches of 3)."""
    t = tiny_block_target
    assert t.info.blockwise_exact
    x = random_states(t, 3, 64, seed=7)
    x[:, 40:] = t.info.mask_id
    x[:, 17:32:3] = t.info.mask_id  # the first window still has masks
    x[:, :16] = x[0, :16]  # the rows share the cached prefix
    cache = t.extend_cache(t.empty_cache(), t.forward(x[:1], 0, 16, t.empty_cache()), 0, 16)
    first = x.clone()
    first[:, 32:48] = t.info.mask_id
    batched = t.forward(x, 16, 48, cache).logits
    for r in range(len(x)):
        wide = t.forward(x[r:r + 1], 16, 48, cache).logits[0]
        assert torch.equal(wide[:16], t.forward(x[r:r + 1], 16, 32, cache).logits[0])
        cached = t.extend_cache(cache, t.forward(first[r:r + 1], 16, 48, cache), 0, 32)
        assert torch.equal(wide[16:], t.forward(x[r:r + 1], 32, 48, cached).logits[0])
        if t.info.batch_invariant:
            assert torch.equal(batched[r], wide)
        else:
            assert torch.allclose(batched[r], wide, atol=1e-5, rtol=0)


def test_cache_cannot_serve_a_window_it_does_not_precede(tiny_block_target):
    t = tiny_block_target
    x = random_states(t, 1, 48)
    c32 = t.extend_cache(t.empty_cache(), t.forward(x, 0, 32, t.empty_cache()), 0, 32)
    with pytest.raises(ValueError, match="cache"):
        t.forward(x, 16, 32, c32)


@pytest.mark.parametrize("attention", ["block", "full"])
def test_batched_forward_equals_rows_and_leaves_the_cache_alone(attention, tiny_targets):
    t = tiny_targets[attention]
    x = random_states(t, 6, 48, seed=4)
    x[2] = x[1]  # duplicate rows too
    cache = t.empty_cache()
    if attention == "block":
        cache = t.extend_cache(cache, t.forward(x[:1], 0, 32, cache), 0, 32)
    before = [(k.clone(), v.clone()) for k, v in cache.kv] if cache.kv else None
    batched = t.forward(x, 32, 48, cache)
    assert batched.logits.shape == (6, 16, t.info.vocab_size)
    assert batched.logits.dtype == torch.float32
    for r in range(6):
        row = t.forward(x[r : r + 1], 32, 48, cache).logits[0]
        assert torch.equal(batched.logits[r], row), f"row {r} differs from the batched forward"
    assert torch.equal(batched.logits[1], batched.logits[2])
    if before is not None:
        assert cache.length == 32
        for (k, v), (k0, v0) in zip(cache.kv, before):
            assert k.shape[0] == 1 and k.shape[2] == 32
            assert torch.equal(k, k0) and torch.equal(v, v0)
        # extending from one row of the batch does not touch the old cache either
        c48 = t.extend_cache(cache, batched, 3, 48)
        assert c48.length == 48 and cache.length == 32
        for (k, v), (k0, v0) in zip(cache.kv, before):
            assert torch.equal(k, k0) and torch.equal(v, v0)


# ---------------------------------------------------------------------------------------- loading errors
@pytest.fixture
def model_copy(tiny_block_dir, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(tiny_block_dir, dst)
    return dst


def test_load_target_accepts_a_local_folder(model_copy):
    t = load_target(str(model_copy), device="cpu")
    assert t.info.attention == "block" and t.info.name == "copy"


@pytest.mark.parametrize("garbage", [None, b"", b"\x00" * 7, b"not a safetensors file at all" * 100,
                                     b"\xff" * 8 + b"{}"], ids=["truncated", "empty", "zeros", "text", "no-header"])
def test_unreadable_weights(model_copy, garbage):
    """The embedded loader's checks (the front ends' messages for the same files: test_robustness.py's table)."""
    w = model_copy / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2] if garbage is None else garbage)
    with pytest.raises(ModelLoadError, match="corrupt"):
        load_embedded(model_copy)
    with pytest.raises(ModelLoadError, match="corrupt"):
        load_target(str(model_copy))


def test_missing_weights(model_copy):
    (model_copy / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="missing"):
        load_embedded(model_copy)
    with pytest.raises(ModelLoadError, match="missing"):
        load_target(str(model_copy))


def test_bad_config_json(model_copy):
    (model_copy / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="config.json"):
        load_embedded(model_copy)


def test_not_a_spotviz_model(model_copy):
    cfg = json.loads((model_copy / "config.json").read_text())
    cfg["model_type"] = "bert"
    (model_copy / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="not a spotviz model"):
        load_embedded(model_copy)


@pytest.mark.parametrize("name, match", [("no-such-model", "unknown model"), ("   ", "empty"),
                                         ("/no/such/folder", "model folder '/no/such/folder' does not exist")])
def test_unknown_model_name(name, match):
    with pytest.raises(ModelLoadError, match=match):
        load_target(name)

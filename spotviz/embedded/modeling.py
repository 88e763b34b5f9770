"""The embedded masked-diffusion language model, in Hugging Face format.

One architecture, two attention kinds:
- ``attention="block"``: block diffusion (SDAR / BD3-LM style). Attention is bidirectional inside a block of
  ``block_size`` positions and causal across blocks, so a finished block's keys/values never change and are
  cached exactly.
- ``attention="full"``: full bidirectional attention (LLaDA / MDLM style), decoded semi-autoregressively.

Pre-norm transformer with rotary position embeddings (RoPE), RMSNorm and a SwiGLU MLP; output embedding tied
to the input embedding. Registered with the transformers Auto classes, so ``AutoModelForMaskedLM.from_pretrained``
loads a saved folder without remote code.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModelForMaskedLM, PretrainedConfig, PreTrainedModel

KV = tuple[torch.Tensor, torch.Tensor]  # (keys, values), each [batch, heads, length, head_dim]


class SpotDLMConfig(PretrainedConfig):
    model_type = "spotviz-dlm"

    def __init__(
        self,
        vocab_size: int = 1024,
        hidden_size: int = 256,
        num_hidden_layers: int = 6,
        num_attention_heads: int = 8,
        intermediate_size: int = 704,
        max_position_embeddings: int = 256,
        rope_theta: float = 10000.0,
        rms_norm_eps: float = 1e-5,
        attention: str = "block",
        block_size: int = 16,
        mask_token_id: int = 1,
        eos_token_id: int = 0,
        pad_token_id: int = 2,
        tie_word_embeddings: bool = True,
        **kwargs,
    ):
        if attention not in ("block", "full"):
            raise ValueError(f"attention must be 'block' or 'full', got {attention!r}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.max_position_embeddings = max_position_embeddings
        self.rope_theta = rope_theta
        self.rms_norm_eps = rms_norm_eps
        self.attention = attention
        self.block_size = block_size
        self.mask_token_id = mask_token_id
        super().__init__(
            eos_token_id=eos_token_id, pad_token_id=pad_token_id, tie_word_embeddings=tie_word_embeddings, **kwargs
        )


def block_causal_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, block_size: int) -> torch.Tensor:
    """Boolean mask [..., q, k]: True where query may attend key (key block <= query block)."""
    return (k_pos.unsqueeze(-2) // block_size) <= (q_pos.unsqueeze(-1) // block_size)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Attention(nn.Module):
    def __init__(self, cfg: SpotDLMConfig):
        super().__init__()
        self.n_head = cfg.num_attention_heads
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size, bias=False)
        self.o_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, past: KV | None):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        present = (k, v)
        if past is not None:
            pk, pv = past
            k = torch.cat([pk.expand(b, -1, -1, -1), k], dim=2)
            v = torch.cat([pv.expand(b, -1, -1, -1), v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1)), present


class MLP(nn.Module):
    def __init__(self, cfg: SpotDLMConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        g, u = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(g) * u)


class Layer(nn.Module):
    def __init__(self, cfg: SpotDLMConfig):
        super().__init__()
        self.ln1 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attn = Attention(cfg)
        self.ln2 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask, past):
        a, present = self.attn(self.ln1(x), cos, sin, mask, past)
        x = x + a
        return x + self.mlp(self.ln2(x)), present


class SpotDLMForMaskedLM(PreTrainedModel):
    """Masked-diffusion LM: predicts the clean token at every position from a partially masked sequence."""

    config_class = SpotDLMConfig
    base_model_prefix = "spotdlm"
    _tied_weights_keys = {"lm_head.weight": "embed.weight"}

    def __init__(self, config: SpotDLMConfig):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        hd = config.hidden_size // config.num_attention_heads
        inv = 1.0 / (config.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.post_init()

    def _init_weights(self, module):
        std = 0.02
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            if getattr(module, "_is_residual", False):
                module.weight.data.mul_(1 / math.sqrt(2 * self.config.num_hidden_layers))
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, RMSNorm):
            nn.init.ones_(module.weight)
        elif module is self:
            hd = self.config.hidden_size // self.config.num_attention_heads
            inv = 1.0 / (self.config.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            self.inv_freq.copy_(inv.to(self.inv_freq.device))

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.lm_head

    def rope(self, position_ids: torch.Tensor):
        freqs = position_ids.to(torch.float32).unsqueeze(-1) * self.inv_freq.to(position_ids.device)
        emb = torch.cat([freqs, freqs], dim=-1)
        dt = self.embed.weight.dtype
        return emb.cos().to(dt).unsqueeze(-3), emb.sin().to(dt).unsqueeze(-3)  # [b or 1, 1, t, hd]

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: list[KV] | None = None,
        return_present: bool = False,
        **_,
    ):
        """Logits [b, t, vocab] for `input_ids` [b, t].

        attention_mask: boolean [b or 1, 1, t, past+t] (True = may attend), or None for full attention.
        past_key_values: per-layer (k, v) of a shared prefix ([1, heads, past, head_dim]); never modified.
        return_present: also return the per-layer (k, v) of `input_ids` (for extending a cache).
        """
        b, t = input_ids.shape
        if position_ids is None:
            past = past_key_values[0][0].shape[2] if past_key_values else 0
            position_ids = torch.arange(past, past + t, device=input_ids.device).unsqueeze(0)
        cos, sin = self.rope(position_ids)
        x = self.embed(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, present = layer(x, cos, sin, attention_mask, past_key_values[i] if past_key_values else None)
            presents.append(present)
        logits = self.lm_head(self.norm(x))
        return (logits, presents) if return_present else logits

    def mark_residual_projections(self):
        for layer in self.layers:
            layer.attn.o_proj._is_residual = True
            layer.mlp.down._is_residual = True


AutoConfig.register(SpotDLMConfig.model_type, SpotDLMConfig)
AutoModelForMaskedLM.register(SpotDLMConfig, SpotDLMForMaskedLM)

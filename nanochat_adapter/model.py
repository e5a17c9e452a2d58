"""nanochat's GPT for inference, all generations, with padding masks and a KV cache.

Module and parameter names follow nanochat's state dict, so a checkpoint loads with
``load_state_dict(strict=True)``. Compared with upstream's forward pass this one adds:

* ``valid`` masks, so rows of a batch can be left-padded (positions for rotary embeddings
  count only real tokens; pad keys are never attended; smear never reads a pad);
* a :class:`KVCache` with per-row positions, used for batched prefill + decode.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architectures import SMEAR_CHANNELS, Generation, has_value_embed


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    """Parameter-free RMS norm over the last dimension (nanochat's ``norm``)."""
    return F.rms_norm(x, (x.size(-1),))


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """nanochat's rotary embedding on ``(B, T, H, D)``: halves rotated, cos/sin ``(B, T, 1, D/2)``."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos + x2 * sin, x2 * cos - x1 * sin], dim=-1)


class KVCache:
    """Keys/values of all layers for a batch, with each slot's validity and position.

    All rows share the slot index (so a left-padded batch stays aligned); each row keeps its
    own position counter, so a row's first real token has position 0 whatever its padding.
    """

    def __init__(self, n_layer: int, batch: int, n_kv_head: int, head_dim: int, capacity: int,
                 dtype: torch.dtype, device):
        shape = (n_layer, batch, n_kv_head, capacity, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.valid = torch.zeros(batch, capacity, dtype=torch.bool, device=device)
        self.positions = torch.zeros(batch, capacity, dtype=torch.long, device=device)
        self.length = 0  # filled slots
        self.next_position = torch.zeros(batch, dtype=torch.long, device=device)
        self.prev_embedding: torch.Tensor | None = None  # (B, 1, C), for smear
        self.prev_valid: torch.Tensor | None = None  # (B, 1)

    @property
    def capacity(self) -> int:
        return self.k.shape[3]

    @classmethod
    def concat(cls, caches: list["KVCache"]) -> "KVCache":
        """One cache holding the rows of ``caches`` in order (all filled to the same length)."""
        if len({c.length for c in caches}) != 1:
            raise ValueError("caches to join must hold the same number of slots")
        joined = cls.__new__(cls)
        joined.k = torch.cat([c.k for c in caches], dim=1)
        joined.v = torch.cat([c.v for c in caches], dim=1)
        joined.valid = torch.cat([c.valid for c in caches])
        joined.positions = torch.cat([c.positions for c in caches])
        joined.length = caches[0].length
        joined.next_position = torch.cat([c.next_position for c in caches])
        smear = caches[0].prev_embedding is not None
        joined.prev_embedding = torch.cat([c.prev_embedding for c in caches]) if smear else None
        joined.prev_valid = torch.cat([c.prev_valid for c in caches]) if smear else None
        return joined

    def reslot(self, drop: int = 0, pad: int = 0, capacity: int | None = None) -> None:
        """Move the filled slots: drop the first ``drop``, put ``pad`` empty slots before the rest,
        and hold ``capacity`` slots in all (for continuous batching: make room at either end)."""
        keep = self.length - drop
        capacity = self.capacity if capacity is None else capacity
        if not 0 <= drop <= self.length or pad < 0 or pad + keep > capacity:
            raise ValueError(f"cannot reslot {self.length} slots: drop {drop}, pad {pad}, capacity {capacity}")

        def moved(t: torch.Tensor, dim: int) -> torch.Tensor:
            shape = list(t.shape)
            shape[dim] = capacity
            new = t.new_zeros(shape)
            new.narrow(dim, pad, keep).copy_(t.narrow(dim, drop, keep))
            return new

        self.k, self.v = moved(self.k, 3), moved(self.v, 3)
        self.valid, self.positions = moved(self.valid, 1), moved(self.positions, 1)
        self.length = pad + keep

    def put_rows(self, rows: torch.Tensor, other: "KVCache") -> None:
        """Replace ``rows`` by the rows of ``other`` (a prefilled cache no longer than this one),
        right-aligned to this cache's filled length; the rest of those rows becomes padding."""
        width, end = other.length, self.length
        if width > end:
            raise ValueError(f"rows of {width} slots do not fit before slot {end}")
        self.k[:, rows, :, end - width:end] = other.k[:, :, :, :width]
        self.v[:, rows, :, end - width:end] = other.v[:, :, :, :width]
        self.valid[rows] = False
        self.valid[rows, end - width:end] = other.valid[:, :width]
        self.positions[rows, end - width:end] = other.positions[:, :width]
        self.next_position[rows] = other.next_position
        if other.prev_embedding is not None:
            if self.prev_embedding is None:
                batch = self.valid.shape[0]
                self.prev_embedding = other.prev_embedding.new_zeros((batch,) + other.prev_embedding.shape[1:])
                self.prev_valid = other.prev_valid.new_zeros((batch,) + other.prev_valid.shape[1:])
            self.prev_embedding[rows] = other.prev_embedding
            self.prev_valid[rows] = other.prev_valid

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (a LongTensor of row indices), e.g. to drop finished sequences."""
        self.k, self.v = self.k[:, rows], self.v[:, rows]
        self.valid, self.positions = self.valid[rows], self.positions[rows]
        self.next_position = self.next_position[rows]
        if self.prev_embedding is not None:
            self.prev_embedding, self.prev_valid = self.prev_embedding[rows], self.prev_valid[rows]


class CausalSelfAttention(nn.Module):
    def __init__(self, config: dict, generation: Generation, layer: int, with_value_embeds: bool):
        super().__init__()
        n_embd, self.n_head, self.n_kv_head = config["n_embd"], config["n_head"], config["n_kv_head"]
        self.head_dim = n_embd // self.n_head
        self.layer = layer
        self.qk_scale = generation.qk_scale
        self.c_q = nn.Linear(n_embd, self.n_head * self.head_dim, bias=False)
        self.c_k = nn.Linear(n_embd, self.n_kv_head * self.head_dim, bias=False)
        self.c_v = nn.Linear(n_embd, self.n_kv_head * self.head_dim, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        channels = generation.value_embed_gate_channels
        if channels and with_value_embeds and has_value_embed(layer, config["n_layer"]):
            self.ve_gate = nn.Linear(channels, self.n_kv_head, bias=False)
            self.ve_gate_channels, self.ve_gate_range = channels, generation.value_embed_gate_range
        else:
            self.ve_gate = None

    def forward(self, x, value_embed, cos, sin, mask, cache: KVCache | None):
        B, T, _ = x.shape
        q = self.c_q(x).view(B, T, self.n_head, self.head_dim)
        k = self.c_k(x).view(B, T, self.n_kv_head, self.head_dim)
        v = self.c_v(x).view(B, T, self.n_kv_head, self.head_dim)
        if self.ve_gate is not None:
            gate = self.ve_gate_range * torch.sigmoid(self.ve_gate(x[..., :self.ve_gate_channels]))
            v = v + gate.unsqueeze(-1) * value_embed.view(B, T, self.n_kv_head, self.head_dim)
        q, k = rms_norm(apply_rotary(q, cos, sin)), rms_norm(apply_rotary(k, cos, sin))
        if self.qk_scale != 1.0:
            q, k = q * self.qk_scale, k * self.qk_scale
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, D)
        if cache is not None:
            start = cache.length
            cache.k[self.layer, :, :, start:start + T] = k
            cache.v[self.layer, :, :, start:start + T] = v
            k = cache.k[self.layer, :, :, :start + T]
            v = cache.v[self.layer, :, :, :start + T]
        if self.n_kv_head != self.n_head:
            repeat = self.n_head // self.n_kv_head
            k = k.repeat_interleave(repeat, dim=1)
            v = v.repeat_interleave(repeat, dim=1)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, n_embd: int):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=False)

    def forward(self, x):
        hidden = self.c_fc(x)
        if torch.is_grad_enabled():  # training: autograd needs the out-of-place ops
            return self.c_proj(F.relu(hidden).square())
        # inference: relu² in place (the largest activation, half the memory traffic)
        return self.c_proj(hidden.relu_().square_())


class Block(nn.Module):
    def __init__(self, config, generation, layer, with_value_embeds):
        super().__init__()
        self.attn = CausalSelfAttention(config, generation, layer, with_value_embeds)
        self.mlp = MLP(config["n_embd"])

    def forward(self, x, value_embed, cos, sin, mask, cache):
        x = x + self.attn(rms_norm(x), value_embed, cos, sin, mask, cache)
        return x + self.mlp(rms_norm(x))


class NanoChatGPT(nn.Module):
    """nanochat's GPT (any :class:`Generation`) for inference.

    ``forward(idx, valid=None, cache=None, num_logits=None)`` returns fp32 logits
    ``(B, T, vocab_size)`` (softcapped, padding rows of the vocab cropped).
    """

    def __init__(self, config: dict, generation: Generation, *, vocab_rows: int | None = None,
                 with_value_embeds: bool = True, softcap: float | None = None):
        super().__init__()
        self.config = dict(config)
        self.generation = generation
        self.vocab_size = config["vocab_size"]
        self.softcap = generation.softcap if softcap is None else softcap
        n_layer, n_embd = config["n_layer"], config["n_embd"]
        self.head_dim = n_embd // config["n_head"]
        rows = vocab_rows or self.vocab_size
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(rows, n_embd),
            "h": nn.ModuleList(Block(config, generation, i, with_value_embeds) for i in range(n_layer)),
        })
        self.lm_head = nn.Linear(n_embd, rows, bias=False)
        if generation.has_lambdas:
            self.resid_lambdas = nn.Parameter(torch.ones(n_layer))
            self.x0_lambdas = nn.Parameter(torch.zeros(n_layer))
        kv_dim = config["n_kv_head"] * self.head_dim
        self.value_embeds = nn.ModuleDict({
            str(i): nn.Embedding(rows, kv_dim) for i in range(n_layer)
            if generation.value_embed_gate_channels and with_value_embeds and has_value_embed(i, n_layer)})
        if generation.has_smear_backout:
            self.smear_gate = nn.Linear(SMEAR_CHANNELS, 1, bias=False)
            self.smear_lambda = nn.Parameter(torch.zeros(1))
            self.backout_lambda = nn.Parameter(torch.zeros(1))
        self.window_sizes = generation.window_sizes(config)
        half = torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim
        self.register_buffer("inv_freq", 1.0 / (generation.rotary_base ** half), persistent=False)

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def new_cache(self, batch: int, capacity: int) -> KVCache:
        """An empty :class:`KVCache` for ``batch`` rows and ``capacity`` tokens."""
        return KVCache(self.config["n_layer"], batch, self.config["n_kv_head"], self.head_dim,
                       capacity, self.dtype, self.device)

    def _rotary(self, positions: torch.Tensor):
        angles = positions.to(torch.float32).unsqueeze(-1) * self.inv_freq  # (B, T, D/2)
        cos, sin = angles.cos().to(self.dtype), angles.sin().to(self.dtype)
        return cos.unsqueeze(2), sin.unsqueeze(2)

    def _masks(self, q_pos, q_slot, k_pos, k_slot, k_valid):
        """Boolean attention masks ``(B, 1, Tq, Tk)`` per distinct window size."""
        base = (k_slot[None, None, :] <= q_slot[None, :, None]) & k_valid[:, None, :]
        distance = q_pos[:, :, None] - k_pos[:, None, :]
        own = q_slot[None, :, None] == k_slot[None, None, :]  # pad queries see themselves: no NaN
        masks = {}
        for window in set(self.window_sizes):
            m = base if window is None else base & (distance <= window)
            masks[window] = (m | own).unsqueeze(1)
        return masks

    def forward(self, idx: torch.Tensor, valid: torch.Tensor | None = None,
                cache: KVCache | None = None, num_logits: int | None = None,
                greedy: bool = False) -> torch.Tensor:
        """Logits for ``idx`` (``valid`` marks real tokens; ``num_logits``: only the last n).

        ``greedy=True`` returns the argmax token ids ``(B, T)`` instead, the same as
        ``forward(...).argmax(-1)`` without softcapping the whole vocabulary.
        """
        B, T = idx.shape
        device = idx.device
        if valid is None:
            valid = torch.ones(B, T, dtype=torch.bool, device=device)
        start_position = cache.next_position if cache is not None else torch.zeros(B, dtype=torch.long, device=device)
        positions = start_position[:, None] + (valid.long().cumsum(1) - 1).clamp(min=0)

        x = rms_norm(self.transformer.wte(idx).to(self.dtype))
        if self.generation.has_smear_backout:
            x = self._smear(x, valid, cache)

        # attention masks: none needed for an unpadded, cache-free, window-free causal pass
        need_mask = cache is not None or not bool(valid.all()) or any(
            w is not None and w < T - 1 for w in self.window_sizes)
        masks = None
        if cache is not None:
            start = cache.length
            if start + T > cache.capacity:
                raise ValueError(f"KV cache full: {start}+{T} > {cache.capacity}")
            cache.valid[:, start:start + T] = valid
            cache.positions[:, start:start + T] = positions
            slots = torch.arange(start + T, device=device)
            masks = self._masks(positions, slots[start:], cache.positions[:, :start + T], slots,
                                cache.valid[:, :start + T])
        elif need_mask:
            slots = torch.arange(T, device=device)
            masks = self._masks(positions, slots, positions, slots, valid)

        cos, sin = self._rotary(positions)
        x0 = x
        n_layer = self.config["n_layer"]
        x_backout = None
        for i, block in enumerate(self.transformer.h):
            if self.generation.has_lambdas:
                x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
            key = str(i)
            value_embed = self.value_embeds[key](idx).to(x.dtype) if key in self.value_embeds else None
            mask = masks[self.window_sizes[i]] if masks is not None else None
            x = block(x, value_embed, cos, sin, mask, cache)
            if self.generation.has_smear_backout and i == n_layer // 2:
                x_backout = x
        if x_backout is not None:
            x = x - self.backout_lambda * x_backout
        if cache is not None:
            cache.length += T
            cache.next_position = cache.next_position + valid.long().sum(1)
        if num_logits is not None:
            x = x[:, -num_logits:]
        logits = self.lm_head(rms_norm(x))[..., :self.vocab_size].float()
        if greedy:
            return self._softcapped_argmax(logits)
        return self.softcap * torch.tanh(logits / self.softcap)

    def _softcapped_argmax(self, logits: torch.Tensor, k: int = 8) -> torch.Tensor:
        """``argmax(softcap(logits))`` (first index among equal values), softcapping the top k only.

        The softcap is monotone, so the winner is among the largest raw logits; it can only tie
        with others after capping (tanh saturates). Where the k-th largest stays strictly below
        the capped maximum nothing outside the top k can tie; other rows take the full path.
        """
        flat = logits.reshape(-1, logits.shape[-1])
        values, indices = flat.topk(min(k, flat.shape[-1]), dim=-1)
        capped = self.softcap * torch.tanh(values / self.softcap)
        top = capped[:, :1]
        best = torch.where(capped == top, indices, flat.shape[-1]).amin(-1)
        unsure = ~(capped[:, -1] < top[:, 0])
        if values.shape[-1] < flat.shape[-1] and bool(unsure.any()):
            best[unsure] = (self.softcap * torch.tanh(flat[unsure] / self.softcap)).argmax(-1)
        return best.reshape(logits.shape[:-1])

    def _smear(self, x, valid, cache):
        """Mix each token's embedding with the previous real token's (nanochat's smear)."""
        if cache is not None:
            prev, prev_valid = cache.prev_embedding, cache.prev_valid
            last = x[:, -1:]
            cache.prev_embedding, cache.prev_valid = last, valid[:, -1:]
        else:
            prev, prev_valid = None, None
        if prev is None:
            prev = torch.zeros_like(x[:, :1])
            prev_valid = torch.zeros_like(valid[:, :1])
        shifted = torch.cat([prev, x[:, :-1]], dim=1)
        shifted_valid = torch.cat([prev_valid, valid[:, :-1]], dim=1) & valid
        gate = self.smear_lambda * torch.sigmoid(self.smear_gate(x[..., :SMEAR_CHANNELS]))
        return x + (gate * shifted) * shifted_valid.unsqueeze(-1).to(x.dtype)

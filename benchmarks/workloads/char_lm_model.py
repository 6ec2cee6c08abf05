"""What the char_lm workloads (char_lm_step, char_lm_generate) share: examples/char_lm.py's
model (`nn.CausalTransformer`: vocabulary 60, context 128, 4 pre-norm blocks 128 wide with
4 heads and a GELU MLP of 512, learned positions, the LM head tied to the token table),
fixed random weights for both frameworks, and the same model written for PyTorch with a
preallocated key/value cache. Frameworks are imported only when a step is built.
"""

import numpy as np

VOCAB, CONTEXT, WIDTH, HEADS, LAYERS = 60, 128, 128, 4, 4
FF = 4 * WIDTH


def weights(std: float) -> dict:
    """The model's state dict as float32 arrays: N(0, std²) matrices and embeddings (seed
    0), LayerNorms at one and zero, biases N(0, std²). `lm_head.weight` is the token table
    itself (tied), listed under both names as a state dict lists it."""
    rng = np.random.default_rng(0)

    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    state = {"tok_emb.weight": normal(VOCAB, WIDTH), "pos_emb.weight": normal(CONTEXT, WIDTH)}
    for i in range(LAYERS):
        block = f"blocks.{i}"
        for norm in ("norm1", "norm2"):
            state[f"{block}.{norm}.weight"] = np.ones(WIDTH, np.float32)
            state[f"{block}.{norm}.bias"] = np.zeros(WIDTH, np.float32)
        for name, (out, inp) in (("attn.qkv", (3 * WIDTH, WIDTH)), ("attn.proj", (WIDTH, WIDTH)),
                                 ("fc1", (FF, WIDTH)), ("fc2", (WIDTH, FF))):
            state[f"{block}.{name}.weight"] = normal(out, inp)
            state[f"{block}.{name}.bias"] = normal(out)
    state["norm.weight"], state["norm.bias"] = np.ones(WIDTH, np.float32), np.zeros(WIDTH,
                                                                                    np.float32)
    state["lm_head.weight"] = state["tok_emb.weight"]
    return state


def dlfree_model(std: float):
    """dl.free's nn.CausalTransformer (no dropout) holding `weights(std)`."""
    import dlfree as dl
    from dlfree import nn

    model = nn.CausalTransformer(VOCAB, max_len=CONTEXT, d_model=WIDTH, n_heads=HEADS,
                                 n_layers=LAYERS, d_ff=FF)
    model.load_state_dict({k: dl.tensor(v) for k, v in weights(std).items()})
    return model


def torch_model(std: float):
    """The same model in plain PyTorch (torch.nn layers, F.scaled_dot_product_attention,
    a cache of preallocated per-layer key/value buffers), holding `weights(std)`."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
            self.proj = nn.Linear(WIDTH, WIDTH)

        def forward(self, x, cache, layer, start):
            batch, length, _ = x.shape
            q, k, v = self.qkv(x).view(batch, length, 3, HEADS, -1).permute(2, 0, 3, 1, 4)
            if cache is not None:
                keys, values = cache.setdefault(layer, (
                    x.new_empty(batch, HEADS, CONTEXT, WIDTH // HEADS),
                    x.new_empty(batch, HEADS, CONTEXT, WIDTH // HEADS)))
                keys[:, :, start:start + length] = k
                values[:, :, start:start + length] = v
                k, v = keys[:, :, :start + length], values[:, :, :start + length]
            out = F.scaled_dot_product_attention(q, k, v, is_causal=start == 0)
            return self.proj(out.transpose(1, 2).reshape(batch, length, WIDTH))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.attn = Attention()
            self.fc1, self.fc2 = nn.Linear(WIDTH, FF), nn.Linear(FF, WIDTH)

        def forward(self, x, cache, layer, start):
            x = x + self.attn(self.norm1(x), cache, layer, start)
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb, self.pos_emb = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.norm = nn.LayerNorm(WIDTH)
            self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
            self.lm_head.weight = self.tok_emb.weight

        def forward(self, ids, cache=None):
            """Logits for `ids`; with a cache (a dict, filled here) the positions continue
            from what it holds (a single new token attends to all of it unmasked)."""
            start = 0 if cache is None else cache.get("length", 0)
            x = self.tok_emb(ids) + self.pos_emb.weight[start:start + ids.shape[1]]
            for i, block in enumerate(self.blocks):
                x = block(x, cache, i, start)
            if cache is not None:
                cache["length"] = start + ids.shape[1]
            return self.lm_head(self.norm(x))

    model = CausalLM()
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights(std).items()})
    return model

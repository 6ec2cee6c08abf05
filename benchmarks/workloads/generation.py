"""What the generation workloads (gpt_generation, t5_generation) share: each framework loads
the checkpoint folder the workload writes, through the Auto class of its head, and a step
generates greedily from the fixed prompt. Frameworks are imported only when a step is built.
"""

import tempfile


def build_dlfree(auto: str, write_checkpoint, prompt, new_tokens):
    """dl.free's `hf.<auto>.from_pretrained(...)`; `step()` runs `generate` for
    `new_tokens()` tokens (read at each step, so the smoke test can ask for fewer)."""
    import dlfree as dl
    from dlfree import hf

    with tempfile.TemporaryDirectory() as folder:
        model = getattr(hf, auto).from_pretrained(write_checkpoint(folder))
    ids = dl.tensor(prompt)

    def step():
        return model.generate(ids, max_new_tokens=new_tokens())

    return step


def build_transformers(auto: str, write_checkpoint, prompt, new_tokens):
    """transformers' `<auto>.from_pretrained(...)` in eval mode; `step()` runs its greedy
    `generate` (without gradients) with an all-ones attention mask."""
    import torch
    import transformers

    with tempfile.TemporaryDirectory() as folder:
        model = getattr(transformers, auto).from_pretrained(write_checkpoint(folder))
    model.eval()
    ids = torch.from_numpy(prompt)
    mask = torch.ones_like(ids)

    def step():
        return model.generate(ids, attention_mask=mask, max_new_tokens=new_tokens(),
                              do_sample=False)

    return step

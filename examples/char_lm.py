"""Train a character-level GPT from nothing on Shakespeare's sonnets, sample it through its
key/value cache after every epoch, and resume it after Ctrl-C.

The model is `nn.CausalTransformer` (4 pre-norm blocks, 128 wide, 4 heads, learned
positions, the LM head tied to the token table) on the 53 public-domain sonnets that ship
with dl.free (`dlfree.data.datasets.sonnets()`; `--text FILE` trains on another text, such
as tiny-shakespeare's input.txt). The Trainer runs AdamW under a one-cycle schedule and
writes a training checkpoint into RUN_DIR/checkpoints every 50 steps, at each epoch's end
and when Ctrl-C stops it; the same command run again resumes from the newest one, bit for
bit. After each epoch `nn.Sampler` draws a sample one token at a time (softmax of the
logits over a temperature): the prompt passes through the model once, then each new
character attends to the cached keys and values; its own seeded generator leaves the
training's random numbers alone. At the end the
model goes to RUN_DIR/char_lm.safetensors.

    python examples/char_lm.py [--epochs N] [--run-dir DIR] [--text FILE] [--interrupt-at STEP]

`--interrupt-at STEP` presses Ctrl-C itself after that optimizer step (what the tests use);
the smaller settings (`--d-model`, `--chars`, ...) make a quick run.
"""

import argparse
import signal
import time
from pathlib import Path

import dlfree as dl
from dlfree import functional as F
from dlfree import nn, optim
from dlfree.data import DataLoader
from dlfree.data.datasets import CharText, sonnets


def next_token_loss(logits, targets):
    """Cross-entropy of the logits (batch, seq, vocab) against the next characters."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def sample(model, text: CharText, prompt: str, length: int, sampler) -> str:
    """`prompt` and `length` characters drawn after it by `sampler` (an `nn.Sampler`): the
    prompt fills the model's cache in one pass, then each drawn character is fed alone."""
    was_training = model.training
    model.eval()
    ids = dl.tensor(text.encode(prompt)).unsqueeze(0)
    drawn = sampler.generate(model, ids, max_new_tokens=length)
    model.train(was_training)
    return text.decode(drawn[0])


class SampleEachEpoch:
    """A training callback that prints the epoch's loss and a sample after every epoch (the
    generator is seeded from the epoch, so a resumed run prints what an uninterrupted one
    would)."""

    def __init__(self, text: CharText, length: int, temperature: float, seed: int):
        self.text, self.length, self.temperature, self.seed = text, length, temperature, seed

    def dlfree_train_start(self, trainer):
        if trainer.state.global_step:
            print(f"resumed from step {trainer.state.global_step} (epoch "
                  f"{trainer.state.epoch + 1})", flush=True)

    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        generator = dl.Generator().manual_seed(self.seed * 1000 + epoch)
        sampler = nn.Sampler(temperature=self.temperature, generator=generator)
        text = sample(trainer.model, self.text, "\n", self.length, sampler)
        print(f"epoch {epoch + 1}: loss {logs['loss']:.4f}\n--- sample ---{text}\n"
              "--------------", flush=True)


class CtrlCAt:
    """A training callback that presses Ctrl-C (SIGINT to this process) once the optimizer
    has taken `step` steps."""

    def __init__(self, step: int):
        self.step = step

    def dlfree_train_batch_end(self, trainer):
        if trainer.state.global_step == self.step:
            signal.raise_signal(signal.SIGINT)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--run-dir", type=Path, default=Path("runs/char_lm"),
                        help="checkpoints and the final model (default runs/char_lm)")
    parser.add_argument("--text", type=Path, help="a UTF-8 text file (default: the sonnets)")
    parser.add_argument("--chars", type=int, help="train on the text's first CHARS characters")
    parser.add_argument("--seq-len", type=int, default=128, help="context length (default 128)")
    parser.add_argument("--stride", type=int, default=16,
                        help="characters between the starts of two windows (default 16)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layers", type=int, default=4)
    parser.add_argument("--n-heads", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--sample-len", type=int, default=127,
                        help="characters drawn per sample (at most seq-len - 1)")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interrupt-at", type=int, help="press Ctrl-C after this step")
    args = parser.parse_args(argv)
    if not 1 <= args.sample_len < args.seq_len:
        parser.error(f"--sample-len must be from 1 to seq-len - 1 = {args.seq_len - 1} (the "
                     f"prompt and the sample fit the model's context), got {args.sample_len}")

    corpus = args.text.read_text(encoding="utf-8") if args.text else sonnets()
    text = CharText(corpus[:args.chars], args.seq_len, stride=args.stride)
    loader = DataLoader(text, batch_size=args.batch_size, shuffle=True)
    print(f"{len(text.data)} characters, {text.vocab_size} distinct; {len(text)} windows of "
          f"{args.seq_len}, {len(loader)} steps per epoch")

    dl.manual_seed(args.seed)
    model = nn.CausalTransformer(text.vocab_size, max_len=args.seq_len, d_model=args.d_model,
                                 n_heads=args.n_heads, n_layers=args.n_layers,
                                 dropout=args.dropout)
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr,
                                             total_steps=args.epochs * len(loader))
    callbacks: list = [SampleEachEpoch(text, args.sample_len, args.temperature, args.seed)]
    if args.interrupt_at is not None:
        callbacks.append(CtrlCAt(args.interrupt_at))
    trainer = dl.train.Trainer(model, optimizer, next_token_loss, scheduler=schedule,
                               scheduler_interval="step", max_epochs=args.epochs,
                               grad_clip_norm=1.0, seed=args.seed, callbacks=callbacks,
                               checkpoint_dir=args.run_dir / "checkpoints",
                               checkpoint_every_n_steps=50)
    print(f"{model.num_parameters():,} parameters", flush=True)
    started = time.perf_counter()
    trainer.fit(loader)
    seconds = time.perf_counter() - started
    if trainer.interrupted:
        print(f"interrupted after step {trainer.state.global_step}; checkpoint in "
              f"{args.run_dir / 'checkpoints'}: run the same command again to resume")
        return
    path = args.run_dir / "char_lm.safetensors"
    dl.save(model.eval(), path)
    print(f"trained to step {trainer.state.global_step} in {seconds:.1f} s; final loss "
          f"{trainer.history['loss'].last:.4f}; model: {path}")


if __name__ == "__main__":
    main()

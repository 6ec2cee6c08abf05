"""The digits CNN of train_digits.py, data-parallel on several processes:

    mpiexec -n 2 python examples/train_digits_ddp.py [--epochs N] [--out DIR]

The script is train_digits.py's with nothing distributed in it: launched by `mpiexec`
the Trainer finds the other ranks itself, wraps the model in DistributedDataParallel,
gives each rank its DistributedSampler share of every epoch, and combines the validation
loss and the accuracy's state over the ranks, so the accuracy printed is the whole held-out
fifth's. Progress, the model files and the HTML report come from rank 0 alone: one
progress line per epoch. Each rank trains on batches of 32 / world size, so the steps see
the same 32 images per update as one process would.
"""

import argparse
import time
from pathlib import Path

import dlfree as dl
import dlfree.distributed as dist
from dlfree import nn, optim
from dlfree.data import DataLoader
from dlfree.metrics import Accuracy

from train_digits import CLASSES, digit_splits, small_cnn

BATCH = 32  # the images per optimizer step, over all ranks together


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6, help="passes over the training set")
    parser.add_argument("--out", type=Path, default=Path("runs/digits-ddp"),
                        help="where the model files and the report go")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split, weights and order")
    args = parser.parse_args(argv)

    dist.init_process_group()  # (the Trainer would too; done here to size the batches)
    rank, world = dist.get_rank(), dist.get_world_size()
    train, held_out = digit_splits(args.seed)
    train_loader = DataLoader(train, batch_size=BATCH // world, shuffle=True)
    held_out_loader = DataLoader(held_out, batch_size=256)

    dl.manual_seed(args.seed)
    model = small_cnn()
    optimizer = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    steps = args.epochs * -(-len(train) // BATCH)  # each rank's steps: its share, per batch
    schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps)
    checkpoints = dl.train.ModelCheckpoint(args.out / "checkpoints", monitor="val_accuracy",
                                           mode="max")
    report = dl.train.HTMLReport(args.out / "report.html", title="Digits CNN, data-parallel")
    trainer = dl.train.Trainer(
        model, optimizer, nn.CrossEntropyLoss(), scheduler=schedule, scheduler_interval="step",
        metrics={"accuracy": Accuracy(task="multiclass", num_classes=CLASSES)},
        max_epochs=args.epochs, seed=args.seed, callbacks=["progress", checkpoints, report],
        run_dir=args.out)
    started = time.perf_counter()
    trainer.fit(train_loader, held_out_loader)
    seconds = time.perf_counter() - started

    # the held-out score of the trained model, over the whole fifth (each rank scores its
    # share; the Trainer adds the shares up)
    scores = trainer.evaluate(held_out_loader)
    if rank == 0:
        print(f"{world} ranks, {len(train)} training images, {len(held_out)} held out")
        print(f"model:  {checkpoints.last_path}")
        print(f"report: {report.path}")
        print(f"trained {args.epochs} epoch{'s' * (args.epochs != 1)} in {seconds:.1f} s")
        print(f"held-out accuracy {scores['accuracy']:.1%} (loss {scores['loss']:.4f})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

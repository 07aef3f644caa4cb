"""One CIFAR-10 CNN per recipe: train and test accuracy, CPU seconds per model (not a test).

Run: ``.venv/bin/python benchmarks/bench_cifar10_recipe.py [--hidden 384] [--epochs 50]
[--lr 0.002] [--batch-size 32] [--lr-schedule one-cycle] [--seed 0]``. Defaults: the recipe
of ``examples/cifar10_cnn.yaml`` (``bench_cifar10.EXAMPLE``).

The CNN (:func:`privaudit.models.torch_nets.cifar10_cnn`, 16/32/64 channels, flip-shift
augmentation with shifts of up to 4 pixels) trains through :class:`TorchTrainer` on 2,500
images drawn at random (``--seed``) from the bundled subset, with one torch thread; 1,000
other images are the test set. Printed: the parameter count, train accuracy (on the
un-augmented training images), test accuracy, the process's CPU seconds (not slowed by
other jobs on a shared machine) and the wall seconds.

Measured on this project's 2-core machine (shared, load 2-5; the search that chose the
example's recipe ran the same training loop from a scratch script, seed 0; this script on
the new recipe, seed 0, load 1.1-1.7: train 0.985, test 0.587, 78 s CPU, 83 s wall):

=============================================  ======  =====  =====  ============
recipe (Adam, flip-shift)                      epochs  train  test   CPU s/model
=============================================  ======  =====  =====  ============
hidden 256, lr 0.002 constant, batch 64 (old)    60    0.946  0.519  ~110
hidden 256, lr 0.002 cosine, batch 64            30    0.716  0.543   45
hidden 256, lr 0.003 one-cycle, batch 64         30    0.777  0.551   43
hidden 256, lr 0.003 one-cycle, batch 64         50    0.938  0.545   69
hidden 256, lr 0.002 one-cycle, batch 32         50    0.965  0.544   83
hidden 384, lr 0.002 one-cycle, batch 32 (new)   50    0.984  0.587   83
hidden 512, lr 0.003 one-cycle, batch 64         50    0.979  0.581   68
hidden 1024, lr 0.003 one-cycle, batch 64        50    0.989  0.569   87
hidden 1024, lr 0.002 linear decay, batch 64     50    0.956  0.561   86
=============================================  ======  =====  =====  ============

The example keeps a few hundred thousand parameters (hidden 384: 421,034), as the issue
asks, and reaches 0.98 train accuracy in 50 epochs, where the constant rate needed 60 for
0.95: the decay of the one-cycle schedule (Smith & Topin 2019) is what lets a small CNN fit
its augmented training set.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

from privaudit.data import load_cifar10
from privaudit.models.torch_models import TorchTrainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cifar10 import EXAMPLE, cifar10_recipe


def _cpu_seconds() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return float(u.ru_utime + u.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--hidden", type=int, default=EXAMPLE["hidden"])
    ap.add_argument("--channels", type=int, default=EXAMPLE["channels"])
    ap.add_argument("--epochs", type=int, default=EXAMPLE["epochs"])
    ap.add_argument("--lr", type=float, default=EXAMPLE["lr"])
    ap.add_argument("--batch-size", type=int, default=EXAMPLE["batch_size"])
    ap.add_argument("--lr-schedule", default=EXAMPLE["lr_schedule"])
    ap.add_argument("--n-train", type=int, default=2500)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    data = load_cifar10()
    perm = np.random.default_rng(args.seed).permutation(data.n_records)
    train, test = perm[: args.n_train], perm[args.n_train : args.n_train + args.n_test]
    recipe = cifar10_recipe(args, device="cpu")
    n_params = sum(int(p.numel()) for p in recipe.build(0).parameters())
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    model = TorchTrainer(recipe, n_classes=10).fit(data.X[train], data.y[train], seed=args.seed)
    cpu, wall = _cpu_seconds() - cpu0, time.perf_counter() - wall0

    def acc(rows: np.ndarray) -> float:
        return float(np.mean(model.logits(data.X[rows]).argmax(1) == data.y[rows]))

    print(
        f"hidden {args.hidden}, {args.epochs} epochs, Adam lr {args.lr} {args.lr_schedule}, "
        f"batch {args.batch_size} ({n_params:,} parameters): train accuracy {acc(train):.3f}, "
        f"test {acc(test):.3f}; {cpu:.0f} s CPU ({cpu / args.epochs:.2f} s per epoch), "
        f"{wall:.0f} s wall"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Can a GAN trained on this machine's CPU make CIFAR-10 images a small CNN cannot tell from
real ones? A probe for issue 31's PANORAMIA generator (not a test, not a privaudit generator).

Usage::

    .venv/bin/python benchmarks/bench_panoramia_gan_probe.py [--minutes 12] [--threads 1]
        [--n-train 1000] [--seed 0] [--grid PNG] [--json PATH]

PANORAMIA (Kazmi et al. 2024) can only show leakage above what its baseline reaches: when a
classifier tells the generated images from real non-members almost perfectly, ``c_lb`` sits
at the cap of the ``m`` test slots and ``eps_tilde`` is pinned at 0 (``docs/cifar10.md``:
the conditional VAE is told apart at the cap on all 12 CIFAR-10 targets, baseline test AUC
0.991-0.998). The paper's generator is StyleGAN2 trained on GPUs (Sec. 5). This probe asks
whether a GAN that trains in minutes on a CPU would do better, before building one into the
image modality:

1. a class-conditional DCGAN (generator: a linear map of ``z`` times a class embedding to
   4x4x256, three transposed 4x4 convolutions with batch norm to 32x32x3, tanh;
   discriminator: three strided 4x4 convolutions with leaky ReLU and a projection head
   for the class, Miyato & Koyama 2018), non-saturating loss, Adam 2e-4 (0.5, 0.999),
   batches of 64, with DiffAugment (Zhao et al. 2020: brightness, saturation, contrast,
   translation by up to 4 pixels, one 16x16 cutout) on every image the discriminator
   sees, since ``--n-train`` images (``D_G``'s size in the CIFAR-10 bench) are far too few
   for a plain GAN; trained for ``--minutes`` of wall time on ``--threads`` threads;
2. a real-vs-generated classifier: a 3-layer CNN (32-64-64 channels, global average
   pooling), Adam 1e-3, 30 epochs, trained on 500 real images the GAN never saw and 500
   generated ones, and its AUC on 500 + 500 held-out images after each epoch; the best
   epoch's AUC is printed (the baseline would pick its best epoch on validation data too).

An AUC near 1 means the baseline would reach the cap, as the VAE's does: such a generator
is not worth wiring into PANORAMIA. ``--grid PNG`` writes 64 generated images.

Measured 2026-12-06 (``--minutes 12 --threads 1``, the other core busy with a SmolLM2
fine-tune; 1,568 steps in 721 s, about 100 passes over the 1,000 images): **held-out AUC
1.000** (0.997 after 5 classifier epochs, 1.000 from 10 on); the images show the
checkerboard texture of under-trained transposed convolutions, with the colours and rough
blobs of the classes only.
``--json PATH`` writes ``steps``, ``seconds``, ``auc_by_epoch`` and ``best_auc``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

N_Z = 64


def _images(n_train: int, seed: int) -> tuple[Any, Any, Any, Any]:
    """GAN training images and labels, and 1,000 other real images and labels, on [-1, 1]."""
    import torch

    from privaudit.data import load_cifar10

    ds = load_cifar10()
    mean = torch.tensor(ds.info["channel_mean"]).view(1, 3, 1, 1)
    std = torch.tensor(ds.info["channel_std"]).view(1, 3, 1, 1)
    x = torch.tensor(ds.X.reshape(-1, 3, 32, 32), dtype=torch.float32)
    x = (x * std + mean).clamp(0, 1) * 2 - 1
    y = torch.tensor(ds.y, dtype=torch.long)
    order = np.random.default_rng(seed).permutation(ds.n_records)
    train, other = order[:n_train], order[n_train : n_train + 1000]
    return x[train], y[train], x[other], y[other]


def _nets() -> tuple[Any, Any]:
    import torch
    from torch import nn

    class Generator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, N_Z)
            self.fc = nn.Linear(N_Z, 4 * 4 * 256)
            self.up = nn.Sequential(
                nn.BatchNorm2d(256), nn.ReLU(),
                nn.ConvTranspose2d(256, 128, 4, 2, 1), nn.BatchNorm2d(128), nn.ReLU(),
                nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                nn.ConvTranspose2d(64, 3, 4, 2, 1), nn.Tanh(),
            )  # fmt: skip

        def forward(self, z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            return self.up(self.fc(z * self.embed(c)).view(-1, 256, 4, 4))

    class Discriminator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2),
                nn.Conv2d(64, 128, 4, 2, 1), nn.LeakyReLU(0.2),
                nn.Conv2d(128, 256, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
            )  # fmt: skip
            self.out = nn.Linear(256 * 16, 1)
            self.embed = nn.Embedding(10, 256 * 16)  # projection of the class

        def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            h = self.features(x)
            return self.out(h).squeeze(1) + (self.embed(c) * h).sum(1)

    return Generator(), Discriminator()


def _diff_augment(x: Any, rng: np.random.Generator) -> Any:
    """DiffAugment's colour, translation and cutout (Zhao et al. 2020), differentiable."""
    import torch
    import torch.nn.functional as F

    b = x.shape[0]
    x = x + (torch.rand(b, 1, 1, 1) - 0.5)
    m = x.mean(1, keepdim=True)
    x = (x - m) * (torch.rand(b, 1, 1, 1) * 2) + m
    m = x.mean([1, 2, 3], keepdim=True)
    x = (x - m) * (torch.rand(b, 1, 1, 1) + 0.5) + m
    i, j = rng.integers(0, 9, 2)
    x = F.pad(x, (4, 4, 4, 4))[:, :, i : i + 32, j : j + 32]
    ci, cj = rng.integers(0, 32, 2)
    mask = torch.ones_like(x[:, :1])
    mask[:, :, max(0, ci - 8) : ci + 8, max(0, cj - 8) : cj + 8] = 0
    return x * mask


def train_gan(x: Any, y: Any, minutes: float, seed: int) -> tuple[Any, int, float]:
    """The conditional DCGAN trained for ``minutes`` of wall time; (generator, steps, s)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    gen, disc = _nets()
    opt_g = torch.optim.Adam(gen.parameters(), 2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), 2e-4, betas=(0.5, 0.999))
    t0, steps, n = time.perf_counter(), 0, x.shape[0]
    while time.perf_counter() - t0 < minutes * 60:
        perm = torch.randperm(n)
        for b in range(0, n, 64):
            idx = perm[b : b + 64]
            real, c = x[idx], y[idx]
            fake = gen(torch.randn(len(idx), N_Z), c)
            loss_d = (
                F.softplus(-disc(_diff_augment(real, rng), c)).mean()
                + F.softplus(disc(_diff_augment(fake.detach(), rng), c)).mean()
            )
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            loss_g = F.softplus(-disc(_diff_augment(fake, rng), c)).mean()
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            steps += 1
        print(
            f"  {time.perf_counter() - t0:6.0f} s, step {steps}: D loss {loss_d.item():.3f}, "
            f"G loss {loss_g.item():.3f}",
            flush=True,
        )
    gen.eval()
    return gen, steps, time.perf_counter() - t0


def real_vs_generated_auc(real: Any, fake: Any, seed: int) -> list[float]:
    """Held-out AUC of a small CNN told to separate ``real`` from ``fake`` (1,000 each:
    500 + 500 to train, 500 + 500 held out), after each of 30 epochs."""
    import torch
    import torch.nn.functional as F
    from sklearn.metrics import roc_auc_score
    from torch import nn

    torch.manual_seed(seed)
    clf = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, 1),
    )  # fmt: skip
    opt = torch.optim.Adam(clf.parameters(), 1e-3)
    x_tr = torch.cat([real[:500], fake[:500]])
    y_tr = torch.cat([torch.zeros(500), torch.ones(500)])
    x_te = torch.cat([real[500:], fake[500:]])
    y_te = np.r_[np.zeros(500), np.ones(500)]
    aucs = []
    for _ in range(30):
        clf.train()
        perm = torch.randperm(1000)
        for b in range(0, 1000, 64):
            idx = perm[b : b + 64]
            loss = F.binary_cross_entropy_with_logits(clf(x_tr[idx]).squeeze(1), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        clf.eval()
        with torch.no_grad():
            aucs.append(float(roc_auc_score(y_te, clf(x_te).squeeze(1).numpy())))
    return aucs


def _write_grid(fake: Any, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img = ((fake[:64].numpy().transpose(0, 2, 3, 1) + 1) / 2).clip(0, 1)
    grid = img.reshape(8, 8, 32, 32, 3).transpose(0, 2, 1, 3, 4).reshape(256, 256, 3)
    plt.imsave(path, np.kron(grid, np.ones((2, 2, 1))))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=12.0, help="GAN training wall time")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--n-train", type=int, default=1000, help="GAN training images (D_G)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--grid", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    x, y, other, other_y = _images(args.n_train, args.seed)
    print(f"DCGAN on {x.shape[0]} CIFAR-10 images for {args.minutes:g} min", flush=True)
    gen, steps, seconds = train_gan(x, y, args.minutes, args.seed)
    with torch.no_grad():
        fake = gen(torch.randn(other.shape[0], N_Z), other_y)
    aucs = real_vs_generated_auc(other, fake, args.seed)
    print(
        f"{steps} steps in {seconds:.0f} s; real vs generated, held-out AUC by epoch: "
        + " ".join(f"{a:.3f}" for a in aucs[4::5])
        + f"; best {max(aucs):.4f}"
    )
    if args.grid is not None:
        _write_grid(fake, args.grid)
    if args.json is not None:
        out = {"steps": steps, "seconds": seconds, "auc_by_epoch": aucs, "best_auc": max(aucs)}
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

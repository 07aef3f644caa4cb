"""PANORAMIA on MNIST CNN targets (the image part of ``bench_panoramia.py``; issue 14).

:func:`bench_image_targets` trains, for each seed, a small CNN
(``privaudit.models.torch_nets:small_cnn``, Adam, no augmentation, no weight decay: it
overfits more the longer it trains) on a seeded half of the bundled 6,000-image MNIST
subset for each number of epochs, and runs :func:`privaudit.panoramia.game.run_panoramia`
with the :class:`~privaudit.panoramia.image.ImageModality`: the known members are
the target's whole training set (half to the VAE, half to the audit), the real
non-members (RM;RN and O(1) comparisons) the other half of the images. One dict per
target with exactly the keys of the issue.

Measured (``bench_panoramia.py --modality image --seeds 5``: 3,000 training images, 8
channels, m = 750, 95% confidence; 1285 s with one torch thread on a shared 2-core
machine at load ~3), means over seeds of c_lb / {c+eps}_lb / eps_tilde / RM;RN / O(1):
2 epochs 1.71 / 1.71 / 0.08 / 0 / 0; 10 epochs 1.71 / 1.45 / 0 / 0 / 0.09; 40 epochs
1.66 / 1.45 / 0.01 / 0 / 0.18. Issue 14's two claims do not hold on these targets, and
cannot at this data size: they leak almost nothing on the member side, the only side
PANORAMIA's and RM;RN's one-sided tests use. The target's loss separates members from
real non-members with AUC 0.51-0.52 (0.56 with 1,000 training images, 32 channels, 200
epochs), and the 1-20% lowest losses are members with precision 0.43-0.56, also when the
loss is calibrated by a reference CNN trained on other real images; RM;RN is 0 on every
target, so eps_tilde has nothing to grow toward. Its positive values (0.10-0.16 on three
of five 2-epoch targets) are the clipped noise of {c+eps}_lb - c_lb (standard deviation
0.18-0.30 over seeds even with the MIA and the baseline sharing their scorer seed): the
clipped eps_tilde - RM;RN is +0.029 +- 0.014 over 15 targets, the unclipped gap
({c+eps}_lb - c_lb) - RM;RN that ``paired_claims`` tests -0.158 +- 0.064, "at or below RM;RN
within noise"; eps_tilde(40) - eps_tilde(2) -0.072 +- 0.038, "growth not established". O(1)
also guesses non-members (the misclassified images) and reaches 0.74 on one target. A
leakier target (``--n-images 2000 --channels 32``, 200 epochs, seed 0, m = 250): RM;RN 0,
O(1) 0.52, eps_tilde 0.23 -- and 0.13 on the same recipe trained on the other half (a
target that never saw the "members"), so that too is mostly noise at c_lb = 2.35.

Run on its own (prints one line per target, then the wall time)::

    .venv/bin/python benchmarks/_panoramia_image.py [--seeds 1] [--epochs 2,40] [--quick]

``bench_panoramia.py --modality image`` imports :func:`bench_image_targets`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privaudit.data import MNIST_SHAPE, load_mnist
from privaudit.data.dataset import Dataset
from privaudit.models.torch_models import TorchRecipe, TorchTrainer
from privaudit.panoramia.game import PanoramiaSizes, run_panoramia
from privaudit.panoramia.image import ImageModality

__all__ = ["IMAGE_KEYS", "bench_image_targets", "mnist_cnn_recipe"]

#: The keys of one target's dict (pano_api.md section 4).
IMAGE_KEYS = (
    "modality", "epochs", "dp_epsilon", "seed", "c_lb", "c_plus_eps_lb", "eps_tilde",
    "eps_rmrn", "eps_o1",
)  # fmt: skip

DEFAULT_EPOCHS = (2, 10, 40)
# --quick: a smoke run (a few hundred images, few epochs), not a measurement
_QUICK = {"n_images": 800, "vae": {"epochs": 3}, "scorer": {"epochs": 3, "patience": None}}


def mnist_cnn_recipe(epochs: int, *, channels: int = 8) -> TorchRecipe:
    """The MNIST CNN target's recipe (``examples/mnist_cnn.yaml``'s network, no
    augmentation so that longer training means more overfitting)."""
    return TorchRecipe(
        factory="privaudit.models.torch_nets:small_cnn",
        factory_kwargs={"n_classes": 10, "channels": channels, "image_shape": list(MNIST_SHAPE)},
        optimizer="adam",
        lr=2e-3,
        epochs=int(epochs),
        batch_size=64,
        input_shape=MNIST_SHAPE,
        device="cpu",
    )


def _halves(ds: Dataset, seed: int, n_images: int | None) -> tuple[Dataset, Dataset]:
    """A seeded half of the images (the target's training set) and the other half."""
    rng = np.random.default_rng([int(seed), 14])
    ids = ds.record_ids[rng.permutation(ds.n_records)]
    if n_images is not None:
        ids = ids[:n_images]
    half = ids.size // 2
    return ds.subset(ids[:half]), ds.subset(ids[half:])


def _accuracy(model: Any, ds: Dataset) -> float:
    return float((model.logits(ds.X).argmax(axis=1) == ds.y).mean())


def bench_image_targets(
    seeds: Sequence[int],
    *,
    epochs: Sequence[int] = DEFAULT_EPOCHS,
    quick: bool = False,
    n_images: int | None = None,
    channels: int = 8,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """PANORAMIA, RM;RN and O(1) on MNIST CNN targets trained for increasing epochs.

    Parameters
    ----------
    seeds : sequence of int
        One target per (seed, epochs); the seed picks the target's training half, its
        initial weights and batch order, and PANORAMIA's splits, generator, helper and
        scorers.
    epochs : sequence of int
    quick : bool
        A smoke run: 800 images, 3-epoch VAE and scorers (the bounds mean little).
    n_images : int, optional
        Use a seeded subset of this many of the 6,000 images (half train the target,
        half are the real non-members); default all (``quick``: 800).
    channels : int
        Width of the target CNN (``small_cnn``'s first convolution).
    log : callable, optional
        Receives one human-readable line per target (accuracies, bounds, seconds).

    Returns
    -------
    list of dict
        Keys :data:`IMAGE_KEYS`; ``dp_epsilon`` is None (no DP-SGD image target),
        ``eps_rmrn`` / ``eps_o1`` None when the comparison did not run.
    """
    ds = load_mnist()
    if n_images is None and quick:
        n_images = int(_QUICK["n_images"])  # type: ignore[call-overload]
    out: list[dict[str, Any]] = []
    vae_cache: dict[str, Any] = {}  # one VAE per seed: same D_G for every epoch count
    for seed in seeds:
        members, non_members = _halves(ds, int(seed), n_images)
        for e in epochs:
            t0 = time.perf_counter()
            recipe = mnist_cnn_recipe(int(e), channels=channels)
            target = TorchTrainer(recipe, n_classes=10).fit(
                members.X, members.y, seed=int(seed), n_classes=10
            )
            t_target = time.perf_counter() - t0
            modality = ImageModality(
                recipe,
                input_shape=MNIST_SHAPE,
                n_classes=10,
                vae=_QUICK["vae"] if quick else None,  # type: ignore[arg-type]
                scorer=_QUICK["scorer"] if quick else None,  # type: ignore[arg-type]
                generator_cache=vae_cache,
            )
            res = run_panoramia(
                modality,
                target,
                members,
                non_members=non_members,
                sizes=PanoramiaSizes(),
                seed=int(seed),
            )
            comp = res.comparisons
            row = {
                "modality": "image",
                "epochs": int(e),
                "dp_epsilon": None,
                "seed": int(seed),
                "c_lb": float(res.c_lb),
                "c_plus_eps_lb": float(res.c_plus_eps_lb),
                "eps_tilde": float(res.eps_tilde),
                "eps_rmrn": None if comp.get("rmrn") is None else float(comp["rmrn"]["eps_lb"]),
                "eps_o1": None if comp.get("o1") is None else float(comp["o1"]["eps_lb"]),
            }
            out.append(row)
            if log is not None:
                gen = res.generator.get("fit", {})
                log(
                    f"mnist-cnn seed {seed} epochs {e}: train acc {_accuracy(target, members):.3f}, "
                    f"test acc {_accuracy(target, non_members):.3f}; m = {res.sizes['m']}; "
                    f"c_lb {row['c_lb']:.3f}, {{c+eps}}_lb {row['c_plus_eps_lb']:.3f}, "
                    f"eps_tilde {row['eps_tilde']:.3f}, RM;RN {row['eps_rmrn']}, O(1) {row['eps_o1']}; "
                    f"target {t_target:.0f} s, VAE {gen.get('seconds', float('nan'))} s, "
                    f"total {time.perf_counter() - t0:.0f} s"
                )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1")
    ap.add_argument("--epochs", default=",".join(str(e) for e in DEFAULT_EPOCHS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n-images", type=int, default=None, help="a seeded subset of the 6,000")
    ap.add_argument("--channels", type=int, default=8, help="target CNN width")
    ap.add_argument(
        "--threads", type=int, default=1, help="torch threads (two on a busy 2-core box spin)"
    )
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    rows = bench_image_targets(
        range(args.seeds),
        epochs=[int(v) for v in args.epochs.split(",")],
        quick=args.quick,
        n_images=args.n_images,
        channels=args.channels,
        log=lambda s: print(s, flush=True),
    )
    for r in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""PANORAMIA on CIFAR-10 CNN targets (the ``--dataset cifar10`` image part of
``bench_panoramia.py``; issue 31, item 4 and the PANORAMIA half of its DP item).

:func:`bench_cifar10_targets` trains, for each seed, the CIFAR-10 CNN
(``privaudit.models.torch_nets:cifar10_cnn``, 16/32/64 channels and a 256-unit hidden
layer, 288,554 parameters: ``examples/cifar10_cnn.yaml``'s network, Adam 2e-3, batches of
64) on a seeded half of ``--n-images`` images of the bundled 6,102-image subset
(:func:`privaudit.data.load_cifar10`), for each number of epochs, and runs
:func:`privaudit.panoramia.game.run_panoramia` with the
:class:`~privaudit.panoramia.image.ImageModality`: the known members are the target's
whole training set (half to the generator, ``D_G``; half to the audit, ``D_in``), the real
non-members (RM;RN and O(1), Kazmi et al. 2024 Sec. 5.2) the other half of the images.
The paper's image pipeline otherwise unchanged (Sec. 3 and 5.1): the class-conditional
VAE (:mod:`privaudit.models.image_vae`, fitted on the [0, 1] intensities of ``D_G`` and
standardised back) in place of StyleGAN2, the helper = the target's recipe trained on
generated images only, the MIA (image + target loss) and the baseline (image + helper
loss) as CNN scorers selected on a validation split.

**Why no augmentation** (a choice, issue 31): the example recipe trains with random crops
and flips, the papers' standard; it regularises, so the training loss of members falls
slowly and the member / non-member loss gap grows little per epoch (the example reaches
train accuracy 0.98 only after 50 one-cycle epochs on 2,500 images, docs/cifar10.md). PANORAMIA's
growth claim needs targets that overfit *more* the longer they train within a CPU budget:
without augmentation the same network fits its training images within about 10 epochs and
then keeps pushing their losses toward 0 while the non-members' grow, so the three lengths
span little, moderate and strong overfitting (Kazmi et al. Table 1 vary the epochs E of one
recipe the same way). The DP-SGD target has no augmentation either (Opacus' per-sample
gradients are computed here without it).

**DP-SGD target** (``dp=True``): the same network with ``dp: {target_epsilon: 8, delta:
1e-5}`` (Opacus, RDP accountant, clipping norm 1, Poisson sampling; ``models/torch_dp.py``),
``dp_epochs`` epochs; its row's ``dp_epsilon`` is the accountant's epsilon, printed beside
PANORAMIA's eps_tilde, RM;RN and O(1) (each must be at or below it).

Printed per target: train / test accuracy, ``m``, c_lb, {c+eps}_lb, eps_tilde, RM;RN, O(1),
the **cap** (``panoramia_cap``: the bound perfect scores reach on these ``m`` slots) and
``c_lb / cap`` with the test-slot AUC of the baseline and of the MIA: a baseline at the cap
(AUC ~1) tells every generated image apart, and then ``eps_tilde <= cap - c_lb`` whatever
the target leaks (Sec. 4.2 and 5.3).

Measured: see ``bench_panoramia.py``'s docstring and docs/cifar10.md (the PANORAMIA
section), with the exact command and the machine's load.

Run on its own::

    .venv/bin/python benchmarks/_panoramia_cifar10.py [--seeds 1] [--epochs 3,10,30] [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from privaudit.data import CIFAR10_SHAPE, load_cifar10
from privaudit.data.dataset import Dataset
from privaudit.metrics.roc import auc
from privaudit.models.torch_models import TorchRecipe, TorchTrainer
from privaudit.panoramia.game import PanoramiaSizes, run_panoramia
from privaudit.panoramia.image import ImageModality

__all__ = [
    "CIFAR10_KEYS",
    "CIFAR10_VAE",
    "DP_SPEC",
    "VAE_PRESETS",
    "bench_cifar10_targets",
    "cifar10_cnn_recipe",
]

#: The keys of one target's dict (the same as every modality's row of bench_panoramia).
CIFAR10_KEYS = (
    "modality", "epochs", "dp_epsilon", "seed", "c_lb", "c_plus_eps_lb", "eps_tilde",
    "eps_rmrn", "eps_o1",
)  # fmt: skip

DEFAULT_EPOCHS = (3, 10, 30)
#: Images drawn per seed (half train the target = the known members, half are the real
#: non-members); m = n_images / 8 test slots.
DEFAULT_N_IMAGES = 4000
DEFAULT_DP_EPOCHS = 15
#: The DP-SGD target's ``dp:`` mapping (issue 31: eps = 8, delta = 1e-5).
DP_SPEC: Mapping[str, Any] = {"target_epsilon": 8.0, "delta": 1e-5, "max_grad_norm": 1.0}
#: The conditional VAE grown for 32x32x3 (MNIST's default: latent 8, 32 channels, 256
#: hidden, 60 epochs): a wider latent and hidden layer for colour images.
CIFAR10_VAE: Mapping[str, Any] = {"latent_dim": 32, "channels": 32, "hidden": 512, "epochs": 40}
#: The generators ``--vae`` names: the grown VAE (default) and MNIST's default settings
#: (:class:`~privaudit.models.image_vae.VAESettings`), to show c_lb and the cap of each.
VAE_PRESETS: Mapping[str, Mapping[str, Any]] = {"cifar10": CIFAR10_VAE, "mnist-default": {}}
# --quick: a smoke run (a few hundred images, 1-2 epochs everywhere), not a measurement
_QUICK: dict[str, Any] = {
    "n_images": 400,
    "epochs": (1, 2),
    "dp_epochs": 1,
    "vae": {"latent_dim": 4, "channels": 4, "hidden": 32, "epochs": 1},
    "scorer": {"epochs": 2, "channels": 4, "hidden": 16, "loss_hidden": 8, "patience": None},
}


def cifar10_cnn_recipe(
    epochs: int, *, dp: Mapping[str, Any] | None = None, channels: int = 16, hidden: int = 256
) -> TorchRecipe:
    """The CIFAR-10 CNN target's recipe: ``examples/cifar10_cnn.yaml``'s network and
    optimiser without its augmentation (see the module docstring), on the CPU."""
    return TorchRecipe(
        factory="privaudit.models.torch_nets:cifar10_cnn",
        factory_kwargs={
            "n_classes": 10,
            "channels": int(channels),
            "hidden": int(hidden),
            "image_shape": list(CIFAR10_SHAPE),
        },
        optimizer="adam",
        lr=2e-3,
        epochs=int(epochs),
        batch_size=64,
        input_shape=CIFAR10_SHAPE,
        device="cpu",
        dp=None if dp is None else dict(dp),
    )


def _halves(ds: Dataset, seed: int, n_images: int) -> tuple[Dataset, Dataset]:
    """A seeded half of a seeded ``n_images`` (the target's training set) and the rest."""
    if not 8 <= n_images <= ds.n_records:
        raise SystemExit(f"--n-images: expected 8..{ds.n_records}, found {n_images}")
    rng = np.random.default_rng([int(seed), 31])
    ids = ds.record_ids[rng.permutation(ds.n_records)[:n_images]]
    half = ids.size // 2
    return ds.subset(ids[:half]), ds.subset(ids[half:])


def _accuracy(model: Any, ds: Dataset) -> float:
    return float((model.logits(ds.X).argmax(axis=1) == ds.y).mean())


def bench_cifar10_targets(
    seeds: Sequence[int],
    *,
    epochs: Sequence[int] = DEFAULT_EPOCHS,
    quick: bool = False,
    n_images: int | None = None,
    dp: bool = True,
    dp_epochs: int | None = None,
    vae: Mapping[str, Any] | None = None,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """PANORAMIA, RM;RN and O(1) on CIFAR-10 CNN targets trained for increasing epochs,
    plus one DP-SGD (eps = 8) target per seed.

    Parameters
    ----------
    seeds : sequence of int
        One target per (seed, epochs); the seed picks the images, the target's training
        half, its initial weights and batch order, and PANORAMIA's splits, generator,
        helper and scorers. The generator (fitted on ``D_G``, the same for every target
        of a seed) is trained once per seed.
    epochs : sequence of int
        Training lengths of the non-private targets.
    quick : bool
        A smoke run: 400 images, 1-2 epochs everywhere (the bounds mean little).
    n_images : int, optional
        Images per seed (default :data:`DEFAULT_N_IMAGES`; ``quick``: 400).
    dp : bool
        Add the DP-SGD target (:data:`DP_SPEC`).
    dp_epochs : int, optional
        Its epochs (default :data:`DEFAULT_DP_EPOCHS`; ``quick``: 1).
    vae : mapping, optional
        :class:`~privaudit.models.image_vae.VAESettings` fields (default
        :data:`CIFAR10_VAE`).
    log : callable, optional
        Receives one human-readable line per target.

    Returns
    -------
    list of dict
        Keys :data:`CIFAR10_KEYS` (``modality`` is ``"image"``); ``dp_epsilon`` is the
        accountant's epsilon of the DP-SGD target, None otherwise.
    """
    ds = load_cifar10()
    if quick:
        n_images = int(_QUICK["n_images"]) if n_images is None else n_images
        dp_epochs = int(_QUICK["dp_epochs"]) if dp_epochs is None else dp_epochs
    n_img = DEFAULT_N_IMAGES if n_images is None else int(n_images)
    n_dp = DEFAULT_DP_EPOCHS if dp_epochs is None else int(dp_epochs)
    vae_settings = dict(_QUICK["vae"] if quick else CIFAR10_VAE) if vae is None else dict(vae)
    scorer = _QUICK["scorer"] if quick else None
    out: list[dict[str, Any]] = []
    diag: list[dict[str, float]] = []
    vae_cache: dict[str, Any] = {}  # one VAE per seed: same D_G for every target
    for seed in seeds:
        members, non_members = _halves(ds, int(seed), n_img)
        plans: list[tuple[int, Mapping[str, Any] | None]] = [(int(e), None) for e in epochs]
        if dp:
            plans.append((n_dp, DP_SPEC))
        for e, dp_spec in plans:
            t0 = time.perf_counter()
            recipe = cifar10_cnn_recipe(e, dp=dp_spec)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Opacus' secure-RNG and hook warnings
                target = TorchTrainer(recipe, n_classes=10, batched=False).fit(
                    members.X, members.y, seed=int(seed), n_classes=10
                )
            t_target = time.perf_counter() - t0
            # the helper is the target's recipe trained on generated images; a DP target's
            # helper is trained without DP (the baseline measures the generator, c, only)
            helper_recipe = recipe if dp_spec is None else cifar10_cnn_recipe(e)
            modality = ImageModality(
                helper_recipe,
                input_shape=CIFAR10_SHAPE,
                n_classes=10,
                vae=vae_settings,
                scorer=scorer,
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
            dp_eps = None
            if dp_spec is not None:
                dp_eps = float(target.fit_info["accountant_epsilon"])
            row = {
                "modality": "image",
                "epochs": int(e),
                "dp_epsilon": dp_eps,
                "seed": int(seed),
                "c_lb": float(res.c_lb),
                "c_plus_eps_lb": float(res.c_plus_eps_lb),
                "eps_tilde": float(res.eps_tilde),
                "eps_rmrn": None if comp.get("rmrn") is None else float(comp["rmrn"]["eps_lb"]),
                "eps_o1": None if comp.get("o1") is None else float(comp["o1"]["eps_lb"]),
            }
            out.append(row)
            diag.append(_diagnostic(res))
            if log is not None:
                log(_line(row, diag[-1], res, target, members, non_members, t_target, t0))
    if log is not None:
        for line in cap_diagnostic(out, diag):
            log(line)
    return out


def _diagnostic(res: Any) -> dict[str, float]:
    """The cap and the test-slot AUCs of the baseline and of the MIA."""
    member = np.asarray(res.scores.member, dtype=bool)
    return {
        "cap": float(res.bounds["cap"]),
        "auc_baseline": auc(np.asarray(res.scores.scores["panoramia-baseline"]), member),
        "auc_mia": auc(np.asarray(res.scores.scores["panoramia-mia"]), member),
    }


#: ``c_lb`` at or above this share of the cap counts as "at the cap" (the command line's
#: and the report's warning use the same 10%).
AT_CAP = 0.9


def cap_diagnostic(
    rows: Sequence[Mapping[str, Any]], diag: Sequence[Mapping[str, float]]
) -> list[str]:
    """Printable lines: per training length, the mean ``c_lb``, cap, ``c_lb / cap`` and
    baseline AUC, and how many baselines reached the cap (``c_lb >= AT_CAP * cap``: the
    generated images are told apart, ``eps_tilde <= cap - c_lb`` whatever the target
    leaks)."""
    groups: dict[tuple[int, bool], list[int]] = {}
    for k, r in enumerate(rows):
        groups.setdefault((int(r["epochs"]), r["dp_epsilon"] is not None), []).append(k)
    out = []
    n_at = 0
    for (e, is_dp), ks in groups.items():
        c = np.array([rows[k]["c_lb"] for k in ks], dtype=float)
        cap = np.array([diag[k]["cap"] for k in ks], dtype=float)
        ratio = np.divide(c, cap, out=np.zeros_like(c), where=cap > 0)
        at = int((ratio >= AT_CAP).sum())
        n_at += at
        aucb = np.array([diag[k]["auc_baseline"] for k in ks], dtype=float)
        out.append(
            f"generator diagnostic, {'DP-SGD' if is_dp else 'non-private'} {e} epochs,"
            f" {len(ks)} targets: c_lb {c.mean():.3f}, cap {cap.mean():.3f}, c_lb / cap"
            f" {ratio.mean():.2f} (min {ratio.min():.2f}, max {ratio.max():.2f}), baseline"
            f" test AUC {aucb.mean():.3f}; at the cap (c_lb >= {AT_CAP:g} cap) on {at}"
        )
    verdict = (
        "the baseline reaches the cap: the generated images are told apart, eps_tilde cannot"
        " show the leakage (a result, not a pass)"
        if n_at == len(rows)
        else f"the baseline is below the cap on {len(rows) - n_at} of {len(rows)} targets"
    )
    out.append(f"generator diagnostic: at the cap on {n_at} of {len(rows)} targets: {verdict}")
    return out


def _line(
    row: Mapping[str, Any],
    diag: Mapping[str, float],
    res: Any,
    target: Any,
    members: Dataset,
    non_members: Dataset,
    t_target: float,
    t0: float,
) -> str:
    """One target's printed line: the bounds, the cap diagnostic and the timings."""
    cap, auc_b, auc_m = diag["cap"], diag["auc_baseline"], diag["auc_mia"]
    gen = res.generator.get("fit", {})
    kind = "dp-sgd" if row["dp_epsilon"] is not None else "cnn"
    dp = ""
    if row["dp_epsilon"] is not None:
        room = cap - row["c_lb"]
        dp = f" accountant eps {row['dp_epsilon']:.3f} (eps_tilde <= cap - c_lb = {room:.3f} here"
        dp += ": at this m it cannot exceed the accountant);" if room < row["dp_epsilon"] else ");"
    return (
        f"cifar10-{kind} seed {row['seed']} epochs {row['epochs']}:{dp} train acc"
        f" {_accuracy(target, members):.3f}, test acc {_accuracy(target, non_members):.3f};"
        f" m = {res.sizes['m']}; c_lb {row['c_lb']:.3f}, {{c+eps}}_lb"
        f" {row['c_plus_eps_lb']:.3f}, eps_tilde {row['eps_tilde']:.3f}, RM;RN"
        f" {_fmt(row['eps_rmrn'])}, O(1) {_fmt(row['eps_o1'])}; cap {cap:.3f}, c_lb / cap"
        f" {row['c_lb'] / cap if cap > 0 else float('nan'):.2f} (test AUC baseline {auc_b:.3f},"
        f" MIA {auc_m:.3f}); target {t_target:.0f} s, VAE"
        f" {gen.get('seconds', float('nan'))} s, total {time.perf_counter() - t0:.0f} s"
    )


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--epochs", default=",".join(str(e) for e in DEFAULT_EPOCHS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n-images", type=int, default=None, help="images per seed (of 6,102)")
    ap.add_argument("--no-dp", action="store_true", help="skip the DP-SGD target")
    ap.add_argument("--dp-epochs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--vae", choices=sorted(VAE_PRESETS), default="cifar10", help="VAE settings")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    rows = bench_cifar10_targets(
        range(args.first_seed, args.first_seed + args.seeds),
        epochs=[int(v) for v in args.epochs.split(",")] if not args.quick else _QUICK["epochs"],
        quick=args.quick,
        n_images=args.n_images,
        dp=not args.no_dp,
        dp_epochs=args.dp_epochs,
        vae=None if args.quick else VAE_PRESETS[args.vae],
        log=lambda s: print(s, flush=True),
    )
    for r in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

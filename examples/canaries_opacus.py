"""Gradient (Dirac) canaries in your own Opacus DP-SGD loop, audited from the logged iterates.

1. build the model and pick ``--m`` canary coordinates that public records hardly move
   (:func:`privaudit.quiet_coordinates`), make the gradient canaries and their secret coins
   (:func:`privaudit.make_gradient_canaries`, :func:`privaudit.draw_coins`) and save them;
2. train with Opacus as usual; :class:`privaudit.GradientCanaryInjector` adds each included
   canary's gradient inside the optimizer's step (clipped and noised like every sample; the
   accountant is untouched) and :class:`privaudit.IterateLog` keeps every iterate, saved with
   the run's facts (``IterateLog.save``);
3. ``privaudit canaries audit --iterates`` bounds eps and mu from every iterate (and, with
   ``--access final``, from the first and last model only) beside the accountant's eps,
   and ``privaudit verify`` recomputes the bundle.

Run ``python examples/canaries_opacus.py --out canaries_opacus`` (1-3 minutes on two busy
cores); ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from opacus import PrivacyEngine

from privaudit import (
    GradientCanaryInjector,
    IterateLog,
    draw_coins,
    load_adult,
    main,
    make_gradient_canaries,
    quiet_coordinates,
)


def run(out: Path, *, m: int = 1000, eps: float = 4.0, epochs: int = 3, seed: int = 0) -> dict:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    adult = load_adult()
    rows = np.random.default_rng(seed).permutation(adult.n_records)
    public, private = rows[:5000], rows[5000:25000]
    X = torch.tensor(adult.X, dtype=torch.float32)
    y = torch.tensor(adult.y, dtype=torch.long)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
    )
    n_params = sum(p.numel() for p in model.parameters())

    # 1. the canaries, on coordinates that public records hardly move, and their coins
    quiet = quiet_coordinates(model, adult.X[public], adult.y[public], m=m, seed=seed)
    canaries = make_gradient_canaries(n_params, m, seed=seed, candidates=quiet)
    coins = draw_coins(canaries, seed=seed)
    canaries.save(out / "canary_set.npz")
    coins.save(out / "coins.json")

    # 2. your own DP-SGD loop, with the injector and the iterate log
    data = torch.utils.data.TensorDataset(X[private], y[private])
    loader = torch.utils.data.DataLoader(data, batch_size=2048)
    engine = PrivacyEngine(accountant="rdp")
    warnings.filterwarnings("ignore", module="opacus")
    module, optimizer, loader = engine.make_private_with_epsilon(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
        data_loader=loader,
        target_epsilon=eps,
        target_delta=1e-5,
        epochs=epochs,
        max_grad_norm=1.0,
    )
    log = IterateLog()
    log.record(model)
    with GradientCanaryInjector(
        optimizer, canaries, coins, sample_rate=loader.sample_rate, seed=seed
    ):
        for _ in range(epochs):
            for xb, yb in loader:
                optimizer.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(module(xb), yb).backward()
                optimizer.step()
                log.record(model)
    accountant = float(engine.get_epsilon(1e-5))
    log.save(
        out / "iterates.npz",
        lr=1.0,
        expected_batch_size=optimizer.expected_batch_size,
        max_grad_norm=1.0,
        noise_multiplier=optimizer.noise_multiplier,
        sample_rate=loader.sample_rate,
        accountant_epsilon=accountant,
        delta=1e-5,
    )

    # 3. the audit from every iterate and from the final model, and the re-verification
    argv = [
        "canaries",
        "audit",
        "--set",
        str(out / "canary_set.npz"),
        "--coins",
        str(out / "coins.json"),
        "--iterates",
        str(out / "iterates.npz"),
    ]
    codes = {
        "iterates": main([*argv, "--out", str(out / "report"), "--claimed-epsilon", str(eps)]),
        "final": main([*argv, "--access", "final", "--out", str(out / "report-final")]),
    }
    codes["verify"] = main(["verify", str(out / "report")])
    return {"codes": codes, "accountant_epsilon": accountant}


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=Path("canaries_opacus"), help="output folder (replaced)"
    )
    p.add_argument("--m", type=int, default=1000, help="number of canaries")
    p.add_argument("--epsilon", type=float, default=4.0, help="the accountant's target eps")
    args = p.parse_args(argv)
    done = run(args.out, m=args.m, eps=args.epsilon)
    print("accountant eps", round(done["accountant_epsilon"], 3), "exit codes:", done["codes"])
    return 0


if __name__ == "__main__":
    sys.exit(_main())

"""One-run audit of a model trained outside privaudit, with canaries appended to its data.

The end-to-end example of issue 33 (Steinke, Nasr, Jagielski 2023, black-box setting):

1. a pool of UCI Adult records the model never trains on is written to ``<out>/pool.csv``;
   ``privaudit canaries make`` draws ``--m`` mislabelled canaries from it and writes the
   canary set, the **secret** coins (``coins.json``, kept apart) and the rows to append;
2. the trainer -- here plain scikit-learn, no privaudit inside -- reads the set and the coins
   and appends the included canaries to its training data with the data-level API
   (:func:`privaudit.append_canaries`; ``canaries_to_append.csv`` holds the same rows for
   any other framework), then trains a random forest;
3. the model's class probabilities on **every** canary (included or not) go to
   ``<out>/outputs.csv`` (``id``, ``prob_0``, ``prob_1``): that is all the audit needs
   from the model;
4. ``privaudit canaries audit`` scores each canary by the loss of its (wrong) label, bounds
   eps and mu at 95% confidence with guesses fixed in advance, checks the claim
   ``--claimed-epsilon`` and writes ``<out>/report``; ``privaudit verify`` recomputes it.

A random forest memorises its mislabelled training records, so the bound is large: the
model is not private, and a claim of eps = 1 is refuted (exit code 1). Bad input is
refused with exit code 2 and the reason: the script also shows a flipped coin.

Run ``python examples/canaries_own_model.py --out canaries_demo`` (10-40 s on two busy
cores); ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier

from privaudit import append_canaries, load_adult, load_canary_set, load_coins, main


def run(
    out: Path, *, m: int = 1000, n_train: int = 8000, claimed: float = 1.0, seed: int = 0
) -> dict:
    """Steps 1-4; returns the audit's ``results.json`` and the exit codes."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    adult = load_adult()
    rng = np.random.default_rng(seed)
    rows = rng.permutation(adult.n_records)
    train, pool = rows[:n_train], rows[n_train : n_train + 2 * m]
    columns = [f"x{j}" for j in range(adult.n_features)]
    pool_df = pd.DataFrame(adult.X[pool], columns=columns)
    pool_df["label"] = adult.y[pool]
    pool_df.to_csv(out / "pool.csv", index=False)

    # 1. the canaries and their secret coins
    made = out / "canaries"
    code_make = main(
        [
            "canaries",
            "make",
            str(made),
            "--kind",
            "mislabel",
            "--m",
            str(m),
            "--pool",
            str(out / "pool.csv"),
            "--seed",
            str(seed),
        ]
    )

    # 2. the user's own training, with the included canaries appended
    canaries = load_canary_set(made / "canary_set.npz")
    coins = load_coins(made / "coins.json", canaries)
    X, y = append_canaries(adult.X[train], adult.y[train], canaries, coins)
    model = RandomForestClassifier(n_estimators=30, random_state=seed, n_jobs=1).fit(X, y)

    # 3. the model's outputs on every canary
    probs = model.predict_proba(canaries.X)
    outputs = pd.DataFrame({"id": canaries.ids, "prob_0": probs[:, 0], "prob_1": probs[:, 1]})
    outputs.to_csv(out / "outputs.csv", index=False)

    # 4. the audit, its claim check and the re-verification
    audit = [
        "canaries",
        "audit",
        "--set",
        str(made / "canary_set.npz"),
        "--coins",
        str(made / "coins.json"),
        "--outputs",
        str(out / "outputs.csv"),
        "--k-pos",
        str(m // 10),
        "--k-neg",
        str(m // 10),
    ]
    code_audit = main([*audit, "--out", str(out / "report"), "--claimed-epsilon", str(claimed)])
    code_verify = main(["verify", str(out / "report")])

    # bad input: one flipped coin no longer matches the coins' fingerprint
    doc = json.loads((made / "coins.json").read_text())
    doc["included"] = ("0" if doc["included"][0] == "1" else "1") + doc["included"][1:]
    (out / "flipped_coins.json").write_text(json.dumps(doc))
    flipped = [
        a if a != str(made / "coins.json") else str(out / "flipped_coins.json") for a in audit
    ]
    code_tampered = main(flipped)
    results = json.loads((out / "report" / "results.json").read_text())
    return {
        "results": results,
        "codes": {
            "make": code_make,
            "audit": code_audit,
            "verify": code_verify,
            "tampered": code_tampered,
        },
    }


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=Path("canaries_demo"), help="output folder (replaced)"
    )
    p.add_argument("--m", type=int, default=1000, help="number of canaries")
    p.add_argument(
        "--n-train", type=int, default=8000, help="Adult records trained on besides the canaries"
    )
    p.add_argument("--claimed-epsilon", type=float, default=1.0, help="the eps claim to check")
    args = p.parse_args(argv)
    done = run(args.out, m=args.m, n_train=args.n_train, claimed=args.claimed_epsilon)
    c = done["results"]["canaries"]
    print(
        f"one-run eps lower bound {c['epsilon_lower_bound']:.3f}, mu-GDP lower bound "
        f"{c['mu_lower_bound']:.3f} ({c['m']} canaries, {c['n_included']} included)"
    )
    print("exit codes:", done["codes"])
    return 0


if __name__ == "__main__":
    sys.exit(_main())

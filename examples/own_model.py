"""Train a target model *outside* privaudit and save what an auditor brings to an audit.

Writes, into ``--out`` (default ``examples/own_model_out``):

* ``target.skops`` (scikit-learn MLP, ``--framework sklearn``) or ``target.safetensors``
  (PyTorch MLP from ``own_model_nets.py:adult_mlp``, ``--framework torch``);
* ``members.txt`` / ``non_members.txt``: the ids of the records that trained the target
  and of audited records it never saw (one id per line): each of the ``--n-audited``
  records is a member by its own fair coin, the draw Steinke et al.'s one-run eps bound
  assumes (the configs declare it: ``randomised_split: true``);
* ``population.txt``: records the attacker may use (disjoint from both).

Then audit it:  ``privaudit run examples/own_model.yaml`` (sklearn) or
``privaudit run examples/own_model_torch.yaml`` (torch). The training recipe in those
configs is the one used here, as the reference-model attacks assume.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from privaudit import load_adult

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", choices=["sklearn", "torch"], default="sklearn")
    ap.add_argument("--out", type=Path, default=HERE / "own_model_out")
    ap.add_argument(
        "--n-audited", type=int, default=2000, help="audited records (about half members)"
    )
    ap.add_argument("--n-population", type=int, default=4000)
    ap.add_argument("--epochs", type=int, default=100, help="torch: training epochs")
    ap.add_argument("--max-iter", type=int, default=200, help="sklearn: MLP iterations")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)

    data = load_adult()
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(data.n_records)
    n_a, n_p = args.n_audited, args.n_population
    audited = data.record_ids[perm[:n_a]]
    coin = rng.random(n_a) < 0.5  # one fair coin per audited record: member or not
    members, non_members = audited[coin], audited[~coin]
    population = data.record_ids[perm[n_a : n_a + n_p]]
    train = data.subset(members)
    args.out.mkdir(parents=True, exist_ok=True)

    if args.framework == "sklearn":
        import skops.io as sio
        from sklearn.neural_network import MLPClassifier

        clf = MLPClassifier(
            hidden_layer_sizes=(128,),
            alpha=0.0,
            max_iter=args.max_iter,
            tol=0.0,
            n_iter_no_change=10**6,
            random_state=args.seed,
        )
        clf.fit(train.X, train.y)
        sio.dump(clf, args.out / "target.skops")  # a plain estimator file (no privaudit needed)
        acc = float(np.mean(clf.predict(data.subset(non_members).X) == data.subset(non_members).y))
    else:
        import own_model_nets
        import torch
        from safetensors.torch import save_file

        torch.manual_seed(args.seed)
        net = own_model_nets.adult_mlp(n_features=train.X.shape[1], hidden=128, n_classes=2)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        X = torch.tensor(train.X, dtype=torch.float32)
        y = torch.as_tensor(train.y)
        for _ in range(args.epochs):
            for idx in torch.randperm(len(y)).split(64):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
                opt.step()
        save_file(net.state_dict(), str(args.out / "target.safetensors"))
        test = data.subset(non_members)
        with torch.no_grad():
            pred = net(torch.as_tensor(test.X, dtype=torch.float32)).argmax(1).numpy()
        acc = float(np.mean(pred == test.y))

    for name, ids in (
        ("members", members),
        ("non_members", non_members),
        ("population", population),
    ):
        (args.out / f"{name}.txt").write_text("\n".join(map(str, ids)) + "\n", encoding="utf-8")
    print(
        f"{args.framework} target written to {args.out}: {members.size} members, {non_members.size} non-members, "
        f"{n_p} population records; accuracy on the non-members {acc:.3f}"
    )


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(HERE))
    main()

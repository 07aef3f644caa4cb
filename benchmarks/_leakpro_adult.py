"""LeakPro's side of ``bench_vs_leakpro.py``: its tabular (Adult) example, run with LeakPro's
own API under LeakPro's interpreter (not a test; privaudit is not imported here).

Run: ``LEAKPRO_PYTHON _leakpro_adult.py check`` (imports LeakPro, prints where from), ``... prepare EXAMPLE_DIR WORK_DIR --n-records N [--seed S]``
once (untimed: LeakPro's example preprocessing of ``adult.data`` / ``adult.test`` into the
population file), then ``... audit WORK_DIR [--epochs 50] [--hidden 128] [--lr 0.01]
[--batch-size 128] [--n-shadow 8] [--seed S]`` per timed round, in a fresh ``WORK_DIR``
copy each time (LeakPro caches shadow models in its output directory).

``audit`` does what LeakPro's example notebook does (``examples/mia/tabular_mia/main.ipynb``,
with the handler split of ``examples/mia/cifar``): draws the target's train / test indices
(``f_train = f_test = 0.5`` of the population file, so that the target and every shadow model
train on the same number of records as privaudit's target and references), trains the
target with the handler's ``train``, writes ``target_model.pkl`` and
``LeakPro.make_mia_metadata``'s ``model_metadata.pkl``, then ``LeakPro(...).run_audit()``
with LiRA offline and RMIA offline, ``n_shadow`` shadow models each (LeakPro trains them
once and reuses them for the second attack). The model is privaudit's bench MLP
(``d - hidden - 2``, tanh, cross-entropy, plain SGD, batch 128, shuffled every epoch), not
the example's ``AdultNet`` (ReLU 64-64-1, BCE, momentum 0.8, 10 epochs). The training loop
is a lean one written here (no progress bar, one ``.item()`` per epoch), so LeakPro is not
charged for the example's per-batch bookkeeping. Prints one JSON line: the target's and the
attacks' figures (AUC).

torchvision (imported by LeakPro at import time) on this machine's disk is a CUDA build
whose C++ ops cannot load against the CPU torch; torchvision's Python part then fails on
registering fake kernels for ``torchvision::nms`` / ``qnms``. Those two schemas are declared
below before LeakPro is imported (the tabular audit never calls them).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

MODEL_SOURCE = '''
from torch import nn


class AdultMLP(nn.Module):
    """privaudit's bench MLP: Linear(d, hidden) - tanh - Linear(hidden, n_classes)."""

    def __init__(self, n_features, hidden, n_classes):
        super().__init__()
        self.n_features = n_features
        self.hidden = hidden
        self.n_classes = n_classes
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, n_classes)
        )

    def forward(self, x):
        return self.net(x)
'''


def _declare_torchvision_ops() -> None:
    lib = torch.library.Library("torchvision", "DEF")
    for name in ("nms", "qnms"):
        try:
            lib.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:  # a working torchvision defined them already
            pass
    _declare_torchvision_ops.lib = lib  # type: ignore[attr-defined]


_declare_torchvision_ops()

from leakpro import LeakPro  # noqa: E402
from leakpro.input_handler.abstract_input_handler import AbstractInputHandler  # noqa: E402
from leakpro.schemas import EvalOutput, TrainingOutput  # noqa: E402


class AdultHandler(AbstractInputHandler):
    """The population (``UserDataset``), ``train`` and ``eval`` for LeakPro."""

    class UserDataset(AbstractInputHandler.UserDataset):
        def __init__(self, data: torch.Tensor, targets: torch.Tensor, **kwargs: object) -> None:
            self.data = data.float()
            self.targets = targets.long()
            for key, value in kwargs.items():
                setattr(self, key, value)

    def train(  # type: ignore[override]
        self,
        dataloader: torch.utils.data.DataLoader,
        model: torch.nn.Module,
        criterion: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        epochs: int,
    ) -> TrainingOutput:
        model.train()
        total, correct, loss_sum = 0, torch.zeros(()), torch.zeros(())
        for _ in range(epochs):
            total, correct, loss_sum = 0, torch.zeros(()), torch.zeros(())
            for xb, yb in dataloader:
                optimizer.zero_grad()
                out = model(xb)
                loss = criterion(out, yb.long())
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    loss_sum += loss.detach() * yb.numel()
                    correct += (out.argmax(1) == yb).sum()
                total += yb.numel()
        model.eval()
        metrics = EvalOutput(accuracy=float(correct) / total, loss=float(loss_sum) / total)
        return TrainingOutput(model=model, metrics=metrics)

    def eval(  # type: ignore[override]
        self,
        loader: torch.utils.data.DataLoader,
        model: torch.nn.Module,
        criterion: torch.nn.Module,
        device: str = "cpu",
    ) -> EvalOutput:
        model.eval()
        total, correct, loss_sum = 0, 0, 0.0
        with torch.no_grad():
            for xb, yb in loader:
                out = model(xb)
                loss_sum += float(criterion(out, yb.long())) * yb.numel()
                correct += int((out.argmax(1) == yb).sum())
                total += yb.numel()
        return EvalOutput(accuracy=correct / total, loss=loss_sum / total)


def prepare(example: Path, work: Path, n_records: int, seed: int) -> None:
    """LeakPro's example preprocessing (its ``preprocess_adult_dataset``, run on a copy of its
    CSV files), a seeded draw of ``n_records`` records, saved as the population file."""
    import shutil

    work.mkdir(parents=True, exist_ok=True)
    raw = work / "raw"
    raw.mkdir(exist_ok=True)
    for name in ("adult.data", "adult.test"):
        shutil.copy(example / "data" / name, raw / name)
    sys.path.insert(0, str(example / "utils"))
    from adult_data_preparation import preprocess_adult_dataset  # LeakPro's example code

    full = preprocess_adult_dataset(str(raw))
    rng = np.random.default_rng(seed)
    if n_records > len(full.y):
        raise SystemExit(f"--n-records: expected at most {len(full.y)}, found {n_records}")
    keep = np.sort(rng.choice(len(full.y), size=n_records, replace=False))
    population = AdultHandler.UserDataset(full.x[keep], full.y[keep])
    (work / "data").mkdir(exist_ok=True)
    with open(work / "data" / "adult_population.pkl", "wb") as f:
        pickle.dump(population, f)
    (work / "adult_mlp.py").write_text(MODEL_SOURCE)
    base = yaml.safe_load((example / "audit.yaml").read_text())
    (work / "example_audit.yaml").write_text(yaml.safe_dump(base))


def audit(work: Path, args: argparse.Namespace) -> dict[str, object]:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    with open(work / "data" / "adult_population.pkl", "rb") as f:
        population = pickle.load(f)
    n = len(population)
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(n)
    train_idx, test_idx = np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])
    sys.path.insert(0, str(work))
    from adult_mlp import AdultMLP

    torch.manual_seed(args.seed)
    model = AdultMLP(int(population.data.shape[1]), args.hidden, 2)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    train_loader = torch.utils.data.DataLoader(
        AdultHandler.UserDataset(population.data[train_idx], population.targets[train_idx]),
        batch_size=args.batch_size,
        shuffle=True,
    )
    test_loader = torch.utils.data.DataLoader(
        AdultHandler.UserDataset(population.data[test_idx], population.targets[test_idx]),
        batch_size=args.batch_size,
        shuffle=False,
    )
    handler = AdultHandler()
    trained = handler.train(train_loader, model, criterion, optimizer, args.epochs)
    test_result = handler.eval(test_loader, trained.model, criterion)
    (work / "target").mkdir(exist_ok=True)
    torch.save(trained.model.state_dict(), work / "target" / "target_model.pkl")
    meta = LeakPro.make_mia_metadata(
        train_result=trained,
        optimizer=optimizer,
        loss_fn=criterion,
        dataloader=train_loader,
        test_result=test_result,
        epochs=args.epochs,
        train_indices=[int(i) for i in train_idx],
        test_indices=[int(i) for i in test_idx],
        dataset_name="adult",
    )
    with open(work / "target" / "model_metadata.pkl", "wb") as f:
        pickle.dump(meta, f)
    t_target = time.perf_counter() - t0

    cfg = yaml.safe_load((work / "example_audit.yaml").read_text())
    shadows = {"num_shadow_models": args.n_shadow, "training_data_fraction": 0.5, "online": False}
    cfg["audit"]["attack_list"] = [{"attack": "lira", **shadows}, {"attack": "rmia", **shadows}]
    cfg["audit"]["random_seed"] = args.seed
    cfg["audit"]["output_dir"] = str(work / "leakpro_output")
    cfg["target"] = {
        "module_path": str(work / "adult_mlp.py"),
        "model_class": "AdultMLP",
        "target_folder": str(work / "target"),
        "data_path": str(work / "data" / "adult_population.pkl"),
    }
    (work / "audit.yaml").write_text(yaml.safe_dump(cfg))
    results = LeakPro(AdultHandler, str(work / "audit.yaml")).run_audit()
    out: dict[str, object] = {
        "n_population": n,
        "n_features": int(population.data.shape[1]),
        "n_train": len(train_idx),
        "target_train_accuracy": trained.metrics.accuracy,
        "target_test_accuracy": test_result.accuracy,
        "target_seconds": t_target,
        "audit_seconds": time.perf_counter() - t0 - t_target,
    }
    for res in results:
        name = str(getattr(res, "result_name", getattr(res, "attack_name", "attack")))
        roc_auc = getattr(res, "roc_auc", None)
        out[f"auc_{name}"] = None if roc_auc is None else float(np.asarray(roc_auc).ravel()[0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("example", type=Path)
    p.add_argument("work", type=Path)
    p.add_argument("--n-records", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("check")
    a = sub.add_parser("audit")
    a.add_argument("work", type=Path)
    a.add_argument("--epochs", type=int, default=50)
    a.add_argument("--hidden", type=int, default=128)
    a.add_argument("--lr", type=float, default=0.01)
    a.add_argument("--batch-size", type=int, default=128)
    a.add_argument("--n-shadow", type=int, default=8)
    a.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.cmd == "check":
        import leakpro

        print(
            json.dumps({"leakpro": str(Path(leakpro.__file__).parent), "torch": torch.__version__})
        )
    elif args.cmd == "prepare":
        prepare(args.example, args.work, args.n_records, args.seed)
    else:
        print(json.dumps(audit(args.work, args)), flush=True)


if __name__ == "__main__":
    main()

"""A multi-model training loop through the artifact store (run as a subprocess by tests).

Usage: python store_training_loop.py STORE_ROOT N_MODELS LOG_FILE SLEEP_S

Trains N_MODELS logistic regressions on bootstrap halves of a fixed synthetic dataset,
each cached in the store; appends "trained <i>" to LOG_FILE each time a model is
actually trained (not loaded). Prints the coefficients' checksum at the end.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.seeds import spawn_seeds
from privaudit.runtime.store import ArtifactStore


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    return X, y


class Task:
    def __init__(self, root: str, log: str, sleep_s: float) -> None:
        self.root, self.log, self.sleep_s = root, log, sleep_s

    def __call__(self, spec: tuple[int, int]) -> np.ndarray:
        i, seed = spec
        X, y = _data()
        store = ArtifactStore(self.root)

        def create() -> np.ndarray:
            rng = np.random.default_rng(seed)
            idx = rng.choice(len(y), size=len(y) // 2, replace=False)
            coef = LogisticRegression().fit(X[idx], y[idx]).coef_.ravel()
            time.sleep(self.sleep_s)
            with open(self.log, "a") as fh:
                fh.write(f"trained {i}\n")
            return coef

        def save(obj: np.ndarray, path: Path) -> None:
            with open(path, "wb") as fh:
                np.save(fh, obj, allow_pickle=False)

        def load(path: Path) -> np.ndarray:
            return np.load(path, allow_pickle=False)

        parts = {
            "role": "ref",
            "index": i,
            "seed": seed,
            "data": hashlib.sha256(X.tobytes()).hexdigest(),
        }
        return store.get_or_create(parts, create, save, load, suffix=".npy")


def main() -> None:
    root, n, log, sleep_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    seeds = spawn_seeds(0, n, purpose="reference-models")
    coefs = LocalExecutor(1, progress=False).map(
        Task(root, log, sleep_s), list(enumerate(seeds)), desc="models"
    )
    print(hashlib.sha256(np.stack(coefs).tobytes()).hexdigest())


if __name__ == "__main__":
    main()

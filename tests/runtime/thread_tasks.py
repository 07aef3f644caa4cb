"""A task that reports the thread pools of the process it runs in.

scikit-learn is imported at module level on purpose: a process-pool worker imports this
module while it unpickles its function, which is when scikit-learn's OpenMP runtime
loads; a thread limit applied before that point would miss it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier  # loads the OpenMP runtime


def thread_report(_: int) -> dict[str, Any]:
    """The worker's pid, thread-related environment and threadpoolctl's view of its pools."""
    from threadpoolctl import threadpool_info

    X = np.random.default_rng(0).normal(size=(64, 3))
    HistGradientBoostingClassifier(max_iter=2).fit(X, (X[:, 0] > 0).astype(int))
    return {
        "pid": os.getpid(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "pools": [
            (p["user_api"], p["internal_api"], int(p["num_threads"])) for p in threadpool_info()
        ],
    }

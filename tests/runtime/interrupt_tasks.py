"""Tasks and a driver for the interrupt tests (picklable; run as a script by the tests).

Usage: python interrupt_tasks.py STORE_ROOT N_ITEMS EPOCHS N_JOBS

Trains N_ITEMS fake models through ``LocalExecutor(N_JOBS)`` and the artifact store,
under :func:`privaudit.runtime.interrupts.handled` (as the CLI does). Each "model" trains
for EPOCHS epochs of 50 ms and, like scikit-learn's MLP, catches KeyboardInterrupt and
returns what it has. Prints ``started`` once a task runs, and at the end the exit status
the CLI would give (``exit 130`` after a SIGINT).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from privaudit.runtime import interrupts
from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.store import ArtifactStore


def _save(obj: dict[str, int], path: Path) -> None:
    path.write_text(json.dumps(obj))


def _load(path: Path) -> dict[str, int]:
    return dict(json.loads(path.read_text()))


def swallowing_fit(epochs: int, marker: Path | None = None) -> dict[str, int]:
    """A fit that stops early on Ctrl-C and returns its half-trained state."""
    done = 0
    try:
        for _ in range(epochs):
            if marker is not None and not marker.exists():
                marker.write_text(str(os.getpid()))
            time.sleep(0.05)
            done += 1
    except KeyboardInterrupt:
        pass  # "Training interrupted by user."
    return {"epochs": done, "of": epochs}


class SwallowingTask:
    def __init__(self, root: str, epochs: int, marker: str) -> None:
        self.root, self.epochs, self.marker = root, epochs, marker

    def __call__(self, i: int) -> dict[str, int]:
        store = ArtifactStore(self.root)
        return store.get_or_create(
            {"model": i},
            lambda: swallowing_fit(self.epochs, Path(self.marker)),
            _save,
            _load,
            suffix=".json",
        )


def sigint_ignored(_: int) -> tuple[bool, int]:
    """Whether SIGINT is ignored in the process that runs the task, and its pid."""
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN, os.getpid()


def main() -> int:
    root, n, epochs, n_jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    marker = Path(root) / "started"
    with interrupts.handled() as session:
        with LocalExecutor(n_jobs, progress=False) as ex:
            ex.start()
            print("pids", *ex.worker_pids(), flush=True)
            ex.map(SwallowingTask(root, epochs, str(marker)), list(range(n)), desc="fits")
    print("exit", session.exit_code, flush=True)
    return session.exit_code


if __name__ == "__main__":
    sys.exit(main())

"""The artifact store shared by several processes at once (issue 32, item 2): writers that
race for one key leave one complete entry (one writer's bytes, never a mix or a torn file),
readers never see a partial one, and a store travels to another process (a Ray worker on
another node, in another folder) by its absolute path."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.runtime.store import ArtifactStore

N_WRITERS = 6
SIZE = 1 << 19  # 4 MiB of float64 per payload: a write takes a while


def _save(obj: np.ndarray, path: Path) -> None:
    with open(path, "wb") as fh:
        np.save(fh, obj)


def _load(path: Path) -> np.ndarray:
    return np.load(path)


def _writer(root: str, barrier: Any, who: int, out: Any) -> None:
    store = ArtifactStore(root)
    barrier.wait()  # every writer starts its get_or_create at the same moment
    value = store.get_or_create(
        {"what": "raced"}, lambda: np.full(SIZE, float(who)), _save, _load, suffix=".npy"
    )
    out.put((who, float(value[0]), bool(np.all(value == value[0])), store.stats.created))


def _reader(root: str, barrier: Any, out: Any) -> None:
    store = ArtifactStore(root)
    barrier.wait()
    seen = set()
    for _ in range(400):  # while the writers write: an entry is absent or whole
        key = store.key({"what": "raced"})
        manifest = store._verify(key)
        if manifest is not None:
            a = _load(store.entry_dir(key) / manifest["payload"])
            seen.add((float(a[0]), bool(np.all(a == a[0])), a.size))
    out.put(sorted(seen))


def test_racing_writers_leave_one_whole_entry(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(N_WRITERS + 1)
    out: Any = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(tmp_path), barrier, i, out)) for i in range(N_WRITERS)
    ]
    procs.append(ctx.Process(target=_reader, args=(str(tmp_path), barrier, out)))
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    seen = next(r for r in results if isinstance(r, list))
    writers = [r for r in results if isinstance(r, tuple)]
    assert all(homogeneous for _, _, homogeneous, _ in writers)
    store = ArtifactStore(tmp_path)
    assert len(store.keys()) == 1  # one entry, complete and checksummed
    kept = store.get_or_create({"what": "raced"}, lambda: None, _save, _load, suffix=".npy")
    assert store.stats.hits == 1 and np.all(kept == kept[0]) and kept.size == SIZE
    assert float(kept[0]) in {float(w) for w in range(N_WRITERS)}
    # what the reader saw while they raced: nothing, or one writer's whole payload
    assert all(homogeneous and size == SIZE for _, homogeneous, size in seen)
    assert not [p for p in (tmp_path / "tmp").iterdir()]  # no leftovers
    assert sum(created for *_, created in writers) >= 1


def test_store_travels_by_its_absolute_root(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    store = ArtifactStore("cache")  # relative, as a config's cache_dir may be
    store.put({"k": 1}, [1, 2], lambda o, p: p.write_text(str(o)))
    monkeypatch.chdir(os.sep)  # a worker elsewhere
    there = pickle.loads(pickle.dumps(store))
    assert there.root == tmp_path / "cache" and there.contains({"k": 1})

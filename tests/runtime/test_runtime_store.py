"""Artifact store: keys, atomic writes, verification, resume after SIGKILL, no stale reuse."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from privaudit.errors import CacheError, CacheWarning, InvalidInputError
from privaudit.runtime.store import ArtifactStore, canonical_json, hash_key

HERE = Path(__file__).parent


def _save(obj: object, path: Path) -> None:
    path.write_text(json.dumps(obj))


def _load(path: Path) -> object:
    return json.loads(path.read_text())


class Counter:
    def __init__(self, value: object) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def test_create_then_hit(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    make = Counter({"a": [1, 2]})
    parts = {"role": "ref", "seed": 1}
    assert store.get_or_create(parts, make, _save, _load) == {"a": [1, 2]}
    assert store.get_or_create(parts, make, _save, _load) == {"a": [1, 2]}
    assert make.calls == 1
    assert (store.stats.created, store.stats.hits, store.stats.corrupt) == (1, 1, 0)
    assert store.contains(parts) and len(store.keys()) == 1
    # a fresh store object on the same root sees the entry (it is on disk)
    other = ArtifactStore(tmp_path)
    assert other.get_or_create(parts, make, _save, _load) == {"a": [1, 2]}
    assert make.calls == 1
    m = next(iter(other.manifests()))
    assert m["key_parts"] == {"role": "ref", "seed": 1}
    assert not list((tmp_path / "tmp").iterdir())  # no temp leftovers


def test_key_canonical_and_sensitive() -> None:
    base = {"seed": 1, "settings": {"C": 1.0, "max_iter": 100}, "ids": np.arange(5)}
    same = {"settings": {"max_iter": 100, "C": 1.0}, "ids": np.arange(5), "seed": np.int64(1)}
    assert hash_key(base) == hash_key(same)
    changed = [
        {**base, "seed": 2},
        {**base, "settings": {"C": 2.0, "max_iter": 100}},
        {**base, "ids": np.arange(1, 6)},
        {**base, "ids": np.arange(5).astype(np.int32)},  # dtype is part of the data
        {**base, "ids": np.arange(5).reshape(1, 5)},
    ]
    keys = {hash_key(c) for c in changed}
    assert len(keys) == len(changed) and hash_key(base) not in keys
    assert "__ndarray__" in canonical_json({"x": np.zeros(3)})
    assert canonical_json({"x": float("inf")}) != canonical_json({"x": float("-inf")})


def test_key_includes_store_format_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from privaudit.runtime import store as store_mod

    k1 = hash_key({"a": 1})
    monkeypatch.setattr(store_mod, "STORE_FORMAT_VERSION", "999")
    assert hash_key({"a": 1}) != k1
    monkeypatch.setattr(store_mod, "_package_version", lambda: "9.9.9")
    assert hash_key({"a": 1}) != k1


@pytest.mark.parametrize("bad", [{1: "x"}, {"x": object()}, ["not", "a", "mapping"]])
def test_key_rejects_unstable_values(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        hash_key(bad)  # type: ignore[arg-type]


def test_changed_data_or_settings_never_reuse_stale_entry(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    X1 = np.arange(10.0)
    X2 = X1.copy()
    X2[3] += 1e-9  # a tiny change to the data

    def parts(X: np.ndarray, C: float) -> dict[str, object]:
        return {"data": X, "settings": {"C": C}, "seed": 0, "role": "target"}

    def train(X: np.ndarray, C: float) -> Counter:
        return Counter(float(X.sum() * C))

    t1 = train(X1, 1.0)
    assert store.get_or_create(parts(X1, 1.0), t1, _save, _load) == pytest.approx(45.0)
    t2 = train(X2, 1.0)
    v2 = store.get_or_create(parts(X2, 1.0), t2, _save, _load)
    t3 = train(X1, 2.0)
    v3 = store.get_or_create(parts(X1, 2.0), t3, _save, _load)
    assert t2.calls == 1 and t3.calls == 1  # recomputed, not served from cache
    assert v2 == pytest.approx(45.0 + 1e-9) and v3 == pytest.approx(90.0)
    assert len(store.keys()) == 3


def test_corrupt_payload_is_recomputed(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    parts = {"k": 1}
    store.get_or_create(parts, Counter([1, 2, 3]), _save, _load)
    entry = store.entry_dir(store.key(parts))
    payload = entry / "payload.bin"
    payload.write_text(json.dumps([9, 9, 9]))  # silently changed on disk
    again = Counter([1, 2, 3])
    fresh = ArtifactStore(tmp_path)
    with pytest.warns(CacheWarning, match="does not match its checksum"):
        assert fresh.get_or_create(parts, again, _save, _load) == [1, 2, 3]
    assert again.calls == 1 and fresh.stats.corrupt == 1
    # the replacement is a valid entry again
    assert fresh.get_or_create(parts, again, _save, _load) == [1, 2, 3] and again.calls == 1


@pytest.mark.parametrize("damage", ["no_manifest", "bad_json", "missing_payload", "wrong_key"])
def test_partial_entries_never_read(tmp_path: Path, damage: str) -> None:
    store = ArtifactStore(tmp_path)
    parts = {"k": damage}
    store.get_or_create(parts, Counter("good"), _save, _load)
    entry = store.entry_dir(store.key(parts))
    manifest = entry / "manifest.json"
    if damage == "no_manifest":
        manifest.unlink()
    elif damage == "bad_json":
        manifest.write_text(manifest.read_text()[:20])
    elif damage == "missing_payload":
        (entry / "payload.bin").unlink()
    else:
        m = json.loads(manifest.read_text())
        m["key"] = "0" * 64
        manifest.write_text(json.dumps(m))
    if damage != "missing_payload":
        (entry / "payload.bin").write_text(json.dumps("stale"))
    assert not store.contains(parts)
    again = Counter("good")
    with pytest.warns(CacheWarning, match="treated as missing"):
        assert store.get_or_create(parts, again, _save, _load) == "good"
    assert again.calls == 1 and store.contains(parts)


def test_load_failure_is_recomputed(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    store.get_or_create({"k": 1}, Counter(1), _save, _load)

    def broken_load(_p: Path) -> object:
        raise ValueError("cannot parse")

    again = Counter(1)
    with pytest.warns(CacheWarning, match="payload does not load: ValueError: cannot parse"):
        assert store.get_or_create({"k": 1}, again, _save, broken_load) == 1
    assert again.calls == 1 and store.stats.corrupt == 1


@pytest.mark.parametrize("keep", [0, 0.5])
def test_truncated_entry_warns_and_is_recomputed(tmp_path: Path, keep: float) -> None:
    """What a power cut can leave (a payload truncated to nothing or half): a warning,
    then the artifact is computed again and the entry replaced; never a crash."""
    store = ArtifactStore(tmp_path)
    parts = {"k": "truncated"}
    store.get_or_create(parts, Counter(list(range(100))), _save, _load)
    payload = store.entry_dir(store.key(parts)) / "payload.bin"
    data = payload.read_bytes()
    payload.write_bytes(data[: int(len(data) * keep)])
    again = Counter(list(range(100)))
    with pytest.warns(CacheWarning, match=r"entry [0-9a-f]{12} failed to load .*checksum"):
        assert store.get_or_create(parts, again, _save, _load) == list(range(100))
    assert again.calls == 1 and store.contains(parts)
    assert json.loads(payload.read_text()) == list(range(100))


def test_writes_are_a_rename_of_a_complete_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry appears by one os.replace of a folder of fsynced files and a manifest."""
    store = ArtifactStore(tmp_path)
    seen: list[tuple[str, str, list[str]]] = []
    real = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        seen.append((Path(src).parent.name, Path(dst).parent.parent.name, sorted(os.listdir(src))))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    store.put({"k": 1}, [1], _save)
    assert seen == [("tmp", "objects", ["manifest.json", "payload.bin"])]


def test_failed_save_leaves_nothing(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)

    def bad_save(_obj: object, path: Path) -> None:
        path.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.get_or_create({"k": 1}, Counter(1), bad_save, _load)
    assert store.keys() == [] and not list((tmp_path / "tmp").iterdir())

    with pytest.raises(CacheError, match="no file"):
        store.put({"k": 2}, 1, lambda _o, _p: None)


def test_clean_tmp_removes_dead_writers(tmp_path: Path) -> None:
    import socket

    store = ArtifactStore(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = tmp_path / "tmp" / f"{'a' * 64}__{socket.gethostname()}__{proc.pid}__x"
    alive = tmp_path / "tmp" / f"{'b' * 64}__{socket.gethostname()}__{os.getpid()}__y"
    dead.mkdir()
    alive.mkdir()
    assert store.clean_tmp() == 1
    assert not dead.exists() and alive.exists()


def test_store_is_picklable_by_root(tmp_path: Path) -> None:
    import pickle

    store = ArtifactStore(tmp_path)
    store.stats.created = 5
    clone = pickle.loads(pickle.dumps(store))
    assert clone.root == store.root and clone.stats.created == 0


def test_resume_after_sigkill(tmp_path: Path) -> None:
    """Kill a multi-model training loop with SIGKILL; the rerun trains only the rest."""
    root, log = tmp_path / "store", tmp_path / "log.txt"
    n = 8
    cmd = [sys.executable, str(HERE / "store_training_loop.py"), str(root), str(n), str(log)]
    proc = subprocess.Popen([*cmd, "0.25"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    store = ArtifactStore(root)
    deadline = time.monotonic() + 60
    while len(store.keys()) < 3:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the training loop made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = set(store.keys())
    assert 3 <= len(finished) < n, "kill came too late to test resuming"
    trained_before = log.read_text().split()
    # no entry is half-written: every key present verifies; a model in flight may be logged
    # as trained but not yet stored, never the reverse
    assert len(finished) <= len(trained_before) // 2

    log.unlink()
    rerun = subprocess.run([*cmd, "0"], capture_output=True, text=True, check=True)
    retrained = log.read_text().split()[1::2]
    assert len(retrained) == n - len(finished)
    assert len(store.keys()) == n
    # the resumed run gives exactly what an uninterrupted run gives
    clean_root, clean_log = tmp_path / "clean", tmp_path / "clean.txt"
    clean = subprocess.run(
        [
            sys.executable,
            str(HERE / "store_training_loop.py"),
            str(clean_root),
            str(n),
            str(clean_log),
            "0",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert rerun.stdout == clean.stdout
    ArtifactStore(root).clean_tmp()
    assert not list((root / "tmp").iterdir())

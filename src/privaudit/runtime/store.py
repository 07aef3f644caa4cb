"""A content-addressed artifact store: trained models and signal tables, cached safely.

Every artifact (a trained model, a signal table) is stored under a **key** that is the
SHA-256 of a canonical JSON rendering of *everything that produced it*:

.. code-block:: text

    key = sha256( canonical_json({**key_parts,
                                  "__store_format__": STORE_FORMAT_VERSION,
                                  "__privaudit__": privaudit.__version__}) )

``key_parts`` is given by the caller and must name the dataset fingerprint, the ids of
the training records, the trainer's ``settings()``, the seed and the role of the model
(see :mod:`privaudit.membership.experiment`). Canonical JSON means sorted keys, no spaces,
numpy scalars as Python numbers, tuples as lists, and numpy arrays replaced by the
SHA-256 of their bytes together with dtype and shape. Hence a changed dataset, training
set, setting, seed, store format or package version gives a different key, and a stale
entry can never be returned for a new question.

Layout under ``root``::

    objects/<k[:2]>/<k>/manifest.json     key, key_parts, files + sha256, created
    objects/<k[:2]>/<k>/<payload files>   written by the caller's ``save_fn``
    tmp/<k>__<host>__<pid>__<nonce>/        entries being written (never read)

Writes are atomic: an entry is built in ``tmp/`` (payload files, then the manifest,
each flushed and ``fsync``-ed), then renamed into ``objects/`` with one ``os.replace``
of the directory, and the parent directory is ``fsync``-ed. A process killed at any
point leaves either no entry or a complete one. An entry is returned only after its
manifest parses, names the same key and every file's SHA-256 matches; otherwise it is
treated as missing (counted in :attr:`ArtifactStore.stats`, with a
:class:`~privaudit.errors.CacheWarning`), recomputed and replaced.

Only a task that completed normally enters the store: :meth:`ArtifactStore.get_or_create`
marks the interrupt counter of :mod:`privaudit.runtime.interrupts` before ``create_fn``
and refuses the write (raising :class:`~privaudit.runtime.interrupts.Interrupted`) when
a SIGINT or SIGTERM arrived meanwhile, so a trainer that swallows the signal and returns
a half-trained model (scikit-learn's ``MLPClassifier`` does) never gets it cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import socket
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from privaudit._validation import fail
from privaudit.errors import CacheError, CacheWarning
from privaudit.runtime import interrupts

__all__ = [
    "STORE_FORMAT_VERSION",
    "ArtifactStore",
    "StoreStats",
    "canonical_json",
    "hash_key",
    "kept_summary",
    "opened_stores",
]

STORE_FORMAT_VERSION = "1"
_MANIFEST = "manifest.json"
_PAYLOAD = "payload"
_SEP = "__"

T = TypeVar("T")

#: Suffixes of payloads that hold arrays (signal tables, task results); any other payload
#: is a model or generator (skops, safetensors, ...), as :meth:`ArtifactStore.census` counts.
_ARRAY_SUFFIXES = frozenset({".npy", ".npz", ".json"})

# roots of the stores opened in this process (not in workers: unpickling does not add)
_OPENED: dict[Path, None] = {}


def opened_stores() -> list[Path]:
    """Roots of the artifact stores this process opened, in order (for the CLI's summary
    after an interrupt)."""
    return list(_OPENED)


def _package_version() -> str:
    from privaudit._version import __version__

    return str(__version__)


def _canonical(v: Any, path: str) -> Any:
    if v is None or isinstance(v, bool | str):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        f = float(v)
        if not math.isfinite(f):
            return {"__float__": repr(f)}
        return f
    if isinstance(v, np.ndarray):
        a = np.ascontiguousarray(v)
        if a.dtype.kind == "O":
            a = a.astype(str)
        digest = hashlib.sha256(a.tobytes()).hexdigest()
        return {"__ndarray__": digest, "dtype": a.dtype.str, "shape": list(a.shape)}
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise fail(f"{path} keys", "strings", repr(k))
            out[k] = _canonical(x, f"{path}.{k}")
        return out
    if isinstance(v, list | tuple):
        return [_canonical(x, f"{path}[{i}]") for i, x in enumerate(v)]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _canonical(
            {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
            | {"__class__": type(v).__qualname__},
            path,
        )
    raise fail(path, "JSON-able values, numpy scalars or arrays", type(v).__name__)


def canonical_json(obj: Mapping[str, Any]) -> str:
    """Canonical JSON of ``obj``: sorted keys, compact, arrays replaced by their SHA-256.

    Raises :class:`~privaudit.errors.InvalidInputError` on values that have no stable
    rendering (arbitrary objects, non-string mapping keys).
    """
    return json.dumps(
        _canonical(obj, "key_parts"), sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )


def hash_key(key_parts: Mapping[str, Any]) -> str:
    """The store key of ``key_parts``: SHA-256 (hex) of their canonical JSON plus versions."""
    if not isinstance(key_parts, Mapping):
        raise fail("key_parts", "a mapping", type(key_parts).__name__)
    full = dict(key_parts)
    full["__store_format__"] = STORE_FORMAT_VERSION
    full["__privaudit__"] = _package_version()
    return hashlib.sha256(canonical_json(full).encode("ascii")).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - exists, owned by someone else
        return True
    return True


@dataclasses.dataclass
class StoreStats:
    """Counters of one :class:`ArtifactStore` object (this process only)."""

    hits: int = 0
    created: int = 0
    corrupt: int = 0


class ArtifactStore:
    """A content-addressed cache of artifacts under a directory.

    Parameters
    ----------
    root : str or Path
        Directory of the store (created if missing).

    Notes
    -----
    The store is safe to share between processes (it is picklable: only ``root``
    travels, made absolute) and between concurrent writers of the same key, on one machine
    or on several nodes of a cluster that mount ``root`` at the same path: both compute,
    the first rename wins and the other copy is discarded, so a reader sees either no entry
    or one complete, checksummed entry, never a torn file. A cluster's shared ``root``
    needs a filesystem whose directory rename is atomic (a local disk, NFSv3/v4, Lustre,
    CephFS; not an object-store mount such as s3fs).

    Examples
    --------
    >>> import tempfile, json
    >>> store = ArtifactStore(tempfile.mkdtemp())
    >>> v = store.get_or_create(
    ...     {"what": "answer"}, lambda: 42,
    ...     lambda x, p: p.write_text(json.dumps(x)), lambda p: json.loads(p.read_text()))
    >>> v, store.stats.created
    (42, 1)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._absolute = self.root.absolute()  # as it was when opened, whatever chdir follows
        try:
            (self.root / "objects").mkdir(parents=True, exist_ok=True)
            (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"artifact store {self.root}: cannot create it ({exc})") from exc
        self.stats = StoreStats()
        _OPENED[self.root] = None

    def __repr__(self) -> str:
        return f"ArtifactStore({str(self.root)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # absolute: a worker (a Ray worker on another node) may run in another folder
        return {"root": self._absolute}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = Path(state["root"])
        self._absolute = self.root
        self.stats = StoreStats()

    # --- paths -------------------------------------------------------------------

    def key(self, key_parts: Mapping[str, Any]) -> str:
        """The key of ``key_parts`` (see :func:`hash_key`)."""
        return hash_key(key_parts)

    def entry_dir(self, key: str) -> Path:
        """Directory of the entry with this key (it may not exist)."""
        return self.root / "objects" / key[:2] / key

    def _payload_path(self, entry: Path, suffix: str) -> Path:
        return entry / f"{_PAYLOAD}{suffix}"

    # --- reading -----------------------------------------------------------------

    def _verify(self, key: str) -> dict[str, Any] | None:
        return self._inspect(key)[0]

    def _inspect(self, key: str) -> tuple[dict[str, Any] | None, str]:
        """The entry's manifest when it is complete and intact, else None and why."""
        entry = self.entry_dir(key)
        manifest_path = entry / _MANIFEST
        if not manifest_path.is_file():
            return None, "no manifest"
        try:
            manifest = json.loads(manifest_path.read_text())
            if manifest.get("key") != key or manifest.get("format") != STORE_FORMAT_VERSION:
                return None, "its manifest names another key or format"
            files = manifest["files"]
            if not isinstance(files, dict) or manifest.get("payload") not in files:
                return None, "its manifest lists no payload"
            for name, digest in files.items():
                p = entry / name
                if Path(name).name != name or not p.is_file():
                    return None, f"file {name} is missing"
                if _sha256_file(p) != digest:
                    return None, f"file {name} does not match its checksum (truncated or changed)"
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return None, f"its manifest is unreadable ({type(exc).__name__})"
        return dict(manifest), ""

    def _damaged(self, key: str, why: str) -> None:
        self.stats.corrupt += 1
        warnings.warn(
            f"artifact store {self.root}: entry {key[:12]} failed to load ({why}); "
            "it is treated as missing and computed again",
            CacheWarning,
            stacklevel=3,
        )

    def census(self) -> tuple[int, int]:
        """How many entries the store holds, and how many of them are models or generators
        (a payload that is not an array file). Reads the manifests only (no checksums)."""
        n = models = 0
        for entry in self._entry_dirs():
            try:
                manifest = json.loads((entry / _MANIFEST).read_text())
                payload = str(manifest["payload"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            n += 1
            models += Path(payload).suffix not in _ARRAY_SUFFIXES
        return n, models

    def contains(self, key_parts: Mapping[str, Any]) -> bool:
        """Whether a complete, verified entry exists for ``key_parts``."""
        return self._verify(self.key(key_parts)) is not None

    def keys(self) -> list[str]:
        """Keys of the complete, verified entries, sorted."""
        out = []
        for entry in self._entry_dirs():
            if self._verify(entry.name) is not None:
                out.append(entry.name)
        return sorted(out)

    def manifests(self) -> Iterator[dict[str, Any]]:
        """The manifests of the complete, verified entries."""
        for key in self.keys():
            m = self._verify(key)
            if m is not None:
                yield m

    def _entry_dirs(self) -> Iterator[Path]:
        objects = self.root / "objects"
        if not objects.is_dir():
            return
        for shard in sorted(objects.iterdir()):
            if shard.is_dir():
                yield from (p for p in sorted(shard.iterdir()) if p.is_dir())

    # --- writing -----------------------------------------------------------------

    def _quarantine(self, entry: Path) -> None:
        if not entry.exists():
            return
        dest = self.root / "tmp" / f"corrupt.{entry.name}.{uuid.uuid4().hex}"
        try:
            os.replace(entry, dest)
            shutil.rmtree(dest, ignore_errors=True)
        except OSError:
            shutil.rmtree(entry, ignore_errors=True)

    def put(
        self,
        key_parts: Mapping[str, Any],
        obj: T,
        save_fn: Callable[[T, Path], object],
        *,
        suffix: str = ".bin",
        since: int | None = None,
    ) -> str:
        """Write ``obj`` atomically under the key of ``key_parts``; return the key.

        ``save_fn(obj, path)`` must write the payload to ``path`` (it may add sidecar
        files in ``path.parent``). An existing valid entry is kept (first writer wins).
        ``since``: the :func:`privaudit.runtime.interrupts.mark` taken when the task that
        made ``obj`` started; if a signal arrived since then, nothing is written and
        :class:`~privaudit.runtime.interrupts.Interrupted` is raised (checked just
        before the entry is renamed into place).
        """
        key = self.key(key_parts)
        interrupts.check(since, f"the artifact {key[:12]}")
        entry = self.entry_dir(key)
        tmp = (
            self.root
            / "tmp"
            / _SEP.join((key, socket.gethostname(), str(os.getpid()), uuid.uuid4().hex))
        )
        try:
            tmp.mkdir(parents=True)
            payload = self._payload_path(tmp, suffix)
            save_fn(obj, payload)
            if not payload.is_file():
                raise CacheError(f"artifact store: save_fn wrote no file at {payload.name}")
            files = {}
            for p in sorted(tmp.iterdir()):
                if not p.is_file():
                    raise CacheError(f"artifact store: save_fn wrote a non-file {p.name}")
                _fsync_file(p)
                files[p.name] = _sha256_file(p)
            manifest = {
                "key": key,
                "format": STORE_FORMAT_VERSION,
                "privaudit": _package_version(),
                "payload": payload.name,
                "files": files,
                "key_parts": json.loads(canonical_json(key_parts)),
                "created": time.time(),
                "pid": os.getpid(),
            }
            mpath = tmp / _MANIFEST
            with open(mpath, "w") as fh:
                json.dump(manifest, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            _fsync_dir(tmp)
            entry.parent.mkdir(parents=True, exist_ok=True)
            if entry.exists() and self._verify(key) is None:
                self._quarantine(entry)
            # the last moment to refuse a task that a signal interrupted
            interrupts.check(since, f"the artifact {key[:12]}")
            try:
                os.replace(tmp, entry)
            except OSError:
                # another writer finished first (directory not empty): keep theirs if valid
                if self._verify(key) is None:
                    self._quarantine(entry)
                    os.replace(tmp, entry)
            _fsync_dir(entry.parent)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return key

    def get_or_create(
        self,
        key_parts: Mapping[str, Any],
        create_fn: Callable[[], T],
        save_fn: Callable[[T, Path], object],
        load_fn: Callable[[Path], T],
        *,
        suffix: str = ".bin",
        since: int | None = None,
    ) -> T:
        """Return the cached artifact for ``key_parts``, or create, store and return it.

        Parameters
        ----------
        key_parts : mapping
            Everything that determines the artifact (see the module docstring).
        create_fn : callable
            Computes the artifact when it is not cached.
        save_fn : callable
            ``save_fn(obj, path)`` writes the artifact to ``path``.
        load_fn : callable
            ``load_fn(path)`` reads it back.
        suffix : str
            File suffix of the payload (e.g. ``".skops"``, ``".npz"``).
        since : int, optional
            :func:`privaudit.runtime.interrupts.mark` at the start of the task, when
            ``create_fn`` only hands over work done earlier (a model of a batched fit);
            default: the mark just before ``create_fn`` runs.

        Returns
        -------
        The artifact: loaded from a verified entry (``stats.hits``), or freshly created
        (``stats.created``). A corrupt or partial entry is never loaded: it is counted
        in ``stats.corrupt`` with a :class:`~privaudit.errors.CacheWarning`, recomputed
        and replaced. The freshly created object is returned as created (not re-read),
        so a cached and a fresh run agree only if ``load_fn(save_fn(obj))`` reproduces
        ``obj``.

        Raises
        ------
        Interrupted
            A SIGINT or SIGTERM arrived while ``create_fn`` ran (whatever ``create_fn``
            did with it: a trainer that catches :class:`KeyboardInterrupt` and returns
            early is caught here): nothing is stored. Inside
            :func:`privaudit.runtime.interrupts.handled` (a CLI command), also any
            later call after such a signal.
        """
        interrupts.check(None, "the run")  # sticky in a CLI command: stop at the next step
        key = self.key(key_parts)
        entry = self.entry_dir(key)
        manifest, why = self._inspect(key)
        if manifest is not None:
            try:
                obj = load_fn(entry / manifest["payload"])
            except Exception as exc:
                self._damaged(key, f"its payload does not load: {type(exc).__name__}: {exc}")
            else:
                self.stats.hits += 1
                return obj
        elif entry.exists():
            self._damaged(key, why)
        with interrupts.watching() as start:
            obj = create_fn()
            self.put(
                key_parts, obj, save_fn, suffix=suffix, since=start if since is None else since
            )
        self.stats.created += 1
        return obj

    def clean_tmp(self) -> int:
        """Remove leftovers in ``tmp/`` of dead processes on this host; return their number."""
        host = socket.gethostname()
        removed = 0
        for p in (self.root / "tmp").iterdir():
            parts = p.name.split(_SEP)
            if p.name.startswith("corrupt."):
                shutil.rmtree(p, ignore_errors=True)
                removed += 1
                continue
            if len(parts) == 4 and parts[1] == host and parts[2].isdigit():
                if not _pid_alive(int(parts[2])):
                    shutil.rmtree(p, ignore_errors=True)
                    removed += 1
        return removed


def kept_summary() -> str:
    """What the artifact stores this process opened hold now (the CLI's line after an
    interrupt says it): ``"the cache at X holds N finished artifacts (M models)"`` per
    store that still exists (a temporary store is gone by then), else
    ``"nothing was cached yet"``."""
    kept: list[str] = []
    for root in opened_stores():
        if not (root / "objects").is_dir():
            continue
        n, models = ArtifactStore(root).census()
        kept.append(
            f"the cache at {root} holds {n} finished artifact{'s' * (n != 1)} "
            f"({models} model{'s' * (models != 1)})"
        )
    return "; ".join(kept) if kept else "nothing was cached yet"

"""Canary sets and their secret inclusion coins, kept in two files, each with a fingerprint.

A one-run audit (Steinke, Nasr, Jagielski, NeurIPS 2023, Algorithm 1 and Sec. 7) needs ``m``
audit examples ("canaries") made to be detectable, each included in the one training run
with its own fair coin. Two kinds are made here:

* **input canaries** for classifiers (Steinke et al.'s black-box setting): records with a
  wrong label (``"mislabel"``: real records from a pool the model does not train on, given
  another class uniformly at random) or out-of-distribution inputs (``"ood"``: every
  feature uniform on the range the reference data spans, so that one-hot blocks are no
  longer one-hot, with a random label);
* **gradient (Dirac) canaries** for white-box DP-SGD audits (Steinke et al. 2023, Sec. 7;
  Nasr et al., USENIX Security 2023, Sec. 3): canary ``i`` is the gradient
  ``C * e_{j_i}``, zero everywhere except one parameter coordinate ``j_i`` (distinct
  coordinates, drawn at random), of norm exactly the clipping norm ``C``;
* **text canaries** for causal language models (``"text"``; Carlini et al., "The Secret
  Sharer", USENIX Security 2019, Sec. 3-4; Panda et al., ICLR 2025): a shared prefix
  followed by a random key and a random secret, each a sequence of symbols drawn uniformly
  from an alphabet, repeated ``repetitions`` times in training
  (:func:`~privaudit.canaries.text_sets.make_text_canaries`), or whose key and secret are a
  high-temperature sample of the base model (:class:`CanarySampling`,
  :func:`~privaudit.canaries.text_sampled.sample_text_canaries`).

The **set** (:class:`CanarySet`: what is scored, shared with whoever trains) and the
**coins** (:class:`CanaryCoins`: which canaries are included, kept by the auditor) are
separate objects and separate files. Each has a SHA-256 **fingerprint**: the set's over its
content, the coins' over the set's fingerprint, a random salt and the bits (a commitment:
publishing it before training reveals nothing of the bits, and an edited coin file no
longer matches it). Reading a file recomputes its fingerprint and refuses a mismatch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int, fail
from privaudit.errors import InvalidInputError

__all__ = [
    "CANARY_KINDS",
    "CanaryCoins",
    "CanarySampling",
    "CanarySet",
    "draw_coins",
    "load_canary_set",
    "load_coins",
    "make_gradient_canaries",
    "make_input_canaries",
]

#: The kinds of canary a set can hold.
CANARY_KINDS = ("mislabel", "ood", "gradient", "text")
_SET_FORMAT = "privaudit-canary-set/1"
_COINS_FORMAT = "privaudit-canary-coins/1"


def _ids(m: int) -> NDArray[np.str_]:
    return np.array([f"canary-{i:05d}" for i in range(m)])


@dataclasses.dataclass(frozen=True)
class CanarySampling:
    """How the keys and secrets of a sampled text canary set were drawn from a base model.

    Written with the set and part of its fingerprint: the exposure's alternatives are drawn
    the same way (:func:`~privaudit.canaries.text_sampled.sample_continuations`), so the
    scorer must know the distribution the canaries came from.

    Attributes
    ----------
    temperature : float
        The sampling temperature (the logits are divided by it).
    top_k : int
        Sampling among the ``top_k`` most likely tokens; 0: the whole vocabulary.
    key_tokens, secret_tokens : int
        Tokens of the key (the context of greedy reproduction) and of the secret.
    base_fingerprint : str
        :attr:`~privaudit.models.causal_lm.CausalLM.fingerprint` of the model sampled from.
    """

    temperature: float
    top_k: int
    key_tokens: int
    secret_tokens: int
    base_fingerprint: str

    def to_json(self) -> str:
        """The fields as one JSON object (sorted keys): the file and fingerprint form."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CanarySampling:
        """Read :meth:`to_json`'s form back (raises ``KeyError``/``TypeError``/``ValueError``)."""
        d = json.loads(text)
        return cls(
            temperature=float(d["temperature"]),
            top_k=int(d["top_k"]),
            key_tokens=int(d["key_tokens"]),
            secret_tokens=int(d["secret_tokens"]),
            base_fingerprint=str(d["base_fingerprint"]),
        )


@dataclasses.dataclass(frozen=True, eq=False)
class CanarySet:
    """``m`` canaries of one kind, without their inclusion coins.

    Attributes
    ----------
    kind : str
        ``"mislabel"``, ``"ood"`` (input canaries), ``"gradient"`` (Dirac canaries) or
        ``"text"`` (text canaries for causal LMs).
    ids : array of str
        One stable id per canary (``canary-00000`` ...).
    X, y : arrays
        Input canaries: features ``(m, d)`` and labels ``(m,)``; empty for gradient canaries.
    coords : array of int
        Gradient canaries: the parameter coordinate of each canary (flat index over the
        model's trainable parameters in ``module.parameters()`` order); empty otherwise.
    n_params : int
        Gradient canaries: the number of trainable parameters the coordinates index; 0 otherwise.
    n_classes : int
        Input canaries: the number of classes of the task; 0 otherwise.
    seed : int
        The seed the set was drawn with.
    prefix : str
        Text canaries: the prefix every canary starts with; "" otherwise.
    keys, secrets : array of str
        Text canaries: the random key and the random secret of each canary (the canary's
        text is ``prefix + key + secret``); empty otherwise.
    symbols : array of str
        Text canaries: the alphabet the keys and secrets are drawn from (uniformly, one
        symbol at a time); empty otherwise.
    repetitions : int
        Text canaries: how many copies of each included canary go into training; 0 otherwise.
    sampling : CanarySampling or None
        Sampled text canaries: how the keys and secrets were drawn from the base model
        (their :attr:`symbols` is empty); None for random-symbol canaries and other kinds.
    """

    kind: str
    ids: NDArray[np.str_]
    X: NDArray[np.float64]
    y: NDArray[np.int64]
    coords: NDArray[np.int64]
    n_params: int
    n_classes: int
    seed: int
    prefix: str = ""
    keys: NDArray[np.str_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=str))
    secrets: NDArray[np.str_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=str))
    symbols: NDArray[np.str_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=str))
    repetitions: int = 0
    sampling: CanarySampling | None = None

    @property
    def m(self) -> int:
        """The number of canaries."""
        return int(self.ids.size)

    @property
    def is_gradient(self) -> bool:
        """True for Dirac gradient canaries."""
        return self.kind == "gradient"

    @property
    def is_text(self) -> bool:
        """True for text canaries (causal language models)."""
        return self.kind == "text"

    @property
    def source(self) -> str:
        """Text canaries: ``"sampled"`` (from a base model) or ``"random"`` (symbols)."""
        return "sampled" if self.sampling is not None else "random"

    @property
    def texts(self) -> NDArray[np.str_]:
        """Text canaries: the text of each canary, ``prefix + key + secret``."""
        return np.array([self.prefix + k + s for k, s in zip(self.keys, self.secrets, strict=True)])

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) over the set's format, kind, sizes, seed, ids and arrays (and, for
        text canaries, the prefix, keys, secrets, alphabet and repetition count, and for
        sampled ones how they were sampled)."""
        h = hashlib.sha256(_SET_FORMAT.encode())
        head = f"{self.kind}|{self.m}|{self.n_params}|{self.n_classes}|{self.seed}"
        h.update(head.encode())
        h.update("\n".join(self.ids.tolist()).encode())
        for a in (self.X.astype("<f8"), self.y.astype("<i8"), self.coords.astype("<i8")):
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        if self.is_text:
            h.update(f"|text|{self.repetitions}|".encode())
            for part in (
                [self.prefix],
                self.keys.tolist(),
                self.secrets.tolist(),
                self.symbols.tolist(),
            ):
                h.update(json.dumps(part, ensure_ascii=False).encode("utf-8"))
            if self.sampling is not None:
                h.update(f"|sampled|{self.sampling.to_json()}".encode())
        return h.hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write the set as ``.npz`` (no pickle), with its fingerprint."""
        p = Path(path)
        with p.open("wb") as fh:
            np.savez_compressed(
                fh,
                format=np.array(_SET_FORMAT),
                kind=np.array(self.kind),
                ids=self.ids,
                X=self.X,
                y=self.y,
                coords=self.coords,
                n_params=np.array(self.n_params),
                n_classes=np.array(self.n_classes),
                seed=np.array(self.seed),
                prefix=np.array(self.prefix),
                keys=self.keys.astype(str),
                secrets=self.secrets.astype(str),
                symbols=self.symbols.astype(str),
                repetitions=np.array(self.repetitions),
                sampling=np.array("" if self.sampling is None else self.sampling.to_json()),
                fingerprint=np.array(self.fingerprint),
            )
        return p


@dataclasses.dataclass(frozen=True, eq=False)
class CanaryCoins:
    """The secret inclusion coins of a :class:`CanarySet` (True: the canary is trained on).

    Attributes
    ----------
    included : array of bool
        One fair coin per canary, in the order of the set's ids.
    set_fingerprint : str
        The fingerprint of the set these coins belong to.
    salt : str
        Random hex salt of the commitment :attr:`fingerprint`.
    seed : int or None
        The seed the coins were drawn with (None: drawn from the operating system).
    """

    included: NDArray[np.bool_]
    set_fingerprint: str
    salt: str
    seed: int | None

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) commitment over the set's fingerprint, the salt and the bits."""
        h = hashlib.sha256(_COINS_FORMAT.encode())
        h.update(self.set_fingerprint.encode())
        h.update(self.salt.encode())
        h.update(np.packbits(self.included.astype(np.uint8)).tobytes())
        h.update(str(self.included.size).encode())
        return h.hexdigest()

    def check_matches(self, canaries: CanarySet) -> None:
        """Raise :class:`InvalidInputError` unless the coins were drawn for ``canaries``."""
        if self.set_fingerprint != canaries.fingerprint:
            raise fail(
                "coins",
                f"coins drawn for the canary set {canaries.fingerprint[:16]}...",
                f"coins of another set ({self.set_fingerprint[:16]}...)",
            )
        if self.included.size != canaries.m:
            raise fail("coins", f"{canaries.m} coins (one per canary)", self.included.size)

    def save(self, path: str | Path) -> Path:
        """Write the coins as JSON with the set's fingerprint and the commitment."""
        doc = {
            "format": _COINS_FORMAT,
            "set_fingerprint": self.set_fingerprint,
            "salt": self.salt,
            "seed": self.seed,
            "included": "".join("1" if b else "0" for b in self.included.tolist()),
            "fingerprint": self.fingerprint,
        }
        p = Path(path)
        p.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        return p


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def make_input_canaries(
    X: ArrayLike,
    y: ArrayLike,
    m: int,
    *,
    kind: str = "mislabel",
    n_classes: int | None = None,
    seed: int = 0,
) -> CanarySet:
    """Input canaries for a classifier (Steinke, Nasr, Jagielski 2023, Sec. 7, black box).

    Parameters
    ----------
    X, y : array_like
        A pool of real records the model is **not** trained on (``"mislabel"`` draws
        ``m`` of them without replacement) or reference data whose per-feature range
        bounds the out-of-distribution inputs (``"ood"``).
    m : int
        Number of canaries (``m <= len(X)`` for ``"mislabel"``).
    kind : {"mislabel", "ood"}
        Mislabelled real records (the label replaced by another class uniformly at random)
        or inputs with every feature uniform on ``[min, max]`` of ``X`` and a uniform label.
    n_classes : int, optional
        Number of classes (default ``max(y) + 1``, at least 2).
    seed : int
        Seed of the draw.

    Returns
    -------
    CanarySet
    """
    Xa = as_float_array(X, "X", ndim=2)
    ya = as_label_array(y, "y")
    if ya.size != Xa.shape[0]:
        raise fail("y", f"{Xa.shape[0]} labels (one per row of X)", ya.size)
    m = check_positive_int(m, "m")
    c = int(n_classes) if n_classes is not None else max(2, int(ya.max()) + 1)
    if c < 2:
        raise fail("n_classes", "at least 2", c)
    rng = np.random.default_rng(seed)
    if kind == "mislabel":
        if m > Xa.shape[0]:
            raise fail("m", f"at most the {Xa.shape[0]} records of the pool", m)
        rows = rng.choice(Xa.shape[0], size=m, replace=False)
        Xc = Xa[rows].copy()
        shift = rng.integers(1, c, size=m)
        yc = (ya[rows] + shift) % c
    elif kind == "ood":
        lo, hi = Xa.min(axis=0), Xa.max(axis=0)
        Xc = lo + (hi - lo) * rng.random((m, Xa.shape[1]))
        yc = rng.integers(0, c, size=m)
    else:
        raise fail("kind", "'mislabel' or 'ood' for input canaries", repr(kind))
    return CanarySet(
        kind=kind,
        ids=_ids(m),
        X=np.asarray(Xc, dtype=np.float64),
        y=np.asarray(yc, dtype=np.int64),
        coords=np.zeros(0, dtype=np.int64),
        n_params=0,
        n_classes=c,
        seed=int(seed),
    )


def make_gradient_canaries(
    n_params: int, m: int, *, seed: int = 0, candidates: ArrayLike | None = None
) -> CanarySet:
    """Dirac gradient canaries (Steinke et al. 2023, Sec. 7; Nasr et al. 2023, Sec. 3).

    Canary ``i`` is the gradient ``C e_{j_i}`` on one parameter coordinate; the ``m``
    coordinates are distinct, drawn uniformly without replacement from ``candidates``
    (default: all ``n_params``). Distinct coordinates make the canaries orthogonal, so each
    one's score reads its own coordinate only.

    Parameters
    ----------
    n_params : int
        Number of trainable parameters of the model (flat, ``module.parameters()`` order).
    m : int
        Number of canaries, at most the number of candidate coordinates.
    seed : int
        Seed of the draw.
    candidates : array_like of int, optional
        The coordinates to draw from.
    """
    n_params = check_positive_int(n_params, "n_params")
    m = check_positive_int(m, "m")
    pool = (
        np.arange(n_params, dtype=np.int64)
        if candidates is None
        else np.unique(np.asarray(candidates, dtype=np.int64))
    )
    if pool.size and (pool.min() < 0 or pool.max() >= n_params):
        raise fail("candidates", f"coordinates in [0, {n_params})", "coordinates outside it")
    if m > pool.size:
        raise fail("m", f"at most the {pool.size} candidate coordinates", m)
    rng = np.random.default_rng(seed)
    coords = np.sort(rng.choice(pool, size=m, replace=False)).astype(np.int64)
    return CanarySet(
        kind="gradient",
        ids=_ids(m),
        X=np.zeros((0, 0), dtype=np.float64),
        y=np.zeros(0, dtype=np.int64),
        coords=coords,
        n_params=n_params,
        n_classes=0,
        seed=int(seed),
    )


def draw_coins(canaries: CanarySet, seed: int | None = None) -> CanaryCoins:
    """One independent fair coin per canary (Steinke et al. 2023, Algorithm 1, line 3).

    ``seed=None`` draws the coins and the salt from the operating system's entropy; a seed
    makes both reproducible (tests, benchmarks).
    """
    if seed is None:
        bits = np.frombuffer(secrets.token_bytes(canaries.m), dtype=np.uint8) & 1
        salt = secrets.token_hex(16)
    else:
        rng = np.random.default_rng([int(seed), 0xC0145])
        bits = rng.integers(0, 2, size=canaries.m)
        salt = rng.bytes(16).hex()
    return CanaryCoins(
        included=np.asarray(bits, dtype=bool),
        set_fingerprint=canaries.fingerprint,
        salt=salt,
        seed=seed,
    )


def _scalar(z: Any, key: str, path: Path) -> Any:
    try:
        return z[key].item()
    except KeyError:
        raise fail("canary set", f"a canary set file with '{key}'", f"none in {path}") from None


def _text_fields(z: Any, path: Path) -> dict[str, Any]:
    """The text-canary fields of a set file (absent from files written before text canaries)."""
    if "prefix" not in z.files:
        return {}
    sampling = str(_scalar(z, "sampling", path)) if "sampling" in z.files else ""
    return {
        "sampling": CanarySampling.from_json(sampling) if sampling else None,
        "prefix": str(_scalar(z, "prefix", path)),
        "keys": np.asarray(z["keys"]).astype(str),
        "secrets": np.asarray(z["secrets"]).astype(str),
        "symbols": np.asarray(z["symbols"]).astype(str),
        "repetitions": int(_scalar(z, "repetitions", path)),
    }


def load_canary_set(path: str | Path) -> CanarySet:
    """Read a set written by :meth:`CanarySet.save`; its fingerprint must match its content."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            if _scalar(z, "format", p) != _SET_FORMAT:
                raise fail("canary set", f"format {_SET_FORMAT}", _scalar(z, "format", p))
            cs = CanarySet(
                kind=str(_scalar(z, "kind", p)),
                ids=np.asarray(z["ids"]).astype(str),
                X=np.asarray(z["X"], dtype=np.float64),
                y=np.asarray(z["y"], dtype=np.int64),
                coords=np.asarray(z["coords"], dtype=np.int64),
                n_params=int(_scalar(z, "n_params", p)),
                n_classes=int(_scalar(z, "n_classes", p)),
                seed=int(_scalar(z, "seed", p)),
                **_text_fields(z, p),
            )
            recorded = str(_scalar(z, "fingerprint", p))
    except InvalidInputError:
        raise
    except FileNotFoundError:
        raise fail("canary set", "an existing .npz file", f"no file {p}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise fail("canary set", "a canary set .npz file", f"{p} ({exc})") from None
    if cs.kind not in CANARY_KINDS:
        raise fail("canary set", "kind one of " + ", ".join(CANARY_KINDS), repr(cs.kind))
    if recorded != cs.fingerprint:
        raise fail(
            "canary set",
            f"content matching its fingerprint {recorded[:16]}...",
            f"content with fingerprint {cs.fingerprint[:16]}... ({p} was modified)",
        )
    return cs


def load_coins(path: str | Path, canaries: CanarySet | None = None) -> CanaryCoins:
    """Read coins written by :meth:`CanaryCoins.save`.

    The commitment is recomputed (a flipped bit or an edited salt no longer matches the
    recorded fingerprint) and, with ``canaries``, the coins must belong to that set.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise fail("coins", "an existing coin file", f"no file {p}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail("coins", "a JSON coin file", f"{p} ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != _COINS_FORMAT:
        raise fail("coins", f"a coin file of format {_COINS_FORMAT}", p)
    bits = doc.get("included")
    if not isinstance(bits, str) or set(bits) - {"0", "1"} or not bits:
        raise fail("coins", "'included' as a string of 0/1", repr(bits)[:40])
    try:
        coins = CanaryCoins(
            included=np.array([b == "1" for b in bits], dtype=bool),
            set_fingerprint=str(doc["set_fingerprint"]),
            salt=str(doc["salt"]),
            seed=None if doc.get("seed") is None else int(doc["seed"]),
        )
        recorded = str(doc["fingerprint"])
    except (KeyError, TypeError, ValueError) as exc:
        raise fail("coins", "a complete coin file", f"{p} ({exc})") from None
    if recorded != coins.fingerprint:
        raise fail(
            "coins",
            f"bits matching the recorded fingerprint {recorded[:16]}...",
            f"a tampered coin file {p} (the bits or salt give {coins.fingerprint[:16]}...)",
        )
    if canaries is not None:
        coins.check_matches(canaries)
    return coins

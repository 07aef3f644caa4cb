"""Bayesian-network generators: BayNet (no noise) and PrivBayes (epsilon-DP).

Both follow PrivBayes (Zhang, Cormode, Procopiuc, Srivastava, Xiao, "PrivBayes: Private
Data Release via Bayesian Networks", ACM TODS 42(4), 2017; SIGMOD 2014), as implemented
for the experiments of Krčo et al. 2025 ("Lost in the Averages", BayNet and PrivBayes
through DataSynthesizer):

**Structure (GreedyBayes, Zhang et al. Algorithm 4).** A degree-``k`` network over the
``d`` attributes is built greedily: the first attribute is chosen uniformly at random;
then, while attributes remain, every pair (X, Pi) of a remaining attribute X and a
parent set Pi of ``min(k, |V|)`` already-placed attributes (all of V while |V| <= k) is
scored by the mutual information I(X; Pi) (in bits) on the training data. BayNet takes
the best pair (ties broken at random). PrivBayes draws a pair with the exponential
mechanism, probability proportional to ``exp(eps_1 / (d - 1) * I / (2 S_I))`` (the
``d - 1`` selections split ``eps_1`` evenly), with the sensitivity of Lemma 4.1:
``S_I = (1/n) log2 n + ((n-1)/n) log2(n/(n-1))`` when X or Pi is binary, else
``S_I = (2/n) log2((n+1)/2) + ((n-1)/n) log2((n+1)/(n-1))``.

**Parameters (Zhang et al. Algorithm 1, NoisyConditionals).** The ``d - k`` joint
distributions ``Pr[X_i, Pi_i]`` of the attributes placed after the first ``k`` are
materialised; the first ``k + 1`` attributes are sampled jointly from the first of them
(whose parent set is exactly the first ``k`` attributes), every later one from its
conditional ``Pr[X_i | Pi_i]``. PrivBayes adds Laplace noise of scale
``2 (d - k) / (n eps_2)`` to every cell of each normalised joint: one record replaced
(the neighbour relation of the record-level games, |D| fixed) moves a normalised joint by
at most ``2 / n`` in L1, and the ``d - k`` releases compose. Negative cells are set to 0
and each conditional renormalised (post-processing); a parent configuration with no mass
gets the uniform conditional (as DataSynthesizer does). The budget is split
``eps_1 = beta * eps`` for the structure and ``eps_2 = (1 - beta) * eps`` for the
parameters with ``beta = 0.3``, the value used in Zhang et al.'s experiments (Sec. 7).
``n`` is treated as public (bounded DP).

**Degree (Zhang et al., "choice of k": theta-usefulness).** ``degree="auto"`` (PrivBayes
only) chooses ``k`` as Zhang et al. do: a noisy distribution is *theta-useful* when the
average scale of its information is at least ``theta`` times the scale of its noise.
A normalised joint over ``m`` cells carries ``1 / m`` per cell on average, and each of the
``d - k`` joints gets Laplace noise of scale ``2 (d - k) / (n eps_2)``, so the joints are
``n eps_2 / (2 (d - k) m)``-useful; for binary attributes ``m = 2^(k+1)``, which is their
lemma's ``n eps_2 / ((d - k) 2^(k+2))``. With general domains (their Sec. 5, non-binary
attributes) ``1 / m`` is averaged over the (k+1)-attribute subsets, ``1 / m_{k+1} =
e_{k+1}(1/|dom|) / C(d, k+1)`` (``e_j`` the elementary symmetric polynomial of the
reciprocal domain sizes), and ``k`` is the largest value in ``0 .. d - 1`` whose joints
are theta-useful (0 when none is), with ``theta = 4``, the value Zhang et al.'s
experiments recommend. The rule uses only ``n``, ``d``, ``eps`` and the domain sizes
(public), so it costs no privacy budget. ``k = 0`` releases noisy one-way marginals
(the structure step then has nothing to choose but the order).

Everything is numpy on integer codes; a fit on 1,000 Adult records with ``k = 2`` takes a
few milliseconds (entropies of all attribute subsets of size <= k + 1 are computed once
per fit and looked up by the greedy search).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.generators.base import check_codes

__all__ = [
    "BayesianNetwork",
    "BayesianNetworkGenerator",
    "choose_degree",
    "mutual_information_sensitivity",
    "theta_usefulness",
]


def mutual_information_sensitivity(n: int, binary: bool) -> float:
    """Sensitivity of I(X; Pi) in bits, Zhang et al. 2017, Lemma 4.1."""
    if n < 2:
        raise fail("n", "at least 2 training records", n)
    if binary:
        return (1.0 / n) * math.log2(n) + ((n - 1) / n) * math.log2(n / (n - 1))
    return (2.0 / n) * math.log2((n + 1) / 2) + ((n - 1) / n) * math.log2((n + 1) / (n - 1))


def _subset_entropies(
    X: NDArray[np.int64], card: tuple[int, ...], max_size: int
) -> dict[int, float]:
    """Entropy (bits) of every attribute subset of size 1 .. max_size, keyed by bitmask.

    Each subset of size ``s - 1`` (in increasing attribute order) is extended by every
    later attribute; all count tables of one size are filled by a single bincount over
    stacked, offset indices, and their entropies read off with one ``reduceat``.
    """
    n, d = X.shape
    XT = np.ascontiguousarray(X.T)
    card_a = np.asarray(card, dtype=np.int64)
    out: dict[int, float] = {0: 0.0}
    # c log2 c for every possible count c = 0..n (a look-up instead of a log per cell)
    cs = np.arange(n + 1, dtype=np.float64)
    xlogx = cs * np.log2(np.where(cs > 0, cs, 1.0))
    for size in range(1, max_size + 1):
        flats: list[NDArray[np.int64]] = []
        sizes: list[NDArray[np.int64]] = []
        masks: list[int] = []
        total = 0
        for base in itertools.combinations(range(d), size - 1):
            first = (base[-1] + 1) if base else 0
            if first >= d:
                continue
            if base:
                b_idx = np.ravel_multi_index(tuple(XT[a] for a in base), [card[a] for a in base])
                b_size = math.prod(card[a] for a in base)
            else:
                b_idx, b_size = np.zeros(n, dtype=np.int64), 1
            sz = b_size * card_a[first:]
            offs = total + np.concatenate([[0], np.cumsum(sz)[:-1]])
            flats.append(
                (b_idx[None, :] * card_a[first:, None] + XT[first:] + offs[:, None]).ravel()
            )
            sizes.append(sz)
            total += int(sz.sum())
            bmask = sum(1 << a for a in base)
            masks.extend(bmask | (1 << c) for c in range(first, d))
        allsz = np.concatenate(sizes)
        starts = np.concatenate([[0], np.cumsum(allsz)[:-1]])
        c = np.bincount(np.concatenate(flats), minlength=total)
        clog = xlogx[c]
        H = np.log2(n) - np.add.reduceat(clog, starts) / n
        out.update(zip(masks, H.tolist(), strict=True))
    return out


def theta_usefulness(n: int, cardinalities: tuple[int, ...], epsilon2: float, k: int) -> float:
    """How theta-useful the ``d - k`` noisy joints of a degree-``k`` PrivBayes network are
    (Zhang et al.'s "choice of k"; see the module docstring): ``n eps_2 / (2 (d - k))``
    times the mean over the (k+1)-attribute subsets of ``1 / prod |dom|``."""
    card = [int(c) for c in cardinalities]
    d = len(card)
    if not 0 <= k < d:
        raise fail("k", f"a degree in 0..{d - 1}", k)
    # elementary symmetric polynomials e_0..e_{k+1} of the reciprocal domain sizes
    e = [1.0] + [0.0] * (k + 1)
    for c in card:
        for j in range(k + 1, 0, -1):
            e[j] += e[j - 1] / c
    mean_info = e[k + 1] / math.comb(d, k + 1)
    return n * epsilon2 / (2.0 * (d - k)) * mean_info


def choose_degree(
    n: int, cardinalities: tuple[int, ...], epsilon2: float, theta: float = 4.0
) -> int:
    """The largest degree ``k`` in ``0 .. d - 1`` whose noisy joints are ``theta``-useful
    (:func:`theta_usefulness`; Zhang et al.'s rule, ``theta = 4`` by default), or 0."""
    d = len(cardinalities)
    ok = [k for k in range(d) if theta_usefulness(n, cardinalities, epsilon2, k) >= theta]
    return max(ok) if ok else 0


class BayesianNetwork:
    """A fitted network: an attribute order, parent sets and conditional tables.

    Attributes
    ----------
    order : tuple of int
        Attributes in sampling order.
    parents : tuple of tuple of int
        ``parents[i]`` = parent attributes of ``order[i]`` (for ``i <= k`` all earlier
        attributes).
    k : int
    root_joint : float array
        ``Pr[X_order[0], ..., X_order[k]]`` (C-order over those attributes).
    conditionals : dict int -> float array (n_parent_configs, card)
        Cumulative conditionals of the attributes placed after position ``k``.
    """

    def __init__(
        self,
        order: tuple[int, ...],
        parents: tuple[tuple[int, ...], ...],
        k: int,
        cardinalities: tuple[int, ...],
        root_joint: NDArray[np.float64],
        conditionals: dict[int, NDArray[np.float64]],
    ) -> None:
        self.order = order
        self.parents = parents
        self.k = k
        self.cardinalities = cardinalities
        self.root_joint = root_joint
        self.conditionals = conditionals

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Ancestral sampling of ``n`` rows."""
        d = len(self.cardinalities)
        out = np.zeros((n, d), dtype=np.int64)
        head = self.order[: self.k + 1]
        flat = rng.choice(self.root_joint.size, size=n, p=self.root_joint)
        for a, col in zip(
            head, np.unravel_index(flat, [self.cardinalities[a] for a in head]), strict=True
        ):
            out[:, a] = col
        for pos in range(self.k + 1, d):
            a = self.order[pos]
            cum = self.conditionals[a]
            par = self.parents[pos]
            cfg = (
                np.ravel_multi_index(
                    tuple(out[:, p] for p in par), [self.cardinalities[p] for p in par]
                )
                if par
                else np.zeros(n, dtype=np.int64)
            )
            u = rng.random(n)
            x = (u[:, None] >= cum[cfg]).sum(axis=1)
            out[:, a] = np.minimum(x, self.cardinalities[a] - 1)
        return out


class BayesianNetworkGenerator:
    """BayNet (``epsilon=None``) or PrivBayes (``epsilon`` > 0); see the module docstring.

    Parameters
    ----------
    degree : int or "auto"
        Maximum number of parents ``k`` (1 or 2 in the paper's experiments); ``"auto"``
        (PrivBayes only): chosen per fit by theta-usefulness (:func:`choose_degree`).
    epsilon : float or None
        Total privacy budget; None = no noise (BayNet).
    beta : float
        Share of ``epsilon`` spent on the structure (Zhang et al.: 0.3).
    theta : float
        Usefulness threshold of ``degree="auto"`` (Zhang et al.: 4).

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.random.default_rng(0).integers(0, 3, size=(200, 4))
    >>> g = BayesianNetworkGenerator(degree=2)
    >>> g.fit(codes, (3, 3, 3, 3), seed=1).sample(5, np.random.default_rng(2)).shape
    (5, 4)
    """

    randomised = True

    def __init__(
        self,
        degree: int | str = 2,
        epsilon: float | None = None,
        beta: float = 0.3,
        theta: float = 4.0,
    ) -> None:
        if epsilon is not None and (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, int | float)
            or not math.isfinite(epsilon)
            or epsilon <= 0
        ):
            raise fail("epsilon", "a positive finite number or None (no noise)", epsilon)
        self.degree: int | str
        if degree == "auto":
            if epsilon is None:
                raise fail("degree", "an integer for BayNet ('auto' is PrivBayes' rule)", "'auto'")
            self.degree = "auto"
        elif isinstance(degree, str):
            raise fail("degree", "a positive integer or 'auto'", repr(degree))
        else:
            self.degree = check_positive_int(degree, "degree")
        if not 0 < beta < 1:
            raise fail("beta", "a share of epsilon in (0, 1)", beta)
        if isinstance(theta, bool) or not isinstance(theta, int | float) or not theta > 0:
            raise fail("theta", "a positive usefulness threshold", theta)
        self.epsilon = None if epsilon is None else float(epsilon)
        self.beta = float(beta)
        self.theta = float(theta)

    @property
    def name(self) -> str:
        if self.epsilon is None:
            return f"baynet-k{self.degree}"
        k = "auto" if self.degree == "auto" else f"k{self.degree}"
        return f"privbayes-{k}-eps{self.epsilon:g}"

    def __repr__(self) -> str:
        return f"BayesianNetworkGenerator(degree={self.degree!r}, epsilon={self.epsilon})"

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "generator": "bayesian-network",
            "degree": self.degree,
            "epsilon": self.epsilon,
            "beta": self.beta if self.epsilon is not None else None,
        }
        if self.degree == "auto":
            out["theta"] = self.theta
        return out

    def degree_for(self, n: int, cardinalities: tuple[int, ...]) -> int:
        """The degree ``k`` a fit on ``n`` rows with these domain sizes uses."""
        d = len(cardinalities)
        if self.degree == "auto":
            assert self.epsilon is not None  # checked in __init__
            eps2 = (1.0 - self.beta) * self.epsilon
            return choose_degree(n, tuple(cardinalities), eps2, self.theta)
        return min(int(self.degree), d - 1)

    def fit(
        self, codes: NDArray[np.int64], cardinalities: tuple[int, ...], *, seed: int
    ) -> BayesianNetwork:
        """Learn the structure and the (noisy) conditionals of ``codes``."""
        card = tuple(int(c) for c in cardinalities)
        X = check_codes(codes, card)
        n = X.shape[0]
        if n < 2:
            raise fail("codes", "at least 2 training rows", n)
        rng = np.random.default_rng(seed)
        k = self.degree_for(n, card)
        order, parents = self._greedy_structure(X, card, k, rng)
        root, conditionals = self._noisy_conditionals(X, card, k, order, parents, rng)
        return BayesianNetwork(tuple(order), tuple(parents), k, card, root, conditionals)

    def _greedy_structure(
        self, X: NDArray[np.int64], card: tuple[int, ...], k: int, rng: np.random.Generator
    ) -> tuple[list[int], list[tuple[int, ...]]]:
        """GreedyBayes (Zhang et al. Algorithm 4): the attribute order and parent sets."""
        n, d = X.shape
        Hm = _subset_entropies(X, card, k + 1)
        order = [int(rng.integers(d))]
        parents: list[tuple[int, ...]] = [()]
        eps_step = None
        if self.epsilon is not None and d > 1:
            eps_step = self.beta * self.epsilon / (d - 1)
        while len(order) < d:
            pairs, mi = _candidate_pairs(order, d, k, Hm)
            if eps_step is None:
                pick = _best_pair(mi, rng)
            else:
                pick = _exponential_mechanism_pair(mi, pairs, card, n, eps_step, rng)
            x, pi = pairs[pick]
            order.append(x)
            parents.append(tuple(pi))
        return order, parents

    def _noisy_conditionals(
        self,
        X: NDArray[np.int64],
        card: tuple[int, ...],
        k: int,
        order: list[int],
        parents: list[tuple[int, ...]],
        rng: np.random.Generator,
    ) -> tuple[NDArray[np.float64], dict[int, NDArray[np.float64]]]:
        """NoisyConditionals (Zhang et al. Algorithm 1): the root joint and the cumulative
        conditionals, from the d - k joints Pr[X_i, Pi_i] for positions k .. d - 1."""
        n, d = X.shape
        scale = None
        if self.epsilon is not None:
            eps2 = (1.0 - self.beta) * self.epsilon
            scale = 2.0 * (d - k) / (n * eps2)
        head = tuple(order[: k + 1])
        root = _normalised(_noisy_joint(X, card, head, scale, rng))
        conditionals: dict[int, NDArray[np.float64]] = {}
        for pos in range(k + 1, d):
            a, pi = order[pos], parents[pos]
            j = _noisy_joint(X, card, (*pi, a), scale, rng)
            conditionals[a] = _cumulative_conditional(j, card[a])
        return root, conditionals


def _candidate_pairs(
    order: list[int], d: int, k: int, Hm: dict[int, float]
) -> tuple[list[tuple[int, tuple[int, ...]]], NDArray[np.float64]]:
    """Every pair (X, Pi) of a remaining attribute and ``min(k, |V|)`` placed ones, with
    its mutual information I(X; Pi) in bits (from the subset entropies ``Hm``)."""
    placed = tuple(order)
    rest = [a for a in range(d) if a not in placed]
    cands = list(itertools.combinations(sorted(placed), min(k, len(placed))))
    pairs = [(x, pi) for x in rest for pi in cands]
    pmask = [sum(1 << p for p in pi) for pi in cands]
    mi = np.asarray([Hm[1 << x] + Hm[m] - Hm[m | (1 << x)] for x in rest for m in pmask])
    return pairs, mi


def _best_pair(mi: NDArray[np.float64], rng: np.random.Generator) -> int:
    """BayNet's choice: a pair of maximal mutual information (ties broken at random)."""
    best = np.flatnonzero(mi >= mi.max() - 1e-12)
    return int(best[rng.integers(best.size)])


def _exponential_mechanism_pair(
    mi: NDArray[np.float64],
    pairs: list[tuple[int, tuple[int, ...]]],
    card: tuple[int, ...],
    n: int,
    eps_step: float,
    rng: np.random.Generator,
) -> int:
    """PrivBayes' choice: a pair drawn with probability proportional to
    ``exp(eps_step * I / (2 S_I))``, S_I of Lemma 4.1 (binary when X or Pi is)."""
    binary = np.asarray([card[x] == 2 or math.prod(card[p] for p in pi) == 2 for x, pi in pairs])
    sens = np.where(
        binary,
        mutual_information_sensitivity(n, True),
        mutual_information_sensitivity(n, False),
    )
    logits = eps_step * mi / (2.0 * sens)
    p = np.exp(logits - logits.max())
    return int(rng.choice(len(pairs), p=p / p.sum()))


def _noisy_joint(
    X: NDArray[np.int64],
    card: tuple[int, ...],
    attrs: tuple[int, ...],
    scale: float | None,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """The normalised joint of ``attrs`` (C order), plus Laplace noise of ``scale`` with
    negative cells set to 0 when ``scale`` is given (PrivBayes)."""
    n = X.shape[0]
    size = math.prod(card[a] for a in attrs)
    cells = np.asarray(
        np.ravel_multi_index(tuple(X[:, a] for a in attrs), [card[a] for a in attrs]),
        dtype=np.int64,
    )
    p = np.bincount(cells, minlength=size).astype(np.float64) / n
    if scale is not None:
        p = np.maximum(p + rng.laplace(0.0, scale, size=size), 0.0)
    return p


def _normalised(joint: NDArray[np.float64]) -> NDArray[np.float64]:
    """A joint rescaled to sum to 1 (uniform when it has no mass)."""
    total = joint.sum()
    return joint / total if total > 0 else np.full(joint.size, 1.0 / joint.size)


def _cumulative_conditional(joint: NDArray[np.float64], card_a: int) -> NDArray[np.float64]:
    """Cumulative ``Pr[X | Pi]`` per parent configuration of a joint over (Pi, X); a
    configuration with no mass gets the uniform conditional (as DataSynthesizer does)."""
    j = joint.reshape(-1, card_a)
    mass = j.sum(axis=1, keepdims=True)
    cond = np.where(mass > 0, j / np.where(mass > 0, mass, 1.0), 1.0 / card_a)
    return np.cumsum(cond, axis=1)

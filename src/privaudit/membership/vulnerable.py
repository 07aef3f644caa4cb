r"""Which records are vulnerable, and which attacks find them (Ye et al. 2022, Sec. 5.3-5.4).

Ye et al. compare attacks *at the same false-positive rate* and ask which training
records each one identifies, and how vulnerable those records really are. This module
computes, from the per-record scores of one or several target models:

* :func:`agreement_at_fpr` -- Table 2 of the paper for every attack, Attack L included:
  the fraction of training points (members) and of test points (non-members) on which
  two attacks' decisions agree, each attack deciding at the threshold that gives it
  empirical FPR ``f`` on the audited non-members it scored (the largest-TPR ROC point
  with FPR <= f), pairwise on the records both scored (Attack L scores a sample), with
  the counts of each cell;
* :func:`vulnerable_records` -- Sec. 5.4: the record types

  - **all-correct**: members flagged by every one of the compared attacks (S, P, R, D);
  - **R-correct**: members flagged by the stronger attacks (R) and missed by the weaker
    ones (S and P);
  - **SP-correct**: members flagged by S and P and missed by R;
  - **random**: every member (the paper's baseline of random training records);

  at each FPR (default 0.05 and 0.3; the paper's Fig. 4-5 use 0.3). With several
  target models (a game's trials) a record is "flagged" by an attack when it is flagged
  on at least ``majority`` (80%) of the targets it is a member of, "missed" when it is
  missed on at least that fraction, as in the paper. For each set: its **L-based
  vulnerability** (Sec. 5.4: "the performance of the leave-one-out attack on models
  trained with and without this record"): Attack L's AUC of the set's members against
  the non-members L scored, its TPR at each FPR, and its mean score. The AUC and TPR
  take one L score per (target, member) pair, as a single target gives it, never a
  member's score averaged over its targets (an average has a smaller spread than the
  single non-member scores it is compared with, so its "TPR at FPR f" would not be at
  FPR f); each member weighs 1 in total, split evenly over the targets it is a member
  of. Then the histogram of
  the target's loss on the set (Fig. 5); and the distance of each record to its nearest
  neighbour in the target's training set (Sec. 5.4, Fig. 7 looks at latent neighbours;
  here the standardised feature space, since a model need not expose a penultimate
  layer). Finally a **ranking** of the most vulnerable members by Attack L's score
  (the smallest leave-one-out p-value first), with their ids, loss, nearest neighbour
  and which attacks flagged them on at least one target (not the majority rule of the
  sets: a record in the ranking may be flagged by an attack on one target of several).

All inputs are per-record arrays keyed by record id; nothing here trains a model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.metrics.roc import roc_curve

__all__ = [
    "VULNERABLE_FPRS",
    "ScoredTarget",
    "agreement_at_fpr",
    "decisions_at_fpr",
    "vulnerable_records",
]

#: FPRs of the Sec. 5.4 analysis (the paper's Fig. 4-5 use 0.3; Table 2 also low FPRs).
VULNERABLE_FPRS: tuple[float, ...] = (0.05, 0.3)

#: The paper's attack groups (Sec. 5.4): weaker S and P, stronger R (and D).
WEAK_ATTACKS: tuple[str, ...] = ("shadow", "population")
STRONG_ATTACKS: tuple[str, ...] = ("reference",)
ALL_CORRECT_ATTACKS: tuple[str, ...] = ("shadow", "population", "reference", "distillation")
LEAVE_ONE_OUT = "leave-one-out"


@dataclasses.dataclass(frozen=True)
class ScoredTarget:
    """One target model's attack scores, keyed by record id.

    Attributes
    ----------
    scores : dict attack -> (record_ids, scores)
        Each attack's scores (higher = member) on the records it scored.
    member : dict record id -> bool
        The target's true membership of every audited record.
    loss : dict record id -> float, optional
        The target's loss on each audited record (for the loss histograms).
    """

    scores: Mapping[str, tuple[NDArray[Any], NDArray[np.float64]]]
    member: Mapping[Any, bool]
    loss: Mapping[Any, float] | None = None


def decisions_at_fpr(
    scores: NDArray[np.float64], member: NDArray[np.bool_], fpr: float
) -> tuple[NDArray[np.bool_], float]:
    """Member decisions at the ROC point of largest TPR whose FPR is <= ``fpr``.

    Returns the decisions ``scores >= t`` and ``t`` (``inf`` when no threshold reaches
    the FPR, i.e. nothing is flagged). The FPR is the empirical one on the non-members
    among ``scores``, so attacks compared this way share one false-positive rate.
    """
    f = check_probability(fpr, "fpr")
    roc = roc_curve(scores, member)
    ok = np.flatnonzero(roc.fpr <= f + 1e-12)
    best = ok[np.argmax(roc.tpr[ok])]
    t = float(roc.thresholds[best])
    return np.asarray(scores >= t), t


def _decisions(target: ScoredTarget, fpr: float) -> dict[str, dict[Any, bool]]:
    out: dict[str, dict[Any, bool]] = {}
    for name, (ids, s) in target.scores.items():
        m = np.asarray([target.member[r] for r in ids.tolist()], dtype=bool)
        if not m.any() or m.all():
            continue
        d, _ = decisions_at_fpr(np.asarray(s, dtype=np.float64), m, fpr)
        out[name] = dict(zip(ids.tolist(), d.tolist(), strict=True))
    return out


def agreement_at_fpr(
    target: ScoredTarget, fprs: Sequence[float] = VULNERABLE_FPRS
) -> list[dict[str, Any]]:
    """Ye et al. (2022) Table 2 at each FPR, for every attack (Attack L included).

    Returns one dict per FPR: ``names`` (the attacks, then ``"GT"``), ``train`` and
    ``test`` (k x k agreement rates on members and on non-members; None where two
    attacks share no record), ``n_train`` and ``n_test`` (the counts behind each cell),
    and ``threshold_rule``. Agreement with GT is the attack's TPR (train) and 1 - FPR
    (test).
    """
    out = []
    all_ids = list(target.member)
    column = {r: i for i, r in enumerate(all_ids)}
    member = np.fromiter((bool(target.member[r]) for r in all_ids), bool, len(all_ids))
    for f in fprs:
        dec = _decisions(target, f)
        names = [*dec, "GT"]
        k = len(names)
        # each attack's decision per record, and which records it scored (GT: all)
        said = np.zeros((k, member.size), dtype=bool)
        scored = np.zeros((k, member.size), dtype=bool)
        for i, d in enumerate(dec.values()):
            cols = np.fromiter((column[r] for r in d), np.intp, len(d))
            said[i, cols] = np.fromiter(d.values(), bool, len(d))
            scored[i, cols] = True
        said[-1], scored[-1] = member, True
        tr: list[list[float | None]] = [[None] * k for _ in range(k)]
        te: list[list[float | None]] = [[None] * k for _ in range(k)]
        ntr = [[0] * k for _ in range(k)]
        nte = [[0] * k for _ in range(k)]
        for i in range(k):
            for j in range(k):
                common = scored[i] & scored[j]
                for part, rate, count in ((True, tr, ntr), (False, te, nte)):
                    sel = common & (member == part)
                    count[i][j] = int(sel.sum())
                    if count[i][j]:
                        rate[i][j] = float(np.mean(said[i, sel] == said[j, sel]))
        out.append(
            {
                "fpr": float(f),
                "names": names,
                "train": tr,
                "test": te,
                "n_train": ntr,
                "n_test": nte,
                "threshold_rule": (
                    "each attack at the threshold of largest TPR whose empirical FPR on the "
                    "audited non-members it scored is <= fpr"
                ),
            }
        )
    return out


def _flag_fraction(
    targets: Sequence[ScoredTarget], decs: Sequence[dict[str, dict[Any, bool]]], attack: str
) -> dict[Any, tuple[int, int]]:
    """Per member record: (times flagged by ``attack``, times scored as a member)."""
    out: dict[Any, tuple[int, int]] = {}
    for t, d in zip(targets, decs, strict=True):
        for r, flag in d.get(attack, {}).items():
            if not t.member[r]:
                continue
            k, n = out.get(r, (0, 0))
            out[r] = (k + int(flag), n + 1)
    return out


def _nn_distances(
    X: NDArray[np.float64],
    ids: NDArray[Any],
    train_ids: NDArray[Any],
    query: Collection[Any] | None = None,
) -> tuple[dict[Any, float], dict[Any, Any]]:
    """Euclidean distance of each record (of ``query``, default all) to its nearest other
    record of ``train_ids`` (features standardised over all records)."""
    pos = {r: i for i, r in enumerate(ids.tolist())}
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    train = dict.fromkeys(pos[r] for r in train_ids.tolist() if r in pos)  # once each, in order
    tr = np.asarray(list(train), dtype=np.intp)
    dist: dict[Any, float] = {}
    nn: dict[Any, Any] = {}
    if tr.size < 2:
        return dist, nn
    T = Z[tr]
    t_sq = (T**2).sum(axis=1)
    wanted = (
        np.arange(Z.shape[0])
        if query is None
        else np.asarray(sorted({pos[r] for r in query if r in pos}), dtype=np.intp)
    )
    if np.array_equal(wanted, tr):  # the training records among themselves: each pair once
        best_d2, best = _nearest_among_themselves(T, t_sq)
    else:
        column = np.full(Z.shape[0], -1, dtype=np.intp)  # each record's row of T, or -1
        column[tr] = np.arange(tr.size)
        best_d2, best = _nearest_in(Z[wanted], column[wanted], T, t_sq)
    for i, jj, v in zip(wanted.tolist(), best.tolist(), best_d2.tolist(), strict=True):
        rid = ids[i].item() if isinstance(ids[i], np.generic) else ids[i]
        dist[rid] = float(np.sqrt(max(v, 0.0)))
        nid = ids[tr[jj]]
        nn[rid] = nid.item() if isinstance(nid, np.generic) else nid
    return dist, nn


def _nearest_in(
    Q: NDArray[np.float64], own: NDArray[np.intp], T: NDArray[np.float64], t_sq: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Each row of ``Q``'s nearest row of ``T`` other than itself (``own``: its own row of
    ``T``, or -1): (squared distance, row of ``T``), ties to the first row."""
    best_d2 = np.empty(own.size)
    best = np.empty(own.size, dtype=np.intp)
    for start in range(0, own.size, 512):
        block = Q[start : start + 512]
        # (|b|^2 + |t|^2) - 2 b.t as before (doubling is exact, x - y == x + (-y)), with
        # the product's buffer reused for the result
        d2 = block @ T.T
        d2 *= -2.0
        d2 += (block**2).sum(axis=1)[:, None] + t_sq[None, :]
        o = own[start : start + 512]
        mine = np.flatnonzero(o >= 0)
        d2[mine, o[mine]] = np.inf  # not itself
        j = np.argmin(d2, axis=1)
        best[start : start + j.size] = j
        best_d2[start : start + j.size] = d2[np.arange(j.size), j]
    return best_d2, best


def _nearest_among_themselves(
    T: NDArray[np.float64], t_sq: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Each row of ``T``'s nearest other row: (squared distance, position), ties to the first
    position, as :func:`_nearest_in` gives them, with each pair's distance computed once
    (half the products): a block of rows against itself and the rows after it, whose
    column minima are the later rows' candidates from this block (taken in position order,
    a later candidate only when strictly nearer)."""
    n = T.shape[0]
    best_d2 = np.full(n, np.inf)
    best = np.zeros(n, dtype=np.intp)
    for s in range(0, n, 512):
        e = min(s + 512, n)
        b = e - s
        d2 = T[s:e] @ T[s:].T
        d2 *= -2.0
        d2 += t_sq[s:e, None] + t_sq[None, s:]
        d2[np.arange(b), np.arange(b)] = np.inf  # not itself
        j = np.argmin(d2, axis=1)  # this block's rows: every position from s on
        _take_nearer(best_d2, best, s, e, d2[np.arange(b), j], j + s)
        if e < n:  # the later rows: their candidates among this block
            jc = np.argmin(d2[:, b:], axis=0)
            _take_nearer(best_d2, best, e, n, d2[jc, b + np.arange(n - e)], jc + s)
    return best_d2, best


def _take_nearer(
    best_d2: NDArray[np.float64],
    best: NDArray[np.intp],
    lo: int,
    hi: int,
    d2: NDArray[np.float64],
    j: NDArray[np.intp],
) -> None:
    """Rows ``lo:hi`` take the candidates ``(d2, j)`` strictly nearer than their best so far."""
    nearer = d2 < best_d2[lo:hi]
    best_d2[lo:hi] = np.where(nearer, d2, best_d2[lo:hi])
    best[lo:hi] = np.where(nearer, j, best[lo:hi])


def _summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": float(np.mean(values)), "median": float(np.median(values))}


def vulnerable_records(
    targets: Sequence[ScoredTarget],
    *,
    fprs: Sequence[float] = VULNERABLE_FPRS,
    majority: float = 0.8,
    features: tuple[NDArray[Any], NDArray[np.float64]] | None = None,
    n_bins: int = 20,
    top: int = 20,
) -> dict[str, Any]:
    """The Sec. 5.4 analysis of Ye et al. (2022) over one or several target models.

    Parameters
    ----------
    targets : sequence of ScoredTarget
        One per target model (a game's trials), all on audited records keyed by id.
    fprs : sequence of float
        FPRs at which the attacks decide (default 0.05 and 0.3).
    majority : float
        A record is flagged (missed) by an attack when it is on at least this fraction
        of the targets it is a member of (the paper: 80%), in (0, 1]; 1: on every one.
    features : (record_ids, X), optional
        Features of the audited records, for nearest-neighbour distances (to the
        first target's members).
    n_bins : int
        Bins of the loss histograms (shared by all sets at one FPR).
    top : int
        Length of the ranking of the most vulnerable members.

    Returns
    -------
    dict
        ``fprs``, ``attacks`` (the groups compared, those present), ``sets`` (one entry
        per set and FPR: size, ids (up to 200), L-based vulnerability, loss summary and
        histogram, nearest-neighbour summary), ``ranking`` (``ranked_by``, ``records``),
        ``notes``.
    """
    if not targets:
        raise fail("targets", "at least one scored target", "none")
    majority = _checked_majority(majority)
    present = set.intersection(*(set(t.scores) for t in targets))
    weak, strong, every = _attack_groups(present)
    has_l = LEAVE_ONE_OUT in present
    notes = _coverage_notes(present, weak, strong, has_l)

    l_scores, l_nonmembers = _member_scores(targets, LEAVE_ONE_OUT if has_l else None)
    l_score = {r: _mean(v) for r, v in l_scores.items()}
    mean_loss = _mean_member_loss(targets)
    members = _sorted_ids({r for t in targets for r, m in t.member.items() if m})
    nn_dist, nn_id = _member_neighbours(targets, members, features)

    sets: list[dict[str, Any]] = []
    flagged_by: dict[float, dict[str, dict[Any, tuple[int, int]]]] = {}
    for f in fprs:
        flagged_by[f] = _flags_at_fpr(targets, present, f)
        groups = _record_types(members, flagged_by[f], majority, every, weak, strong)
        l_thr = _l_threshold(l_nonmembers, f) if has_l else None
        sets += _set_entries(f, groups, mean_loss, nn_dist, n_bins, l_scores, l_nonmembers, l_thr)

    ranked_by, rank_score = _ranking_scores(targets, present, l_score)
    records = _ranked_records(rank_score, top, fprs, flagged_by, mean_loss, nn_dist, nn_id)
    return {
        "fprs": [float(f) for f in fprs],
        "majority": float(majority),
        "n_targets": len(targets),
        "attacks": {
            "weak": weak,
            "strong": strong,
            "all_correct": every,
            "vulnerability": LEAVE_ONE_OUT if has_l else None,
        },
        "sets": sets,
        "ranking": {"ranked_by": ranked_by, "records": records},
        "notes": notes,
    }


def _checked_majority(majority: float) -> float:
    """``majority`` as a fraction in (0, 1]: 1 asks for a record flagged on every target."""
    v = check_probability(majority, "majority", open_interval=False)
    if v == 0.0:
        raise fail("majority", "a value in (0, 1]", v)
    return v


def _attack_groups(present: set[str]) -> tuple[list[str], list[str], list[str]]:
    """The Sec. 5.4 groups among the attacks every target ran: (weak S and P, strong R,
    all-correct S, P, R and D)."""
    weak = [a for a in WEAK_ATTACKS if a in present]
    strong = [a for a in STRONG_ATTACKS if a in present]
    every = [a for a in ALL_CORRECT_ATTACKS if a in present]
    return weak, strong, every


def _coverage_notes(
    present: set[str], weak: list[str], strong: list[str], has_l: bool
) -> list[str]:
    """What the analysis cannot report for lack of an attack (record types, Attack L)."""
    notes: list[str] = []
    if not weak or not strong:
        notes.append(
            "R-correct and SP-correct need attacks reference and shadow or population; "
            f"run: {', '.join(sorted(present))}"
        )
    if not has_l:
        notes.append("Attack L was not run: no L-based vulnerability (add 'leave-one-out')")
    return notes


def _member_neighbours(
    targets: Sequence[ScoredTarget],
    members: list[Any],
    features: tuple[NDArray[Any], NDArray[np.float64]] | None,
) -> tuple[dict[Any, float], dict[Any, Any]]:
    """Each member's distance to its nearest neighbour among the first target's members
    (Sec. 5.4, Fig. 7; standardised features), and that neighbour's id; nothing without
    ``features``. The sets and the ranking hold members only."""
    if features is None:
        return {}, {}
    f_ids, X = features
    train = np.asarray([r for r in f_ids.tolist() if targets[0].member.get(r, False)])
    return _nn_distances(np.asarray(X, dtype=np.float64), np.asarray(f_ids), train, members)


def _flags_at_fpr(
    targets: Sequence[ScoredTarget], present: set[str], f: float
) -> dict[str, dict[Any, tuple[int, int]]]:
    """Per attack, per member: (times flagged, times scored as a member) over the targets,
    each attack deciding at FPR ``f`` on each target."""
    decs = [_decisions(t, f) for t in targets]
    return {a: _flag_fraction(targets, decs, a) for a in present}


def _l_threshold(l_nonmembers: NDArray[np.float64], f: float) -> float | None:
    """Attack L's threshold at FPR ``f``: the (higher) ``1 - f`` quantile of the pooled
    non-member scores; None without non-member scores."""
    if not l_nonmembers.size:
        return None
    return float(np.quantile(l_nonmembers, 1.0 - f, method="higher"))


def _ranked_records(
    rank_score: dict[Any, float],
    top: int,
    fprs: Sequence[float],
    flagged_by: dict[float, dict[str, dict[Any, tuple[int, int]]]],
    mean_loss: dict[Any, float],
    nn_dist: dict[Any, float],
    nn_id: dict[Any, Any],
) -> list[dict[str, Any]]:
    """The ``top`` most vulnerable members (highest score first, ties by id as a string):
    their id, score, loss, nearest neighbour and the attacks that flagged them at each FPR."""
    order = sorted(rank_score, key=lambda r: (-rank_score[r], str(r)))[:top]
    return [
        {
            "record_id": _plain_id(r),
            "score": rank_score[r],
            "loss": mean_loss.get(r),
            "nn_distance": nn_dist.get(r),
            "nn_record_id": _plain_id(nn_id[r]) if r in nn_id else None,
            "flagged_by": {
                str(f): sorted(a for a, fr in flagged_by[f].items() if fr.get(r, (0, 0))[0] > 0)
                for f in fprs
            },
        }
        for r in order
    ]


def _set_entries(
    f: float,
    groups: dict[str, list[Any]],
    mean_loss: dict[Any, float],
    nn_dist: dict[Any, float],
    n_bins: int,
    l_scores: dict[Any, list[float]],
    l_nonmembers: NDArray[np.float64],
    l_thr: float | None,
) -> list[dict[str, Any]]:
    """The ``sets`` entries of one FPR: per record type its size, ids (up to 200), Attack
    L's view, the loss summary and histogram (bins shared by the types) and the
    nearest-neighbour distances."""
    losses_all = [mean_loss[r] for g in groups.values() for r in g if r in mean_loss]
    edges = (
        np.histogram_bin_edges(np.asarray(losses_all), bins=n_bins)
        if losses_all
        else np.linspace(0.0, 1.0, n_bins + 1)
    )
    out = []
    for name, recs in groups.items():
        lv = [mean_loss[r] for r in recs if r in mean_loss]
        counts, _ = np.histogram(np.asarray(lv), bins=edges) if lv else (np.zeros(n_bins), None)
        nd = [nn_dist[r] for r in recs if r in nn_dist]
        out.append(
            {
                "name": name,
                "fpr": float(f),
                "n_records": len(recs),
                "record_ids": [_plain_id(r) for r in recs[:200]],
                "leave_one_out": _l_vulnerability(recs, l_scores, l_nonmembers, l_thr),
                "loss": {
                    **_summary(lv),
                    "histogram": {
                        "edges": [float(e) for e in edges],
                        "counts": [int(c) for c in counts],
                    },
                },
                "nn_distance": _summary(nd),
            }
        )
    return out


def _member_scores(
    targets: Sequence[ScoredTarget], attack: str | None
) -> tuple[dict[Any, list[float]], NDArray[np.float64]]:
    """An attack's scores of each member, one per target it is a member of (and the attack
    scored it), and every non-member score of every target (pooled).

    ``attack=None`` (not run): nothing.
    """
    per_member: dict[Any, list[float]] = {}
    non_members: list[float] = []
    if attack is None:
        return {}, np.asarray(non_members, dtype=np.float64)
    for t in targets:
        ids, s = t.scores[attack]
        for r, v in zip(ids.tolist(), np.asarray(s).tolist(), strict=True):
            if t.member[r]:
                per_member.setdefault(r, []).append(float(v))
            else:
                non_members.append(float(v))
    return per_member, np.asarray(non_members, dtype=np.float64)


def _member_mean_scores(targets: Sequence[ScoredTarget], attack: str | None) -> dict[Any, float]:
    """An attack's score per member, averaged over the targets it is a member of (and the
    attack scored it): what ranks the members, never what an AUC or TPR compares."""
    return {r: _mean(v) for r, v in _member_scores(targets, attack)[0].items()}


def _mean_member_loss(targets: Sequence[ScoredTarget]) -> dict[Any, float]:
    """Each member's target loss, averaged over the targets it is a member of."""
    loss: dict[Any, list[float]] = {}
    for t in targets:
        for r, v in (t.loss or {}).items():
            if t.member[r]:
                loss.setdefault(r, []).append(float(v))
    return {r: _mean(v) for r, v in loss.items()}


def _mean(v: list[float]) -> float:
    """``float(np.mean(v))``, without numpy's per-call cost for one value (most members
    of most audits are members of one target)."""
    return v[0] if len(v) == 1 else float(np.mean(v))


def _record_types(
    members: list[Any],
    frac: dict[str, dict[Any, tuple[int, int]]],
    majority: float,
    every: list[str],
    weak: list[str],
    strong: list[str],
) -> dict[str, list[Any]]:
    """The record types of Sec. 5.4 at one FPR, by the majority rule over targets.

    ``random`` (every member), ``all-correct`` (flagged by every attack), ``R-correct``
    (flagged by the strong attacks, missed by the weak ones) and ``SP-correct`` (the
    reverse). ``frac[a][r]`` is (times flagged, times a member) of record r by attack a.
    """

    def hit(a: str, r: Any) -> bool:
        k, n = frac[a].get(r, (0, 0))
        return n > 0 and k / n >= majority

    def miss(a: str, r: Any) -> bool:
        k, n = frac[a].get(r, (0, 0))
        return n > 0 and (n - k) / n >= majority

    groups: dict[str, list[Any]] = {"random": list(members)}
    if every:
        groups["all-correct"] = [r for r in members if all(hit(a, r) for a in every)]
    if weak and strong:
        groups["R-correct"] = [
            r for r in members if all(hit(a, r) for a in strong) and all(miss(a, r) for a in weak)
        ]
        groups["SP-correct"] = [
            r for r in members if all(hit(a, r) for a in weak) and all(miss(a, r) for a in strong)
        ]
    return groups


def _l_vulnerability(
    recs: list[Any],
    l_scores: dict[Any, list[float]],
    l_nonmembers: NDArray[np.float64],
    l_thr: float | None,
) -> dict[str, Any]:
    """Attack L's view of one record set: its mean score, its AUC against the non-members and
    its TPR at the FPR's threshold (``l_thr``); None where L did not score the set.

    Ye et al. (2022, Sec. 5.4) measure a record's vulnerability by Attack L on models
    trained with and without it: each (target, member) score is one such attack, and is
    compared as it is with the single non-member scores that set the FPR (pooled over the
    targets). A member's score averaged over several targets would have a smaller spread
    than those, so its "TPR at FPR f" would be at another FPR and its AUC inflated. Each
    member weighs 1, split evenly over its targets: the AUC is the weighted share of
    (member score, non-member score) pairs in the member's favour (ties 1/2), the TPR the
    weighted share of member scores above the threshold, i.e. the mean over the set's
    members of the share of their targets on which L flags them. With one target per
    member these are the plain AUC and TPR. ``mean_score`` averages each member's mean
    score.
    """
    lists = [l_scores[r] for r in recs if r in l_scores]
    vuln: dict[str, Any] = {
        "n_scored_by_l": len(lists),
        "n_l_scores": sum(len(v) for v in lists),
        "mean_score": None,
        "auc": None,
        "tpr": None,
    }
    if not lists:
        return vuln
    vuln["mean_score"] = float(np.mean([_mean(v) for v in lists]))
    if l_nonmembers.size:
        s = np.fromiter((x for v in lists for x in v), np.float64, vuln["n_l_scores"])
        w = np.repeat([1.0 / len(v) for v in lists], [len(v) for v in lists])
        neg = np.sort(l_nonmembers)
        below = np.searchsorted(neg, s, side="left")
        tied = np.searchsorted(neg, s, side="right") - below
        vuln["auc"] = float(np.sum(w * (below + 0.5 * tied)) / (neg.size * np.sum(w)))
        vuln["tpr"] = float(np.sum(w * (s > l_thr)) / np.sum(w)) if l_thr is not None else None
    return vuln


def _ranking_scores(
    targets: Sequence[ScoredTarget], present: set[str], l_score: dict[Any, float]
) -> tuple[str | None, dict[Any, float]]:
    """What ranks the most vulnerable members: Attack L's mean member score, else the first
    present of the strongest attacks (lira-online, rmia-online, reference, learned,
    lira-offline). Returns (attack name or None, score per member)."""
    if l_score:
        return LEAVE_ONE_OUT, dict(l_score)
    for a in ("lira-online", "rmia-online", "reference", "learned", "lira-offline"):
        if a in present:
            return a, _member_mean_scores(targets, a)
    return None, {}


def _sorted_ids(ids: set[Any]) -> list[Any]:
    try:
        return sorted(ids)
    except TypeError:  # mixed id types
        return sorted(ids, key=str)


def _plain_id(r: Any) -> Any:
    return r.item() if isinstance(r, np.generic) else r

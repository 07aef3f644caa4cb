"""The result of a canary audit: the bounds, beside the accountant's eps, and their inputs."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._version import __version__
from privaudit.records import AuditResult

__all__ = [
    "RESULTS_SCHEMA_VERSION",
    "CanaryAuditResult",
    "audit_entry",
    "fraction_of_accountant",
    "guesses_text",
    "headline_bounds",
]

RESULTS_SCHEMA_VERSION = "1.0"


def _plain(v: Any) -> Any:
    from privaudit.report.results import plain

    return plain(v)


def guesses_text(k_pos: int | None, k_neg: int | None) -> str:
    """How the guesses were chosen, as ``results.json`` says it."""
    if k_pos is not None or k_neg is not None:
        return "fixed in advance"
    return "union-bound over the default candidates"


def fraction_of_accountant(eps_lb: float, accountant: float | None) -> float | None:
    """``eps_lb / accountant`` (None without an accountant's finite eps > 0)."""
    if accountant is None or not np.isfinite(accountant) or accountant <= 0:
        return None
    return eps_lb / accountant


def headline_bounds(
    one: AuditResult, fdp: AuditResult, accountant: float | None, repetitions: int
) -> dict[str, Any]:
    """The bounds of ``results.json``'s ``canaries`` section (also what ``privaudit verify``
    recomputes): per training record, the group bounds beside them when each canary was
    trained on ``repetitions > 1`` times (:mod:`privaudit.canaries.group`)."""
    eps = float(one.epsilon_lower_bound)
    out: dict[str, Any] = {
        "epsilon_lower_bound": eps,
        "mu_lower_bound": float(fdp.mu_lower_bound or 0.0),
        "fraction_of_accountant": fraction_of_accountant(eps, accountant),
        "repetitions": int(repetitions),
    }
    if repetitions > 1:
        out["group_bounds"] = {
            "records_per_canary": int(repetitions),
            "epsilon_lower_bound": float(one.extra["group_epsilon_lower_bound"]),
            "fdp_epsilon_lower_bound": float(fdp.extra["group_epsilon_lower_bound"]),
            "mu_lower_bound": float(fdp.extra["group_mu_lower_bound"]),
        }
    return out


def audit_entry(a: AuditResult) -> dict[str, Any]:
    """One element of ``results.json``'s ``audits`` (the fields of :class:`AuditResult`)."""
    return dict(_plain({f.name: getattr(a, f.name) for f in dataclasses.fields(a)}))


@dataclasses.dataclass(frozen=True, eq=False)
class CanaryAuditResult:
    """A one-run audit of a canary set (:func:`~privaudit.canaries.audit_canaries`).

    Attributes
    ----------
    canary_kind, access : str
        The set's kind and what the auditor saw (``black-box``, ``final``, ``iterates``).
    ids, scores, included : arrays
        Per canary: id, score (higher = more likely included), coin.
    one_run, fdp : AuditResult
        Steinke et al.'s eps bound at ``delta`` and the f-DP audit (mu-GDP, eps), per
        training record (with ``repetitions > 1`` the group bounds are in their ``extra``).
    accountant_epsilon : float or None
        The accountant's eps of the run, for comparison.
    k_pos, k_neg : int or None
        Guesses fixed in advance (None: chosen, union bound paid).
    confidence, delta : float
    set_fingerprint, coins_fingerprint : str
    settings : dict
    repetitions : int
        Training copies of each included canary (text canaries; 1 for the others): the
        audits test groups of that many records, made per record by group privacy.
    """

    canary_kind: str
    access: str
    ids: NDArray[np.str_]
    scores: NDArray[np.float64]
    included: NDArray[np.bool_]
    one_run: AuditResult
    fdp: AuditResult
    accountant_epsilon: float | None
    k_pos: int | None
    k_neg: int | None
    confidence: float
    delta: float
    set_fingerprint: str
    coins_fingerprint: str
    settings: dict[str, Any]
    repetitions: int = 1

    @property
    def m(self) -> int:
        """Number of canaries."""
        return int(self.ids.size)

    @property
    def epsilon_lower_bound(self) -> float:
        """Steinke et al.'s one-run eps lower bound at ``delta``, per training record."""
        return float(self.one_run.epsilon_lower_bound)

    @property
    def mu_lower_bound(self) -> float:
        """The f-DP one-run mu-GDP lower bound, per training record."""
        return float(self.fdp.mu_lower_bound or 0.0)

    def canaries_section(self) -> dict[str, Any]:
        """``results.json``'s ``canaries`` section: what was audited and the headline."""
        return dict(
            _plain(
                {
                    "kind": self.canary_kind,
                    "access": self.access,
                    "m": self.m,
                    "n_included": int(self.included.sum()),
                    "set_fingerprint": self.set_fingerprint,
                    "coins_fingerprint": self.coins_fingerprint,
                    "accountant_epsilon": self.accountant_epsilon,
                    **headline_bounds(
                        self.one_run, self.fdp, self.accountant_epsilon, self.repetitions
                    ),
                    "guesses": guesses_text(self.k_pos, self.k_neg),
                }
            )
        )

    def fraction_of_accountant(self) -> float | None:
        """``eps_lb / accountant_eps`` (None without an accountant's finite eps > 0)."""
        return fraction_of_accountant(self.epsilon_lower_bound, self.accountant_epsilon)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document."""
        return dict(
            _plain(
                {
                    "schema_version": RESULTS_SCHEMA_VERSION,
                    "privaudit_version": __version__,
                    "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                    "procedure": "canaries",
                    "settings": {
                        "k_pos": self.k_pos,
                        "k_neg": self.k_neg,
                        "confidence": self.confidence,
                        "delta": self.delta,
                        **self.settings,
                    },
                    "canaries": self.canaries_section(),
                    "audits": [audit_entry(self.one_run), audit_entry(self.fdp)],
                }
            )
        )

    def save(self, out_dir: str | Path, *, overwrite: bool = False) -> Path:
        """Write ``results.json``, ``report.html``, ``inputs.npz`` and ``bundle.json``."""
        from privaudit.canaries.report import write_canary_report

        return write_canary_report(self, out_dir, overwrite=overwrite)

    def __str__(self) -> str:
        acc = self.accountant_epsilon
        head = f"canary audit: {self.m} {self.canary_kind} canaries ({int(self.included.sum())} included), access {self.access}"
        lines = [
            head,
            f"  one-run eps lower bound  {self.epsilon_lower_bound:.4f}  (confidence {self.confidence:g}, delta {self.delta:g}, {self.one_run.threshold_selection})",
            f"  f-DP mu-GDP lower bound  {self.mu_lower_bound:.4f}  (eps from f-DP {float(self.fdp.epsilon_lower_bound):.4f})",
            f"  accountant's eps         {'-' if acc is None else f'{acc:.4f}'}",
        ]
        k = self.repetitions
        if k > 1:
            g_eps = float(self.one_run.extra["group_epsilon_lower_bound"])
            g_mu = float(self.fdp.extra["group_mu_lower_bound"])
            lines.insert(
                1,
                f"  bounds per training record: each included canary was trained on {k} times; "
                f"for one canary ({k} records): eps {g_eps:.4f}, mu {g_mu:.4f}",
            )
        return "\n".join(lines)

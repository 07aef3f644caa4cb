r"""Out-world thresholds at a requested FPR, with the smoothing of Ye et al. (2022), App. B.3.

An alpha-attack of Ye et al. (CCS'22, Eq. 4-5) rejects "non-member" when the target's
loss is at most :math:`c_\alpha`, the alpha-percentile of the loss distribution in the
attack's *out world* (non-member model/record pairs). The empirical out-world sample
(shadow, population, reference, distilled or leave-one-out losses) is smoothed so that
percentiles exist for any alpha, including alpha below ``1/(N+1)``. Appendix B.3 gives
four smoothings, all implemented here, for a sorted sample :math:`l_0 \le \dots \le l_N`:

``"linear"``
    Linear interpolation of the percentile (App. B.3, item 1)

    .. math:: p(\alpha) = l_{\lfloor \alpha N\rfloor}(\lfloor \alpha N\rfloor + 1 - \alpha N)
              + (\alpha N - \lfloor \alpha N\rfloor)\, l_{\lfloor \alpha N\rfloor + 1}

    (numpy's default "linear" quantile). Its CDF is the generalised inverse
    :math:`F(x) = \inf\{\beta : p(\beta) \ge x\}`: 0 below :math:`l_0`, 1 above :math:`l_N`,
    piecewise linear between.
``"logit-gaussian"``
    Gaussian fit on logit-rescaled losses (App. B.3, item 2, after Carlini et al. 2022):
    :math:`\phi(l) = \log\frac{e^{-l}}{1-e^{-l}}` (= the log-odds of the true-class
    probability :math:`e^{-l}`), :math:`\phi(l_i) \sim \mathcal N(\mu, \sigma^2)`, and
    :math:`\phi(p(\alpha))` is the :math:`(1-\alpha)`-percentile of that Gaussian. As
    :math:`\phi` is decreasing, :math:`F(x) = \Phi((\mu - \phi(x))/\sigma)` and
    :math:`p(\alpha) = \phi^{-1}(\mu + \sigma\,\Phi^{-1}(1-\alpha))` with
    :math:`\phi^{-1}(u) = \log(1 + e^{-u})`. Computed stably as
    :math:`\phi(l) = -l - \log(-\mathrm{expm1}(-l))`; losses are floored at the
    smallest normal double so that :math:`\phi` stays finite. With ``rescale="none"``
    the Gaussian is fitted to the values themselves (used for signals that are already
    on a logit scale, e.g. LiRA's logit confidence, or have no natural rescaling).
``"min"``
    :math:`p(\alpha) = \min(p^{linear}(\alpha), p^{logit}(\alpha))` (App. B.3, item 3);
    its CDF is :math:`\max(F^{linear}, F^{logit})`, because
    :math:`x \le \min(p_1, p_2) \iff F_1(x) \le \alpha \wedge F_2(x) \le \alpha`.
``"average"``
    :math:`F(x) = \tfrac12 (F^{linear}(x) + F^{logit}(x))` (App. B.3, item 4); the
    threshold :math:`\max\{x : F(x) \le \alpha\}` is found by vectorised bisection.

``"student-t"`` (not in the paper; an extension)
    The exact predictive distribution of a new out-world value when the (rescaled)
    out world is Gaussian with unknown mean and variance: with m values, sample mean
    :math:`\bar g` and sample standard deviation s,
    :math:`(g(x) - \bar g)/(s\sqrt{1 + 1/m}) \sim t_{m-1}`. The plug-in Gaussian
    (``"logit-gaussian"``) ignores the estimation error of :math:`\mu, \sigma` and its
    achieved FPR exceeds alpha when m is small (m = 4 OUT models, alpha = 1%: about
    6.4%); the predictive t is calibrated for every m >= 2 under the Gaussian model.

Conventions
-----------
* Samples are *loss-like*: **lower = more member-like**, the paper's orientation; the
  decision is "member iff ``x <= threshold(alpha)``", equivalently iff
  ``cdf(x) <= alpha``. Attacks turn this into the score ``-cdf(x)`` ("higher = member").
* The Gaussian uses the sample standard deviation (``ddof=1``), floored at
  ``sigma_floor`` (default ``1e-8``); the number of floored columns is reported.
* Everything is vectorised: an out-world sample is either *shared* (1-D, one sample
  for all queries, e.g. attack P's population) or *per record* (``(k, n)``, column i is
  record i's sample, e.g. reference models), optionally with a ``(k, n)`` boolean
  ``mask`` of valid entries so that records can have different numbers of OUT models.
  Each column needs at least 2 valid values.

The equations of App. B.3 are in the text; nothing here was reconstructed except the
CDF forms of the linear and min methods (derived above from the percentile forms) and
the choice of ``ddof=1`` (the paper does not say).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_choice,
    check_probability,
    fail,
)
from privaudit.errors import InsufficientDataError

__all__ = [
    "OUT_WORLD_VARIANCES",
    "PAPER_SMOOTHING_METHODS",
    "RESCALINGS",
    "SMOOTHING_METHODS",
    "OutWorld",
    "describe",
    "fit_out_world",
    "inverse_logit_rescale",
    "logit_rescale",
    "smoothed_cdf",
    "smoothed_threshold",
]

#: The four smoothings of Ye et al. App. B.3.
PAPER_SMOOTHING_METHODS: tuple[str, ...] = ("linear", "logit-gaussian", "min", "average")
#: All smoothings: the paper's four and the predictive Student-t (an extension, below).
SMOOTHING_METHODS: tuple[str, ...] = (*PAPER_SMOOTHING_METHODS, "student-t")
RESCALINGS: tuple[str, ...] = ("logit", "none")
#: Variance estimates of the Gaussian / Student-t fits (see :func:`fit_out_world`).
OUT_WORLD_VARIANCES: tuple[str, ...] = ("per-record", "pooled")

Method = Literal["linear", "logit-gaussian", "min", "average", "student-t"]
Rescale = Literal["logit", "none"]

_TINY = float(np.finfo(np.float64).tiny)


def logit_rescale(loss: ArrayLike) -> NDArray[np.float64]:
    r"""Ye et al. App. B.3 logit rescaling :math:`\phi(l) = \log\frac{e^{-l}}{1 - e^{-l}}`.

    Decreasing in ``l``; computed as :math:`-l - \log(-\mathrm{expm1}(-l))` with ``l``
    floored at the smallest normal double (so ``phi(0)`` is about 708, not inf).

    Examples
    --------
    >>> float(logit_rescale(np.log(2.0)))  # p = 1/2 -> log-odds 0
    0.0
    """
    lo = np.maximum(np.asarray(loss, dtype=np.float64), _TINY)
    out: NDArray[np.float64] = -lo - np.log(-np.expm1(-lo))
    return out


def inverse_logit_rescale(u: ArrayLike) -> NDArray[np.float64]:
    r"""Inverse of :func:`logit_rescale`: :math:`l = -\log \sigma(u) = \log(1 + e^{-u})`."""
    out: NDArray[np.float64] = np.logaddexp(0.0, -np.asarray(u, dtype=np.float64))
    return out


@dataclasses.dataclass(frozen=True)
class OutWorld:
    """A prepared (sorted, Gaussian-fitted) out-world sample, for many queries.

    Attributes
    ----------
    sorted_values : (K, C) float array
        Each column sorted ascending; invalid (masked) entries are ``+inf`` at the end.
    counts : (C,) int array
        Valid values per column (each >= 2).
    mu, sigma : (C,) float arrays
        Gaussian fit on the rescaled values (``sigma`` already floored).
    rescale : str
        ``"logit"`` or ``"none"``.
    shared : bool
        True for one shared sample (C = 1) used for every query.
    n_sigma_floored : int
        Columns whose fitted sigma was below the floor.
    variance : str
        ``"per-record"`` (each column's own ``ddof=1`` standard deviation, the paper)
        or ``"pooled"`` (one within-column standard deviation pooled over columns).
    df : (C,) int array or None
        Degrees of freedom of the predictive Student-t: ``counts - 1`` per record,
        ``N - C`` (N values in C columns) when pooled. None means ``counts - 1``.
    """

    sorted_values: NDArray[np.float64]
    counts: NDArray[np.int64]
    mu: NDArray[np.float64]
    sigma: NDArray[np.float64]
    rescale: str
    shared: bool
    n_sigma_floored: int
    variance: str = "per-record"
    df: NDArray[np.int64] | None = None

    @property
    def n_columns(self) -> int:
        """Number of out-world samples (1 when shared)."""
        return int(self.counts.size)

    # ---------------------------------------------------------------- helpers
    def _columns(self, n: int) -> NDArray[np.intp]:
        if self.shared:
            return np.zeros(n, dtype=np.intp)
        if n != self.n_columns:
            raise fail("x", f"one value per out-world column ({self.n_columns})", n)
        return np.arange(n, dtype=np.intp)

    def _rescaled(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return logit_rescale(x) if self.rescale == "logit" else x

    # ---------------------------------------------------------------- CDFs
    def linear_cdf(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""CDF of the linear-interpolation smoothing, :math:`\inf\{\beta: p(\beta)\ge x\}`."""
        col = self._columns(x.size)
        s = self.sorted_values
        if self.shared:
            below = np.searchsorted(s[: self.counts[0], 0], x, side="left")
        else:
            below = np.count_nonzero(s < x[None, :], axis=0)
        m = self.counts[col]
        out = np.empty(x.size, dtype=np.float64)
        lo_mask = below == 0
        hi_mask = below >= m
        mid = ~(lo_mask | hi_mask)
        out[lo_mask] = 0.0
        out[hi_mask] = 1.0
        j = below[mid] - 1
        c = col[mid]
        lj = s[j, c]
        lj1 = s[j + 1, c]
        frac = (x[mid] - lj) / (lj1 - lj)  # lj < x <= lj1, so lj1 > lj
        out[mid] = (j + frac) / (m[mid] - 1)
        return out

    def linear_score(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""``-F_lin(x)``, continued linearly beyond the sample so that it never ties.

        Inside :math:`[l_0, l_N]` this is minus the linear-interpolation CDF. Below the
        smallest out-world value (more member-like than all of them) :math:`F_{lin} = 0`
        and above the largest :math:`F_{lin} = 1` for *every* such record: with few
        models hundreds of records share these two values, and a threshold calibrated
        on them cannot separate them (issue 10: with 4 OUT models the conformal
        threshold fell on the tie at 0 and the attack never fired). The score continues
        with slope :math:`1/(l_N - l_0)`: :math:`(l_0 - x)/(l_N - l_0)` below,
        :math:`-1 - (x - l_N)/(l_N - l_0)` above (slope 1 when the sample has no
        spread), so records keep the order of their distance beyond the sample. The
        decision ``score >= -alpha`` for alpha in (0, 1) is unchanged.
        """
        col = self._columns(x.size)
        f = self.linear_cdf(x)
        m = self.counts[col]
        lo = self.sorted_values[0, col]
        hi = self.sorted_values[m - 1, col]
        span = np.where(hi > lo, hi - lo, 1.0)
        out: NDArray[np.float64] = -f
        below = x < lo
        above = x > hi
        out = np.where(below, (lo - x) / span, out)
        out = np.where(above, -1.0 - (x - hi) / span, out)
        return out

    def score(self, x: ArrayLike, method: str) -> NDArray[np.float64]:
        """Member score ``-F(x)`` (higher = member); ``"linear"`` is tie-free at the extremes.

        See :meth:`linear_score`; every other method is exactly ``-cdf(x, method)``.
        """
        check_choice(method, "smoothing", SMOOTHING_METHODS)
        xv = as_float_array(x, "x", ndim=1, allow_empty=True)
        if method == "linear":
            return self.linear_score(xv)
        out: NDArray[np.float64] = -self.cdf(xv, method)
        return out

    def gaussian_cdf(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""CDF of the Gaussian smoothing, :math:`P(l \le x)` under the fitted Gaussian."""
        col = self._columns(x.size)
        z = (self._rescaled(x) - self.mu[col]) / self.sigma[col]
        # logit rescaling is decreasing: P(l <= x) = P(phi(l) >= phi(x)).
        out: NDArray[np.float64] = special.ndtr(-z) if self.rescale == "logit" else special.ndtr(z)
        return out

    def student_t_cdf(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""CDF of the predictive Student-t smoothing (see the module docstring)."""
        col = self._columns(x.size)
        m = self.counts[col]
        df = (m - 1) if self.df is None else self.df[col]
        t = (self._rescaled(x) - self.mu[col]) / (self.sigma[col] * np.sqrt(1.0 + 1.0 / m))
        if self.rescale == "logit":
            t = -t
        out: NDArray[np.float64] = special.stdtr(df, t)
        return out

    def cdf(self, x: ArrayLike, method: str) -> NDArray[np.float64]:
        """Smoothed out-world CDF ``F(x)`` (the p-value of the alpha-test at ``x``).

        Parameters
        ----------
        x : array, shape (n,)
            Loss-like values (lower = member); n = number of columns unless shared.
        method : {"linear", "logit-gaussian", "min", "average", "student-t"}
        """
        check_choice(method, "smoothing", SMOOTHING_METHODS)
        xv = as_float_array(x, "x", ndim=1, allow_empty=True)
        if method == "linear":
            return self.linear_cdf(xv)
        if method == "logit-gaussian":
            return self.gaussian_cdf(xv)
        if method == "student-t":
            return self.student_t_cdf(xv)
        f_lin = self.linear_cdf(xv)
        f_g = self.gaussian_cdf(xv)
        if method == "min":
            return np.maximum(f_lin, f_g)
        return 0.5 * (f_lin + f_g)

    # ---------------------------------------------------------------- thresholds
    def linear_threshold(self, alpha: float) -> NDArray[np.float64]:
        """Linear-interpolation alpha-percentile per column (App. B.3 item 1)."""
        h = alpha * (self.counts - 1)
        j = np.floor(h).astype(np.intp)
        j1 = np.minimum(j + 1, self.counts - 1)
        c = np.arange(self.n_columns)
        lj = self.sorted_values[j, c]
        lj1 = self.sorted_values[j1, c]
        out: NDArray[np.float64] = lj + (h - j) * (lj1 - lj)
        # between two adjacent doubles the interpolant can round up to l_{j+1}, whose
        # CDF is (j + 1)/N > alpha: stay strictly below it (found by hypothesis)
        up = (out >= lj1) & (h - j < 1.0) & (lj1 > lj)
        out = np.where(up, np.maximum(lj, np.nextafter(lj1, -np.inf)), out)
        return out

    def gaussian_threshold(self, alpha: float) -> NDArray[np.float64]:
        """Gaussian alpha-percentile per column (App. B.3 item 2)."""
        if self.rescale == "logit":
            u = self.mu + self.sigma * special.ndtri(1.0 - alpha)
            return inverse_logit_rescale(u)
        out: NDArray[np.float64] = self.mu + self.sigma * special.ndtri(alpha)
        return out

    def student_t_threshold(self, alpha: float) -> NDArray[np.float64]:
        """Predictive Student-t alpha-percentile per column."""
        m = self.counts
        df = (m - 1) if self.df is None else self.df
        scale = self.sigma * np.sqrt(1.0 + 1.0 / m)
        if self.rescale == "logit":
            return inverse_logit_rescale(self.mu + scale * special.stdtrit(df, 1.0 - alpha))
        out: NDArray[np.float64] = self.mu + scale * special.stdtrit(df, alpha)
        return out

    def threshold(self, alpha: float, method: str) -> NDArray[np.float64]:
        """Threshold ``c`` per column: member iff ``x <= c`` iff ``cdf(x) <= alpha``.

        For ``"average"`` this is :math:`\\max\\{x : F(x) \\le \\alpha\\}`, found by
        bisection to within a few ulps.
        """
        check_choice(method, "smoothing", SMOOTHING_METHODS)
        alpha = check_probability(alpha, "alpha")
        if method == "student-t":
            return self.student_t_threshold(alpha)
        p_lin = self.linear_threshold(alpha)
        if method == "linear":
            return p_lin
        p_g = self.gaussian_threshold(alpha)
        if method == "logit-gaussian":
            return p_g
        if method == "min":
            return np.minimum(p_lin, p_g)
        return self._average_threshold(alpha, p_lin, p_g)

    def _average_cdf_cols(
        self, x: NDArray[np.float64], cols: NDArray[np.intp]
    ) -> NDArray[np.float64]:
        if self.shared:
            return 0.5 * (self.linear_cdf(x) + self.gaussian_cdf(x))
        sub = OutWorld(
            self.sorted_values[:, cols],
            self.counts[cols],
            self.mu[cols],
            self.sigma[cols],
            self.rescale,
            False,
            0,
            self.variance,
            None if self.df is None else self.df[cols],
        )
        return 0.5 * (sub.linear_cdf(x) + sub.gaussian_cdf(x))

    def _average_threshold(
        self, alpha: float, p_lin: NDArray[np.float64], p_g: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        cols = np.arange(self.n_columns, dtype=np.intp)
        lo = np.minimum(p_lin, p_g)  # F_lin(lo) <= alpha and F_g(lo) <= alpha
        hi = np.maximum(p_lin, p_g)
        # Grow hi until F(hi) > alpha (F -> 1 as x -> inf, alpha < 1).
        step = np.maximum(np.abs(hi), 1.0)
        for _ in range(200):
            f_hi = self._average_cdf_cols(hi, cols)
            bad = f_hi <= alpha
            if not bad.any():
                break
            lo = np.where(bad, hi, lo)
            hi = np.where(bad, hi + step, hi)
            step = np.where(bad, 2.0 * step, step)
        for _ in range(200):
            mid = lo + 0.5 * (hi - lo)
            done = (mid <= lo) | (mid >= hi)
            if done.all():
                break
            f_mid = self._average_cdf_cols(mid, cols)
            ok = f_mid <= alpha
            lo = np.where(ok & ~done, mid, lo)
            hi = np.where(~ok & ~done, mid, hi)
        return lo


def fit_out_world(
    out: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    rescale: str = "logit",
    sigma_floor: float = 1e-8,
    name: str = "out-world sample",
    variance: str = "per-record",
    pooled: tuple[float, int] | None = None,
) -> OutWorld:
    r"""Sort and Gaussian-fit an out-world sample once, for many CDF / threshold queries.

    Parameters
    ----------
    out : array, shape (Z,) or (k, n)
        Loss-like out-world values (lower = member). 1-D: one sample shared by every
        query. 2-D: column i is the sample of record i.
    mask : bool array, shape (k, n), optional
        Valid entries of a 2-D sample (e.g. ``~keep`` for OUT reference models).
    rescale : {"logit", "none"}
        Transformation before the Gaussian fit (see the module docstring).
    sigma_floor : float
        Lower bound on the fitted standard deviation.
    name : str
        Used in error messages.
    variance : {"per-record", "pooled"}
        ``"per-record"`` (Ye et al. App. B.3): column i's Gaussian uses its own sample
        standard deviation :math:`s_i` (``ddof=1``), and the predictive t has
        :math:`m_i - 1` degrees of freedom. ``"pooled"`` (an extension, the analogue of
        LiRA's fixed variance, Carlini et al. 2022 Sec. IV-B): one standard deviation
        :math:`s_p = \sqrt{\sum_i\sum_j (g_{ij} - \bar g_i)^2 / (N - C)}` pooled over
        the C columns (N values), with :math:`N - C` degrees of freedom; the exact
        predictive distribution when every column is Gaussian with its own mean and a
        common variance. With 4-8 values per column the per-record :math:`s_i` is
        very noisy, which costs power at low FPR.
    pooled : (sigma, df) or None
        Use this pooled standard deviation and degrees of freedom instead of
        estimating them (with ``variance="pooled"``): the population calibration of
        :mod:`privaudit.attacks.calibration` scores calibration records with the
        sigma fitted on the audited records.

    Raises
    ------
    InvalidInputError
        NaN/inf values, bad shapes, negative losses with ``rescale="logit"``.
    InsufficientDataError
        A column with fewer than 2 valid values.
    """
    check_choice(rescale, "rescale", RESCALINGS)
    check_choice(variance, "variance", OUT_WORLD_VARIANCES)
    vals = as_float_array(out, name)
    if vals.ndim not in (1, 2):
        raise fail(name, "a 1-D (shared) or 2-D (models x records) array", f"shape {vals.shape}")
    shared = vals.ndim == 1
    if not (sigma_floor > 0 and np.isfinite(sigma_floor)):
        raise fail("sigma_floor", "a positive finite number", sigma_floor)
    v2, valid = _columns_and_mask(vals, mask, shared)
    if rescale == "logit" and np.any(v2[valid] < 0):
        raise fail(name, "non-negative losses for logit rescaling", f"minimum {v2[valid].min()}")
    counts = _valid_counts(valid, name)
    sorted_values = np.sort(np.where(valid, v2, np.inf), axis=0)
    mu, dev = _rescaled_mean_and_dev(v2, valid, counts, rescale)
    sigma, df = _sigma_and_df(dev, counts, variance, pooled)
    floored = sigma < sigma_floor
    sigma = np.where(floored, sigma_floor, sigma)
    _read_only(sorted_values, counts, mu, sigma, df)
    return OutWorld(
        sorted_values=sorted_values,
        counts=counts,
        mu=mu,
        sigma=sigma,
        rescale=rescale,
        shared=shared,
        n_sigma_floored=int(floored.sum()),
        variance=variance,
        df=df,
    )


def _columns_and_mask(
    vals: NDArray[np.float64], mask: ArrayLike | None, shared: bool
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The sample as (k, C) columns (one column when shared) and its mask of valid entries."""
    if shared:
        if mask is not None:
            raise fail("mask", "None for a shared (1-D) sample", "a mask")
        v2 = vals[:, None]
        valid = np.ones_like(v2, dtype=bool)
    else:
        v2 = vals
        valid = (
            np.ones_like(v2, dtype=bool) if mask is None else as_bool_array(mask, "mask", ndim=2)
        )
        if valid.shape != v2.shape:
            raise fail("mask", f"shape {v2.shape}", valid.shape)
    return v2, valid


def _valid_counts(valid: NDArray[np.bool_], name: str) -> NDArray[np.int64]:
    """Valid values per column; each column needs at least 2."""
    counts = valid.sum(axis=0).astype(np.int64)
    if counts.size and counts.min() < 2:
        bad = int(np.count_nonzero(counts < 2))
        raise InsufficientDataError(
            f"{name}: expected at least 2 out-world values per record, found {bad} record(s) "
            f"with fewer (minimum {int(counts.min())})"
        )
    return counts


def _rescaled_mean_and_dev(
    v2: NDArray[np.float64], valid: NDArray[np.bool_], counts: NDArray[np.int64], rescale: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-column mean of the rescaled valid values, and their deviations (0 where invalid)."""
    g = logit_rescale(v2) if rescale == "logit" else v2
    g = np.where(valid, g, 0.0)
    mu = g.sum(axis=0) / counts
    dev = np.where(valid, g - mu[None, :], 0.0)
    return mu, dev


def _sigma_and_df(
    dev: NDArray[np.float64],
    counts: NDArray[np.int64],
    variance: str,
    pooled: tuple[float, int] | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
    r"""Each column's ``ddof=1`` standard deviation (App. B.3) or the pooled :math:`s_p`; t's df."""
    df: NDArray[np.int64] | None = None
    if variance == "pooled":
        if pooled is None:
            n_tot, n_col = int(counts.sum()), int(counts.size)
            s_p = float(np.sqrt((dev * dev).sum() / (n_tot - n_col))) if n_tot > n_col else 0.0
            pooled = (s_p, n_tot - n_col)
        s_p, dof = float(pooled[0]), int(pooled[1])
        if not (np.isfinite(s_p) and s_p >= 0 and dof >= 1):
            raise fail("pooled", "(sigma >= 0, degrees of freedom >= 1)", pooled)
        sigma = np.full(counts.size, s_p)
        df = np.full(counts.size, dof, dtype=np.int64)
    else:
        if pooled is not None:
            raise fail("pooled", "None unless variance='pooled'", pooled)
        sigma = np.sqrt((dev * dev).sum(axis=0) / (counts - 1))
    return sigma, df


def _read_only(*arrays: NDArray[Any] | None) -> None:
    """Mark the fitted arrays read-only (None skipped)."""
    for a in arrays:
        if a is not None:
            a.setflags(write=False)


def smoothed_cdf(
    out: ArrayLike,
    x: ArrayLike,
    *,
    method: str = "linear",
    rescale: str = "logit",
    mask: ArrayLike | None = None,
    sigma_floor: float = 1e-8,
) -> NDArray[np.float64]:
    """Smoothed out-world CDF ``F_out(x)`` (Ye et al. App. B.3), vectorised.

    Parameters
    ----------
    out : array, shape (Z,) or (k, n)
        Out-world sample(s), loss-like (lower = member); see :func:`fit_out_world`.
    x : array, shape (n,)
        Query values (the target's loss on each record).
    method : {"linear", "logit-gaussian", "min", "average", "student-t"}
    rescale : {"logit", "none"}
    mask : bool array, shape (k, n), optional
    sigma_floor : float

    Returns
    -------
    array, shape (n,)
        ``F_out(x)`` in [0, 1]; the alpha-attack declares "member" iff ``F <= alpha``.

    Examples
    --------
    >>> smoothed_cdf(np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, 3.5]))
    array([0.  , 0.25, 1.  ])
    """
    world = fit_out_world(out, mask=mask, rescale=rescale, sigma_floor=sigma_floor)
    return world.cdf(x, method)


def smoothed_threshold(
    out: ArrayLike,
    alpha: float,
    *,
    method: str = "linear",
    rescale: str = "logit",
    mask: ArrayLike | None = None,
    sigma_floor: float = 1e-8,
) -> NDArray[np.float64]:
    """Threshold :math:`c_\\alpha` of Ye et al. Eq. 5 under a B.3 smoothing, per column.

    Returns an array of shape (1,) for a shared sample, (n,) for a (k, n) sample; the
    alpha-attack declares "member" iff ``loss <= c_alpha``.

    Examples
    --------
    >>> smoothed_threshold(np.array([1.0, 2.0, 3.0]), 0.25)
    array([1.5])
    """
    world = fit_out_world(out, mask=mask, rescale=rescale, sigma_floor=sigma_floor)
    return world.threshold(alpha, method)


def describe(world: OutWorld) -> dict[str, Any]:
    """Settings of a fitted out world, for ``AttackScores.params``."""
    out: dict[str, Any] = {
        "rescale": world.rescale,
        "variance": world.variance,
        "min_out_values": int(world.counts.min()),
        "max_out_values": int(world.counts.max()),
        "n_sigma_floored": world.n_sigma_floored,
    }
    if world.variance == "pooled":
        out["pooled_sigma"] = float(world.sigma[0]) if world.sigma.size else float("nan")
        out["pooled_df"] = int(world.df[0]) if world.df is not None and world.df.size else 0
    return out

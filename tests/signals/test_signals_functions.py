"""Signal functions: identities against slow oracles, stability at extremes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privaudit.errors import InvalidInputError
from privaudit.signals import (
    SIGNAL_HIGHER_IS_MEMBER,
    SIGNALS,
    compute_signal,
    compute_signal_from_loss,
    logit_confidence_from_loss,
)


def oracle(name: str, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Slow, obvious, extended-precision (mpmath-free: Python floats via math.fsum/log)."""
    out = []
    for row, lab in zip(z.tolist(), y.tolist(), strict=True):
        m = max(row)
        e = [math.exp(v - m) for v in row]
        s = math.fsum(e)
        p = [v / s for v in e]
        py = p[lab]
        if name == "loss":
            out.append(-math.log(py))
        elif name == "prob_true":
            out.append(py)
        elif name == "logit_confidence":
            out.append(math.log(py / (1 - py)))
        elif name == "entropy":
            out.append(-math.fsum(q * math.log(q) for q in p if q > 0))
        elif name == "modified_entropy":
            out.append(
                -(1 - py) * math.log(py)
                - math.fsum(p[j] * math.log(1 - p[j]) for j in range(len(p)) if j != lab)
            )
    return np.array(out)


def test_names_and_directions() -> None:
    assert SIGNALS == ("loss", "prob_true", "logit_confidence", "entropy", "modified_entropy")
    assert SIGNAL_HIGHER_IS_MEMBER == {
        "loss": False,
        "prob_true": True,
        "logit_confidence": True,
        "entropy": False,
        "modified_entropy": False,
        "label_robustness": True,
    }


@pytest.mark.parametrize("name", SIGNALS)
def test_matches_oracle_on_moderate_logits(name: str) -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(scale=3.0, size=(300, 5))
    y = rng.integers(0, 5, size=300)
    np.testing.assert_allclose(
        compute_signal(name, z, y), oracle(name, z, y), rtol=1e-9, atol=1e-12
    )


def test_identities() -> None:
    rng = np.random.default_rng(2)
    z = rng.normal(scale=4.0, size=(500, 7))
    y = rng.integers(0, 7, size=500)
    ls = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    p = np.exp(ls)
    rows = np.arange(500)
    np.testing.assert_allclose(compute_signal("loss", z, y), -ls[rows, y], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(compute_signal("prob_true", z, y), p[rows, y], rtol=1e-9)
    py = p[rows, y]
    ok = (py > 1e-8) & (py < 1 - 1e-8)
    np.testing.assert_allclose(
        compute_signal("logit_confidence", z, y)[ok], np.log(py / (1 - py))[ok], rtol=1e-8
    )
    # binary: phi is the logit margin z_y - z_other exactly
    zb = rng.normal(size=(50, 2))
    yb = rng.integers(0, 2, size=50)
    np.testing.assert_allclose(
        compute_signal("logit_confidence", zb, yb),
        zb[np.arange(50), yb] - zb[np.arange(50), 1 - yb],
        rtol=1e-12,
    )


def test_extremes_are_finite_and_exact() -> None:
    z = np.array([[0.0, 1e4], [-1e4, 0.0], [0.0, 1e4], [1e300, -1e300], [0.0, 0.0]])
    y = np.array([0, 1, 1, 1, 0])
    phi = compute_signal("logit_confidence", z, y)
    np.testing.assert_array_equal(phi[:3], [-1e4, 1e4, 1e4])
    assert phi[3] == -2e300
    loss = compute_signal("loss", z, y)
    np.testing.assert_array_equal(loss[[0, 1, 2]], [1e4, 0.0, 0.0])
    assert loss[4] == pytest.approx(math.log(2))
    ment = compute_signal("modified_entropy", z, y)
    np.testing.assert_allclose(ment[:3], [2e4, 0.0, 0.0], atol=1e-300)
    for name in SIGNALS:
        v = compute_signal(name, z, y)
        assert np.all(np.isfinite(v)), name


finite_logits = arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(2, 6)),
    elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=300, deadline=None)
@given(z=finite_logits, data=st.data())
def test_always_finite_and_in_range(z: np.ndarray, data: st.DataObject) -> None:
    n, C = z.shape
    y = np.array(data.draw(st.lists(st.integers(0, C - 1), min_size=n, max_size=n)))
    loss = compute_signal("loss", z, y)
    p = compute_signal("prob_true", z, y)
    phi = compute_signal("logit_confidence", z, y)
    h = compute_signal("entropy", z, y)
    mh = compute_signal("modified_entropy", z, y)
    for v in (loss, p, phi, h, mh):
        assert v.shape == (n,) and v.dtype == np.float64 and np.all(np.isfinite(v))
    assert np.all(loss >= 0) and np.all((p >= 0) & (p <= 1))
    assert np.all(h >= 0) and np.all(h <= math.log(C) + 1e-12) and np.all(mh >= 0)
    # monotone link: phi = log p - log(1-p) is increasing in p, so orders agree
    order = np.argsort(phi, kind="stable")
    assert np.all(np.diff(p[order]) >= -1e-12)
    # phi and loss agree: loss = log(1 + exp(-phi)) = softplus(-phi)
    np.testing.assert_allclose(loss, np.logaddexp(0.0, -phi), rtol=1e-9, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(z=finite_logits, shift=st.floats(-1e3, 1e3))
def test_shift_invariance(z: np.ndarray, shift: float) -> None:
    y = np.zeros(z.shape[0], dtype=int)
    for name in SIGNALS:
        a = compute_signal(name, z, y)
        b = compute_signal(name, z + shift, y)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * (1 + np.abs(z).max()))


def test_losses_only_signals() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(scale=3, size=(200, 4))
    y = rng.integers(0, 4, size=200)
    loss = compute_signal("loss", z, y)
    for name in ("loss", "prob_true", "logit_confidence"):
        np.testing.assert_allclose(
            compute_signal_from_loss(name, loss), compute_signal(name, z, y), rtol=1e-9, atol=1e-12
        )
    for name in ("entropy", "modified_entropy"):
        with pytest.raises(InvalidInputError, match="full logits"):
            compute_signal_from_loss(name, loss)
    extreme = logit_confidence_from_loss(np.array([0.0, 1e-300, 1e-20, 50.0, 1e4]))
    assert np.all(np.isfinite(extreme))
    assert extreme[0] == pytest.approx(708.396, abs=1e-3)  # floored at the smallest normal
    np.testing.assert_allclose(extreme[2:], [46.0517, -50.0, -1e4], rtol=1e-5)
    with pytest.raises(InvalidInputError, match="non-negative"):
        compute_signal_from_loss("loss", np.array([-1.0]))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("loss", np.zeros((2, 2)), [0, 2]), "labels in 0..1"),
        (("loss", np.zeros((2, 2)), [0]), "2 labels"),
        (("loss", np.array([[0.0, np.nan]]), [0]), "NaN"),
        (("loss", np.array([[0.0, np.inf]]), [0]), "finite"),
        (("loss", np.zeros((2, 1)), [0, 0]), "2 columns"),
        (("logit_confidence", np.array([[1.7e308, -1.7e308]]), [1]), r"\|z\| <= 1e\+300"),
        (("loss", np.zeros(2), [0, 0]), "2-dimensional"),
        (("nope", np.zeros((1, 2)), [0]), "signal"),
        (("loss", np.zeros((1, 2)), [0.5]), "integer"),
    ],
)
def test_errors(args, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match=match):
        compute_signal(*args)

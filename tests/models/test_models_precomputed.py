"""PrecomputedModel: look-ups by record id, losses-only models, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privaudit.errors import InvalidInputError
from privaudit.models import PrecomputedModel, load_model, load_precomputed, save_model


def test_logits_lookup_by_id_in_requested_order() -> None:
    z = np.array([[0.0, 1.0], [2.0, 0.0], [5.0, 5.0]])
    m = PrecomputedModel(np.array(["c", "a", "b"]), logits=z)
    assert m.kind == "logits" and m.n_classes == 2 and m.has_logits
    np.testing.assert_array_equal(m.logits_for(["b", "c"]), z[[2, 0]])
    np.testing.assert_allclose(m.losses_for(["a"], labels=[1]), [np.logaddexp(2.0, 0.0) - 0.0])
    with pytest.raises(InvalidInputError, match="without outputs"):
        m.logits_for(["zz"])
    with pytest.raises(InvalidInputError, match="labels"):
        m.losses_for(["a"])


def test_losses_only() -> None:
    m = PrecomputedModel(np.array([3, 1, 2]), losses=[0.1, 0.2, 0.3], n_classes=4)
    assert m.kind == "losses" and not m.has_logits and m.n_classes == 4
    np.testing.assert_array_equal(m.losses_for([2, 3]), [0.3, 0.1])
    with pytest.raises(InvalidInputError, match="full probability vector"):
        m.logits_for([1])
    with pytest.raises(InvalidInputError, match="integer ids"):
        m.losses_for(["1"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one"),
        ({"logits": np.zeros((2, 2)), "losses": np.zeros(2)}, "exactly one"),
        ({"losses": [0.1, 0.2]}, "n_classes"),
        ({"losses": [0.1, -0.2], "n_classes": 2}, "non-negative"),
        ({"losses": [0.1, np.nan], "n_classes": 2}, "NaN"),
        ({"logits": np.zeros((3, 2))}, "rows"),
        ({"logits": np.zeros((2, 1))}, "2 columns"),
        ({"logits": np.zeros((2, 3)), "n_classes": 2}, "n_classes"),
    ],
)
def test_errors(kwargs, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match=match):
        PrecomputedModel(np.array(["a", "b"]), **kwargs)
    with pytest.raises(InvalidInputError, match="unique"):
        PrecomputedModel(np.array(["a", "a"]), losses=[0.0, 0.0], n_classes=2)


def test_npz_roundtrip(tmp_path: Path) -> None:
    z = np.random.default_rng(0).normal(size=(5, 3))
    m = PrecomputedModel(np.arange(5), logits=z, name="net")
    p = save_model(m, tmp_path / "m.npz")
    m2 = load_model(p)
    assert isinstance(m2, PrecomputedModel) and m2.name == "net"
    np.testing.assert_array_equal(m2.logits_for(np.arange(5)), z)
    with pytest.raises(InvalidInputError, match=r"\.npz"):
        save_model(m, tmp_path / "m.skops")


def test_tables(tmp_path: Path) -> None:
    f = pd.DataFrame({"record_id": ["x", "y"], "logit_1": [1.0, 2.0], "logit_0": [0.0, 0.5]})
    f.to_csv(tmp_path / "l.csv", index=False)
    m = load_precomputed(tmp_path / "l.csv")
    np.testing.assert_array_equal(m.logits_for(["y"]), [[0.5, 2.0]])
    pd.DataFrame({"record_id": [1, 2], "loss": [0.5, 0.1]}).to_parquet(tmp_path / "l.parquet")
    m = load_precomputed(tmp_path / "l.parquet", n_classes=10)
    assert m.kind == "losses" and m.n_classes == 10
    pd.DataFrame({"record_id": [1], "logit_0": [0.0], "logit_2": [1.0]}).to_csv(
        tmp_path / "g.csv", index=False
    )
    with pytest.raises(InvalidInputError, match="logit_0, logit_1"):
        load_precomputed(tmp_path / "g.csv")
    pd.DataFrame({"id": [1], "loss": [0.0]}).to_csv(tmp_path / "i.csv", index=False)
    with pytest.raises(InvalidInputError, match="id_column"):
        load_precomputed(tmp_path / "i.csv", n_classes=2)

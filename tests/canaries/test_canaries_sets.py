"""Canary sets and coins: kinds, fingerprints, files, and the refusals of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privaudit.canaries import (
    append_canaries,
    canary_records,
    draw_coins,
    load_canary_set,
    load_coins,
    make_gradient_canaries,
    make_input_canaries,
)
from privaudit.errors import InvalidInputError


def _pool(n: int = 300, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(0, 3, size=n)


def test_mislabel_canaries_are_pool_records_with_another_label() -> None:
    X, y = _pool()
    cs = make_input_canaries(X, y, 100, kind="mislabel", seed=1)
    assert cs.m == 100 and cs.n_classes == 3 and cs.X.shape == (100, 6)
    rows = [int(np.flatnonzero((X == r).all(axis=1))[0]) for r in cs.X]
    assert len(set(rows)) == 100  # drawn without replacement
    assert (y[rows] != cs.y).all()
    assert set(cs.y.tolist()) <= {0, 1, 2}


def test_ood_canaries_stay_in_the_feature_range() -> None:
    X, y = _pool()
    cs = make_input_canaries(X, y, 50, kind="ood", seed=1)
    assert (cs.X >= X.min(axis=0)).all() and (cs.X <= X.max(axis=0)).all()


def test_gradient_canaries_have_distinct_coordinates() -> None:
    cs = make_gradient_canaries(500, 200, seed=3)
    assert cs.coords.size == 200 == np.unique(cs.coords).size
    assert cs.coords.min() >= 0 and cs.coords.max() < 500
    with pytest.raises(InvalidInputError, match="at most the 500"):
        make_gradient_canaries(500, 501)


def test_fingerprints_depend_on_content_and_the_files_round_trip(tmp_path: Path) -> None:
    cs = make_gradient_canaries(500, 50, seed=3)
    assert cs.fingerprint == make_gradient_canaries(500, 50, seed=3).fingerprint
    assert cs.fingerprint != make_gradient_canaries(500, 50, seed=4).fingerprint
    coins = draw_coins(cs, seed=5)
    assert coins.set_fingerprint == cs.fingerprint
    back = load_canary_set(cs.save(tmp_path / "set.npz"))
    assert back.fingerprint == cs.fingerprint and (back.coords == cs.coords).all()
    again = load_coins(coins.save(tmp_path / "coins.json"), back)
    assert (again.included == coins.included).all() and again.fingerprint == coins.fingerprint
    # seeded coins are reproducible; unseeded ones come from the OS and differ
    assert (draw_coins(cs, seed=5).included == coins.included).all()
    assert draw_coins(cs).salt != draw_coins(cs).salt


def test_the_coin_file_carries_no_canary_and_the_set_no_coin(tmp_path: Path) -> None:
    X, y = _pool()
    cs = make_input_canaries(X, y, 40, seed=1)
    coins = draw_coins(cs, seed=2)
    with np.load(cs.save(tmp_path / "set.npz")) as z:
        assert "included" not in z.files
    doc = json.loads(coins.save(tmp_path / "coins.json").read_text())
    assert set(doc) == {"format", "set_fingerprint", "salt", "seed", "included", "fingerprint"}


def test_a_tampered_coin_file_is_refused(tmp_path: Path) -> None:
    cs = make_gradient_canaries(500, 50, seed=3)
    p = draw_coins(cs, seed=5).save(tmp_path / "coins.json")
    doc = json.loads(p.read_text())
    bits = doc["included"]
    doc["included"] = ("1" if bits[0] == "0" else "0") + bits[1:]
    p.write_text(json.dumps(doc))
    with pytest.raises(InvalidInputError, match="tampered coin file"):
        load_coins(p, cs)


def test_coins_of_another_set_are_refused(tmp_path: Path) -> None:
    cs = make_gradient_canaries(500, 50, seed=3)
    other = make_gradient_canaries(500, 50, seed=4)
    p = draw_coins(other, seed=5).save(tmp_path / "coins.json")
    with pytest.raises(InvalidInputError, match="coins of another set"):
        load_coins(p, cs)


def test_a_modified_set_file_is_refused(tmp_path: Path) -> None:
    cs = make_gradient_canaries(500, 50, seed=3)
    p = cs.save(tmp_path / "set.npz")
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["coords"] = arrays["coords"].copy()
    arrays["coords"][0] += 1
    np.savez(p, **arrays)
    with pytest.raises(InvalidInputError, match="was modified"):
        load_canary_set(p)


def test_the_data_level_api_appends_exactly_the_included_canaries() -> None:
    X, y = _pool()
    cs = make_input_canaries(X, y, 60, seed=1)
    coins = draw_coins(cs, seed=2)
    ids, Xc, yc = canary_records(cs, coins)
    assert ids.size == coins.included.sum() and (ids == cs.ids[coins.included]).all()
    X2, y2 = append_canaries(X[:10], y[:10], cs, coins)
    assert X2.shape[0] == 10 + ids.size
    assert (X2[10:] == Xc).all() and (y2[10:] == yc).all()
    with pytest.raises(InvalidInputError, match="another set"):
        canary_records(cs, draw_coins(make_input_canaries(X, y, 60, seed=9), seed=2))
    with pytest.raises(InvalidInputError, match="gradient"):
        canary_records(make_gradient_canaries(100, 10), draw_coins(make_gradient_canaries(100, 10)))

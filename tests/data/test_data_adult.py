"""Bundled UCI Adult: checksums, deterministic preprocessing, shape."""

from __future__ import annotations

import dataclasses
import hashlib
from importlib import resources

import numpy as np
import pytest

from privaudit.data import ADULT_SHA256, AdultDataError, load_adult
from privaudit.data import adult as adult_mod


@pytest.fixture(scope="module")
def adult():  # type: ignore[no-untyped-def]
    return load_adult()


def test_shape_and_labels(adult) -> None:  # type: ignore[no-untyped-def]
    assert adult.X.shape == (45_222, 105)
    assert adult.n_classes == 2 and adult.class_names == ("<=50K", ">50K")
    # >50K counts: 7,508 of 30,162 kept train rows + 3,700 of 15,060 kept test rows
    assert int(adult.y.sum()) == 11_208
    assert adult.info["n_dropped_missing"] == 3_620
    assert adult.record_ids[0] == "adult-000000"
    assert np.all(np.isfinite(adult.X))


def test_ids_point_at_source_rows(adult) -> None:  # type: ignore[no-untyped-def]
    # raw row 14 of adult.data has native-country '?', so it is dropped
    ids = set(adult.record_ids.tolist())
    assert "adult-000014" not in ids and "adult-000013" in ids
    # first line of adult.data: 39, State-gov, ..., <=50K
    i = int(adult.positions(["adult-000000"])[0])
    row = dict(zip(adult.feature_names, adult.X[i], strict=True))
    sc = adult.info["numeric_scaling"]["age"]
    assert row["age"] * sc["std"] + sc["mean"] == pytest.approx(39.0)
    assert row["workclass=State-gov"] == 1.0 and row["sex=Male"] == 1.0
    assert adult.y[i] == 0
    # first data row of adult.test is raw pool row 32,561: 25, Private, ..., <=50K.
    j = int(adult.positions(["adult-032561"])[0])
    assert adult.X[j, 0] * sc["std"] + sc["mean"] == pytest.approx(25.0)


def test_preprocessing_invariants(adult) -> None:  # type: ignore[no-untyped-def]
    numeric = adult.X[:, :6]
    np.testing.assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(numeric.std(axis=0), 1.0, rtol=1e-12)
    onehot = adult.X[:, 6:]
    assert set(np.unique(onehot).tolist()) == {0.0, 1.0}
    # every categorical block has exactly one 1 per row
    blocks: dict[str, list[int]] = {}
    for k, f in enumerate(adult.feature_names[6:]):
        blocks.setdefault(f.split("=")[0], []).append(k)
    assert len(blocks) == 8
    for cols in blocks.values():
        np.testing.assert_array_equal(onehot[:, cols].sum(axis=1), 1.0)
    assert adult.feature_names[6] == "workclass=Private"  # adult.names order, not sorted


def test_deterministic_and_fresh_copies(adult) -> None:  # type: ignore[no-untyped-def]
    again = load_adult()
    assert again.fingerprint() == adult.fingerprint()
    again.info["preprocessing"].append("mutated")
    assert "mutated" not in load_adult().info["preprocessing"]


def test_bundled_checksums_match_constants() -> None:
    for name, digest in ADULT_SHA256.items():
        raw = resources.files("privaudit.data").joinpath("_bundled", "adult", name).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == digest


def test_corrupted_file_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(adult_mod.ADULT_SHA256, "adult.names", "0" * 64)
    adult_mod._load_adult_cached.cache_clear()
    try:
        with pytest.raises(AdultDataError, match="corrupted"):
            load_adult()
    finally:
        monkeypatch.undo()
        adult_mod._load_adult_cached.cache_clear()


def test_the_reader_reads_what_pandas_reads() -> None:
    # the loader splits the two files itself (pandas' import and parse cost a third of a
    # second a run); on the bundled bytes it must agree with pandas.read_csv field for
    # field, the reader it replaced
    pd = pytest.importorskip("pandas")
    import gzip
    import io

    for name, skip in (("adult.data.gz", False), ("adult.test.gz", True)):
        raw = adult_mod._read_bundled(name)
        frame = pd.read_csv(
            io.StringIO(gzip.decompress(raw).decode("ascii")),
            header=None,
            skipinitialspace=True,
            skiprows=1 if skip else 0,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=True,
        )
        columns = adult_mod._read_table(raw, skip_first_line=skip)
        assert len(columns) == frame.shape[1] == len(adult_mod.COLUMNS)
        for j, col in enumerate(columns):
            assert col.tolist() == frame[j].tolist(), (name, adult_mod.COLUMNS[j])


def test_the_encoded_table_is_pinned(adult) -> None:  # type: ignore[no-untyped-def]
    # the digest of ids, features and labels as the pandas-based loader produced them
    # (2026-12-06): a change of parsing or encoding shows here
    assert adult.fingerprint() == "c3ffd4c939e7ca15e36de70cae24e72912f71edcb31de72a601350a9b8a7e20a"


def test_the_bundled_parse_is_the_parse_of_the_uci_files() -> None:
    # loads read adult_parsed.npz, not the two tables: it must hold exactly what parsing
    # the checksummed UCI files gives (regenerate with _write_parsed after a parse change)
    cats = adult_mod._categories_from_names(adult_mod._read_bundled("adult.names").decode())
    fresh = adult_mod._parse_uci(cats)
    bundled = adult_mod._read_parsed()
    assert fresh.kept.size == 45_222
    for f in dataclasses.fields(fresh):
        a, b = getattr(fresh, f.name), getattr(bundled, f.name)
        assert a.dtype == b.dtype and np.array_equal(a, b), f.name


def test_record_ids_are_the_formatted_pool_rows() -> None:
    k = np.arange(N_POOL := 48_842)
    expected = np.array([f"adult-{i:06d}" for i in range(N_POOL)])
    got = adult_mod._record_ids(k)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_a_short_line_is_reported() -> None:
    import gzip

    raw = gzip.compress(b"39, State-gov, 77516\n")
    with pytest.raises(AdultDataError, match="row 0 has 3 fields, expected 15"):
        adult_mod._read_table(raw, skip_first_line=False)


def test_loading_adult_and_the_audit_modules_imports_no_pandas() -> None:
    # pandas is imported only where a table file is read: an audit of a bundled dataset
    # does not pay its import
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import privaudit, privaudit.membership, privaudit.models, privaudit.report\n"
        "from privaudit.data import load_adult\n"
        "load_adult()\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]

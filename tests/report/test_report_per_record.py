"""Per-record risk (flagging FPR) and the AUC interval fields of the report (issue 8, item 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.report import ScoreTable
from privaudit.report.per_record import (
    attack_score_fields,
    flagging_fpr,
    record_risk,
    record_risk_csv,
)


def test_flagging_fpr_matches_the_definition_with_ties_and_nan() -> None:
    rng = np.random.default_rng(0)
    member = rng.random(60) < 0.5
    s = np.round(rng.standard_normal(60), 1)
    s[[3, 7]] = np.nan
    got = flagging_fpr(s, member)
    neg = s[~member & ~np.isnan(s)]
    for i in range(60):
        if np.isnan(s[i]):
            assert np.isnan(got[i])
        else:
            assert got[i] == np.mean(neg >= s[i])


def test_partial_attack_ranking_and_csv() -> None:
    ids = np.array([10, 11, 12, 13, 14, 15])
    member = np.array([True, True, True, False, False, False])
    table = ScoreTable(
        ids,
        member,
        {
            "a": np.array([5.0, 1.0, 0.5, 2.0, 0.0, -1.0]),
            "b": np.array([np.nan, 9.0, np.nan, 0.0, np.nan, 1.0]),  # scored 3 records
        },
        {"a": 1.5, "b": None},
    )
    risk = record_risk(table)
    # a: negatives 2, 0, -1 -> fpr(10)=0, fpr(11)=1/3, fpr(12)=1/3, fpr(13)=1/3
    # b: negatives 0, 1 -> fpr(11)=0, fpr(13)=1, fpr(15)=1/2
    assert risk.min_fpr.tolist() == pytest.approx([0, 0, 1 / 3, 1 / 3, 2 / 3, 1 / 2])
    # ties break by attacks flagging: 10 (a: 5 >= 1.5) before 11, 13 (a: 2 >= 1.5) before 12
    assert ids[risk.order].tolist() == [10, 11, 13, 12, 15, 14]
    assert risk.n_flagged.tolist() == [1, 0, 0, 1, 0, 0]
    lines = record_risk_csv(risk).splitlines()
    assert (
        lines[0]
        == "record_id,member,min_fpr,n_flagged,score:a,fpr:a,flagged:a,score:b,fpr:b,flagged:b"
    )
    assert lines[1] == "10,1,0.0,1,5.0,0.0,1,,,"
    assert len(lines) == 7
    row = risk.row(int(np.flatnonzero(ids == 14)[0]))
    assert row["score:b"] is None and row["flagged:b"] is None and row["flagged:a"] is False


def test_csv_cells_are_the_rows_cells() -> None:
    # the CSV is built a column at a time: every cell equals RecordRisk.row's value
    # (floats as repr, booleans 1 / 0, None empty), rows in risk.order
    import csv
    import io

    rng = np.random.default_rng(4)
    n = 300
    ids = np.array([f"r{i:04d}" for i in rng.permutation(n)])
    member = rng.random(n) < 0.5
    a = rng.standard_normal(n)
    b = np.round(rng.standard_normal(n), 1)
    b[rng.random(n) < 0.3] = np.nan
    table = ScoreTable(ids, member, {"a": a, "b": b}, {"a": None, "b": 0.2})
    risk = record_risk(table)
    rows = list(csv.reader(io.StringIO(record_risk_csv(risk))))
    header, body = rows[0], rows[1:]
    assert len(body) == n
    for line, i in zip(body, risk.order.tolist(), strict=True):
        want = risk.row(int(i))
        for col, cell in zip(header, line, strict=True):
            v = want[col]
            if v is None:
                assert cell == "", (col, cell)
            elif isinstance(v, bool):
                assert cell == ("1" if v else "0"), (col, cell)
            elif isinstance(v, float):
                assert cell == repr(v), (col, cell)
            else:
                assert cell == str(v), (col, cell)


def test_attack_score_fields_are_the_delong_interval() -> None:
    rng = np.random.default_rng(1)
    member = np.arange(200) < 100
    table = ScoreTable(np.arange(200), member, {"x": rng.standard_normal(200) + member})
    f = attack_score_fields(table, "x")
    assert f["auc_ci_method"] == "delong-hm-score" and f["auc_ci_confidence"] == 0.95
    lo, hi = f["auc_ci"]
    assert 0.6 < lo < hi < 0.9 and f["auc_se"] > 0 and math.isfinite(f["auc_se"])

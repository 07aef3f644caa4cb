"""The signals against the base model (signals/text_finetune.py) and their paired token
statistics (models/lm_paired.py): slow oracles, the membership contract (leaky toy model
AUC > 0.5; null target AUC ~ 0.5 and achieved FPR ~ alpha), and boundary errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_softmax, rel_entr

from privaudit._stats import mann_whitney_auc
from privaudit.errors import InsufficientDataError, InvalidInputError
from privaudit.models.lm_paired import (
    PairedTokenStats,
    load_paired_stats,
    paired_token_stats,
    save_paired_stats,
)
from privaudit.signals.text_finetune import (
    FINETUNE_SIGNALS,
    WBC_WINDOWS,
    ez_mia,
    finetune_signals,
    informia_token,
    token_scores,
    wbc,
)


def _stats(rng: np.random.Generator, n: int, *, lift: float = 0.0) -> PairedTokenStats:
    """A random text of ``n`` tokens; ``lift`` raises the target's log-probability of the
    true token at the error positions (memorisation where the target is wrong)."""
    lb = -rng.exponential(2.0, n - 1)
    top1 = rng.random(n - 1) < 0.4
    lt = lb + rng.normal(0.0, 0.5, n - 1) + lift * (~top1)
    return PairedTokenStats(
        ids=rng.integers(0, 50, n),
        target_logprobs=lt,
        base_logprobs=lb,
        target_top1=top1,
        kl=rng.exponential(0.3, n - 1),
        n_bytes=n,
    )


def test_ez_mia_is_the_error_zone_balance_and_orders_as_the_ratio() -> None:
    rng = np.random.default_rng(0)
    stats = [_stats(rng, int(rng.integers(3, 60))) for _ in range(200)]
    got = ez_mia(stats)
    ratios = []
    for s, g in zip(stats, got, strict=True):
        pos = neg = 0.0
        for t in range(s.n_tokens - 1):  # slow oracle: loop over the error positions
            if not s.target_top1[t]:
                d = s.target_logprobs[t] - s.base_logprobs[t]
                if d > 0:
                    pos += d
                else:
                    neg -= d
        assert g == pytest.approx((pos - neg) / (pos + neg) if pos + neg > 0 else 0.0)
        ratios.append(pos / neg if neg > 0 else math.inf)
    finite = np.isfinite(ratios)
    # the balance is a strictly increasing function of the paper's ratio P / N
    assert np.array_equal(np.argsort(got[finite]), np.argsort(np.asarray(ratios)[finite]))


def test_ez_mia_edge_cases() -> None:
    up = PairedTokenStats(
        np.arange(4), np.array([-1.0, -1.0, -1.0]), np.array([-2.0, -3.0, -0.5]),
        np.array([False, False, True]), np.zeros(3), 4,
    )  # fmt: skip
    none_wrong = PairedTokenStats(
        np.arange(3), np.array([-1.0, -1.0]), np.array([-2.0, -0.1]), np.array([True, True]),
        np.zeros(2), 3,
    )  # fmt: skip
    one_down = PairedTokenStats(
        np.arange(3), np.array([-3.0, -1.0]), np.array([-2.9, -0.1]), np.array([False, True]),
        np.zeros(2), 3,
    )  # fmt: skip
    # all upward; no errors; one error position: the sign of its shift
    np.testing.assert_allclose(ez_mia([up, none_wrong, one_down]), [1.0, 0.0, -1.0])


def test_wbc_matches_window_by_window_votes() -> None:
    rng = np.random.default_rng(1)
    stats = [_stats(rng, int(rng.integers(2, 70))) for _ in range(60)]
    got = wbc(stats)
    for s, g in zip(stats, got, strict=True):
        tl, rl = -s.target_logprobs, -s.base_logprobs
        per_size = []
        for w in WBC_WINDOWS:
            w = min(w, tl.size)
            votes = [rl[i : i + w].sum() > tl[i : i + w].sum() for i in range(tl.size - w + 1)]
            per_size.append(np.mean(votes))
        assert g == pytest.approx(float(np.mean(per_size)))
    assert wbc(stats, windows=[1])[0] == pytest.approx(np.mean(stats[0].shift > 0))


def test_informia_token_and_token_scores() -> None:
    rng = np.random.default_rng(2)
    stats = [_stats(rng, 30) for _ in range(5)]
    s = stats[0]
    ts = token_scores(s)
    np.testing.assert_allclose(
        ts["informia"], (s.target_logprobs - s.base_logprobs + s.kl) / math.log(2)
    )
    np.testing.assert_array_equal(ts["error"], ~s.target_top1)
    np.testing.assert_allclose(
        informia_token(stats), [np.mean(token_scores(x)["informia"]) for x in stats]
    )
    out = finetune_signals(stats)
    assert list(out) == list(FINETUNE_SIGNALS)
    assert all(v.shape == (5,) and np.all(np.isfinite(v)) for v in out.values())


class _TableLM:
    """A model whose next-token logits are a fixed function of the previous token."""

    def __init__(self, logits: np.ndarray, tokenizer_id: str = "t", max_length: int = 64) -> None:
        self.logp = log_softmax(logits, axis=1)
        self.tokenizer_id, self.max_length, self.name = tokenizer_id, max_length, "table"

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [[ord(c) - 97 for c in t] for t in texts]

    def token_distributions(self, text: str, *, stride: int | None = None) -> np.ndarray:
        ids = self.tokenize([text])[0]
        return self.logp[ids[:-1]]


def test_paired_token_stats_oracle_and_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    target, base = _TableLM(rng.normal(size=(5, 5))), _TableLM(rng.normal(size=(5, 5)))
    texts = ["abcde", "eedcba", "ab", "a"]
    stats = paired_token_stats(target, base, texts, progress=False)
    s = stats[1]
    ids = [4, 4, 3, 2, 1, 0]
    for t in range(5):
        prev, x = ids[t], ids[t + 1]
        assert s.target_logprobs[t] == pytest.approx(target.logp[prev, x])
        assert s.base_logprobs[t] == pytest.approx(base.logp[prev, x])
        assert s.target_top1[t] == (np.argmax(target.logp[prev]) == x)
        pb = np.exp(base.logp[prev])
        assert s.kl[t] == pytest.approx(rel_entr(pb, np.exp(target.logp[prev])).sum())
    assert stats[3].n_tokens == 1 and stats[3].kl.size == 0
    save_paired_stats(stats, tmp_path / "p.npz")
    back = load_paired_stats(tmp_path / "p.npz")
    for a, b in zip(stats, back, strict=True):
        for f in ("ids", "target_logprobs", "base_logprobs", "target_top1", "kl"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        assert a.n_bytes == b.n_bytes
    with pytest.raises(InsufficientDataError, match="1 shorter text"):
        ez_mia(stats)  # "a" has no scored token: refused, never dropped
    with pytest.raises(InvalidInputError, match="base: expected the target's tokenizer"):
        paired_token_stats(target, _TableLM(base.logp, tokenizer_id="other"), texts)
    for other in (8, 128):  # a shorter or a longer context scores other windows
        with pytest.raises(InvalidInputError, match=r"base\.max_length"):
            paired_token_stats(target, _TableLM(base.logp, max_length=other), texts)


def test_kl_of_tokens_a_model_rules_out() -> None:
    """A token neither model allows adds 0 to the divergence (not 0 * inf = NaN); a token
    the base allows and the target rules out makes it infinite, and the signals refuse it."""
    rng = np.random.default_rng(5)
    t_logits, b_logits = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    t_logits[:, 4] = b_logits[:, 4] = -np.inf  # token "e": nobody's
    stats = paired_token_stats(_TableLM(t_logits), _TableLM(b_logits), ["abcd"], progress=False)
    ids = [0, 1, 2, 3]
    for t in range(3):
        pb, pt = np.exp(log_softmax(b_logits[ids[t]])), np.exp(log_softmax(t_logits[ids[t]]))
        assert stats[0].kl[t] == pytest.approx(rel_entr(pb, pt).sum())
    assert np.all(np.isfinite(informia_token(stats)))
    t_logits[:, 3] = -np.inf  # "d": the base allows it, the target does not
    b_logits[:, 3] = 0.0
    stats = paired_token_stats(_TableLM(t_logits), _TableLM(b_logits), ["abcc"], progress=False)
    assert np.isinf(stats[0].kl).any()
    with pytest.raises(InvalidInputError, match=r"\[0\]\.kl"):
        informia_token(stats)


def test_bad_inputs_are_refused() -> None:
    rng = np.random.default_rng(4)
    s = _stats(rng, 10)
    with pytest.raises(InvalidInputError, match="windows"):
        wbc([s], windows=[0])
    with pytest.raises(InvalidInputError, match="names"):
        finetune_signals([s], names=["loss"])
    with pytest.raises(InvalidInputError, match="sequence of PairedTokenStats"):
        ez_mia(s)  # type: ignore[arg-type]
    bad = PairedTokenStats(
        s.ids, s.target_logprobs.copy(), s.base_logprobs, s.target_top1, s.kl, 10
    )
    bad.target_logprobs[0] = np.nan
    with pytest.raises(InvalidInputError, match="finite"):
        informia_token([bad])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contract_leaky_toy_and_null_target(seed: int) -> None:
    """Higher = member: members whose true tokens fine-tuning lifted at the error positions
    score higher (AUC > 0.5) under every signal; with members and non-members drawn alike
    (a null target) AUC ~ 0.5 and the threshold at FPR alpha on held-out non-members has
    achieved FPR ~ alpha on fresh ones."""
    rng = np.random.default_rng(seed)
    n = 400
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    leaky = [_stats(rng, 40, lift=0.6 if m else 0.0) for m in member]
    null = [_stats(rng, 40) for _ in member]
    for name in FINETUNE_SIGNALS:
        s_leaky = finetune_signals(leaky, names=[name])[name]
        assert mann_whitney_auc(s_leaky, member) > 0.6, name
        s_null = finetune_signals(null, names=[name])[name]
        assert abs(mann_whitney_auc(s_null, member) - 0.5) < 0.06, name
        alpha = 0.1
        ref, fresh = s_null[n : n + n // 2], s_null[n + n // 2 :]
        thr = np.quantile(ref, 1 - alpha)
        assert abs(np.mean(fresh > thr) - alpha) < 0.07, name

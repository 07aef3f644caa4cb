"""A small fake causal LM with the shape of ``privaudit.models.causal_lm.CausalLM``.

A byte-level bigram model (add-``alpha`` smoothing) fitted on given texts: it "memorises"
its training texts the way a fine-tuned LM does (their bigrams get higher probability),
in milliseconds and without torch. Used to test the experiment's steps independently of
the real adapter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from privaudit.models.causal_lm import TokenStats


class BigramLM:
    def __init__(
        self,
        texts: Sequence[str],
        *,
        alpha: float = 0.1,
        name: str = "bigram",
        tokenizer_id: str = "bytes",
    ) -> None:
        counts = np.full((256, 256), alpha)
        for t in texts:
            b = np.frombuffer(t.encode("utf-8"), dtype=np.uint8)
            np.add.at(counts, (b[:-1], b[1:]), 1.0)
        self.logp = np.log(counts / counts.sum(axis=1, keepdims=True))
        self.name = name
        self.fingerprint = hashlib.sha256(self.logp.tobytes()).hexdigest()
        self.tokenizer_id = tokenizer_id
        self.device = "cpu"
        self.max_length = 512
        self.calls = 0

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(t.encode("utf-8")) for t in texts]

    def token_stats(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 8,
        distribution: bool = False,
        stride: int | None = None,
        progress: bool | None = None,
    ) -> list[TokenStats]:
        self.calls += 1
        out = []
        for t in texts:
            b = np.frombuffer(t.encode("utf-8"), dtype=np.uint8)
            rows = self.logp[b[:-1]]
            lp = rows[np.arange(b.size - 1), b[1:]]
            mu = sd = None
            if distribution:
                p = np.exp(rows)
                mu = (p * rows).sum(axis=1)
                sd = np.sqrt(np.maximum((p * rows**2).sum(axis=1) - mu**2, 1e-12))
            out.append(
                TokenStats(
                    logprobs=lp.astype(np.float64),
                    dist_mean=mu,
                    dist_std=sd,
                    n_tokens=int(b.size),
                    n_bytes=int(b.size),
                )
            )
        return out

    def token_distributions(self, text: str, *, stride: int | None = None) -> np.ndarray:
        """The full next-token log-distributions of one text, ``(n - 1, 256)``."""
        self.calls += 1
        b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        return np.asarray(self.logp[b[:-1]], dtype=np.float64)

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        return [bytes([int(i)]).decode("latin-1") for i in ids]

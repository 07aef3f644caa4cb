"""PANORAMIA's text modality: causal LMs audited with generated non-member texts.

Kazmi et al., "PANORAMIA: privacy auditing of machine learning models without retraining"
(NeurIPS 2024). For language models (Sec. 5, App. C) the target f is an LM fine-tuned on
text; the auditor knows some of its training texts (the known members), and:

* **generator G** (:meth:`TextModality.fit_generator`): the base LM fine-tuned on D_G minus a
  held-out prompt part (``prompt_fraction`` of D_G's *documents*, so a prompt never comes
  from a document G trained on), sampled with top-k sampling from prompts cut from the
  held-out part (:mod:`privaudit.models.lm_generate`). With ``start_after`` a synthetic text
  starts after the first such separator in the continuation (e.g. ``"\n\n"``: at a speech
  start, like real chunks that open a document). Every synthetic text is cut at a line
  end to a length drawn from G's training texts (same length distribution as the member
  chunks; a classifier would otherwise detect length) and length-filtered; it is its own
  document, with id ``synth-000000``, ...;
* **helper h** (:meth:`TextModality.fit_helper`): the base LM fine-tuned with the *target's*
  recipe on the helper pool of synthetic texts only (never on the audit's synthetic texts,
  never on real texts);
* **loss features** (:meth:`TextModality.loss_features`): the per-token loss vector
  ``-log p(x_t | x_<t)`` of a model on the text (the first ``loss_tokens`` scored tokens,
  zero-padded, with a mask), after summaries: mean token loss (column 0: the per-example
  loss a loss-threshold attack such as O(1) reads), its standard deviation, the mean of the
  20 % lowest log-probabilities (min-k, Shi et al. 2024), the zlib ratio (Carlini et al.
  2021) and the log number of tokens;
* **reference** (:meth:`TextModality.reference_model`, scorer setting ``reference``, default
  ``"generator+target-recipe"``): models of the real distribution that saw no audit record,
  whose loss features are appended to every classifier's (MIA, baseline, RM;RN).
  ``"generator"``: G's own LM, fine-tuned on real known members (D_G). ``"target-recipe"``:
  the base fine-tuned with the *target's* recipe on all of D_G (G's prompt documents
  included; a snapshot of one run per step count, like h) -- a model that learnt the real
  distribution the way the target did, minus the audit's members, and not the model G
  sampled from (G's LM finds its own samples likelier than any other model does).
  ``"generator+target-recipe"``: both, in that order: the default, because on SmolLM2
  targets (five seeds, 10 / 30 / 80 steps) its eps_tilde never reads above RM;RN on average
  at any step count and still grows with the steps, where G's LM alone reads above RM;RN at
  10 and 30 steps (it costs one more fine-tuning run per target and its memory). Without a
  reference the baseline only has h, trained on synthetic text, while the MIA has f, trained
  on real text: f tells real from generated text better than h even where it reveals no
  membership, and PANORAMIA counts that as eps (the paper's caveat on a loose ``c_lb``, Sec.
  4.2). The baseline may be any function of x alone (Prop. 1), and "the stronger this
  baseline, the better" (Sec. 3): with a reference the MIA's only extra input is the
  target's loss (measured in ``benchmarks/_panoramia_text.py``);
* **classifiers** (:meth:`TextModality.fit_scorer`): one network for the MIA (target's loss
  features) and the baseline (helper's): a byte-level 1-D convolutional encoder of the text
  and a 1-D convolution over the per-token losses (of each model: the target or helper,
  then the reference) with an MLP over the summaries, joined by an MLP into one logit
  (higher = member), trained by :func:`privaudit.attacks.selected_net.fit_selected_net`,
  which restores the best validation epoch under the caller's criterion (the bound itself).

The records are :class:`~privaudit.data.text.TextRecords`, with their documents
(:meth:`TextModality.documents`): chunks of one document share membership and are alike,
so the game splits by document (``D_G``, the classifiers' data and the test slots hold
disjoint documents; each test slot shows one chunk of its own document and the document's
other chunks are used nowhere; a document holding both known members and real non-members
is refused). One chunk per document spends no chunk on that.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.attacks.selected_net import fit_selected_net, predict_net
from privaudit.data.text import TextRecords
from privaudit.errors import InsufficientDataError
from privaudit.runtime.seeds import derive_rng, derive_seed

if TYPE_CHECKING:
    from privaudit.models.causal_lm import CausalLM
    from privaudit.models.lm_finetune import FineTuneRecipe
    from privaudit.models.lm_generate import TextGenerator
    from privaudit.panoramia.game import ScorerData

__all__ = [
    "REFERENCES",
    "SCORER_DEFAULTS",
    "SUMMARY_FEATURES",
    "TextModality",
    "TextScorer",
    "encode_bytes",
]

#: Defaults of the ``scorer`` settings (``TextModality(scorer={...})`` overrides any).
SCORER_DEFAULTS: dict[str, Any] = {
    "text_bytes": 384,  # UTF-8 bytes of the text the encoder reads (truncated / padded)
    "embed": 16,
    "channels": 32,
    "hidden": 64,
    "epochs": 30,
    "batch_size": 64,
    "lr": 1e-3,
    "weight_decay": 1e-4,
    "patience": None,
    # loss features of reference models every classifier also sees: "generator" (G's LM,
    # trained on D_G only), "target-recipe" (the target's recipe on D_G), both joined by
    # "+" (the default: measured in benchmarks/_panoramia_text.py), or None
    "reference": "generator+target-recipe",
}
#: Values of the scorer's ``reference`` setting (module docstring).
REFERENCES: tuple[str | None, ...] = (
    "generator",
    "target-recipe",
    "generator+target-recipe",
    None,
)
#: Names of the summary columns after the per-token losses and their mask.
SUMMARY_FEATURES: tuple[str, ...] = (
    "mean_loss",
    "std_loss",
    "min_k_logprob",
    "zlib_ratio",
    "log_n_tokens",
)
_PAD_BYTE = 256


def encode_bytes(texts: Sequence[str], width: int) -> NDArray[np.float32]:
    """UTF-8 bytes of each text (0..255), truncated or padded with 256 to ``width``
    (float32: the network inputs of :func:`~privaudit.attacks.selected_net.fit_selected_net`)."""
    out = np.full((len(texts), width), _PAD_BYTE, dtype=np.float32)
    for i, t in enumerate(texts):
        b = np.frombuffer(t.encode("utf-8")[:width], dtype=np.uint8)
        out[i, : b.size] = b
    return out


def _concat_records(a: TextRecords, b: TextRecords) -> TextRecords:
    member = None
    if a.member is not None and b.member is not None:
        member = np.concatenate([a.member, b.member])
    return TextRecords(
        ids=a.ids + b.ids,
        texts=a.texts + b.texts,
        documents=a.documents + b.documents,
        member=member,
    )


# ---------------------------------------------------------------------------------------
# the scorer network (torch imported lazily)


def _net_type() -> Any:
    global _NET_TYPE
    if _NET_TYPE is not None:
        return _NET_TYPE
    from privaudit.models.torch_recipe import require_torch

    torch = require_torch()
    nn = torch.nn

    class TextLossNet(nn.Module):  # type: ignore[name-defined]
        """Byte-CNN encoder of ``x`` + 1-D conv over the per-token losses + MLP over the
        summaries -> one logit. ``loss`` holds ``blocks`` blocks of
        :meth:`TextModality.loss_features` columns side by side (one per model: the target
        or helper, then the reference); the convolution reads each block's losses and mask
        as channels. Summaries are standardised with the training means."""

        def __init__(
            self,
            loss_tokens: int,
            blocks: int,
            center: NDArray[np.float32],
            scale: NDArray[np.float32],
            cfg: dict[str, Any],
        ) -> None:
            super().__init__()
            ch, hid = int(cfg["channels"]), int(cfg["hidden"])
            self.loss_tokens = loss_tokens
            self.blocks = blocks
            self.embed = nn.Embedding(_PAD_BYTE + 1, int(cfg["embed"]), padding_idx=_PAD_BYTE)
            self.text_conv = nn.Sequential(
                nn.Conv1d(int(cfg["embed"]), ch, 5, padding=2),
                nn.ReLU(),
                nn.Conv1d(ch, ch, 5, padding=2, stride=2),
                nn.ReLU(),
            )
            self.loss_conv = nn.Sequential(nn.Conv1d(2 * blocks, ch, 5, padding=2), nn.ReLU())
            self.summary = nn.Sequential(nn.Linear(len(center), hid), nn.ReLU())
            self.head = nn.Sequential(nn.Linear(4 * ch + hid, hid), nn.ReLU(), nn.Linear(hid, 1))
            self.register_buffer("center", torch.from_numpy(center))
            self.register_buffer("scale", torch.from_numpy(scale))

        def forward(self, x: Any, loss: Any) -> Any:
            tokens = x.long()
            real = (tokens != _PAD_BYTE).float()
            h = self.text_conv(self.embed(tokens).transpose(1, 2))
            real_h = real[:, ::2][:, : h.shape[2]]
            text_mean = (h * real_h[:, None]).sum(2) / real_h.sum(1, keepdim=True).clamp_min(1)
            text_max = h.masked_fill(real_h[:, None] == 0, -1e4).amax(2)
            k, j = self.loss_tokens, len(SUMMARY_FEATURES)
            w = j + 2 * k
            parts = [loss[:, b * w : (b + 1) * w] for b in range(self.blocks)]
            channels = [c for p in parts for c in (p[:, j : j + k], p[:, j + k :])]
            mask = parts[0][:, j + k :]  # one tokenizer: every block has the same mask
            g = self.loss_conv(torch.stack(channels, dim=1))
            loss_mean = (g * mask[:, None]).sum(2) / mask.sum(1, keepdim=True).clamp_min(1)
            loss_max = g.masked_fill(mask[:, None] == 0, -1e4).amax(2)
            summ = torch.cat([p[:, :j] for p in parts], dim=1)
            s = self.summary((summ - self.center) / self.scale)
            z = torch.cat([text_mean, text_max, loss_mean, loss_max, s], dim=1)
            return self.head(z)[:, 0]

    _NET_TYPE = TextLossNet
    return TextLossNet


_NET_TYPE: Any = None


@dataclasses.dataclass
class TextScorer:
    """A fitted text MIA or baseline: ``score(records, loss)`` = its logit (higher = member)."""

    module: Any
    text_bytes: int
    info: dict[str, Any]

    def score(self, records: TextRecords, loss: NDArray[np.float64]) -> NDArray[np.float64]:
        """Logits of the records with these loss features (rows aligned)."""
        x = encode_bytes(records.texts, self.text_bytes)
        return predict_net(self.module, (x, np.asarray(loss, dtype=np.float32)))


# ---------------------------------------------------------------------------------------
# the modality


class TextModality:
    """PANORAMIA on causal LMs (module docstring); records are ``TextRecords``.

    Parameters
    ----------
    base : CausalLM or path
        The pretrained LM the target was fine-tuned from (a path is loaded on first use with
        :meth:`CausalLM.from_directory <privaudit.models.causal_lm.CausalLM.from_directory>`).
    recipe : FineTuneRecipe
        The target's fine-tuning recipe: the helper is trained with it.
    top_k, max_new_tokens, prompt_chars, min_chars, max_chars, temperature, start_after
        Sampling of the generator (:class:`~privaudit.models.lm_generate.TextSampling`).
    prompt_fraction : float
        Share of D_G's documents held out as prompts (G never trains on them).
    generator_recipe : FineTuneRecipe, optional
        G's fine-tuning recipe (default: ``recipe``).
    loss_tokens : int
        Per-token losses kept per text (zero-padded, with a mask).
    scorer : dict, optional
        Overrides of :data:`SCORER_DEFAULTS`.
    batch_size : int
        Texts per forward pass when scoring and generating.
    snapshot_steps : sequence of int
        Targets that are snapshots of one fine-tuning run (``recipe.stop_after = k`` for
        each ``k`` here, the schedule over ``recipe.steps``; :meth:`with_recipe` per
        target): the helpers, trained with the same recipe, are then snapshots of ONE run on
        the helper pool too (:func:`~privaudit.models.lm_finetune.finetune_snapshots`, bit
        for bit what a separate ``stop_after = k`` run gives), trained at the first
        :meth:`fit_helper` and memoised until each is handed out. Empty: one helper run
        per call.
    """

    name = "text"

    def __init__(
        self,
        base: CausalLM | str | os.PathLike[str],
        recipe: FineTuneRecipe,
        *,
        top_k: int = 50,
        max_new_tokens: int = 96,
        prompt_fraction: float = 0.2,
        prompt_chars: int = 32,
        min_chars: int = 64,
        max_chars: int = 400,
        temperature: float = 1.0,
        start_after: str | None = None,
        generator_recipe: FineTuneRecipe | None = None,
        loss_tokens: int = 128,
        scorer: dict[str, Any] | None = None,
        batch_size: int = 16,
        snapshot_steps: Sequence[int] = (),
    ) -> None:
        from privaudit.models.lm_finetune import FineTuneRecipe
        from privaudit.models.lm_generate import TextSampling

        if not isinstance(recipe, FineTuneRecipe):
            raise fail("recipe", "a FineTuneRecipe", type(recipe).__name__)
        if generator_recipe is not None and not isinstance(generator_recipe, FineTuneRecipe):
            raise fail("generator_recipe", "a FineTuneRecipe", type(generator_recipe).__name__)
        if not (isinstance(prompt_fraction, float | int) and 0 < prompt_fraction < 1):
            raise fail("prompt_fraction", "a number in (0, 1)", repr(prompt_fraction))
        unknown = set(scorer or {}) - set(SCORER_DEFAULTS)
        if unknown:
            raise fail("scorer", f"keys among {sorted(SCORER_DEFAULTS)}", sorted(unknown))
        reference = (scorer or {}).get("reference", SCORER_DEFAULTS["reference"])
        if reference not in REFERENCES:
            raise fail("scorer.reference", f"one of {list(REFERENCES)}", repr(reference))
        self._base = base
        self.recipe = recipe
        self.generator_recipe = generator_recipe or recipe
        self.sampling = TextSampling(
            top_k=top_k,
            max_new_tokens=max_new_tokens,
            prompt_chars=prompt_chars,
            min_chars=min_chars,
            max_chars=max_chars,
            temperature=temperature,
            batch_size=batch_size,
            start_after=start_after,
        )
        self.prompt_fraction = float(prompt_fraction)
        self.loss_tokens = check_positive_int(loss_tokens, "loss_tokens")
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.scorer = {**SCORER_DEFAULTS, **(scorer or {})}
        self.snapshot_steps = tuple(
            sorted({check_positive_int(k, "snapshot_steps") for k in snapshot_steps})
        )
        # G and its samples do not depend on the target's recipe: memoised per
        # (D_G ids, seed) and (generator, n, seed), shared by with_recipe copies
        self._memo: dict[tuple[Any, ...], Any] = {}

    def with_recipe(self, recipe: FineTuneRecipe) -> TextModality:
        """A copy for another target recipe (the helper's), sharing the base, the settings
        and the memoised generator and samples (G is trained with ``generator_recipe``,
        which does not change). For several targets fine-tuned from one base on the same
        known members, e.g. increasing numbers of steps."""
        other = copy.copy(self)
        other.recipe = recipe
        return other

    # -- records ------------------------------------------------------------------------

    def ids(self, records: TextRecords) -> tuple[str, ...]:
        return records.ids

    def take(self, records: TextRecords, ids: Sequence[str]) -> TextRecords:
        return records.subset(list(ids))

    def documents(self, records: TextRecords) -> tuple[str, ...]:
        """The document of each record: the game splits by document when one holds several
        chunks (:mod:`privaudit.panoramia.split`)."""
        return records.documents

    def concat(self, a: TextRecords, b: TextRecords) -> TextRecords:
        return _concat_records(a, b)

    def records_to_arrays(self, records: TextRecords) -> dict[str, NDArray[Any]]:
        """Records as arrays, for the game's artifact store (cache and resume)."""
        out: dict[str, NDArray[Any]] = {
            "ids": np.asarray(records.ids, dtype=str),
            "texts": np.asarray(records.texts, dtype=str),
            "documents": np.asarray(records.documents, dtype=str),
        }
        if records.member is not None:
            out["member"] = np.asarray(records.member, dtype=bool)
        return out

    def records_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> TextRecords:
        """The inverse of :meth:`records_to_arrays`."""
        member = arrays.get("member")
        return TextRecords(
            ids=tuple(str(v) for v in np.asarray(arrays["ids"]).tolist()),
            texts=tuple(str(v) for v in np.asarray(arrays["texts"]).tolist()),
            documents=tuple(str(v) for v in np.asarray(arrays["documents"]).tolist()),
            member=None if member is None else np.asarray(member, dtype=bool),
        )

    # -- models ---------------------------------------------------------------------------

    @property
    def base(self) -> CausalLM:
        """The base LM (loaded on first use when given as a path)."""
        from privaudit.models.causal_lm import CausalLM

        if not isinstance(self._base, CausalLM):
            self._base = CausalLM.from_directory(Path(self._base), device="cpu")
        return self._base

    def fit_generator(self, records: TextRecords, *, seed: int) -> TextGenerator:
        """G: the base LM fine-tuned on D_G minus the prompt documents (module docstring)."""
        from privaudit.models.lm_generate import fit_text_generator

        key = ("generator", records.texts_hash(), records.documents, int(seed))
        if key in self._memo:
            gen: TextGenerator = self._memo[key]
            return gen
        docs = sorted(set(records.documents))
        if len(docs) < 2:
            raise InsufficientDataError(
                f"generator records: expected texts of at least 2 documents (training and "
                f"prompts), found {len(docs)}"
            )
        n_prompt = min(len(docs) - 1, max(1, round(self.prompt_fraction * len(docs))))
        rng = derive_rng(seed, purpose="panoramia-text-prompt-documents")
        prompt_docs = {docs[i] for i in rng.permutation(len(docs))[:n_prompt]}
        is_prompt = np.array([d in prompt_docs for d in records.documents])
        train = [t for t, p in zip(records.texts, is_prompt, strict=True) if not p]
        prompts = [t for t, p in zip(records.texts, is_prompt, strict=True) if p]
        recipe = dataclasses.replace(
            self.generator_recipe, seed=derive_seed(seed, purpose="panoramia-text-generator")
        )
        gen = fit_text_generator(self.base, train, prompts, recipe, self.sampling)
        prompt_ids = sorted(np.asarray(records.ids, dtype=object)[is_prompt].tolist())
        gen.info["n_prompt_documents"] = n_prompt
        gen.info["prompt_ids_sha256"] = hashlib.sha256("\n".join(prompt_ids).encode()).hexdigest()
        self._memo[key] = gen
        # D_G and the seed, for the target-recipe reference (reference_model)
        self._memo[("generator-records", id(gen))] = (records, int(seed))
        return gen

    def sample(self, generator: TextGenerator, n: int, *, seed: int) -> TextRecords:
        """Exactly ``n`` synthetic texts, ids ``synth-000000``..., each its own document."""
        from privaudit.models.lm_generate import sample_texts

        key = ("sample", id(generator), int(n), int(seed))
        if key not in self._memo:
            self._memo[key] = sample_texts(generator, n, seed=seed)
            # what it took, in the generator's info (the result's ``generator`` section)
            generator.info.setdefault("samples", []).append({"n": n, **self._memo[key][1]})
        texts, _ = self._memo[key]
        ids = tuple(f"synth-{i:06d}" for i in range(n))
        return TextRecords(ids=ids, texts=tuple(texts), documents=ids)

    def fit_helper(self, records: TextRecords, *, seed: int) -> CausalLM:
        """h: the base LM fine-tuned with the target's recipe on the helper pool only (a
        snapshot of one memoised run when ``recipe.stop_after`` is in ``snapshot_steps``)."""
        return self._fit_target_recipe(
            records, derive_seed(seed, purpose="panoramia-text-helper"), keep=False
        )

    def _fit_target_recipe(self, records: TextRecords, seed: int, *, keep: bool) -> CausalLM:
        """The base fine-tuned with the target's recipe (seed ``seed``) on ``records``. With
        ``recipe.stop_after`` in ``snapshot_steps``: a snapshot of ONE run taking every
        snapshot (:func:`~privaudit.models.lm_finetune.finetune_snapshots`), memoised. The
        helper's (``keep=False``) is handed out once (memory: one model each; a repeat
        retrains). The reference's (``keep=True``) is kept for the target's other record
        sets (RM;RN's): one run at a time, whose snapshots of fewer steps are dropped, with
        their memoised features, when a later one is asked for."""
        from privaudit.models.lm_finetune import finetune, finetune_snapshots

        recipe = dataclasses.replace(self.recipe, seed=seed)
        k = recipe.stop_after
        snapshot = k is not None and k in self.snapshot_steps
        if not (snapshot or keep):
            return finetune(self.base, list(records.texts), recipe)
        run = dataclasses.replace(recipe, stop_after=None) if snapshot else recipe
        tag = "reference-run" if keep else "helper"
        key = (tag, records.texts_hash(), records.documents, run)
        want = k if snapshot else None
        models: dict[int | None, CausalLM] | None = self._memo.get(key)
        if models is None or want not in models:
            for old in [o for o in self._memo if keep and o[0] == tag]:
                for m in self._memo.pop(old).values():
                    self._forget_reference(m)
            if snapshot:
                at = [j for j in self.snapshot_steps if j <= run.steps]
                snaps = finetune_snapshots(self.base, list(records.texts), run, at)
                models = {j: m for j, m in snaps.items()}
            else:
                models = {None: finetune(self.base, list(records.texts), recipe)}
            self._memo[key] = models
        if keep:
            for j in [j for j in models if j is not None and want is not None and j < want]:
                self._forget_reference(models.pop(j))
            return models[want]
        model = models.pop(want)
        if not models:
            del self._memo[key]
        return model

    def _forget_reference(self, model: CausalLM) -> None:
        """Drop a reference model and its memoised loss features (an earlier snapshot)."""
        for key in [key for key in self._memo if key[0] in ("reference", "reference-loss")]:
            if key[1] == id(model):
                del self._memo[key]

    def reference_model(self, generator: TextGenerator) -> CausalLM | tuple[CausalLM, ...] | None:
        """The models whose loss features every classifier also sees (module docstring), by
        the scorer's ``reference``: G's LM, the target's recipe on G's training records
        (D_G: the records :meth:`fit_generator` was given), both (a tuple, read side by
        side), or ``None``. Their loss features are memoised per text set (shared by the
        classifier's and RM;RN's records of one target, and G's by every target of a split)."""
        choice = self.scorer["reference"]
        if choice is None:
            return None
        models: list[CausalLM] = []
        for part in choice.split("+"):
            if part == "generator":
                models.append(generator.lm)
            else:
                fitted = self._memo.get(("generator-records", id(generator)))
                if fitted is None:
                    raise fail(
                        "generator", "a generator fitted by this modality's fit_generator "
                        "(the target-recipe reference trains on its records)", "another",
                    )  # fmt: skip
                d_g, g_seed = fitted
                seed = derive_seed(g_seed, purpose="panoramia-text-reference")
                models.append(self._fit_target_recipe(d_g, seed, keep=True))
        for m in models:
            self._memo[("reference", id(m))] = m
        return models[0] if len(models) == 1 else tuple(models)

    def loss_features(
        self, model: CausalLM | tuple[CausalLM, ...], records: TextRecords
    ) -> NDArray[np.float64]:
        """``(n, 5 + 2 * loss_tokens)``: :data:`SUMMARY_FEATURES` (column 0 = the mean
        token loss, the per-example loss of a loss-threshold attack), then the first
        ``loss_tokens`` per-token losses (zero-padded) and their mask (module docstring).
        A tuple of models (:meth:`reference_model`): their blocks side by side."""
        from privaudit.models.causal_lm import CausalLM

        if isinstance(model, tuple):
            return np.hstack([self.loss_features(m, records) for m in model])
        if not isinstance(model, CausalLM):
            raise fail("model", "a CausalLM", type(model).__name__)
        if self._memo.get(("reference", id(model))) is not model:
            return self._loss_features(model, records)
        key = ("reference-loss", id(model), records.texts_hash())
        if key not in self._memo:
            self._memo[key] = self._loss_features(model, records)
        out: NDArray[np.float64] = self._memo[key].copy()
        return out

    def _loss_features(self, model: CausalLM, records: TextRecords) -> NDArray[np.float64]:
        from privaudit.signals.text import min_k, zlib_ratio

        stats = model.token_stats(list(records.texts), batch_size=self.batch_size)
        short = [records.ids[i] for i, s in enumerate(stats) if s.logprobs.size == 0]
        if short:
            raise fail("records", "texts of at least 2 tokens", f"{len(short)}, e.g. {short[:3]}")
        k, j = self.loss_tokens, len(SUMMARY_FEATURES)
        out = np.zeros((len(stats), j + 2 * k))
        for i, s in enumerate(stats):
            loss = -s.logprobs
            m = min(k, loss.size)
            out[i, 0] = loss.mean()
            out[i, 1] = loss.std()
            out[i, 4] = math.log(s.n_tokens)
            out[i, j : j + m] = loss[:m]
            out[i, j + k : j + k + m] = 1.0
        out[:, 2] = min_k(stats)
        out[:, 3] = zlib_ratio(stats, list(records.texts))
        return out

    def example_loss(self, loss: NDArray[np.float64]) -> NDArray[np.float64]:
        """One loss per text from :meth:`loss_features`' rows: the mean token loss (column 0),
        what O(1)'s loss threshold reads (Steinke et al. 2023 in PANORAMIA Sec. 5.2)."""
        return np.asarray(loss, dtype=np.float64)[:, 0].copy()

    def fit_scorer(
        self,
        train: ScorerData[TextRecords],
        val: ScorerData[TextRecords],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> TextScorer:
        """The MIA / baseline network, selected on ``val`` by ``criterion`` (module docstring)."""
        cfg = self.scorer
        width = int(cfg["text_bytes"])
        k, j = self.loss_tokens, len(SUMMARY_FEATURES)
        w = j + 2 * k
        loss_tr = np.asarray(train.loss, dtype=np.float64)
        if loss_tr.ndim != 2 or loss_tr.shape[1] == 0 or loss_tr.shape[1] % w:
            raise fail("train.loss", f"loss features of width a multiple of {w}", loss_tr.shape)
        blocks = loss_tr.shape[1] // w
        summ = np.hstack([loss_tr[:, b * w : b * w + j] for b in range(blocks)])
        center = summ.mean(0).astype(np.float32)
        scale = np.where(summ.std(0) > 0, summ.std(0), 1.0).astype(np.float32)
        net = _net_type()

        def build() -> Any:
            return net(k, blocks, center, scale, cfg)

        module, info = fit_selected_net(
            build,
            (encode_bytes(train.records.texts, width), loss_tr),
            np.asarray(train.label, dtype=bool),
            (encode_bytes(val.records.texts, width), np.asarray(val.loss, dtype=np.float64)),
            np.asarray(val.label, dtype=bool),
            criterion=criterion,
            epochs=int(cfg["epochs"]),
            batch_size=int(cfg["batch_size"]),
            lr=float(cfg["lr"]),
            weight_decay=float(cfg["weight_decay"]),
            seed=seed,
            patience=cfg["patience"],
        )
        return TextScorer(module=module, text_bytes=width, info={**info, "network": dict(cfg)})

    def settings(self) -> dict[str, Any]:
        """JSON-able and fixed before any fit (run_panoramia keys its artifact store on it):
        the base (name and weights fingerprint), the loss features, the scorer, and the
        recipes of G and h. What a fit recorded (prompt split, sampling counts) is in the
        generator's ``info``."""
        base = {"name": self.base.name, "fingerprint": self.base.fingerprint}
        return {
            "modality": self.name,
            "base": base,
            "loss_tokens": self.loss_tokens,
            "summary_features": list(SUMMARY_FEATURES),
            "generator": {
                "base": base,
                "recipe": self.generator_recipe.settings(),
                "sampling": self.sampling.settings(),
                "prompt_fraction": self.prompt_fraction,
            },
            "helper": {"base": base, "recipe": self.recipe.settings()},
            "reference": self._reference_settings(base),
            "scorer": dict(self.scorer),
        }

    def _reference_settings(self, base: Mapping[str, Any]) -> dict[str, Any] | None:
        choice = self.scorer["reference"]
        if choice is None:
            return None
        out: dict[str, Any] = {"model": choice, "features": "loss_features"}
        if "target-recipe" in choice:  # trained with the target's recipe: keyed on it
            out["target_recipe"] = {"base": dict(base), "recipe": self.recipe.settings()}
        return out

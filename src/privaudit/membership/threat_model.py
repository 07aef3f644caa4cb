"""The threat model of an audit, stated for the reader: which game ran, what each attack knew.

Ye et al. (2022, CCS) Sec. 3 separate what a membership-inference result measures into
(i) the *game* (Def. 3.1-3.4: which random choices are fixed and which resampled over
trials), (ii) the *adversary's knowledge* (population data, the training algorithm,
the target's outputs) and (iii) the *attack* as a hypothesis test whose threshold is
learned from an "out world" (Table 1). A number read without these is easy to misread:
Attack S's FPR holds on average over targets (Def. 3.1), not for the one audited
model; Attack L assumes the attacker knows the target's training set. The
:func:`threat_model` document (``results.json["threat_model"]``, the report's
threat-model card) writes them down next to the numbers.

Every built-in attack has an entry in :data:`ATTACK_ASSUMPTIONS`; an attack registered
by a user is described by its registry line only, and marked so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from privaudit.attacks.base import ATTACKS, attack_names
from privaudit.attacks.rmia import PRIORS as RMIA_PRIORS
from privaudit.attacks.rmia import SCORE_DESCRIPTIONS as RMIA_SCORES

__all__ = ["ACCESS", "ATTACK_ASSUMPTIONS", "threat_model"]

#: How the attacks query the target, by the signal they read.
ACCESS: dict[str, str] = {
    "loss": "black-box: the target's loss on the record (its logits and the record's label)",
    "prob_true": "black-box: the target's probability of the record's true class",
    "logit_confidence": "black-box: the target's logits (logit-scaled confidence of the true class)",
    "entropy": "black-box: the target's full probability vector",
    "modified_entropy": "black-box: the target's full probability vector and the true label",
    "label_robustness": "label-only: the target's predicted label on the record and on noisy copies of it",
}

_POP = "population data from the target's distribution, disjoint from the audited records"
_ALGO = "the target's training algorithm and hyper-parameters (to train its own models)"
_CONFORMAL = (
    "alpha threshold calibrated on population records: achieved FPR <= alpha needs the "
    "population records to be exchangeable with the target's non-members"
)

#: attack -> (what the attacker knows, assumptions behind its threshold / its numbers)
ATTACK_ASSUMPTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "loss": (
        ("the target's loss on the record",),
        (
            "global threshold (Yeom et al. 2018): no out world, hence no alpha decision; "
            "read its ROC only",
        ),
    ),
    "population": (
        (_POP, "the target's outputs on population records"),
        (
            "Attack P (Ye et al. Sec. 4.2): the alpha-quantile of the target's losses on "
            "population records; FPR alpha holds when they are exchangeable with the "
            "target's non-members",
        ),
    ),
    "shadow": (
        (_POP, _ALGO),
        (
            "Attack S (Ye et al. Sec. 4.1): one threshold per class from shadow models; its "
            "FPR holds on average over target models (game Def. 3.1), not for one fixed "
            "target: on a single target it can be far from alpha",
        ),
    ),
    "reference": (
        (_POP, _ALGO, "reference models trained on population data only (the shadow models)"),
        (
            "Attack R (Ye et al. Sec. 4.3): per-record out world from reference models "
            "trained on population data, none of which saw an audited record (game Def. 3.3 "
            "under b=0)",
            _CONFORMAL,
        ),
    ),
    "distillation": (
        (_POP, _ALGO, "the target's outputs on population records (to distil it)"),
        (
            "Attack D (Ye et al. Sec. 4.4): models distilled from the target's soft labels "
            "approximate models trained on the target's data without the record (game "
            "Def. 3.4 under b=0)",
            _CONFORMAL,
        ),
    ),
    "distillation-logits": (
        (_POP, _ALGO, "the target's logits on population records (to distil it)"),
        (
            "Attack D's test with students that regress the target's logits (Ba & Caruana "
            "2014), not the paper's soft labels",
            _CONFORMAL,
        ),
    ),
    "leave-one-out": (
        ("the target's training set D (idealised: not available to a real attacker)", _ALGO),
        (
            "Attack L (Ye et al. Sec. 4.5): models retrained on D without the record; an "
            "upper reference of what any attack can reach, and the vulnerability measure "
            "of Sec. 5.4",
            _CONFORMAL,
        ),
    ),
    "lira-online": (
        (_POP, _ALGO, "reference models trained with and without each audited record"),
        (
            "LiRA (Carlini et al. 2022): Gaussian IN and OUT distributions of the "
            "logit-scaled confidence per record; no alpha threshold (read its ROC)",
        ),
    ),
    "lira-offline": (
        (
            _POP,
            _ALGO,
            "reference models; each record is scored against those that did not train on it "
            "(with references on the pool each trained on half the audited records, and the "
            "score's clip is tuned on their IN and OUT scores)",
        ),
        ("LiRA offline (Carlini et al. 2022): Gaussian OUT distribution per record", _CONFORMAL),
    ),
    "rmia-online": (
        (
            _POP,
            _ALGO,
            "reference models with and without each record, evaluated on population records",
        ),
        (
            "RMIA (Zarifzadeh et al. 2024): Pr(x) the likelihood under reference models "
            "that trained on x with probability 1/2; no alpha threshold (read its ROC)",
        ),
    ),
    "rmia-offline": (
        (
            _POP,
            _ALGO,
            "reference models evaluated on population records; each record's Pr(x) from those "
            "that did not train on it (with references on the pool each trained on half the "
            "audited records, and the map a is tuned on their IN and OUT pairs)",
        ),
        (
            "RMIA offline (Zarifzadeh et al. 2024): Pr(x) from OUT models through the linear "
            "map a; no alpha threshold (read its ROC)",
        ),
    ),
    "bavaria-online": (
        (_POP, _ALGO, "reference models trained with and without each audited record"),
        (
            "BaVarIA (Brannvall 2026): LiRA's IN and OUT distributions per record with a "
            "normal-inverse-gamma prior on the variance learned on the reference models "
            "(Student-t predictive); no alpha threshold (read its ROC)",
        ),
    ),
    "bavaria-offline": (
        (
            _POP,
            _ALGO,
            "reference models; each record is scored against those that did not train on it "
            "(with references on the pool each trained on half the audited records)",
        ),
        (
            "BaVarIA offline (Brannvall 2026): one-sided test against each record's OUT "
            "predictive; no alpha threshold (read its ROC)",
        ),
    ),
    "informia-online": (
        (_POP, _ALGO, "reference models evaluated on audited and population records"),
        (
            "InfoRMIA (Tao and Shokri 2026): the information gain log2 Pr(x|theta)/Pr(x) in "
            "bits, Pr(x) as RMIA online, plus the population term D_KL(p(z) || p(z|theta)); "
            "no alpha threshold (read its ROC)",
        ),
    ),
    "informia-offline": (
        (
            _POP,
            _ALGO,
            "reference models evaluated on population records; Pr(x) as RMIA offline's (the "
            "map a tuned on their IN and OUT pairs when they trained on audited records)",
        ),
        (
            "InfoRMIA offline (Tao and Shokri 2026): the information gain in bits with Pr(x) "
            "as RMIA offline (OUT models, the linear map a), plus the population term; no "
            "alpha threshold (read its ROC)",
        ),
    ),
    "calibrated-loss": (
        (
            _POP,
            _ALGO,
            "reference models; each record's mean loss on those that did not train on it "
            "(with references on the pool each trained on half the audited records)",
        ),
        (
            "difficulty calibration (Watson et al. 2022): the target's loss minus the "
            "record's mean loss on OUT reference models",
            _CONFORMAL,
        ),
    ),
    "learned": (
        (_POP, _ALGO, "reference models with and without each audited record"),
        (
            "a classifier on several signals, trained on the reference models' IN/OUT "
            "pairs (never on the target's membership); assumes reference models behave "
            "like the target",
            _CONFORMAL,
        ),
    ),
    "label-only": (
        (_POP, "the target's predicted labels only (no scores)"),
        (
            "Choquette-Choo et al. 2021: robustness of the predicted label to input noise "
            "as a proxy for the distance to the decision boundary",
            _CONFORMAL,
        ),
    ),
}


def _attack(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    spec = ATTACKS.get(name)
    signal = str(params.get("signal", spec.default_signal if spec else ""))
    if name in ATTACK_ASSUMPTIONS:
        knows, assumptions = ATTACK_ASSUMPTIONS[name]
        described = True
        if name in ("rmia-online", "rmia-offline"):  # name the score form (issue 28)
            form = str(params.get("score", "ratio"))
            assumptions = (f"score: {RMIA_SCORES.get(form, form)}", *assumptions)
        prior = params.get("reference_average")
        if name in ("rmia-online", "informia-online") and prior in RMIA_PRIORS:
            assumptions = (f"Pr(x): {RMIA_PRIORS[str(prior)]}", *assumptions)
    else:
        knows, assumptions = (), (spec.description,) if spec else ()
        described = False
    calibration = params.get("threshold_calibration")
    return {
        "name": name,
        "access": ACCESS.get(signal, f"signal {signal!r}"),
        "knows": list(knows),
        "assumptions": list(assumptions),
        "alpha_threshold": None if spec is None else bool(spec.alpha_threshold),
        "threshold_calibration": calibration,
        "described": described,
    }


def _refusal(bound: Mapping[str, Any]) -> dict[str, str]:
    """``{"refused": reason}`` for a bound that is not gated (e.g. a split the auditor chose)."""
    extra = bound.get("extra") or {}
    if extra.get("gated") is False:
        return {"refused": str(extra.get("not_gated_reason"))}
    return {}


def threat_model(
    game: Mapping[str, Any],
    attacks: Sequence[Mapping[str, Any]],
    *,
    audits: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The threat-model document of one audit (``results.json["threat_model"]``).

    Parameters
    ----------
    game : mapping
        ``results.json["game"]`` (name, id ``def-3.x``, definition, fixed, resampled,
        n_trials, notes).
    attacks : sequence of mappings
        ``results.json["attacks"]`` entries (``name``, ``params``).
    audits : sequence of mappings
        ``results.json["audits"]`` entries; each bound's procedure, confidence and
        threshold selection are restated with its assumption.

    Returns
    -------
    dict
        ``game`` (what ran, what was fixed and resampled), ``adversary`` (the knowledge
        shared by every attack), ``attacks`` (per attack: access, knowledge,
        assumptions) and ``bounds``.
    """
    names = set(attack_names())
    per_attack = [
        _attack(str(a["name"]), a.get("params") or {}) for a in attacks if a["name"] in names
    ]
    trials = int(game.get("n_trials", 1) or 1)
    over = (
        f"; the draws of the {trials} trials are independent runs, whose correct guesses add up"
        if trials > 1
        else ""
    )
    bounds = [
        {
            "attack": b.get("attack"),
            "procedure": b.get("procedure"),
            "confidence": b.get("confidence"),
            "threshold_selection": b.get("threshold_selection"),
            "assumption": (
                "the epsilon lower bound holds with the stated confidence when the audited "
                "records' membership was randomised independently of the records (the "
                "game's coin b) and the guesses depend on the target's outputs, not on the "
                "membership" + over + ". Here: " + str(b.get("sampling_assumption") or "")
            )
            .strip()
            .rstrip("."),
            **_refusal(b),
        }
        for b in audits
    ]
    return {
        "game": {
            "id": game.get("id", game.get("name")),
            "name": game.get("name"),
            "definition": game.get("definition"),
            "n_trials": game.get("n_trials", 1),
            "fixed": list(game.get("fixed", [])),
            "resampled": list(game.get("resampled", [])),
            "notes": list(game.get("notes", [])),
        },
        "adversary": {
            "goal": "infer one bit b: was the target record in the target model's training set",
            "access": "query access to the target model on chosen records (no parameters, no gradients)",
            "shared_knowledge": [_POP, _ALGO],
        },
        "attacks": per_attack,
        "bounds": bounds,
    }

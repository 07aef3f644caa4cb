"""``privaudit canaries make`` and ``privaudit canaries audit``.

``make OUT`` writes ``canary_set.npz`` (the canaries: share it with whoever trains and
scores), ``coins.json`` (the secret inclusion coins: keep it apart until the audit) and,
for input canaries, ``canaries_to_append.csv`` (the included canaries' rows, for any
framework: append them to the training data). It prints both fingerprints: publish the
coins' fingerprint before training to commit to the coins.

``audit`` reads the set, the coins and the trained model's outputs on every canary
(``--outputs``: a CSV/Parquet table with an ``id`` column and a ``loss`` column or
``logit_<k>`` / ``prob_<k>`` columns) or the logged iterates (``--iterates``: the ``.npz``
of :meth:`~privaudit.canaries.IterateLog.save`), and writes ``results.json``,
``report.html``, ``inputs.npz`` and ``bundle.json`` (``privaudit verify`` recomputes it).

Exit codes: 0 done, 1 a bound exceeds ``--claimed-epsilon``, 2 bad input (coins of
another set, a tampered coin file, outputs missing canary ids, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from privaudit.cli_common.errors import error_line
from privaudit.errors import PrivauditError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CANARIES_HELP", "CANARY_COMMANDS", "audit_command", "make_command"]

SET_FILE = "canary_set.npz"
COINS_FILE = "coins.json"
APPEND_FILE = "canaries_to_append.csv"

CANARIES_HELP = "Audit a DP claim in one training run with canaries: make them, then audit."
"""The help line of ``privaudit canaries``."""


def _fail_exit(exc: PrivauditError) -> typer.Exit:
    typer.echo(error_line(exc), err=True)
    return typer.Exit(2)


def make_command(
    out: Path = typer.Argument(..., help="Folder to write the set, the coins and the rows into."),
    kind: str = typer.Option(
        "mislabel", "--kind", help="mislabel | ood (input canaries) | gradient (Dirac)."
    ),
    m: int = typer.Option(1000, "--m", help="Number of canaries."),
    pool: Path | None = typer.Option(
        None, "--pool", help="Input canaries: CSV/Parquet of records the model does not train on."
    ),
    label_col: str = typer.Option("label", "--label-col", help="The label column of --pool."),
    n_params: int | None = typer.Option(
        None, "--n-params", help="Gradient canaries: trainable parameters of the model."
    ),
    candidates: Path | None = typer.Option(
        None,
        "--candidates",
        help="Gradient canaries: a text file of the coordinates to draw from, one integer a "
        "line (e.g. those quiet_coordinates returns).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the canaries."),
    coin_seed: int | None = typer.Option(
        None, "--coin-seed", help="Seed of the coins (default: the operating system's entropy)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace files in OUT."),
) -> None:
    """Make a canary set and its secret coins (kept in separate files)."""
    try:
        paths = _make(
            out, kind, m, pool, label_col, n_params, candidates, seed, coin_seed, overwrite
        )
    except PrivauditError as exc:
        raise _fail_exit(exc) from None
    except OSError as exc:
        typer.echo(f"error: cannot write to {out} ({exc})", err=True)
        raise typer.Exit(2) from None
    for line in paths:
        typer.echo(line)


def _make(
    out: Path,
    kind: str,
    m: int,
    pool: Path | None,
    label_col: str,
    n_params: int | None,
    candidates: Path | None,
    seed: int,
    coin_seed: int | None,
    overwrite: bool,
) -> list[str]:
    import numpy as np

    from privaudit._validation import check_choice, fail
    from privaudit.canaries.insert import canary_records
    from privaudit.canaries.sets import (
        CANARY_KINDS,
        draw_coins,
        make_gradient_canaries,
        make_input_canaries,
    )
    from privaudit.cli_common.tables import read_table, table_column

    check_choice(kind, "--kind", tuple(k for k in CANARY_KINDS if k != "text"))
    if out.exists() and not out.is_dir():
        raise fail("OUT", "a folder", f"the file {out}")
    if out.exists() and not overwrite and any((out / f).exists() for f in (SET_FILE, COINS_FILE)):
        raise fail("OUT", "a folder without a canary set (or --overwrite)", f"one in {out}")
    columns: list[str] = []
    if kind == "gradient":
        if n_params is None or pool is not None:
            raise fail(
                "--n-params", "the model's number of trainable parameters (and no --pool)", n_params
            )
        cs = make_gradient_canaries(n_params, m, seed=seed, candidates=_coordinates(candidates))
    else:
        if pool is None or n_params is not None:
            raise fail("--pool", "a table of records for input canaries (and no --n-params)", pool)
        if candidates is not None:
            raise fail("--candidates", "gradient canaries (--kind gradient)", kind)
        df = read_table(pool)
        y = table_column(df, label_col, "--label-col")
        columns = [str(c) for c in df.columns if str(c) != label_col]
        try:
            X = df[columns].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise fail("--pool", "numeric feature columns", f"{exc}") from None
        cs = make_input_canaries(X, y.to_numpy(), m, kind=kind, seed=seed)
    coins = draw_coins(cs, seed=coin_seed)
    out.mkdir(parents=True, exist_ok=True)
    cs.save(out / SET_FILE)
    coins.save(out / COINS_FILE)
    lines = [
        f"canary set: {out / SET_FILE} ({cs.m} {cs.kind} canaries), fingerprint {cs.fingerprint}",
        f"coins (secret, keep apart): {out / COINS_FILE}, fingerprint {coins.fingerprint}",
    ]
    if not cs.is_gradient:
        import pandas as pd

        ids, Xc, yc = canary_records(cs, coins)
        rows = pd.DataFrame(Xc, columns=columns)
        rows.insert(0, "id", ids)
        rows[label_col] = yc
        rows.to_csv(out / APPEND_FILE, index=False)
        lines.append(
            f"rows to append to the training data: {out / APPEND_FILE} ({ids.size} canaries)"
        )
    return lines


def _coordinates(path: Path | None) -> Any:
    """The ``--candidates`` file: one integer coordinate a line (None: every coordinate)."""
    import numpy as np

    from privaudit._validation import fail

    if path is None:
        return None
    try:
        lines = [t.strip() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
        return np.array([int(t) for t in lines], dtype=np.int64)
    except FileNotFoundError:
        raise fail("--candidates", "an existing file", f"no file {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise fail("--candidates", "one integer coordinate a line", f"{path} ({exc})") from None


def audit_command(
    canary_set: Path = typer.Option(..., "--set", help="The canary_set.npz of `canaries make`."),
    coins_file: Path = typer.Option(..., "--coins", help="The coins.json of `canaries make`."),
    outputs: Path | None = typer.Option(
        None,
        "--outputs",
        help="Input canaries: table with 'id' and 'loss' or logit_<k> / prob_<k> columns.",
    ),
    iterates: Path | None = typer.Option(
        None,
        "--iterates",
        help="Gradient canaries: the .npz of IterateLog.save (params + the run's facts).",
    ),
    access: str = typer.Option(
        "iterates", "--access", help="Gradient canaries: final (first and last iterate) | iterates."
    ),
    k_pos: int | None = typer.Option(None, "--k-pos", help="Member guesses fixed in advance."),
    k_neg: int | None = typer.Option(None, "--k-neg", help="Non-member guesses fixed in advance."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence of each bound."),
    delta: float | None = typer.Option(
        None,
        "--delta",
        help="delta of the audited (eps, delta) claim (default: the iterates' delta, else 0).",
    ),
    accountant_epsilon: float | None = typer.Option(
        None, "--accountant-epsilon", help="The accountant's eps, shown beside the bounds."
    ),
    claimed_epsilon: float | None = typer.Option(
        None, "--claimed-epsilon", help="Exit 1 when an eps lower bound exceeds this claim."
    ),
    coins_fingerprint: str | None = typer.Option(
        None,
        "--coins-fingerprint",
        help="The coins' fingerprint published before training (checked).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Write results.json, report.html and bundle.json here."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json to stdout."),
) -> None:
    """Score every canary, then bound eps and mu in one run (beside the accountant's eps)."""
    import json
    import math

    try:
        from privaudit._validation import fail
        from privaudit.report.writer import check_output_dir

        if claimed_epsilon is not None and not (
            math.isfinite(claimed_epsilon) and claimed_epsilon >= 0
        ):
            raise fail("--claimed-epsilon", "a finite number >= 0", claimed_epsilon)
        if out is not None:
            check_output_dir(out, overwrite=overwrite)
        result = _audit(
            canary_set,
            coins_file,
            outputs,
            iterates,
            access,
            k_pos,
            k_neg,
            confidence,
            delta,
            accountant_epsilon,
            coins_fingerprint,
        )
        if out is not None:
            result.save(out, overwrite=overwrite)
    except PrivauditError as exc:
        raise _fail_exit(exc) from None
    except OSError as exc:
        typer.echo(f"error: cannot write the report to {out} ({exc})", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        typer.echo(str(result))
        if out is not None:
            typer.echo(
                f"report written to {out} (results.json, report.html, inputs.npz, bundle.json: re-check it with `privaudit verify`)"
            )
    if claimed_epsilon is not None:
        bounds = [
            ("one-run", result.epsilon_lower_bound),
            ("fdp-one-run", float(result.fdp.epsilon_lower_bound)),
        ]
        bad = [(n, b) for n, b in bounds if b > claimed_epsilon]
        for n, b in bad:
            typer.echo(
                f"violation: {n}: epsilon lower bound {b:.6g} at confidence {confidence:g} "
                f"(delta {result.delta:g}) exceeds the claimed epsilon {claimed_epsilon:g}",
                err=True,
            )
        if bad:
            raise typer.Exit(1)


def _audit(
    canary_set: Path,
    coins_file: Path,
    outputs: Path | None,
    iterates: Path | None,
    access: str,
    k_pos: int | None,
    k_neg: int | None,
    confidence: float,
    delta: float | None,
    accountant_epsilon: float | None,
    coins_fingerprint: str | None,
) -> Any:
    from privaudit._validation import check_probability, fail
    from privaudit.canaries.audit import audit_canaries
    from privaudit.canaries.sets import load_canary_set, load_coins

    confidence = check_probability(confidence, "--confidence")
    cs = load_canary_set(canary_set)
    coins = load_coins(coins_file, cs)
    if coins_fingerprint is not None and coins_fingerprint.strip().lower() != coins.fingerprint:
        raise fail(
            "--coins",
            f"the coins committed to ({coins_fingerprint.strip()[:16]}...)",
            f"coins with fingerprint {coins.fingerprint[:16]}...",
        )
    if cs.is_text:
        raise fail(
            "--set",
            "input or gradient canaries (text canaries are audited with the Python API: "
            "text_canary_scores, then audit_canaries)",
            "a text canary set",
        )
    settings: dict[str, Any] = {"set_file": str(canary_set), "coins_file": str(coins_file)}
    if cs.is_gradient:
        if iterates is None or outputs is not None:
            raise fail(
                "--iterates",
                "the logged iterates for gradient canaries (and no --outputs)",
                iterates,
            )
        scores, facts = _iterate_scores(cs, iterates, access)
        settings.update({"iterates_file": str(iterates), **facts})
        if accountant_epsilon is None:
            accountant_epsilon = facts.get("accountant_epsilon")
        if delta is None:
            delta = facts.get("delta")
    else:
        if outputs is None or iterates is not None:
            raise fail(
                "--outputs",
                "the model's outputs on the input canaries (and no --iterates)",
                outputs,
            )
        scores = _output_scores(cs, outputs)
        settings["outputs_file"] = str(outputs)
        access = "black-box"
    return audit_canaries(
        cs,
        coins,
        scores,
        access=access,
        k_pos=k_pos,
        k_neg=k_neg,
        confidence=confidence,
        delta=0.0 if delta is None else float(delta),
        accountant_epsilon=accountant_epsilon,
        settings=settings,
    )


def _output_scores(cs: Any, path: Path) -> np.ndarray:
    """Scores from the outputs table, rows matched to the canaries by id."""
    import numpy as np

    from privaudit._validation import fail
    from privaudit.canaries.scoring import input_canary_scores
    from privaudit.cli_common.tables import read_table, table_column

    df = read_table(path)
    ids = table_column(df, "id", "--outputs column").astype(str)
    if ids.duplicated().any():
        raise fail(
            "--outputs",
            "one row per canary id",
            f"repeated ids, e.g. {ids[ids.duplicated()].iloc[0]!r}",
        )
    pos = {v: i for i, v in enumerate(ids.tolist())}
    missing = [c for c in cs.ids.tolist() if c not in pos]
    if missing:
        raise fail(
            "--outputs",
            f"a row for every one of the {cs.m} canary ids",
            f"{len(missing)} missing (e.g. {missing[0]!r}): the model was not evaluated on every canary",
        )
    rows = df.iloc[[pos[c] for c in cs.ids.tolist()]]
    cols = [str(c) for c in df.columns]
    try:
        if "loss" in cols:
            return input_canary_scores(cs, loss=rows["loss"].to_numpy(dtype=np.float64))
        for prefix, key in (("logit_", "logits"), ("prob_", "probs")):
            names = [f"{prefix}{k}" for k in range(cs.n_classes)]
            if all(n in cols for n in names):
                return input_canary_scores(cs, **{key: rows[names].to_numpy(dtype=np.float64)})
    except (TypeError, ValueError) as exc:
        raise fail("--outputs", "numeric outputs", str(exc)) from None
    raise fail(
        "--outputs",
        f"a 'loss' column or logit_0..logit_{cs.n_classes - 1} / prob_0..prob_{cs.n_classes - 1}",
        "columns " + ", ".join(cols),
    )


def _iterate_scores(cs: Any, path: Path, access: str) -> tuple[np.ndarray, dict[str, Any]]:
    """Scores from the iterates file; the parameter vectors must cover every canary coordinate."""
    import numpy as np

    from privaudit._validation import fail
    from privaudit.canaries.scoring import gradient_canary_scores

    try:
        with np.load(path, allow_pickle=False) as z:
            params = np.asarray(z["params"], dtype=np.float64)
            facts = {k: float(z[k]) for k in z.files if k != "params"}
    except FileNotFoundError:
        raise fail("--iterates", "an existing .npz file", f"no file {path}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise fail(
            "--iterates", "an .npz of IterateLog.save with 'params'", f"{path} ({exc})"
        ) from None
    if params.ndim != 2 or params.shape[1] != cs.n_params:
        raise fail(
            "--iterates",
            f"parameter vectors of the {cs.n_params} parameters the canaries were made for",
            f"an array of shape {params.shape}: the model is missing canary coordinates"
            if params.ndim == 2 and params.shape[1] < cs.n_params
            else f"an array of shape {params.shape}",
        )
    for need in ("lr", "expected_batch_size", "max_grad_norm"):
        if need not in facts:
            raise fail("--iterates", f"the run's '{need}' in the file", "none")
    scores = gradient_canary_scores(
        params[:, cs.coords],
        lr=facts["lr"],
        expected_batch_size=facts["expected_batch_size"],
        max_grad_norm=facts["max_grad_norm"],
        access=access,
        noise_multiplier=facts.get("noise_multiplier"),
        sample_rate=facts.get("sample_rate"),
    )
    return scores, facts


CANARY_COMMANDS = (("make", make_command), ("audit", audit_command))
"""The sub-commands of ``privaudit canaries``, in the order of its help."""

"""``privaudit canaries make`` and ``privaudit canaries audit``.

``make OUT`` writes ``canary_set.npz`` (the canaries: share it with whoever trains and
scores), ``coins.json`` (the secret inclusion coins: keep it apart until the audit) and,
for input canaries, ``canaries_to_append.csv`` (the included canaries' rows, for any
framework: append them to the training data) or, for text canaries (``--kind text``),
``canaries_to_append.jsonl`` (one ``{"text": ...}`` object a line: the included canaries'
texts, each ``--repetitions`` times, to append to a causal LM's fine-tuning texts; with
``--source sampled --base DIR --temperature T`` each canary's key and secret are sampled
from the base model at temperature ``T``, :func:`~privaudit.canaries.sample_text_canaries`). It
prints both fingerprints: publish the coins' fingerprint before training to commit to the
coins.

``audit`` reads the set, the coins and the trained model's outputs on every canary
(``--outputs``: a CSV/Parquet table with an ``id`` column and a ``loss`` column or
``logit_<k>`` / ``prob_<k>`` columns) or the logged iterates (``--iterates``: the ``.npz``
of :meth:`~privaudit.canaries.IterateLog.save`) or, for text canaries, the fine-tuned
causal LM (``--model``: a Hugging Face model directory, e.g. a saved tiny GPT, or a
``.gguf`` file) and the base model it was fine-tuned from (``--base``), scored by
:func:`~privaudit.canaries.text_canary_scores` (``--score``: the log-likelihood by default,
the base-calibrated log-likelihood (the default for sampled canaries, whose ``--base`` must
be the model they were sampled from), or the sampled exposure), and writes ``results.json``,
``report.html``, ``inputs.npz`` and ``bundle.json`` (``privaudit verify`` recomputes it).
The bounds are per training record: text canaries trained on ``--repetitions`` k > 1 times
are audited as groups of k records and made per record by group privacy
(:mod:`privaudit.canaries.group`), and ``--claimed-epsilon`` gates those.

Exit codes: 0 done, 1 a bound exceeds ``--claimed-epsilon``, 2 bad input (coins of
another set, a tampered coin file, outputs missing canary ids, a model that cannot be
loaded or whose tokenizer differs from the base's, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from privaudit.cli_common.errors import error_line
from privaudit.errors import PrivauditError

if TYPE_CHECKING:
    import numpy as np

    from privaudit.canaries.result import CanaryAuditResult
    from privaudit.canaries.sets import CanaryCoins, CanarySet

__all__ = ["CANARIES_HELP", "CANARY_COMMANDS", "audit_command", "make_command"]

SET_FILE = "canary_set.npz"
COINS_FILE = "coins.json"
APPEND_FILE = "canaries_to_append.csv"
TEXT_APPEND_FILE = "canaries_to_append.jsonl"
TEXT_SCORES = ("loglik", "calibrated", "exposure")
"""The ``--score`` choices of a text canary audit (the fields of ``TextCanaryScores``)."""
TEXT_SOURCES = ("random", "sampled")
"""The ``--source`` choices of ``make --kind text``."""

CANARIES_HELP = "Audit a DP claim in one training run with canaries: make them, then audit."
"""The help line of ``privaudit canaries``."""


def _fail_exit(exc: PrivauditError) -> typer.Exit:
    typer.echo(error_line(exc), err=True)
    return typer.Exit(2)


def make_command(
    out: Path = typer.Argument(..., help="Folder to write the set, the coins and the rows into."),
    kind: str = typer.Option(
        "mislabel",
        "--kind",
        help="mislabel | ood (input canaries) | gradient (Dirac) | text (causal LM).",
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
    prefix: str = typer.Option(
        "The secret code is ", "--prefix", help="Text canaries: the prefix shared by all."
    ),
    key_length: int = typer.Option(
        4,
        "--key-length",
        help="Text canaries: random symbols (sampled: tokens) telling the canaries apart.",
    ),
    secret_length: int = typer.Option(
        8, "--secret-length", help="Text canaries: random symbols (sampled: tokens) of each secret."
    ),
    source: str = typer.Option(
        "random",
        "--source",
        help="Text canaries: random (symbols drawn uniformly) | sampled (key and secret "
        "sampled from --base at --temperature).",
    ),
    sample_base: Path | None = typer.Option(
        None,
        "--base",
        help="Text canaries, --source sampled: the base model to sample from (the model the "
        "fine-tuning starts from; Hugging Face directory or .gguf).",
    ),
    temperature: float | None = typer.Option(
        None,
        "--temperature",
        help="Text canaries, --source sampled: the sampling temperature, > 0 (default 2).",
    ),
    top_k: int | None = typer.Option(
        None,
        "--top-k",
        help="Text canaries, --source sampled: sample among the k likeliest tokens only "
        "(default: the whole vocabulary).",
    ),
    symbols: str | None = typer.Option(
        None,
        "--symbols",
        help="Text canaries: the alphabet, one symbol per character (default: digits and "
        "lowercase letters).",
    ),
    rare_tokens: int | None = typer.Option(
        None,
        "--rare-tokens",
        help="Text canaries: use this many single-token words of --tokenizer-model's "
        "vocabulary that never occur in --train-texts as the alphabet.",
    ),
    tokenizer_model: Path | None = typer.Option(
        None, "--tokenizer-model", help="Text canaries: the base model (for --rare-tokens)."
    ),
    train_texts: Path | None = typer.Option(
        None,
        "--train-texts",
        help="Text canaries: the fine-tuning texts (.jsonl with 'text', or .txt), for "
        "--rare-tokens.",
    ),
    repetitions: int = typer.Option(
        1, "--repetitions", help="Text canaries: copies of each included canary in training."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the canaries."),
    coin_seed: int | None = typer.Option(
        None, "--coin-seed", help="Seed of the coins (default: the operating system's entropy)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace files in OUT."),
) -> None:
    """Make a canary set and its secret coins (kept in separate files)."""
    text = {
        "prefix": prefix,
        "key_length": key_length,
        "secret_length": secret_length,
        "symbols": symbols,
        "rare_tokens": rare_tokens,
        "tokenizer_model": tokenizer_model,
        "train_texts": train_texts,
        "repetitions": repetitions,
        "source": source,
        "base": sample_base,
        "temperature": temperature,
        "top_k": top_k,
    }
    try:
        paths = _make(
            out, kind, m, pool, label_col, n_params, candidates, seed, coin_seed, overwrite, text
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
    text: dict[str, Any],
) -> list[str]:
    """Make the canary set of ``canaries make`` and its coins, write them (and what to append
    to the training data) into ``out``, and return the lines to print."""
    from privaudit._validation import check_choice, fail
    from privaudit.canaries.sets import CANARY_KINDS, draw_coins, make_gradient_canaries

    check_choice(kind, "--kind", CANARY_KINDS)
    _check_out(out, overwrite)
    columns: list[str] = []
    if kind != "text" and (text["source"] != "random" or text["base"] is not None):
        raise fail("--source", "text canaries (--kind text)", f"--kind {kind}")
    if kind == "text":
        if pool is not None or n_params is not None or candidates is not None:
            raise fail("--kind text", "no --pool, --n-params or --candidates", "one of them given")
        cs = _text_set(m, seed, text)
    elif kind == "gradient":
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
        cs, columns = _input_set(kind, m, seed, pool, label_col)
    coins = draw_coins(cs, seed=coin_seed)
    out.mkdir(parents=True, exist_ok=True)
    cs.save(out / SET_FILE)
    coins.save(out / COINS_FILE)
    lines = [
        f"canary set: {out / SET_FILE} ({cs.m} {cs.kind} canaries), fingerprint {cs.fingerprint}",
        f"coins (secret, keep apart): {out / COINS_FILE}, fingerprint {coins.fingerprint}",
    ]
    if cs.is_text:
        lines.append(_write_texts(out, cs, coins))
    elif not cs.is_gradient:
        lines.append(_write_rows(out, cs, coins, columns, label_col))
    return lines


def _check_out(out: Path, overwrite: bool) -> None:
    """Refuse an ``OUT`` that is a file, or that holds a canary set already (without
    ``--overwrite``)."""
    from privaudit._validation import fail

    if out.exists() and not out.is_dir():
        raise fail("OUT", "a folder", f"the file {out}")
    if out.exists() and not overwrite and any((out / f).exists() for f in (SET_FILE, COINS_FILE)):
        raise fail("OUT", "a folder without a canary set (or --overwrite)", f"one in {out}")


def _input_set(
    kind: str, m: int, seed: int, pool: Path, label_col: str
) -> tuple[CanarySet, list[str]]:
    """The input canary set of ``canaries make --kind mislabel|ood``, drawn from the
    ``--pool`` table, and the table's feature columns (every column but the label, all numeric)."""
    import numpy as np

    from privaudit._validation import fail
    from privaudit.canaries.sets import make_input_canaries
    from privaudit.cli_common.tables import read_table, table_column

    df = read_table(pool)
    y = table_column(df, label_col, "--label-col")
    columns = [str(c) for c in df.columns if str(c) != label_col]
    try:
        X = df[columns].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise fail("--pool", "numeric feature columns", f"{exc}") from None
    return make_input_canaries(X, y.to_numpy(), m, kind=kind, seed=seed), columns


def _write_texts(out: Path, cs: CanarySet, coins: CanaryCoins) -> str:
    """Write the included text canaries' texts (each ``--repetitions`` times, one
    ``{"text": ...}`` object a line) to ``OUT``; the line saying so."""
    import json

    from privaudit.canaries.insert import canary_texts

    texts = canary_texts(cs, coins)
    with open(out / TEXT_APPEND_FILE, "w", encoding="utf-8") as fh:
        for t in texts:
            fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    return (
        f"texts to append to the fine-tuning data: {out / TEXT_APPEND_FILE} "
        f"({int(coins.included.sum())} canaries x {cs.repetitions})"
    )


def _write_rows(
    out: Path, cs: CanarySet, coins: CanaryCoins, columns: list[str], label_col: str
) -> str:
    """Write the included input canaries' rows (``id``, the pool's feature ``columns``, the
    label) to ``OUT`` as CSV; the line saying so."""
    import pandas as pd

    from privaudit.canaries.insert import canary_records

    ids, Xc, yc = canary_records(cs, coins)
    rows = pd.DataFrame(Xc, columns=columns)
    rows.insert(0, "id", ids)
    rows[label_col] = yc
    rows.to_csv(out / APPEND_FILE, index=False)
    return f"rows to append to the training data: {out / APPEND_FILE} ({ids.size} canaries)"


def _text_set(m: int, seed: int, text: dict[str, Any]) -> Any:
    """The text canary set of ``canaries make --kind text``."""
    from privaudit._validation import check_choice, fail
    from privaudit.canaries.text_sets import (
        DEFAULT_SYMBOLS,
        make_text_canaries,
        rare_token_symbols,
    )

    source = check_choice(text["source"], "--source", TEXT_SOURCES)
    if source == "sampled":
        return _sampled_set(m, seed, text)
    for opt in ("base", "temperature", "top_k"):
        if text[opt] is not None:
            raise fail(
                f"--{opt.replace('_', '-')}", "only with --source sampled", "--source random"
            )
    rare = text["rare_tokens"]
    alphabet: Any = DEFAULT_SYMBOLS if text["symbols"] is None else text["symbols"]
    if rare is not None:
        if text["symbols"] is not None:
            raise fail("--rare-tokens", "either --rare-tokens or --symbols", "both")
        if text["tokenizer_model"] is None or text["train_texts"] is None:
            raise fail(
                "--rare-tokens",
                "--tokenizer-model (the base model) and --train-texts (the fine-tuning texts)",
                "one of them missing",
            )
        alphabet = rare_token_symbols(
            _load_lm(text["tokenizer_model"], "--tokenizer-model"),
            _read_texts(text["train_texts"]),
            rare,
            seed=seed,
        )
    elif text["tokenizer_model"] is not None or text["train_texts"] is not None:
        raise fail("--tokenizer-model", "only with --rare-tokens", "no --rare-tokens")
    return make_text_canaries(
        m,
        prefix=text["prefix"],
        key_length=text["key_length"],
        secret_length=text["secret_length"],
        symbols=alphabet,
        repetitions=text["repetitions"],
        seed=seed,
    )


def _sampled_set(m: int, seed: int, text: dict[str, Any]) -> Any:
    """``--source sampled``: the key and secret of each canary sampled from ``--base``."""
    import math

    from privaudit._validation import fail
    from privaudit.canaries.text_sampled import DEFAULT_TEMPERATURE, sample_text_canaries

    for opt, flag in (("symbols", "--symbols"), ("rare_tokens", "--rare-tokens")):
        if text[opt] is not None:
            raise fail(flag, "no alphabet with --source sampled (the base model samples)", flag)
    for opt, flag in (("tokenizer_model", "--tokenizer-model"), ("train_texts", "--train-texts")):
        if text[opt] is not None:
            raise fail(flag, "only with --rare-tokens", "--source sampled")
    temperature = DEFAULT_TEMPERATURE if text["temperature"] is None else text["temperature"]
    if not (math.isfinite(temperature) and temperature > 0):
        raise fail("--temperature", "a positive finite number (well above 1)", temperature)
    if text["top_k"] is not None and text["top_k"] < 1:
        raise fail("--top-k", "an integer >= 1", text["top_k"])
    if text["base"] is None:
        raise fail(
            "--base", "the base model to sample the canaries from (--source sampled)", "none"
        )
    return sample_text_canaries(
        _load_lm(text["base"], "--base"),
        m,
        prefix=text["prefix"],
        key_tokens=text["key_length"],
        secret_tokens=text["secret_length"],
        temperature=float(temperature),
        top_k=text["top_k"],
        repetitions=text["repetitions"],
        seed=seed,
    )


def _read_texts(path: Path) -> list[str]:
    """``--train-texts``: a ``.jsonl`` file of objects with a ``text`` field, else one text
    a line."""
    import json

    from privaudit._validation import fail

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise fail("--train-texts", "an existing file", f"no file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise fail("--train-texts", "a UTF-8 text file", f"{path} ({exc})") from None
    if path.suffix != ".jsonl":
        return [t for t in lines if t.strip()]
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(str(row["text"]))
        except (ValueError, KeyError, TypeError):
            raise fail(
                "--train-texts", "one JSON object with a 'text' field a line", f"line {n}"
            ) from None
    return out


def _load_lm(path: Path, option: str) -> Any:
    """A causal LM from a Hugging Face directory or a ``.gguf`` file, on the CPU."""
    from privaudit._validation import fail
    from privaudit.errors import InvalidInputError
    from privaudit.models.causal_lm import CausalLM

    try:
        return CausalLM.from_directory(path, device="cpu")
    except InvalidInputError as exc:
        raise fail(option, "a causal LM (Hugging Face directory or .gguf file)", str(exc)) from None


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
    model: Path | None = typer.Option(
        None,
        "--model",
        help="Text canaries: the fine-tuned causal LM (Hugging Face directory or .gguf).",
    ),
    base: Path | None = typer.Option(
        None, "--base", help="Text canaries: the base model the fine-tuning started from."
    ),
    score: str | None = typer.Option(
        None,
        "--score",
        help="Text canaries: loglik | calibrated (minus the base's) | exposure; choose it "
        "before looking at the coins (default: calibrated for sampled canaries, else loglik).",
    ),
    n_alternatives: int = typer.Option(
        255, "--n-alternatives", help="Text canaries: random candidates for the exposure."
    ),
    batch_size: int = typer.Option(8, "--batch-size", help="Text canaries: texts per pass."),
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
        None,
        "--claimed-epsilon",
        help="Exit 1 when an eps lower bound (per training record) exceeds this claim.",
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
    try:
        _check_audit_options(claimed_epsilon, out, overwrite)
        text = {
            "model": model,
            "base": base,
            "score": score,
            "n_alternatives": n_alternatives,
            "batch_size": batch_size,
        }
        result = _audit(
            canary_set,
            coins_file,
            outputs,
            iterates,
            text,
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
    _print_result(result, out, as_json)
    if claimed_epsilon is not None and _report_violations(result, claimed_epsilon, confidence):
        raise typer.Exit(1)


def _check_audit_options(claimed_epsilon: float | None, out: Path | None, overwrite: bool) -> None:
    """Refuse a bad ``--claimed-epsilon``, or an ``--out`` that cannot take the report, early."""
    import math

    from privaudit._validation import fail
    from privaudit.report.writer import check_output_dir

    if claimed_epsilon is not None and not (
        math.isfinite(claimed_epsilon) and claimed_epsilon >= 0
    ):
        raise fail("--claimed-epsilon", "a finite number >= 0", claimed_epsilon)
    if out is not None:
        check_output_dir(out, overwrite=overwrite)


def _print_result(result: CanaryAuditResult, out: Path | None, as_json: bool) -> None:
    """Print ``results.json`` (``--json``), else the summary and where the report went."""
    import json

    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        typer.echo(str(result))
        if out is not None:
            typer.echo(
                f"report written to {out} (results.json, report.html, inputs.npz, bundle.json: re-check it with `privaudit verify`)"
            )


def _report_violations(
    result: CanaryAuditResult, claimed_epsilon: float, confidence: float
) -> bool:
    """Print a ``violation:`` line for each eps lower bound above the claim; True if any.

    The bounds compared are per training record: for text canaries trained on
    ``repetitions > 1`` times the audits' group bounds were made per record by group
    privacy (:mod:`privaudit.canaries.group`), so a per-record claim is gated on them.
    """
    bounds = [
        ("one-run", result.epsilon_lower_bound),
        ("fdp-one-run", float(result.fdp.epsilon_lower_bound)),
    ]
    per = (
        f" per training record (each canary trained on {result.repetitions} times)"
        if result.repetitions > 1
        else ""
    )
    bad = [(n, b) for n, b in bounds if b > claimed_epsilon]
    for n, b in bad:
        typer.echo(
            f"violation: {n}: epsilon lower bound {b:.6g}{per} at confidence {confidence:g} "
            f"(delta {result.delta:g}) exceeds the claimed epsilon {claimed_epsilon:g}",
            err=True,
        )
    return bool(bad)


def _audit(
    canary_set: Path,
    coins_file: Path,
    outputs: Path | None,
    iterates: Path | None,
    text: dict[str, Any],
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
    settings: dict[str, Any] = {"set_file": str(canary_set), "coins_file": str(coins_file)}
    if not cs.is_text and (text["model"] is not None or text["base"] is not None):
        raise fail("--model", "text canaries (a text canary set)", f"a {cs.kind!r} set")
    if cs.is_text:
        if outputs is not None or iterates is not None:
            raise fail(
                "--outputs",
                "none for text canaries (they are scored from --model and --base)",
                outputs if outputs is not None else iterates,
            )
        scores, facts = _text_scores(cs, text)
        settings.update(facts)
        access = "black-box"
    elif cs.is_gradient:
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


def _text_scores(cs: Any, text: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """The chosen text canary score of every canary, and what results.json records of it."""
    from privaudit._validation import check_choice, check_positive_int, fail
    from privaudit.canaries.text_scoring import text_canary_scores

    default = "calibrated" if cs.sampling is not None else "loglik"
    score = check_choice(
        default if text["score"] is None else text["score"], "--score", TEXT_SCORES
    )
    n_alt = check_positive_int(text["n_alternatives"], "--n-alternatives")
    batch = check_positive_int(text["batch_size"], "--batch-size")
    if text["model"] is None or text["base"] is None:
        raise fail(
            "--model",
            "the fine-tuned model (--model) and its base model (--base) for text canaries",
            "--base missing" if text["model"] is not None else "--model missing",
        )
    target = _load_lm(text["model"], "--model")
    reference = _load_lm(text["base"], "--base")
    if target.tokenizer_id != reference.tokenizer_id:
        raise fail(
            "--base",
            f"the base model of --model, with its tokenizer ({target.tokenizer_id})",
            f"a model with tokenizer {reference.tokenizer_id}",
        )
    if cs.sampling is not None and reference.fingerprint != cs.sampling.base_fingerprint:
        raise fail(
            "--base",
            "the model the canaries were sampled from (fingerprint "
            f"{cs.sampling.base_fingerprint})",
            f"a model with fingerprint {reference.fingerprint}",
        )
    sc = text_canary_scores(target, reference, cs, n_alternatives=n_alt, batch_size=batch)
    facts: dict[str, Any] = {
        "score": score,
        "model": str(text["model"]),
        "base": str(text["base"]),
        "model_fingerprint": target.fingerprint,
        "base_fingerprint": reference.fingerprint,
        "n_alternatives": n_alt,
        **sc.summary(),
    }
    if cs.sampling is not None:
        facts.update(
            canary_source="sampled",
            sampling_temperature=cs.sampling.temperature,
            sampling_top_k=cs.sampling.top_k,
        )
    return getattr(sc, score), facts


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

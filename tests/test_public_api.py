"""The public Python API (issue 30 item 3): ``from privaudit import ...``.

* every name of ``privaudit.__all__`` resolves and is documented; ``import privaudit``
  imports no NumPy (the command line imports the package at start-up);
* the examples import public names only;
* :func:`privaudit.audit_model` runs the pipeline of ``privaudit run`` on a provided
  target: the same figures as the command line on the same model and split written to
  files; its result saves the folder the command line writes (``privaudit verify`` passes),
  round-trips through ``to_dict`` / ``to_json`` / ``results.json``, prints the summary;
* bad arguments fail before any training, with one message naming the parameter;
* ``examples/quickstart.py`` runs and prints the figures of its saved ``results.json``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privaudit

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SRC = ROOT / "src"

#: Public names that are values, not functions or classes: documented in the package docstring.
CONSTANTS = {"__version__", "DEFAULT_ESTIMATORS"}

#: The environment of a subprocess: this checkout's sources first, one BLAS thread.
ENV = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}

#: ``privaudit ARGS`` in a subprocess, with this checkout's sources.
PRIVAUDIT = [sys.executable, "-c", "import sys; from privaudit.cli import main; sys.exit(main())"]


# --------------------------------------------------------------------------- the names


def test_all_is_the_table_of_public_names() -> None:
    assert set(privaudit.__all__) == {"__version__", *privaudit._PUBLIC}
    assert len(privaudit.__all__) == len(set(privaudit.__all__))
    assert set(privaudit.__all__) <= set(dir(privaudit))


@pytest.mark.parametrize("name", sorted(set(privaudit.__all__) - CONSTANTS))
def test_every_public_name_resolves_and_has_a_summary_line(name: str) -> None:
    obj = getattr(privaudit, name)
    doc = (getattr(obj, "__doc__", None) or "").strip()
    assert doc, f"privaudit.{name} has no docstring"
    first = doc.splitlines()[0].strip()
    assert len(first) >= 10, f"privaudit.{name}: the docstring's first line is no summary"
    from_module = getattr(sys.modules[privaudit._PUBLIC[name]], name)
    assert from_module is obj  # the name is the defining module's object, not a copy


def test_constants_are_documented_in_the_package_docstring() -> None:
    doc = privaudit.__doc__ or ""
    for name in CONSTANTS - {"__version__"}:
        assert f"``{name}``" in doc
        getattr(privaudit, name)
    assert "internal and may change" in doc


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'run_game'"):
        privaudit.run_game  # noqa: B018 - internal, not exported


def test_import_privaudit_imports_no_numpy() -> None:
    code = (
        "import sys, privaudit\n"
        "heavy = ('numpy', 'pandas', 'sklearn', 'scipy', 'pydantic', 'rich', 'typer', 'torch')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "privaudit.load_adult\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout.splitlines()
    assert out == ["[]", "True"]  # nothing heavy until a name is used; then what it needs


# --------------------------------------------------------------------------- the examples


def non_public_imports(source: str) -> list[str]:
    """What a script takes from privaudit that is not ``import privaudit`` or a name of
    ``privaudit.__all__``: ``from privaudit.x import y``, ``import privaudit.x``,
    ``from privaudit import _private``, ``privaudit.internal`` attributes."""
    public = set(privaudit.__all__)
    found: list[str] = []
    tree = ast.parse(source)
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "privaudit":
                    aliases.add(a.asname or a.name)
                elif a.name.startswith("privaudit."):
                    found.append(f"import {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level == 0 and node.module.startswith("privaudit."):
                found.append(f"from {node.module} import ...")
            elif node.level == 0 and node.module == "privaudit":
                found += [
                    f"from privaudit import {a.name}" for a in node.names if a.name not in public
                ]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr not in public
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_import_check_finds_internal_names() -> None:
    bad = (
        "import privaudit\nimport privaudit.models\nfrom privaudit.data import load_adult\n"
        "from privaudit import audit_model, _lazy\nprivaudit.membership.pipeline.run_audit\n"
    )
    assert non_public_imports(bad) == [
        "import privaudit.models",
        "from privaudit.data import ...",
        "from privaudit import _lazy",
        "privaudit.membership",
    ]
    assert non_public_imports("import privaudit\nprivaudit.audit_model\n") == []


def _examples() -> Iterator[Path]:
    yield from sorted(EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("path", list(_examples()), ids=lambda p: p.name)
def test_examples_import_public_names_only(path: Path) -> None:
    assert non_public_imports(path.read_text(encoding="utf-8")) == []


# --------------------------------------------------------------------------- audit_model

ATTACKS = ["population", "reference", "lira-offline", "rmia-offline"]
MODELS = {"n_reference": 4, "n_shadow": 2}


@pytest.fixture(scope="module")
def own() -> dict[str, Any]:
    """A small MLP trained outside privaudit on breast-cancer data, and its split."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.neural_network import MLPClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    rows = np.random.default_rng(0).permutation(len(y))
    members, non_members = rows[:150], rows[150:300]
    model = MLPClassifier(hidden_layer_sizes=(16,), max_iter=60, random_state=0)
    with warnings.catch_warnings():  # not converged: the target overfits on purpose
        warnings.simplefilter("ignore")
        model.fit(X[members], y[members])
    rest = np.setdiff1d(np.arange(len(y)), rows[:300])
    return {
        "X": X,
        "y": y,
        "members": members,
        "non_members": non_members,
        "rest": rest,
        "model": model,
    }


def _audit_own(own: dict[str, Any], **kw: Any) -> privaudit.AuditReport:
    """``audit_model`` on the fixture's model and split, with the module's attacks."""
    return privaudit.audit_model(
        own["model"],
        own["X"],
        own["y"],
        members=own["members"],
        non_members=own["non_members"],
        attacks=ATTACKS,
        models=MODELS,
        seed=3,
        progress=False,
        **kw,
    )


@pytest.fixture(scope="module")
def api_result(own: dict[str, Any]) -> privaudit.AuditReport:
    return _audit_own(own, randomised_split=True)  # the fixture's members were drawn at random


@pytest.fixture(scope="module")
def cli_run(own: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``privaudit run`` (in this process) on the same model, data and split, written to files."""
    import skops.io as sio
    import yaml

    d = tmp_path_factory.mktemp("cli")
    X, y = own["X"], own["y"]
    np.savez(d / "arrays.npz", X=X, y=y, id=np.arange(len(y)))
    sio.dump(own["model"], d / "target.skops")
    for name in ("members", "non_members"):
        (d / f"{name}.txt").write_text("\n".join(map(str, own[name])) + "\n", encoding="utf-8")
    params = {k: v for k, v in own["model"].get_params().items() if k != "random_state"}
    params["hidden_layer_sizes"] = list(params["hidden_layer_sizes"])
    config = {
        "dataset": {"path": "arrays.npz", "label_column": "y", "id_column": "id"},
        "target": {
            "kind": "sklearn",
            "path": "target.skops",
            "members": "members.txt",
            "non_members": "non_members.txt",
            "randomised_split": True,
        },
        "model": {"kind": "mlp", "params": params},
        "attacks": ATTACKS,
        "models": MODELS,
        "seed": 3,
        "output_dir": "report",
    }
    (d / "audit.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = privaudit.main(["run", str(d / "audit.yaml"), "--no-progress"])
    assert code == 0, stdout.getvalue()
    return {
        "results": json.loads((d / "report" / "results.json").read_text(encoding="utf-8")),
        "scores": d / "report" / "scores.npz",
        "stdout": stdout.getvalue(),
    }


def test_audit_model_gives_the_figures_of_privaudit_run(
    api_result: privaudit.AuditReport, cli_run: dict[str, Any]
) -> None:
    api, cli = api_result.results, cli_run["results"]
    assert [a["name"] for a in api["attacks"]] == ATTACKS
    assert api["attacks"] == cli["attacks"]  # every metric, threshold and attack setting
    assert api["audits"] == cli["audits"]  # the one-run bounds
    assert api["agreement"] == cli["agreement"]
    assert api["vulnerable_records"] == cli["vulnerable_records"]
    same_target = ("train_accuracy", "test_accuracy", "n_members", "n_non_members")
    same_target += ("n_population", "split_sha256", "recipe_check", "origin")
    for key in same_target:
        assert api["target"][key] == cli["target"][key], key
    for key in ("model", "sizes", "models", "seeds", "attacks", "alpha", "game"):
        assert api["settings"][key] == cli["settings"][key], key
    assert api["settings"]["dataset"]["fingerprint"] == cli["settings"]["dataset"]["fingerprint"]
    # what differs: where the data and the target came from
    assert api["settings"]["dataset"]["source"] == "in-memory"
    assert api["target"]["source"] == "in-memory" and "path" not in api["target"]
    from privaudit.records import ScoreTable

    table = ScoreTable.load(cli_run["scores"])
    for name in ATTACKS:
        np.testing.assert_array_equal(api_result.scores.scores[name], table.scores[name])


def _attack_rows(text: str) -> list[str]:
    """The summary table's rows (a line that starts with an attack's name), up to the
    calibrated-evaluation table under it."""
    lines = text.splitlines()
    end = next((i for i, ln in enumerate(lines) if "each the target in turn" in ln), len(lines))
    return [ln for ln in lines[:end] if ln.split()[:1] and ln.split()[0] in ATTACKS]


def test_the_result_prints_the_summary_of_privaudit_run(
    api_result: privaudit.AuditReport, cli_run: dict[str, Any]
) -> None:
    text = str(api_result)
    rows = _attack_rows(text)
    cli_rows = _attack_rows(cli_run["stdout"])
    assert len(rows) == len(ATTACKS) and rows == cli_rows
    assert "the target given in memory" in text
    assert text == api_result.summary().rstrip("\n")


def test_typed_figures_are_those_of_results_json(api_result: privaudit.AuditReport) -> None:
    entries = api_result.results["attacks"]
    for fig, entry in zip(api_result.attacks, entries, strict=True):
        assert isinstance(fig, privaudit.AttackFigures)
        assert (fig.name, fig.auc) == (entry["name"], entry["auc"])
        assert (fig.n_members, fig.n_non_members) == (entry["n_positives"], entry["n_negatives"])
        assert fig.auc_ci == tuple(entry["auc_ci"])
        assert fig.tpr(0.01) == entry["tpr_at_fpr"]["0.01"]
        assert fig.achieved_fpr == entry["achieved_fpr"]
    best = api_result.strongest_attack()
    assert best.auc == max(e["auc"] for e in entries)
    by_tpr = api_result.strongest_attack(fpr=0.01)
    assert by_tpr.tpr(0.01) == max(e["tpr_at_fpr"]["0.01"] for e in entries)
    assert api_result.attack("population").name == "population"
    with pytest.raises(privaudit.InvalidInputError, match="name: expected one of the attacks"):
        api_result.attack("lira-online")
    with pytest.raises(privaudit.InvalidInputError, match="fpr: expected one of the reported"):
        best.tpr(0.05)
    t = api_result.target
    assert (t.n_members, t.n_non_members, t.origin) == (150, 150, "provided")
    assert t.train_accuracy == api_result.results["target"]["train_accuracy"]
    bounds = api_result.bounds
    assert [b.attack for b in bounds] == ATTACKS
    assert all(b.procedure == "one-run" and b.epsilon_lower_bound >= 0 for b in bounds)
    assert bounds[0].epsilon_lower_bound == api_result.results["audits"][0]["epsilon_lower_bound"]


def test_bounds_are_refused_unless_the_split_is_declared_random(
    own: dict[str, Any], api_result: privaudit.AuditReport, tmp_path: Path
) -> None:
    """The one-run bounds hold over a random draw of the members, which privaudit did not
    make for a model trained outside it: without the declaration they are refused (the
    trivial 0, not gated, the reason given), and the attacks' figures are unchanged."""
    plain = _audit_own(own)
    assert plain.results["attacks"] == api_result.results["attacks"]
    assert plain.results["target"]["randomised_split"] is False
    assert api_result.results["target"]["randomised_split"] is True
    check = api_result.results["target"]["split_check"]  # the declaration, checked
    assert check["refuted"] is False and check["n_records"] == 300
    assert "split_check" not in plain.results["target"]  # nothing declared, nothing to check
    html = (api_result.save(tmp_path / "declared") / "report.html").read_text(encoding="utf-8")
    assert "not refuted (which does not prove the draw random)" in html
    assert all(b.refused is None for b in api_result.bounds)
    for b, declared in zip(plain.bounds, api_result.bounds, strict=True):
        assert b.epsilon_lower_bound == 0.0 and b.refused is not None
        assert "randomised_split" in b.refused and "zero-run" in b.refused
        assert b.counts == declared.counts  # the same guesses: only the bound is withheld
    card = plain.results["threat_model"]["bounds"][0]
    assert card["refused"].startswith("refused: the auditor chose the members")
    assert "The auditor chose the split" in card["assumption"]
    folder = plain.save(tmp_path / "plain")
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "refused<sup>&Dagger;</sup>" in html and "No eps lower bound is printed" in html
    assert privaudit.verify_bundle(folder).ok  # the refusal is recomputed, not only recorded
    with pytest.raises(privaudit.InvalidInputError, match="randomised_split: expected True or"):
        privaudit.audit_model(
            own["model"],
            own["X"],
            own["y"],
            members=own["members"],
            non_members=own["non_members"],
            attacks=["population"],
            randomised_split="yes",  # type: ignore[arg-type]
            progress=False,
        )


def test_save_writes_what_the_cli_writes_and_verify_passes(
    api_result: privaudit.AuditReport, tmp_path: Path
) -> None:
    assert api_result.report_path is None or api_result.out_dir is not None
    folder = api_result.save(tmp_path / "audit")
    written = sorted(p.name for p in folder.iterdir())
    assert written == ["bundle.json", "report.html", "results.json", "scores.npz"]
    assert api_result.out_dir == folder and api_result.report_path == folder / "report.html"
    report = privaudit.verify_bundle(folder)
    assert report.ok and report.count("mismatch") == 0 and report.count("ok") > 50
    assert privaudit.main(["verify", str(folder)]) == 0
    with pytest.raises(privaudit.ReportExistsError):
        api_result.save(folder)
    api_result.save(folder, overwrite=True)
    manifest = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
    assert manifest["command"] == "audit_model"
    assert manifest["config"]["dataset"]["source"] == "in-memory"


def test_to_dict_round_trip(api_result: privaudit.AuditReport, tmp_path: Path) -> None:
    d = api_result.to_dict()
    assert d == api_result.results and d is not api_result.results
    d["attacks"] = []  # a copy: the result is unchanged
    assert api_result.results["attacks"]
    assert json.loads(api_result.to_json()) == api_result.to_dict()
    back = privaudit.AuditResults.from_dict(api_result.to_dict())
    assert back.attacks == api_result.attacks and back.bounds == api_result.bounds
    assert back.target == api_result.target
    folder = api_result.save(tmp_path / "rt")
    text = (folder / "results.json").read_text(encoding="utf-8")
    assert text == api_result.to_json() + "\n"
    loaded = privaudit.AuditResults.load(folder)
    assert loaded.to_dict() == api_result.to_dict() and loaded.out_dir == folder
    assert loaded.report_path == folder / "report.html"


# --------------------------------------------------------------------------- bad input


def _call(own: dict[str, Any], **changes: Any) -> Any:
    kw: dict[str, Any] = {
        "members": own["members"],
        "non_members": own["non_members"],
        "attacks": ATTACKS,
        "models": MODELS,
        "progress": False,
    }
    model = changes.pop("model", own["model"])
    y = changes.pop("y", own["y"])
    kw.update(changes)
    return privaudit.audit_model(model, own["X"], y, **kw)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"y": "short"}, r"^y: expected 569 labels \(one per row of X\), found 568 labels$"),
        ({"ids": np.arange(10)}, r"^ids: expected 569 record ids \(one per row of X\), found 10"),
        (
            {"non_members": "overlap"},
            r"^members/non_members: expected disjoint sets of record ids, found 10 in both",
        ),
        ({"model": "unfitted"}, r"^model: expected a fitted scikit-learn classifier"),
        ({"model": object()}, r"^model: expected a fitted scikit-learn classifier, a torch"),
        ({"members": np.array([1, 2, 10_000])}, r"^members: expected record ids of dataset"),
        ({"members": np.zeros(5, dtype=bool)}, r"^members: expected record ids or a boolean mask"),
        ({"models": {"n_reference": 5}}, r"models\.n_reference: expected an even number"),
        ({"attacks": ["lira-online2"]}, r"attacks: expected attack names among"),
        ({"attacks": "population"}, r"^attacks: expected a sequence of attack names"),
        ({"references": "elsewhere"}, r"^references: expected 'pool' or 'population'"),
        (
            {"references": "population", "attacks": ["lira-online"]},
            r"^references: expected 'pool' for online attacks",
        ),
        ({"alpha": 1.5}, r"alpha: "),
    ],
)
def test_bad_arguments_name_the_parameter(
    own: dict[str, Any], changes: dict[str, Any], message: str
) -> None:
    from sklearn.neural_network import MLPClassifier

    if changes.get("y") == "short":
        changes["y"] = own["y"][:-1]
    if changes.get("non_members") == "overlap":
        changes["non_members"] = np.concatenate([own["non_members"][10:], own["members"][:10]])
    if changes.get("model") == "unfitted":
        changes["model"] = MLPClassifier()
    with pytest.raises(privaudit.InvalidInputError, match=message):
        _call(own, **changes)


def test_a_split_too_small_is_refused_before_training(own: dict[str, Any]) -> None:
    # shadow models need more population records than members: named in the arguments' words
    with pytest.raises(privaudit.ConfigError, match=r"the members argument"):
        _call(own, population=own["rest"][:10], attacks=["shadow"])


def test_boolean_masks_and_a_dataset_give_the_same_split(own: dict[str, Any]) -> None:
    from privaudit.membership.own_model import _dataset, _ids

    ds = _dataset(own["X"], own["y"], None)
    mask = np.zeros(len(own["y"]), dtype=bool)
    mask[own["members"]] = True
    np.testing.assert_array_equal(np.sort(_ids(mask, "members", ds)), np.sort(own["members"]))
    assert _dataset(ds, None, None) is ds
    with pytest.raises(privaudit.InvalidInputError, match=r"^y: expected None when X is a Dataset"):
        _dataset(ds, own["y"], None)


def test_a_torch_model_with_its_recipe(own: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    recipe = privaudit.TorchRecipe(
        factory="privaudit.models.torch_nets:mlp",
        factory_kwargs={"n_features": 30, "n_classes": 2, "hidden": 16},
        epochs=10,
        batch_size=32,
        lr=0.01,
        device="cpu",
    )
    X, y, members = own["X"], own["y"], own["members"]
    target = privaudit.TorchTrainer(recipe, n_classes=2).fit(X[members], y[members], seed=1)
    kw: dict[str, Any] = {
        "members": members,
        "non_members": own["non_members"],
        "attacks": ["population", "lira-offline"],
        "models": {"n_reference": 4},
        "progress": False,
    }
    with pytest.raises(privaudit.InvalidInputError, match=r"^recipe: expected a TorchRecipe"):
        privaudit.audit_model(target.module, X, y, **kw)
    module = privaudit.audit_model(target.module, X, y, recipe=recipe, **kw)
    wrapped = privaudit.audit_model(target, X, y, **kw)  # a TorchModel knows its recipe
    assert module.results["attacks"] == wrapped.results["attacks"]
    assert module.results["target"]["kind"] == "torch"
    assert module.results["settings"]["model"]["kind"] == "torch"
    assert module.target.train_accuracy is not None and module.attack("lira-offline").auc > 0


# --------------------------------------------------------------------------- other results


def test_zero_run_result_saves_summarises_and_loads(tmp_path: Path) -> None:
    g = np.random.default_rng(0)
    member = g.random(400) < 0.5
    scores = 1.0 * member + g.standard_normal(400)
    result = privaudit.zero_run_audit(
        scores, member, propensity={"flat": np.full(400, 0.5)}, seed=0
    )
    folder = result.save(tmp_path / "zr")
    assert sorted(p.name for p in folder.iterdir()) == ["report.html", "results.json"]
    assert (folder / "results.json").read_text(encoding="utf-8") == result.to_json() + "\n"
    assert privaudit.ZeroRunResult.load(folder).to_dict() == result.to_dict()
    text = str(result)
    assert text.startswith("privaudit zero-run: ")
    assert f"{result.n_members} known members" in text and "headline" in text


# --------------------------------------------------------------------------- quickstart


def test_quickstart_prints_the_figures_it_saves(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "quickstart-report"
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    last = out.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"strongest attack: (\S+), AUC ([0-9.]+), TPR at 1% FPR ([0-9.]+)%", last)
    assert m is not None, last
    best = max(results["attacks"], key=lambda a: a["auc"])
    assert m.group(1) == best["name"]
    assert m.group(2) == f"{best['auc']:.3f}"
    assert m.group(3) == f"{100 * best['tpr_at_fpr']['0.01']:.1f}"
    for a in results["attacks"]:  # the summary's rows are the saved figures
        row = next(ln for ln in out.stdout.splitlines() if ln.split()[:1] == [a["name"]])
        assert row.split()[1] == f"{a['auc']:.3f}"
    verify = subprocess.run(
        [*PRIVAUDIT, "verify", str(folder)], capture_output=True, text=True, env=ENV
    )
    assert verify.returncode == 0 and verify.stdout.rstrip().endswith("verify: OK")


def test_readme_shows_the_quickstart_script() -> None:
    """The README's Python example is examples/quickstart.py's code (the test above runs it)."""
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```python\n(.*?)```", readme, re.S)
    assert shown is not None, "README.md has no Python example"
    code = (EXAMPLES / "quickstart.py").read_text(encoding="utf-8").split('"""', 2)[2]
    assert shown.group(1).strip() == code.strip()
    working = [ln for ln in code.strip().splitlines() if ln.strip()]
    assert len(working) <= 15  # "about ten lines" with the imports

"""The documentation site: the generated reference pages, the pages' wording, the build.

The config reference is generated from the pydantic schemas by ``docs/_hooks/reference.py``
(a mkdocs hook); these tests walk the schemas on their own and check that every field is on
the page with a meaning, that the registries page lists every model kind, recipe field,
generator parameter and attack, and that no page points outside the repository or to the
project's issues. The build itself (``mkdocs build --strict``, offline; marked ``slow``)
runs when mkdocs is installed (the ``docs`` extra) and is skipped otherwise.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOK = DOCS / "_hooks" / "reference.py"

#: Every config schema of privaudit (module, class): each must be on the config reference.
SCHEMAS = (
    ("privaudit.membership.config", "AuditConfig"),
    ("privaudit.llm.config", "LLMAuditConfig"),
    ("privaudit.panoramia.config", "PanoramiaConfig"),
    ("privaudit.record_risk.config", "RecordRiskFileConfig"),
)
#: The per-modality schemas of PANORAMIA's ``generator:`` mapping.
GENERATOR_SCHEMAS = ("TabularGeneratorConfig", "ImageGeneratorConfig", "TextGeneratorConfig")

#: What no page may say: a path outside the repository, an issue or a stop of the project
#: ("issue 28"; another project's tracker, cited as "Issues #146 of ml_privacy_meter", may be).
FORBIDDEN = (
    re.compile(r"\.\./shared"),
    re.compile(r"\bissue \d+", re.IGNORECASE),
    re.compile(r"\bstop \d+", re.IGNORECASE),
)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("privaudit_docs_reference", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _submodels(tp: Any) -> list[type[BaseModel]]:
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        return [tp]
    return [m for a in typing.get_args(tp) for m in _submodels(a)]


def _paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field's dotted path, walked independently of the generator."""
    out = []
    for name, field in model.model_fields.items():
        out.append(prefix + name)
        for sub in _submodels(field.annotation):
            out += _paths(sub, f"{prefix}{name}.")
    return out


def _rows(markdown: str) -> dict[str, list[str]]:
    """``{first cell without backticks: cells}`` of every table row of a page."""
    rows: dict[str, list[str]] = {}
    for line in markdown.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.setdefault(cells[0].strip("`"), cells)
    return rows


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    return _hook()


@pytest.fixture(scope="module")
def config_page(hook: ModuleType) -> str:
    return str(hook.config_reference())


def test_config_reference_lists_every_field_with_type_default_and_meaning(
    config_page: str,
) -> None:
    sections = re.split(r"^## ", config_page, flags=re.M)
    for module, cls in SCHEMAS:
        schema = getattr(importlib.import_module(module), cls)
        section = next(s for s in sections if f"`{module}.{cls}`" in s)
        # the schema's own table, before the sub-schemas (### headings) of its section
        rows = _rows(section.split("\n### ")[0])
        for path in _paths(schema):
            assert path in rows, f"{cls}: field {path!r} missing from the config reference"
            _, type_, default, meaning = rows[path]
            assert type_ and default, f"{cls}.{path}: no type or default"
            assert meaning, f"{cls}.{path}: no meaning (give the field a description=)"
    panoramia = importlib.import_module("privaudit.panoramia.config")
    for cls in GENERATOR_SCHEMAS:
        section = config_page.split(f"`privaudit.panoramia.config.{cls}`")[1].split("\n#")[0]
        rows = _rows(section)
        for path in _paths(getattr(panoramia, cls), "generator."):
            assert path in rows and rows[path][3], f"{cls}: {path!r} missing or without meaning"


def test_config_reference_types_and_defaults_come_from_the_schema(config_page: str) -> None:
    from privaudit.membership.config import AuditConfig, ModelCounts

    rows = _rows(config_page)
    assert rows["models.n_reference"][2] == f"`{ModelCounts.model_fields['n_reference'].default}`"
    assert rows["seed"][1] == "integer (>= 0, < 2^32)"
    assert rows["dataset"][2] == "required"
    assert rows["alpha"][2] == f"`{AuditConfig.model_fields['alpha'].default:g}`"
    assert rows["game.name"][1].startswith("`def-3.1` \\| `def-3.2`")


def test_registries_list_every_model_kind_recipe_field_generator_and_attack(
    hook: ModuleType,
) -> None:
    from privaudit.attacks import attack_names
    from privaudit.config.sections import GENERATOR_PARAMS, MODEL_DEFAULTS, MODEL_KINDS
    from privaudit.models.lm_finetune import FineTuneRecipe
    from privaudit.models.torch_models import TorchRecipe
    from privaudit.record_risk.attacks import RECORD_ATTACKS
    from privaudit.zero_run.estimators import ESTIMATORS

    page = str(hook.registries())
    rows = _rows(page)
    for kind in MODEL_KINDS:
        assert kind in rows, f"model kind {kind!r} missing"
    for kind, defaults in MODEL_DEFAULTS.items():
        for key in defaults:
            assert f"{key}:" in rows[kind][2], f"default {key} of {kind} missing"
    for recipe, skip in ((TorchRecipe, {"base_dir"}), (FineTuneRecipe, {"seed"})):
        for f in dataclasses.fields(recipe):
            if f.name not in skip:
                assert f"| `{f.name}` |" in page, f"{recipe.__name__}.{f.name} missing"
    for gen, params in GENERATOR_PARAMS.items():
        for p in params:
            assert f"| `{gen}` |" in page and f"| `{p}` |" in page
    for name in (*attack_names(), *RECORD_ATTACKS, *ESTIMATORS):
        assert name in rows, f"{name!r} missing from the registries page"


def _markdown_pages() -> dict[str, str]:
    pages = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md")}
    pages["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    hook = _hook()
    for uri, make in hook.PAGES.items():
        pages[f"(generated) {uri}"] = make()
    return pages


def _forbidden(text: str) -> list[str]:
    return [
        text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ")
        for pattern in FORBIDDEN
        for m in pattern.finditer(text)
    ]


def test_pages_speak_to_users() -> None:
    found = {name: _forbidden(text) for name, text in _markdown_pages().items()}
    assert not {k: v for k, v in found.items() if v}


def test_the_forbidden_patterns_catch_what_they_should() -> None:
    assert _forbidden("see ../shared/notes/x.md")
    assert _forbidden("as in issue 28, item 2")
    assert _forbidden("since stop 3")
    assert not _forbidden("the issue is a shift; stop when done; shared across runs")


def test_every_page_of_the_nav_exists() -> None:
    nav = re.findall(r":\s+([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    generated = set(_hook().PAGES)
    assert nav
    for page in nav:
        assert page in generated or (DOCS / page).is_file(), f"nav names a missing page {page}"


def test_the_benchmarks_page_lists_every_benchmark_and_no_other() -> None:
    """docs/benchmarks.md names every ``benchmarks/bench_*.py`` in its tables, and every
    script a row names exists (a new benchmark is added to the page, a removed one leaves)."""
    page = (DOCS / "benchmarks.md").read_text()
    rows = set(re.findall(r"^\| `(bench_\w+\.py)` \|", page, re.M))
    scripts = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert scripts, "no benchmark scripts found"
    assert rows == scripts, (sorted(scripts - rows), sorted(rows - scripts))


_TAG_RESOURCE = re.compile(r"<(?:script|img|link|iframe|source)\b[^>]*?(?:src|href)=\"(https?:)?//")


@pytest.mark.slow  # 12-20 s on 2 cores; .ci/run also builds the site in its default steps
def test_mkdocs_build_strict_offline(tmp_path: Path) -> None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install -e '.[docs]')")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**_env(), "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    html = {
        p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")
    }
    for page in (
        "index.html",
        "reference/config.html",
        "reference/registries.html",
        "api/index.html",
    ):
        assert page in html, f"{page} not built"
    # nothing is fetched when a page is opened: no remote script, style, font or image
    for name, text in html.items():
        assert not _TAG_RESOURCE.search(text), f"{name} loads a remote resource"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, name
    # the built pages, API docstrings included, speak to users
    text_of = {name: re.sub(r"<[^>]+>", " ", t) for name, t in html.items()}
    found = {name: _forbidden(t) for name, t in text_of.items()}
    assert not {k: v for k, v in found.items() if v}
    # every field of every schema reached the built config reference
    config = text_of["reference/config.html"]
    for module, cls in SCHEMAS:
        for path in _paths(getattr(importlib.import_module(module), cls)):
            assert path in config, f"{cls}.{path} not on the built config reference"
    # the public API page follows privaudit.__all__
    import privaudit

    api = html["api/index.html"]
    for name in privaudit.__all__:
        if not name.startswith("__"):
            anchor = f'id="privaudit-{name.lower().replace("_", "-")}"'
            assert anchor in api or f"<code>{name}</code>" in api, f"{name} not on api/index"


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env

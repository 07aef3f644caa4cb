"""The generated pages of the documentation site (a mkdocs hook, ``hooks:`` in mkdocs.yml).

At build time, :func:`on_files` adds three pages made from the code itself, never copied
by hand, so that they cannot drift from it:

* ``reference/config.md`` -- every field of every config schema (the pydantic models of
  ``audit.yaml``, the language-model audit, PANORAMIA, record-level risk) with its type,
  default and meaning;
* ``reference/registries.md`` -- the model kinds and their defaults, the torch recipe
  and fine-tuning recipe fields, the synthetic-data generators, the attacks;
* ``api/index.md`` -- every name ``privaudit`` exports (``privaudit.__all__``), each
  rendered by mkdocstrings from the module that defines it.

A field's meaning is its ``Field(description=...)``; without one, the sentence of its
class docstring that names it (``name``: ...), the comment on its line in the module
docstring's YAML example, or (for a few fields every schema shares: ``seed``,
``output_dir``, ...) the project-wide convention in :data:`COMMON_MEANINGS`.

:func:`on_page_content` shows the Sphinx roles of the docstrings (``:func:`x```) as the
code they name. Importable without mkdocs (``tests/test_docs.py`` renders the pages
directly).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:  # the checkout's sources, installed or not
    sys.path.insert(0, str(ROOT / "src"))

#: (title, module, class, the command that reads it, anchor) of every config schema.
SCHEMAS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "Membership audit (audit.yaml)",
        "privaudit.membership.config",
        "AuditConfig",
        "privaudit run audit.yaml",
        "audit-yaml",
    ),
    (
        "Language-model audit",
        "privaudit.llm.config",
        "LLMAuditConfig",
        "privaudit run llm.yaml (target.kind: huggingface)",
        "llm-yaml",
    ),
    (
        "PANORAMIA",
        "privaudit.panoramia.config",
        "PanoramiaConfig",
        "privaudit panoramia panoramia.yaml",
        "panoramia-yaml",
    ),
    (
        "Record-level risk",
        "privaudit.record_risk.config",
        "RecordRiskFileConfig",
        "privaudit record-risk record_risk.yaml",
        "record-risk-yaml",
    ),
)

#: Sub-schemas of a free-form mapping field: (schema class, field, module, class, heading).
SUB_SCHEMAS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "PanoramiaConfig",
        "generator",
        "privaudit.panoramia.config",
        "TabularGeneratorConfig",
        "generator (modality: tabular)",
    ),
    (
        "PanoramiaConfig",
        "generator",
        "privaudit.panoramia.config",
        "ImageGeneratorConfig",
        "generator (modality: image)",
    ),
    (
        "PanoramiaConfig",
        "generator",
        "privaudit.panoramia.config",
        "TextGeneratorConfig",
        "generator (modality: text)",
    ),
)

#: Meanings of the fields every schema shares, used only where a schema gives none: one
#: convention of the whole project, not a copy of any schema.
COMMON_MEANINGS: dict[str, str] = {
    "seed": "Root seed: every random choice of the run (splits, training, attacks) derives "
    "from it; the same config and seed give the same numbers.",
    "n_jobs": "Worker processes that train models in parallel; -1 uses every core.",
    "output_dir": "Folder of the report (report.html, results.json, scores, bundle.json); "
    "relative to the config file's folder; `--out` on the command line overrides it.",
    "cache_dir": "Artifact store of trained models and computed signals: a killed or "
    "repeated run resumes from it; null: no cache.",
    "confidence": "Confidence of every lower bound (1 - beta).",
    "alpha": "False-positive rate at which the attacks' thresholds are set.",
    "batch_size": "Texts scored per forward pass.",
    "attack_params": "Parameters of the attack, by name.",
    "ModelConfig.kind": "See [model kinds](registries.md#model-kinds).",
    "PanoramiaConfig.modality": "What the records are; it decides the generator, the helper "
    "model and the classifiers.",
}


#: Docstrings that document a schema's fields where the schema does not: the object each
#: schema configures (its numpydoc ``Parameters``).
MEANING_SOURCES: dict[str, tuple[str, ...]] = {
    "RecordRiskFileConfig": (
        "privaudit.record_risk.risk.RecordRiskConfig",
        "privaudit.generators.discrete.discretise",
    ),
    "TextGeneratorConfig": (
        "privaudit.models.lm_generate.TextSampling",
        "privaudit.panoramia.text.TextModality",
    ),
}


class Row(NamedTuple):
    """One line of a field table."""

    path: str
    type: str
    default: str
    meaning: str


# -- types, defaults, constraints ------------------------------------------------------------

_SCALARS: dict[Any, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    Path: "path",
    type(None): "null",
    Any: "any",
}


def _is_model(tp: Any) -> bool:
    from pydantic import BaseModel

    return inspect.isclass(tp) and issubclass(tp, BaseModel)


_CONSTRAINTS: dict[str, tuple[str, str]] = {
    "Ge": ("ge", ">= {}"),
    "Gt": ("gt", "> {}"),
    "Le": ("le", "<= {}"),
    "Lt": ("lt", "< {}"),
    "MinLen": ("min_length", "length >= {}"),
    "MaxLen": ("max_length", "length <= {}"),
}


def _constraints(meta: Any) -> list[str]:
    """``>= 4``-style words of annotated-types constraint objects (also inside a pydantic
    ``FieldInfo`` of an ``Annotated`` type)."""
    out: list[str] = []
    for m in meta:
        inner = getattr(m, "metadata", None)
        if isinstance(inner, list):
            out += _constraints(inner)
        elif type(m).__name__ in _CONSTRAINTS:
            attr, words = _CONSTRAINTS[type(m).__name__]
            out.append(words.format(_fmt_number(getattr(m, attr))))
    return out


def _fmt_number(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 2**16 and (v & (v - 1)) == 0:
        return f"2^{v.bit_length() - 1}"
    return str(v)


def format_type(tp: Any) -> str:
    """A reader's name of a type annotation (``integer (>= 4) | null``, ``list of string``)."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = get_args(tp)
        words = _constraints(meta)
        s = format_type(base)
        return f"{s} ({', '.join(words)})" if words else s
    if origin in (Union, types.UnionType):
        parts = [format_type(a) for a in get_args(tp)]
        return " | ".join(dict.fromkeys(parts))
    if origin is Literal:
        return " | ".join(f"`{a}`" for a in get_args(tp))
    if origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return f"list of {format_type(args[0])}" if args else "list"
    if origin is dict or tp is dict:
        kv = get_args(tp)
        return f"mapping of {format_type(kv[1])}" if kv else "mapping"
    if _is_model(tp):
        return f"section (`{tp.__name__}`)"
    if tp in _SCALARS:
        return _SCALARS[tp]
    return getattr(tp, "__name__", str(tp))


def format_value(v: Any) -> str:
    """A default as it would be written in YAML."""
    if v is None:
        return "`null`"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if _is_model(type(v)):
        return "(its fields' defaults)"
    if isinstance(v, Path):
        return f"`{v}`"
    if isinstance(v, list | tuple):
        return "`[" + ", ".join(format_value(x).strip("`") for x in v) + "]`"
    if isinstance(v, dict):
        if not v:
            return "`{}`"
        return "`{" + ", ".join(f"{k}: {format_value(x).strip('`')}" for k, x in v.items()) + "}`"
    if isinstance(v, float):
        return f"`{v:g}`"
    return f"`{v}`"


def _field_default(f: Any) -> str:
    from pydantic_core import PydanticUndefined

    if f.is_required():
        return "required"
    if f.default_factory is not None:
        return format_value(f.default_factory())
    if f.default is PydanticUndefined:
        return "required"
    return format_value(f.default)


def _field_type(f: Any) -> str:
    s = format_type(f.annotation)
    words = _constraints(f.metadata)
    return f"{s} ({', '.join(words)})" if words else s


# -- meanings --------------------------------------------------------------------------------


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r":(?:func|class|mod|data|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def docstring_mention(doc: str | None, name: str) -> str:
    """The clause of a class docstring that explains ``name`` (```name``: ...`` or a
    sentence that opens with ````name````), or ""."""
    if not doc:
        return ""
    doc = inspect.cleandoc(doc)
    end = r"(?=;\s*``[\w.-]+``|\.\s+[A-Z`]|\.\s*$|\n\n|$)"
    m = re.search(rf"``{re.escape(name)}``(?: \(default\))?:\s*(.+?){end}", doc, re.S)
    if m:
        return _clean(m.group(1)).rstrip(".") + "."
    m = re.search(rf"``{re.escape(name)}``(\s.+?){end}", doc, re.S)
    if m and doc[max(0, m.start() - 2) : m.start()].strip() in ("", ";", ".", ":"):
        return _clean(f"``{name}``{m.group(1)}").rstrip(".") + "."
    return ""


def yaml_comment(doc: str | None, name: str) -> str:
    """The comment on ``name:``'s line of a YAML example in a module docstring, or ""."""
    if not doc:
        return ""
    m = re.search(rf"^\s*{re.escape(name)}:[^#\n]*#\s*(.+)$", doc, re.M)
    return _clean(m.group(1)) if m else ""


def numpydoc_parameters(doc: str | None) -> dict[str, str]:
    """``{name: description}`` (raw text) of a numpydoc ``Parameters`` / ``Attributes``
    section; names may share an entry (``min_chars, max_chars : int``)."""
    out: dict[str, str] = {}
    if not doc:
        return out
    lines = inspect.cleandoc(doc).splitlines()
    indent: int | None = None  # of the section's header, None outside a section
    group: list[str] = []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        depth = len(line) - len(line.lstrip())
        if re.fullmatch(r"-{3,}", nxt.strip()):
            indent = depth if line.strip() in ("Parameters", "Attributes") else None
            group = []
            continue
        if indent is None or re.fullmatch(r"-{3,}", line.strip()) or not line.strip():
            continue
        m = re.match(r"^(\w+(?:\s*,\s*\w+)*)\s*(?::\s*(.*))?$", line.strip())
        if depth <= indent and m:
            group = [n.strip() for n in m.group(1).split(",")]
            typ = (m.group(2) or "").strip()
            for n in group:  # a set of choices is the meaning when nothing follows
                out[n] = f"one of {typ.strip('{}')}" if typ.startswith("{") else ""
        elif depth > indent:
            for n in group:
                prev = "" if out[n].startswith("one of ") else out[n]
                out[n] = (prev + " " + line.strip()).strip()
    return out


def _documented_in(model: type) -> list[Any]:
    """The objects whose docstrings also explain ``model``'s fields (:data:`MEANING_SOURCES`)."""
    out = []
    for dotted in MEANING_SOURCES.get(model.__name__, ()):
        module, _, name = dotted.rpartition(".")
        out.append(getattr(importlib.import_module(module), name))
    return out


def field_meaning(model: type, name: str, f: Any) -> str:
    """What a field means, from the code's own text, in this order: the field's
    ``description``; the sentence of its class docstring that names it; for a section, the
    section's docstring; the numpydoc entry of the object it configures
    (:data:`MEANING_SOURCES`); the comment on its line in the module docstring's YAML example;
    for a choice without one, the class docstring's words on each choice; for ``kind``, the
    class docstring; the project's convention (:data:`COMMON_MEANINGS`)."""
    if f.description:
        return _clean(f.description)
    own = [c for c in model.__mro__ if not c.__module__.startswith(("pydantic", "builtins"))]
    for cls in own:
        found = docstring_mention(cls.__doc__, name)
        if found:
            return found
    sub = list(_models_in(f.annotation))
    if sub and sub[0].__doc__:
        return _doc_intro(sub[0])
    for obj in _documented_in(model):
        params = numpydoc_parameters(obj.__doc__)
        found = _clean(params.get(name, "")) or next(
            (m for m in (docstring_mention(t, name) for t in params.values()) if m), ""
        )
        if found:
            return found
    qualified = COMMON_MEANINGS.get(f"{model.__name__}.{name}", "")
    if qualified and name != "kind":
        return qualified
    found = yaml_comment(sys.modules[model.__module__].__doc__, name)
    if len(found.split()) >= 3 and " | " not in found:
        return found
    if get_origin(f.annotation) is Literal:
        said = [(v, docstring_mention(model.__doc__, str(v))) for v in get_args(f.annotation)]
        if any(m for _, m in said):
            return "; ".join(f"`{v}`: {m.rstrip('.')}" for v, m in said if m) + "."
    extra = qualified or COMMON_MEANINGS.get(name, "")
    if name == "kind" and model.__doc__:
        return (_doc_intro(model) + " " + extra).strip()
    return extra


def _models_in(tp: Any) -> Iterator[type]:
    if _is_model(tp):
        yield tp
        return
    for a in get_args(tp):
        yield from _models_in(a)


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- the config reference --------------------------------------------------------------------


def schema_rows(model: type, prefix: str = "") -> list[Row]:
    """Every field of ``model`` and of its nested sections, by dotted path."""
    rows: list[Row] = []
    for name, f in model.model_fields.items():  # type: ignore[attr-defined]
        path = prefix + name
        rows.append(Row(path, _field_type(f), _field_default(f), field_meaning(model, name, f)))
        for sub in _models_in(f.annotation):
            rows += schema_rows(sub, path + ".")
    return rows


def _table(
    rows: list[Row], *, header: tuple[str, ...] = ("field", "type", "default", "meaning")
) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = [f"`{r[0]}`", *r[1:]]
        out.append(
            "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
        )
    # a "|" inside a type reads as a union; escaped above, so restore the spacing
    return "\n".join(out)


def _doc_intro(obj: Any) -> str:
    return _clean(inspect.cleandoc(obj.__doc__ or "").split("\n\n")[0])


def schemas() -> list[tuple[str, type, str, str]]:
    """(title, schema class, command, anchor) of every config schema, imported."""
    out = []
    for title, module, cls, command, anchor in SCHEMAS:
        out.append((title, getattr(importlib.import_module(module), cls), command, anchor))
    return out


def config_reference() -> str:
    """The markdown of ``reference/config.md``."""
    parts = [
        "# Config reference",
        "",
        "Every field of every configuration file, generated from the pydantic schemas when "
        "the site is built (the page follows the code). A dotted path is a nested field: "
        "`target.members` is `members:` inside `target:`. Unknown fields are errors, every "
        "problem is reported with its dotted path before any work (exit code 2), and relative "
        "paths resolve against the folder of the config file.",
        "",
    ]
    for title, model, command, anchor in schemas():
        parts += [
            f"## {title} {{#{anchor}}}",
            "",
            f"Read by `{command}`; schema `{model.__module__}.{model.__name__}`. "
            + _doc_intro(model),
            "",
            _table(schema_rows(model)),
            "",
        ]
        for owner, field, module, cls, heading in SUB_SCHEMAS:
            if owner != model.__name__:
                continue
            sub = getattr(importlib.import_module(module), cls)
            parts += [
                f"### {heading} {{#{_anchor(cls)}}}",
                "",
                f"The `{field}:` section of this modality (`{module}.{cls}`). " + _doc_intro(sub),
                "",
                _table(schema_rows(sub, field + ".")),
                "",
            ]
    parts += [
        "## Recipes inside a section",
        "",
        "`model.params` of `kind: torch` is a torch training recipe and PANORAMIA's "
        "`finetune:` a language-model fine-tuning recipe: their fields are listed with the "
        "[model kinds](registries.md#torch-recipe).",
        "",
    ]
    return "\n".join(parts)


# -- model kinds, recipes, generators, attacks -----------------------------------------------


def _dataclass_rows(cls: type, *, skip: tuple[str, ...] = ()) -> list[Row]:
    meanings = {k: _clean(v) for k, v in numpydoc_parameters(cls.__doc__).items()}
    rows = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if f.default is not dataclasses.MISSING:
            default = format_value(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = format_value(f.default_factory())
        else:
            default = "required"
        rows.append(Row(f.name, _dataclass_type(f.type), default, meanings.get(f.name, "")))
    return rows


def _dataclass_type(tp: Any) -> str:
    """A dataclass field's type (a string under ``from __future__ import annotations``)."""
    if not isinstance(tp, str):
        return format_type(tp)
    words = {
        "str": "string",
        "int": "integer",
        "float": "number",
        "bool": "boolean",
        "None": "null",
    }
    tp = re.sub(r"Mapping\[str, Any\]|dict\[str, Any\]", "mapping", tp)
    tp = re.sub(r"tuple\[int, \.\.\.\]", "list of integer", tp)
    return re.sub(r"\b(str|int|float|bool|None)\b", lambda m: words[m.group(1)], tp)


def registries() -> str:
    """The markdown of ``reference/registries.md``."""
    from privaudit.attacks import ATTACKS, attack_names
    from privaudit.config.sections import (
        GENERATOR_PARAMS,
        MODEL_DEFAULTS,
        MODEL_KINDS,
        ModelConfig,
        build_estimator,
    )
    from privaudit.generators import GENERATORS, make_generator
    from privaudit.models.lm_finetune import FineTuneRecipe
    from privaudit.models.torch_models import AUGMENTATIONS, OPTIMIZERS, TorchRecipe

    parts = [
        "# Model kinds, generators and attacks",
        "",
        "Generated from the code when the site is built: the registries that `model.kind`, "
        "a generator's name and `attacks:` are checked against.",
        "",
        "## Model kinds {#model-kinds}",
        "",
        "`model: {kind: ..., params: {...}}` in `audit.yaml`, PANORAMIA's `model:` and "
        "record-level risk's `target.model:`. A scikit-learn kind's `params` are the "
        "estimator's own parameters, merged over the defaults below (`random_state` is "
        "derived from the audit's seed and may not be given); `torch` takes a "
        "[torch recipe](#torch-recipe).",
        "",
        "| kind | estimator | privaudit's defaults | accepted `params` |",
        "|---|---|---|---|",
    ]
    for kind in MODEL_KINDS:
        if kind == "torch":
            parts.append(
                "| `torch` | a `torch.nn.Module` from a factory, trained by privaudit "
                "(extra `torch`) | see [torch recipe](#torch-recipe) | the recipe's fields |"
            )
            continue
        est = build_estimator(ModelConfig(kind=kind))  # type: ignore[arg-type]
        cls = type(est)
        accepted = sorted(set(est.get_params(deep=False)) - {"random_state"})
        parts.append(
            f"| `{kind}` | `{cls.__module__.split('._')[0]}.{cls.__name__}` | "
            f"{format_value(MODEL_DEFAULTS.get(kind, {}))} | "
            + ", ".join(f"`{p}`" for p in accepted)
            + " |"
        )
    parts += [
        "",
        "## Torch recipe {#torch-recipe}",
        "",
        "`model: {kind: torch, params: {...}}`: how a torch model is built and trained "
        f"(`privaudit.models.torch_models.TorchRecipe`). Optimizers: "
        f"{', '.join(f'`{o}`' for o in OPTIMIZERS)}; augmentations: "
        f"{', '.join(f'`{a}`' for a in AUGMENTATIONS)}. Seeded: the same seed gives the same "
        "weights on CPU.",
        "",
        _table(_dataclass_rows(TorchRecipe, skip=("base_dir",))),
        "",
        "## Fine-tuning recipe {#fine-tuning-recipe}",
        "",
        "PANORAMIA's `finetune:` for a text target (`privaudit.models.lm_finetune."
        "FineTuneRecipe`; its `seed` is the audit's).",
        "",
        _table(_dataclass_rows(FineTuneRecipe, skip=("seed",))),
        "",
        "## Synthetic-data generators {#generators}",
        "",
        "Record-level risk's `target: {kind: generator, generator: NAME, params: {...}}` and "
        "PANORAMIA's tabular `generator: {kind: NAME, params: {...}}` "
        "(`privaudit.generators.make_generator`). A generator of your own is any object with "
        "`fit`/`sample` wrapped in `privaudit.generators.UserGenerator`.",
        "",
        "| generator | class | parameter | default | meaning |",
        "|---|---|---|---|---|",
    ]
    for kind in GENERATORS:
        probe = {"epsilon": 1.0} if kind == "privbayes" else {}
        gen = make_generator(kind, **probe)
        cls = type(gen)
        meanings = {k: _clean(v) for k, v in numpydoc_parameters(cls.__doc__).items()}
        for p in GENERATOR_PARAMS[kind]:
            default = "required" if p in probe else format_value(getattr(gen, p, None))
            parts.append(
                f"| `{kind}` | `{cls.__name__}` | `{p}` | {default} | {meanings.get(p, '')} |"
            )
    parts += [
        "",
        "## Attacks {#attacks}",
        "",
        "The names `attacks:` of `audit.yaml` accepts (`privaudit.attacks.ATTACKS`); every "
        "score is higher = more likely member. *Default*: run when `attacks:` is not given. "
        "*Threshold at alpha*: the attack decides at the requested false-positive rate "
        "`alpha` (else its score only ranks records). Per-attack options go in "
        "`attack_params: {NAME: {...}}`.",
        "",
        "| attack | what it does | default | threshold at alpha | signal |",
        "|---|---|---|---|---|",
    ]
    for name in attack_names():
        spec = ATTACKS[name]
        parts.append(
            f"| `{name}` | {_clean(spec.description)} | {'yes' if spec.in_defaults else 'no'} | "
            f"{'yes' if spec.alpha_threshold else 'no'} | `{spec.default_signal}` |"
        )
    from privaudit.record_risk.attacks import RECORD_ATTACKS

    parts += [
        "",
        "## Record-level attacks {#record-attacks}",
        "",
        "`attack:` of a record-level risk config (`privaudit.record_risk.attacks."
        "RECORD_ATTACKS`): one attack per target record, trained where it needs to be on "
        "shadow releases.",
        "",
        "| attack | target kind | class |",
        "|---|---|---|",
    ]
    for name, (kind, cls) in RECORD_ATTACKS.items():
        parts.append(f"| `{name}` | {kind} | `{cls.__name__}`: {_doc_intro(cls)} |")

    from privaudit.zero_run.audit import (
        DEFAULT_CHALLENGERS,
        DEFAULT_ESTIMATORS,
        POINTWISE_REFUSED,
    )
    from privaudit.zero_run.estimators import ESTIMATORS

    parts += [
        "",
        "## Zero-Run propensity estimators {#propensity-estimators}",
        "",
        "`--estimators` / `--challengers` of `privaudit zero-run` "
        "(`privaudit.zero_run.estimators.ESTIMATORS`).",
        "",
        "| estimator | in the default headline | default challenger | pointwise bound |",
        "|---|---|---|---|",
    ]
    for name in ESTIMATORS:
        parts.append(
            f"| `{name}` | {'yes' if name in DEFAULT_ESTIMATORS else 'no'} | "
            f"{'yes' if name in DEFAULT_CHALLENGERS else 'no'} | "
            f"{'refused (reported as 0)' if name in POINTWISE_REFUSED else 'computed'} |"
        )
    parts.append("")
    return "\n".join(parts)


# -- the API index ---------------------------------------------------------------------------


def public_names() -> list[str]:
    """``privaudit.__all__`` without dunders."""
    import privaudit

    return [n for n in privaudit.__all__ if not n.startswith("__")]


def api_index() -> str:
    """The markdown of ``api/index.md``: ``privaudit``'s docstring, then each public name
    rendered from the module that defines it."""
    import privaudit

    parts = [
        "# The public API: `privaudit`",
        "",
        "Everything below is importable from the package root (`from privaudit import "
        "...`); this page is generated from `privaudit.__all__` when the site is built. "
        "The procedures' own modules are documented on the following pages.",
        "",
        "::: privaudit",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
    ]
    constants = []
    for name in public_names():
        obj = getattr(privaudit, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
            target = f"{obj.__module__}.{obj.__qualname__}"
            parts += [
                f"## `{name}` {{#{_anchor('privaudit-' + name)}}}",
                "",
                f"::: {target}",
                "    options:",
                "      show_root_heading: false",
                "      show_root_toc_entry: false",
                "",
            ]
        elif inspect.ismodule(obj):
            parts += [f"## `{name}`", "", f"::: {obj.__name__}", ""]
        else:
            shown = repr(obj) if len(repr(obj)) <= 80 else repr(obj)[:77] + "..."
            shown = shown.replace("|", "\\|")
            constants.append(f"| `{name}` | `{shown}` |")
    if constants:
        parts += ["## Constants", "", "| name | value |", "|---|---|", *constants, ""]
    return "\n".join(parts)


#: Generated pages: path inside the site -> the function that writes it.
PAGES: dict[str, Callable[[], str]] = {
    "reference/config.md": config_reference,
    "reference/registries.md": registries,
    "api/index.md": api_index,
}


#: A Sphinx cross-reference role as the docstrings write it, after mkdocstrings rendered it
#: (``:class:`~privaudit.records.AuditResult``` -> ``:class:<code>~privaudit...</code>``).
_ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc|obj):<code>(~?)([^<]+)</code>")


def _strip_role(m: re.Match[str]) -> str:
    target = m.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if m.group(1) else target}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs: show a docstring's Sphinx role (``:func:`x```) as the code it names."""
    return _ROLE.sub(_strip_role, html)


def on_files(files: Any, config: Any) -> Any:
    """mkdocs: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files

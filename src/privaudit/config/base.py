"""What every configuration schema of privaudit shares: the error type, the strict model
base, the ``n_jobs`` type, validation into a schema with every problem named by its dotted
path (:func:`validate_mapping`) and YAML reading that rejects a repeated key
(:func:`read_yaml`). The schemas: :mod:`privaudit.membership.config` (``audit.yaml``),
:mod:`privaudit.llm.config`, :mod:`privaudit.record_risk.config`,
:mod:`privaudit.panoramia.config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from privaudit.errors import InvalidInputError

__all__ = [
    "ConfigError",
    "NJobs",
    "StrictModel",
    "format_errors",
    "read_yaml",
    "validate_mapping",
]

M = TypeVar("M", bound=BaseModel)


def _check_n_jobs(v: int) -> int:
    if v == 0 or v < -1:
        raise ValueError(f"expected a positive number of processes or -1 (all cores), found {v}")
    return v


#: ``n_jobs`` of a command's config: worker processes, a positive number or -1 (all cores).
NJobs = Annotated[int, AfterValidator(_check_n_jobs)]


class ConfigError(InvalidInputError):
    """An audit configuration is invalid; the message names every bad field."""


class StrictModel(BaseModel):
    """A schema that rejects unknown fields and is immutable once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.startswith(("function-", "literal[", "constrained-")) or p in {"int", "float"}:
            continue  # pydantic's union branch tags, not a field name
        else:
            out += ("." if out else "") + p
    return out


def format_errors(
    exc: ValidationError, source: str, prefix: tuple[str, ...] = (), what: str = "audit config"
) -> ConfigError:
    lines = []
    for err in exc.errors(include_url=False):
        where = _loc((*prefix, *tuple(err["loc"])))
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not part of the audit config)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        found = err.get("input")
        quiet = err["type"] in ("missing", "extra_forbidden") or "found" in msg
        suffix = "" if quiet or isinstance(found, dict | list) else f" (found {found!r})"
        # a model-level check names its field at the start of its message
        lines.append(f"{where}: {msg}{suffix}" if where else f"{msg}{suffix}")
    head = f"{source}: invalid {what}" + (f" ({len(lines)} problems)" if len(lines) > 1 else "")
    return ConfigError(head + "\n  " + "\n  ".join(lines))


def validate_mapping(
    schema: type[M],
    data: Any,
    *,
    source: str,
    what: str = "audit config",
    context: dict[str, Any] | None = None,
) -> M:
    """Validate a mapping (as read from YAML) into ``schema`` (a pydantic model).

    ``context`` is pydantic's validation context (read by the schema's validators).

    Raises
    ------
    ConfigError
        Naming every bad field by its dotted path (a non-mapping: what was found).
    """
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping of fields at the top level, found {type(data).__name__}"
        )
    try:
        return schema.model_validate(data, context=context)
    except ValidationError as exc:
        raise format_errors(exc, source, what=what) from None


class _DuplicateKeyError(Exception):
    pass


def _unique_key_loader() -> Any:
    """``yaml.SafeLoader`` that rejects a key given twice in one mapping.

    Plain YAML keeps the last value of a repeated key silently; in an audit config that
    hides a mistake (two ``alpha:`` lines, say), so it is an error naming the key and
    both lines.
    """
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key; SafeLoader reports it
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _DuplicateKeyError(
                        f"expected each key once in a mapping, found {key!r} twice "
                        f"(lines {first} and {line})"
                    )
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def read_yaml(p: Path) -> Any:
    """The YAML document in ``p`` (UTF-8, each mapping key once), or ConfigError."""
    import yaml

    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config: expected an existing YAML file, found no file at {p}") from None
    except IsADirectoryError:
        raise ConfigError(f"config: expected a YAML file, found a directory {p}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config: expected UTF-8 text, found bytes that are not UTF-8 at position "
            f"{exc.start} of {p} ({exc.object[exc.start : exc.start + 4]!r}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config: expected a readable YAML file, found {p} ({exc})") from None
    try:
        return yaml.load(text, Loader=_unique_key_loader())
    except _DuplicateKeyError as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: expected valid YAML, found a syntax error: {exc}") from None

"""A PEFT / LoRA adapter as the audited language model, with its base model as the
natural reference of the signals against the base.

A PEFT adapter directory holds ``adapter_config.json`` and the adapter weights, not a full
model (no ``config.json``); ``adapter_config.json``'s ``base_model_name_or_path`` names the
model it adapts. privaudit audits such a target as the base with the adapter merged into
its weights (``PeftModel.from_pretrained(base).merge_and_unload()``: the same function of
the input as the unmerged adapter, up to float rounding), and, unless the config names
another ``base``, takes the adapter's base as the reference of ``ez-mia``, ``wbc`` and
``informia-token`` (EZ-MIA's "base" reference variant: the model before fine-tuning).

Loading needs the ``peft`` package; without it an adapter target is refused with a
message that says so (``pip install peft``). Nothing is downloaded: the base must be a
local directory (``base.path`` in the config, or ``base_model_name_or_path`` when that is
a local directory, absolute or relative to the adapter's folder). Adapter code never
runs (``trust_remote_code`` is never set).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from privaudit.config.base import ConfigError

__all__ = ["adapter_base_dir", "is_adapter_dir", "load_adapter_target", "peft_available"]

_ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_dir(path: Path) -> bool:
    """Whether ``path`` is a PEFT adapter directory (``adapter_config.json``, no
    ``config.json``)."""
    return (path / _ADAPTER_CONFIG).is_file() and not (path / "config.json").is_file()


def peft_available() -> bool:
    """Whether the ``peft`` package can be imported."""
    return importlib.util.find_spec("peft") is not None


def _adapter_config(path: Path, field: str) -> dict[str, Any]:
    try:
        data = json.loads((path / _ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{field}.path: expected a readable {_ADAPTER_CONFIG} in {path}, found {exc}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{field}.path: expected a JSON object in {path / _ADAPTER_CONFIG}")
    return data


def adapter_base_dir(path: Path, *, field: str = "target") -> Path | None:
    """The adapter's base model as a local directory (``base_model_name_or_path``, absolute
    or relative to the adapter's folder), or None when it names no local directory (a hub
    id: privaudit never downloads)."""
    name = _adapter_config(path, field).get("base_model_name_or_path")
    if not isinstance(name, str) or not name:
        return None
    for cand in (Path(name).expanduser(), path / name):
        if cand.is_dir():
            return cand.resolve()
    return None


def load_adapter_target(
    adapter: Path,
    base: Path,
    *,
    gguf_file: str | None = None,
    device: str,
    max_length: int | None,
    field: str = "target",
) -> Any:
    """The base model at ``base`` with the PEFT adapter at ``adapter`` merged in, as a
    :class:`~privaudit.models.causal_lm.CausalLM` named after the adapter's folder.

    Raises
    ------
    ConfigError
        ``peft`` is not installed (the message says to install it), or the adapter does not
        load on this base.
    """
    if not peft_available():
        raise ConfigError(
            f"{field}.path: {adapter} is a PEFT/LoRA adapter ({_ADAPTER_CONFIG}); loading "
            "it needs the peft package, found none installed (pip install peft), or give "
            "a merged model directory"
        )
    import peft

    from privaudit.models.causal_lm import CausalLM

    kw: dict[str, Any] = {} if max_length is None else {"max_length": max_length}
    lm = CausalLM.from_directory(base, gguf_file=gguf_file, device=device, **kw)
    try:
        wrapped = peft.PeftModel.from_pretrained(lm.model, str(adapter), is_trainable=False)
        merged = wrapped.merge_and_unload()
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ConfigError(
            f"{field}.path: expected a PEFT adapter of the base model {base}, found one that "
            f"does not load on it ({exc})"
        ) from None
    return CausalLM.from_pretrained_objects(
        merged, lm.tokenizer, name=adapter.name, requested_device=lm.requested_device, **kw
    )

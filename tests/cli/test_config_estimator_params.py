"""``model.params`` is checked against each scikit-learn kind's parameters read from source
(``config/_estimator_params.py``), without importing scikit-learn; the names must be exactly
what the imported class's ``get_params(deep=False)`` gives, or the check would drift."""

from __future__ import annotations

import subprocess
import sys

import pytest

from privaudit.config._estimator_params import estimator_param_names
from privaudit.config.sections import MODEL_KINDS, _estimator_class


@pytest.mark.parametrize("kind", [k for k in MODEL_KINDS if k != "torch"])
def test_source_names_equal_get_params(kind: str) -> None:
    read = estimator_param_names(kind)
    assert read is not None, f"{kind}: the source of scikit-learn's class was not found"
    cls = _estimator_class(kind)
    assert read[0] == cls.__name__
    assert read[1] == frozenset(cls().get_params(deep=False))


def test_unknown_kind_reads_nothing() -> None:
    assert estimator_param_names("torch") is None


def test_reading_a_config_does_not_import_sklearn() -> None:
    code = (
        "import sys\n"
        "from privaudit.membership.config import config_from_dict\n"
        "cfg = config_from_dict({'dataset': {'name': 'adult'}, "
        "'model': {'kind': 'mlp', 'params': {'hidden_layer_sizes': [8], 'max_iter': 5}}})\n"
        "assert 'sklearn' not in sys.modules, 'sklearn imported'\n"
        "try:\n"
        "    config_from_dict({'dataset': {'name': 'adult'}, "
        "'model': {'kind': 'logistic', 'params': {'Cc': 1.0}}})\n"
        "except Exception as exc:\n"
        "    assert 'LogisticRegression' in str(exc) and \"'Cc'\" in str(exc), str(exc)\n"
        "else:\n"
        "    raise AssertionError('no error for an unknown parameter')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

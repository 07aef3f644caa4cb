"""Datasets with stable record ids, and membership sampling.

Public API (docs/architecture.md, "Module contracts"):

* :class:`Dataset` (frozen): ``name``, ``record_ids``, ``X`` float64 (n, d), ``y`` int64,
  ``feature_names``, ``class_names``, ``info``; ``n_classes``, ``subset``, ``fingerprint``.
* :func:`load_adult` (UCI Adult, bundled, checksum-verified), :func:`load_digits`,
  :func:`load_mnist`, :func:`load_cifar10` (bundled image subsets),
  :func:`load_table` (CSV / Parquet / ``.npz``).
* :mod:`privaudit.data.sampling`: :func:`split_target_population`,
  :func:`balanced_keep_matrix`, :func:`sample_membership`, :func:`leave_one_out_sets`.
"""

from privaudit.data import sampling
from privaudit.data.adult import ADULT_SHA256, AdultDataError, load_adult
from privaudit.data.cifar10 import CIFAR10_CLASSES, CIFAR10_SHAPE, load_cifar10
from privaudit.data.dataset import Dataset
from privaudit.data.mnist import MNIST_SHAPE, load_mnist
from privaudit.data.sampling import (
    LeaveOneOutDesign,
    balanced_keep_matrix,
    leave_one_out_sets,
    sample_membership,
    split_target_population,
)
from privaudit.data.tables import (
    append_records,
    encode_like,
    load_digits,
    load_table,
    table_from_frame,
)

__all__ = [
    "ADULT_SHA256",
    "CIFAR10_CLASSES",
    "CIFAR10_SHAPE",
    "MNIST_SHAPE",
    "AdultDataError",
    "Dataset",
    "LeaveOneOutDesign",
    "append_records",
    "balanced_keep_matrix",
    "encode_like",
    "leave_one_out_sets",
    "load_adult",
    "load_cifar10",
    "load_digits",
    "load_mnist",
    "load_table",
    "sample_membership",
    "sampling",
    "split_target_population",
    "table_from_frame",
]

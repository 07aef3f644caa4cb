"""CIFAR-10 (a bundled 6,102-image subset of original pixels) for image-model audits.

Krizhevsky (2009), "Learning Multiple Layers of Features from Tiny Images", University of
Toronto technical report; distributed by its authors for research use. CIFAR-10 is the
image benchmark of the source papers (Ye et al. 2022, Sec. 5; Carlini et al. 2022,
Sec. VI; Zarifzadeh et al. 2024, Sec. 5; Kazmi et al. 2024, Sec. 5).

``_bundled/cifar10/cifar10_6102.npz`` holds the first 1,017 images of each of the six
official python batches (``data_batch_1`` .. ``data_batch_5``, ``test_batch``): 5,085
training-batch and 1,017 test-batch images with their labels, the original uint8 pixels
(provenance and checks in the project's ``shared/data/README.md``; that file's SHA-256 is
``c57f2158930f1a224f91739c7b02bec9663e0429253c0c7e9d750641e749ccdf``). To keep the package
small the images are stored losslessly with a horizontal delta filter (each pixel minus
its left neighbour, modulo 256, as PNG's "Sub" filter) before ``np.savez_compressed``:
14.3 MB instead of 17.3 MB; the loader undoes it exactly (a cumulative sum modulo 256)
and checks the SHA-256 of the restored pixel array as well as the file's.

A record's id says where it sits in the official release: ``cifar10-<batch>-<index>``,
e.g. ``cifar10-data_batch_1-0000`` or ``cifar10-test_batch-1016`` (``index``: 0-based
position in its batch). The pixels are turned into float features as a torch CNN reads
them: HWC uint8 -> CHW, divided by 255, then standardised per channel,
``(x_c - mean_c) / std_c``, with the mean and standard deviation of each colour channel
over the records the auditor may see (:func:`load_cifar10`'s ``standardize_on``).
"""

from __future__ import annotations

import hashlib
import io
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import fail
from privaudit.data._bundle import read_bundled
from privaudit.data.dataset import Dataset

__all__ = [
    "CIFAR10_BATCHES",
    "CIFAR10_CLASSES",
    "CIFAR10_SHA256",
    "CIFAR10_SHAPE",
    "cifar10_record_id",
    "load_cifar10",
]

CIFAR10_SHA256 = "e6a457c810ce60bb60ce52f5c639c1c8644f626ac2eb0e436898ad16e82e6035"
#: SHA-256 of the restored ``(6102, 32, 32, 3)`` uint8 pixel array (C order).
_PIXELS_SHA256 = "21228c181b43006f7a563004961373b5adae406f2914278e85afadc4fa378883"
#: (channels, height, width) of one record; ``Dataset.X`` holds them flattened (C, H, W order).
CIFAR10_SHAPE = (3, 32, 32)
#: Label ``k`` is ``CIFAR10_CLASSES[k]`` (the official ``batches.meta`` order).
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
#: The official batches, indexed by the file's ``source_batch`` code.
CIFAR10_BATCHES = (
    "data_batch_1",
    "data_batch_2",
    "data_batch_3",
    "data_batch_4",
    "data_batch_5",
    "test_batch",
)
_FILE = "cifar10_6102.npz"


def cifar10_record_id(batch: str, index: int) -> str:
    """The record id of image ``index`` (0-based) of the official batch ``batch``.

    >>> cifar10_record_id("test_batch", 7)
    'cifar10-test_batch-0007'
    """
    if batch not in CIFAR10_BATCHES:
        raise fail("batch", "one of " + ", ".join(CIFAR10_BATCHES), repr(batch))
    if (
        isinstance(index, bool)
        or not isinstance(index, int | np.integer)
        or not 0 <= index < 10_000
    ):
        raise fail("index", "an integer position in a batch (0 .. 9999)", repr(index))
    return f"cifar10-{batch}-{int(index):04d}"


def _read_pixels() -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[Any]]:
    raw = read_bundled("cifar10", _FILE, CIFAR10_SHA256, what=f"bundled CIFAR-10 file {_FILE}")
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        delta = np.asarray(z["images_row_delta"], dtype=np.uint8)
        y = np.asarray(z["labels"], dtype=np.int64)
        batch = np.asarray(z["source_batch"], dtype=np.int64)
        index = np.asarray(z["index_in_batch"], dtype=np.int64)
    pixels = np.cumsum(delta, axis=2, dtype=np.uint8)  # undo the Sub filter, modulo 256
    digest = hashlib.sha256(np.ascontiguousarray(pixels).tobytes()).hexdigest()
    if digest != _PIXELS_SHA256:  # pragma: no cover - only with a corrupted numpy
        raise fail("bundled CIFAR-10 pixels", f"sha256 {_PIXELS_SHA256}", digest)
    ids = np.array(
        [f"cifar10-{CIFAR10_BATCHES[b]}-{i:04d}" for b, i in zip(batch, index, strict=True)]
    )
    return pixels, y, ids


def load_cifar10(*, standardize_on: ArrayLike | None = None) -> Dataset:
    """The bundled CIFAR-10 subset as a :class:`Dataset` of standardised NCHW images.

    Parameters
    ----------
    standardize_on : array of record ids, optional
        The records whose pixels fit the per-channel mean and standard deviation: those
        the auditor may see. Default: all 6,102 bundled records, which is what the
        auditor of ``privaudit run`` holds (it draws the target's training set, the
        audited pool and the population from them, and trains every model itself). To
        audit a model trained elsewhere on some of these images, pass the ids of the
        records the auditor was given.

    Returns
    -------
    Dataset
        6,102 records; 3,072 features ``pixel_<channel>_<row>_<col>`` (the CHW image
        flattened row-major, as ``torch`` reads ``(n, 3, 32, 32)``): ``x / 255`` in each
        colour channel ``c`` standardised as ``(x - mean_c) / std_c``; 10 classes
        (:data:`CIFAR10_CLASSES`); ids ``cifar10-<batch>-<index>``. ``info`` records the
        fitted ``channel_mean`` and ``channel_std`` (on the ``x / 255`` scale), the
        number of records they were fitted on, and the ids' scheme.

    Raises
    ------
    PrivauditError
        If the bundled file is missing or its SHA-256 does not match.
    InvalidInputError
        If ``standardize_on`` is empty, has duplicates or names unknown records.

    Examples
    --------
    >>> ds = load_cifar10()  # doctest: +SKIP
    >>> ds.X.shape, ds.record_ids[0]  # doctest: +SKIP
    ((6102, 3072), 'cifar10-data_batch_1-0000')
    """
    pixels, y, ids = _read_pixels()
    n = y.size
    chw = pixels.transpose(0, 3, 1, 2).astype(np.float64) / 255.0  # (n, 3, 32, 32)
    if standardize_on is None:
        fit = np.arange(n)
        fitted_on = f"all {n} bundled records"
    else:
        want = np.asarray(standardize_on)
        if want.ndim != 1 or want.size == 0:
            raise fail(
                "standardize_on", "a non-empty 1-dimensional array of record ids", want.shape
            )
        if want.dtype.kind not in "UO":
            raise fail("standardize_on", "CIFAR-10 record ids (strings)", f"dtype {want.dtype}")
        want = want.astype(str)
        if np.unique(want).size != want.size:
            raise fail("standardize_on", "distinct record ids", "duplicates")
        pos = {rid: k for k, rid in enumerate(ids.tolist())}
        unknown = [rid for rid in want.tolist() if rid not in pos]
        if unknown:
            raise fail("standardize_on", "ids of bundled CIFAR-10 records", unknown[:3])
        fit = np.array([pos[rid] for rid in want.tolist()], dtype=np.int64)
        fitted_on = f"{fit.size} records given by the auditor"
    mean = chw[fit].mean(axis=(0, 2, 3))
    std = chw[fit].std(axis=(0, 2, 3))
    if not (std > 0).all():
        raise fail("standardize_on", "records whose pixels vary in every channel", std.tolist())
    X = ((chw - mean[None, :, None, None]) / std[None, :, None, None]).reshape(n, -1)
    c, h, w = CIFAR10_SHAPE
    feats = tuple(f"pixel_{k}_{r}_{s}" for k in range(c) for r in range(h) for s in range(w))
    info = {
        "source": (
            "CIFAR-10 (Krizhevsky 2009), first 1,017 images of each of the six official "
            "batches, original pixels, bundled"
        ),
        "preprocessing": [
            "HWC uint8 -> CHW, divided by 255",
            f"per-channel standardisation fitted on {fitted_on}",
            "flattened row-major (channel, row, column)",
        ],
        "image_shape": list(CIFAR10_SHAPE),
        "channel_mean": [float(v) for v in mean],
        "channel_std": [float(v) for v in std],
        "n_standardization_records": int(fit.size),
        "id_scheme": "cifar10-<batch>-<index:04d>, index = 0-based position in the official batch",
        "sha256": CIFAR10_SHA256,
    }
    return Dataset("cifar10", ids, X, y, feats, CIFAR10_CLASSES, info)

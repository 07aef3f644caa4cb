"""MNIST (a bundled 6,000-image subset) for image-model audits.

LeCun, Bottou, Bengio & Haffner (1998), "Gradient-based learning applied to document
recognition", Proc. IEEE 86(11); CC BY-SA 3.0. ``_bundled/mnist/mnist_6000.npz`` holds
the first 6,000 images of the original 60,000-image training set (uint8, 28 x 28, in
the original order; arrays ``x`` and ``y``), compressed to about 1 MB so that the package
stays small; it is cut from the full set described in the project's
``shared/data/README.md`` (sha256 of the full ``mnist.npz``
``06af5dfe73b70e3bc1c36439982b18a8d76803db9b544f6fdf838a37fbb01b64``). Class counts of the
subset: 592, 671, 581, 608, 623, 514, 608, 651, 551, 601. The file's SHA-256 is checked
on every load.
"""

from __future__ import annotations

import io

import numpy as np

from privaudit.data._bundle import read_bundled
from privaudit.data.dataset import Dataset

__all__ = ["MNIST_SHA256", "MNIST_SHAPE", "load_mnist"]

MNIST_SHA256 = "77889b9b86aef3ed3a32c4ec0e72c46590fbf3cd936c68be9044c401637864c7"
#: (channels, height, width) of one record; ``Dataset.X`` holds them flattened.
MNIST_SHAPE = (1, 28, 28)
_FILE = "mnist_6000.npz"


def load_mnist() -> Dataset:
    """The bundled MNIST subset as a :class:`Dataset`.

    Returns
    -------
    Dataset
        6,000 records, 784 features (pixel values divided by 255, row-major 28 x 28,
        one channel), 10 classes ``"0" .. "9"``, ids ``"mnist-XXXXX"`` (0-based index in
        the original 60,000-image training set).

    Raises
    ------
    PrivauditError
        If the bundled file is missing or its SHA-256 does not match.
    """
    raw = read_bundled("mnist", _FILE, MNIST_SHA256, what=f"bundled MNIST file {_FILE}")
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        x = np.asarray(z["x"])
        y = np.asarray(z["y"], dtype=np.int64)
    X = x.reshape(x.shape[0], -1).astype(np.float64) / 255.0
    ids = np.array([f"mnist-{k:05d}" for k in range(X.shape[0])])
    feats = tuple(f"pixel_{r}_{c}" for r in range(28) for c in range(28))
    info = {
        "source": "MNIST (LeCun et al. 1998), first 6,000 images of the training set, bundled",
        "preprocessing": ["uint8 pixels divided by 255", "28 x 28 images flattened row-major"],
        "image_shape": list(MNIST_SHAPE),
        "id_scheme": "mnist-{k:05d}, k = 0-based index in the 60,000-image training set",
    }
    return Dataset("mnist", ids, X, y, feats, tuple(str(k) for k in range(10)), info)

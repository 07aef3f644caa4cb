"""Reading a file bundled with the package, its SHA-256 checked on every read.

The bundled datasets (UCI Adult, the MNIST subset, Tiny Shakespeare) ship inside
``privaudit/data/_bundled/<folder>/``; a file that is missing or whose checksum differs
from the one recorded in its loader is an error that names the file and says to
reinstall, never a silent fallback.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from privaudit.errors import PrivauditError

__all__ = ["read_bundled"]


def read_bundled(
    folder: str,
    filename: str,
    sha256: str,
    *,
    what: str,
    error: type[PrivauditError] = PrivauditError,
) -> bytes:
    """The bytes of ``_bundled/<folder>/<filename>``, checked against ``sha256``.

    ``what`` names the file in messages (e.g. ``"bundled Adult file 'adult.data.gz'"``);
    ``error`` is the exception class raised when the file is missing or corrupted.
    """
    ref = resources.files("privaudit.data").joinpath("_bundled", folder, filename)
    try:
        raw = ref.read_bytes()
    except (FileNotFoundError, OSError) as exc:
        raise error(f"{what} is missing ({exc}); reinstall privaudit") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise error(
            f"{what} is corrupted: expected sha256 {sha256}, found {digest}; reinstall privaudit"
        )
    return raw

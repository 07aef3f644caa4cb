"""read_bundled: every bundled file is checksum-verified; missing or corrupted files are errors."""

from __future__ import annotations

import hashlib

import pytest

from privaudit.data._bundle import read_bundled
from privaudit.data.mnist import MNIST_SHA256
from privaudit.data.text import TINY_SHAKESPEARE_SHA256, TextCorpusError
from privaudit.errors import PrivauditError


def test_reads_and_checks() -> None:
    raw = read_bundled("mnist", "mnist_6000.npz", MNIST_SHA256, what="mnist")
    assert hashlib.sha256(raw).hexdigest() == MNIST_SHA256


def test_corrupted_and_missing_files_are_errors() -> None:
    with pytest.raises(TextCorpusError, match="corrupted: expected sha256 0000"):
        read_bundled(
            "tiny_shakespeare", "input.txt.gz", "0" * 64, what="corpus", error=TextCorpusError
        )
    with pytest.raises(PrivauditError, match=r"no-such-file\.bin is missing"):
        read_bundled("mnist", "no-such-file.bin", TINY_SHAKESPEARE_SHA256, what="no-such-file.bin")

"""The ports a :class:`~privaudit.runtime.local_cluster.LocalRayCluster` node is started on.

CI once failed to add a worker node: Ray refused ``ray start`` because the worker-port
block (36913-37112) contained the port chosen for ``--metrics-export-port`` (36945). Both
came from the kernel's ephemeral range. The block is now taken outside that range, free,
and disjoint from the other nodes' blocks; these tests need no Ray.
"""

from __future__ import annotations

import socket

import pytest

from privaudit.runtime import local_cluster
from privaudit.runtime.local_cluster import WORKER_PORTS, _ephemeral_range, _worker_port_block


def test_the_block_is_outside_the_ephemeral_range_and_free() -> None:
    lo, hi = _ephemeral_range()
    for seed in range(20):
        block = _worker_port_block([], seed=seed)
        assert len(block) == WORKER_PORTS
        assert block.stop <= lo or block.start > hi
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", block.start))  # free when chosen


def test_no_port_the_os_hands_out_falls_in_a_block() -> None:
    blocks = [_worker_port_block([], seed=s) for s in range(5)]
    for port in local_cluster._free_ports(50):  # what the nodes' other components get
        assert not any(port in b for b in blocks)


def test_blocks_of_the_nodes_are_disjoint() -> None:
    taken: list[range] = []
    for seed in range(30):
        block = _worker_port_block(taken, seed=seed)
        assert all(block.stop <= t.start or t.stop <= block.start for t in taken)
        taken.append(block)


def test_a_port_in_use_is_never_in_the_block() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        first = _worker_port_block([], seed=7)
        busy.bind(("127.0.0.1", first.start + 3))
        busy.listen()
        again = _worker_port_block([], seed=7)  # the same candidate order
        assert first.start + 3 not in again


def test_no_room_is_an_error_naming_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_cluster, "_ephemeral_range", lambda: (1024, 65535))
    with pytest.raises(local_cluster.PrivauditError, match="worker ports"):
        _worker_port_block([], seed=0)

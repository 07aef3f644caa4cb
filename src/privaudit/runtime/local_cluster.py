"""A real multi-node Ray cluster on this machine's loopback address: :class:`LocalRayCluster`.

What the cluster tests and ``benchmarks/bench_scale_out.py`` run audits on: a head node
(``ray start --head --port P --num-cpus H``) and worker nodes (``ray start --address
127.0.0.1:P --num-cpus 1``), each a separate ``ray start --block`` process with its own
temporary folder and its own ports, so that the nodes are as separate as nodes of a real
cluster (their own raylet, object store and worker processes) except for the filesystem
(which stands for the shared filesystem of a real cluster: the artifact store).

Every process the cluster starts is a descendant of its ``ray start`` processes, which this
object holds by process id: :meth:`stop` ends them (and nothing else on the machine: no
``ray stop``, which would end every Ray instance of the machine), and :meth:`kill_raylet`
kills one worker node's raylet by its process id (a lost node).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from privaudit.errors import PrivauditError

__all__ = ["LocalRayCluster"]


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(int(s.getsockname()[1]))
    finally:
        for s in socks:
            s.close()
    return ports


#: Ports per node for its worker processes (``--min-worker-port`` .. ``--max-worker-port``).
WORKER_PORTS = 200


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports chosen by the OS (``bind(0)``; Linux default
    32768-60999): every port :func:`_free_ports` returns, and every port a Ray component
    started with a 'random' port takes, lies in it."""
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[:2]
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(ports: range) -> bool:
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def _worker_port_block(taken: list[range], seed: int) -> range:
    """A block of :data:`WORKER_PORTS` free ports for one node's workers, outside the
    ephemeral range and disjoint from the blocks of the cluster's other nodes (``taken``).

    Outside the ephemeral range, because Ray refuses to start a node whose worker ports
    contain a port it was given for another component (``--metrics-export-port`` and the
    rest come from :func:`_free_ports`), and because its components started on a 'random'
    port take one the OS chooses there: a block inside that range could collide with
    either (it did, in CI: ``metrics_export`` 36945 in the block 36913-37112).
    """
    import random

    eph_lo, eph_hi = _ephemeral_range()
    starts = [
        lo
        for lo in range(10_000, 65_536 - WORKER_PORTS, WORKER_PORTS)
        if lo + WORKER_PORTS <= eph_lo or lo > eph_hi
    ]
    random.Random(seed).shuffle(starts)
    for lo in starts:
        block = range(lo, lo + WORKER_PORTS)
        if any(block.start < t.stop and t.start < block.stop for t in taken):
            continue
        if _bindable(block):
            return block
    raise PrivauditError(
        "local Ray cluster: no free block of worker ports outside the ephemeral range"
    )


class LocalRayCluster:
    """Start a Ray cluster of one head and ``n_workers`` worker nodes on ``127.0.0.1``.

    Parameters
    ----------
    n_workers : int
        Worker nodes to start (more with :meth:`add_worker`).
    head_cpus, worker_cpus : int
        CPUs each node offers to tasks (``--num-cpus``); ``head_cpus=0`` keeps tasks off
        the head (it then only runs the cluster's services).
    env : mapping, optional
        Extra environment of the nodes (and so of their workers); the current
        ``PYTHONPATH`` is passed on, so workers import the same privaudit as the driver.
    timeout : float
        Seconds to wait for a node to join.

    Examples
    --------
    >>> with LocalRayCluster(n_workers=1) as cluster:  # doctest: +SKIP
    ...     print(cluster.address)  # '127.0.0.1:PORT', for --ray or ray_address
    """

    def __init__(
        self,
        n_workers: int = 1,
        *,
        head_cpus: int = 1,
        worker_cpus: int = 1,
        env: dict[str, str] | None = None,
        timeout: float = 180.0,
    ) -> None:
        self.head_cpus = int(head_cpus)
        self.worker_cpus = int(worker_cpus)
        self.timeout = float(timeout)
        # short: a Ray node's unix sockets live in its temp dir (paths <= 107 bytes)
        self.root = Path(tempfile.mkdtemp(prefix="pa-ray-", dir="/tmp"))
        self.env = {**os.environ, **(env or {})}
        self.env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        # loopback only: no token authentication (Ray >= 2.5x turns it on when a token file
        # exists in ~/.ray, and then a node started without it cannot join); a driver must
        # run with the same setting (:attr:`driver_env`)
        self.env.update(self.driver_env)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        #: The raylet port of each node by name (``head``, ``worker0``, ...): how
        #: :meth:`alive_nodes` tells the nodes apart.
        self.node_ports: dict[str, int] = {}
        #: The worker-port block of each node (disjoint; outside the ephemeral range).
        self.worker_port_blocks: dict[str, range] = {}
        self._n_spawned_workers = 0
        self._node_names: dict[int, str] = {}  # a ray start process's node, by process id
        self.port = _free_ports(1)[0]
        self.address = f"127.0.0.1:{self.port}"
        self._start_head()
        for _ in range(n_workers):
            self.add_worker()

    #: The environment a driver of this cluster needs (set it before ``ray.init``).
    driver_env: dict[str, str] = {"RAY_AUTH_MODE": "disabled"}  # noqa: RUF012 - read only

    # --- nodes -------------------------------------------------------------------

    def _node_args(self, name: str) -> list[str]:
        agent, grpc, metrics, renv, manager = _free_ports(5)
        self.node_ports[name] = manager
        workers = _worker_port_block(
            [b for n, b in self.worker_port_blocks.items() if n != name],
            seed=os.getpid() * 1_000_003 + time.monotonic_ns(),
        )
        self.worker_port_blocks[name] = workers
        return [
            "--node-ip-address", "127.0.0.1",
            "--node-manager-port", str(manager),
            "--temp-dir", str(self.root / name),
            "--object-store-memory", str(100 * 1024 * 1024),
            "--dashboard-agent-listen-port", str(agent),
            "--dashboard-agent-grpc-port", str(grpc),
            "--metrics-export-port", str(metrics),
            "--runtime-env-agent-port", str(renv),
            "--min-worker-port", str(workers.start),
            "--max-worker-port", str(workers.stop - 1),
            "--disable-usage-stats",
            "--block",
        ]  # fmt: skip

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
        log = open(self.root / f"{name}.log", "wb")  # the process keeps its own copy
        proc = subprocess.Popen(
            [ray_bin, "start", *args, *self._node_args(name)],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends exactly it
        )
        log.close()
        self.procs.append(proc)
        self._node_names[proc.pid] = name
        return proc

    def _start_head(self) -> None:
        self._spawn(
            "head",
            [
                "--head",
                "--port", str(self.port),
                "--num-cpus", str(self.head_cpus),
                "--include-dashboard=false",
            ],
        )  # fmt: skip
        if not self._wait_for(self._answers):
            logs = self._logs()
            self.stop()
            raise PrivauditError(f"local Ray cluster: the head node did not start in time\n{logs}")

    def add_worker(self, attempts: int = 3, *, num_gpus: float = 0.0) -> subprocess.Popen[bytes]:
        """Start one more worker node and wait until it has joined.

        ``num_gpus`` > 0 declares that many GPUs on the node (``--num-gpus``): Ray schedules
        tasks that request GPUs there and gives each its ``CUDA_VISIBLE_DEVICES``, whether
        or not the machine has them (the tests' stand-in for a GPU node on a machine
        without one; a task that then initialises CUDA fails).

        A node that does not join (its ``ray start`` exits, e.g. on a port another process
        took between the choice and the start, or it is not alive in time) is ended, and a
        new one is started on new ports, up to ``attempts`` times; the head and the other
        nodes are left as they are. Raises :class:`~privaudit.errors.PrivauditError` with
        the nodes' log tails when every attempt failed.
        """
        if not self.procs or self.procs[0].poll() is not None:
            raise PrivauditError("local Ray cluster: the head node is not running")
        logs = ""
        for _ in range(max(1, attempts)):
            name = f"worker{self._n_spawned_workers}"  # a new temp dir for every attempt
            self._n_spawned_workers += 1
            args = ["--address", self.address, "--num-cpus", str(self.worker_cpus)]
            if num_gpus > 0:
                args += ["--num-gpus", f"{num_gpus:g}"]
            proc = self._spawn(name, args)
            self.workers.append(proc)
            if self._wait_for(functools.partial(self._joined, self.node_ports[name]), proc):
                return proc
            logs = self._logs()
            self._end(proc)
            self.workers.remove(proc)
            self.procs.remove(proc)
            self.worker_port_blocks.pop(name, None)
        raise PrivauditError(f"local Ray cluster: a worker node did not start in time\n{logs}")

    def _joined(self, raylet_port: int) -> bool:
        return raylet_port in self.alive_nodes()

    def _answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
            return True
        return False

    def _wait_for(self, ready: Any, proc: subprocess.Popen[bytes] | None = None) -> bool:
        """Poll ``ready()`` until it is true (True), the head or ``proc`` exits, or the
        timeout passes (False)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.procs[0].poll() is not None or (proc is not None and proc.poll() is not None):
                return False
            if ready():
                return True
            time.sleep(0.5)
        return False

    def _logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-1500:] for p in sorted(self.root.glob("*.log"))
        )

    def alive_nodes(self) -> list[int]:
        """The raylet ports of the cluster's live nodes (``ray.nodes()``), read by a
        short-lived connection (empty when it fails)."""
        code = (
            f"import json, ray; ray.init(address={self.address!r}, logging_level='ERROR', "
            "log_to_driver=False);"
            "print(json.dumps([n['NodeManagerPort'] for n in ray.nodes() if n['Alive']]))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        lines = out.stdout.strip().splitlines()
        if out.returncode != 0 or not lines:
            return []
        import json

        return [int(p) for p in json.loads(lines[-1])]

    # --- faults ------------------------------------------------------------------

    def raylet_pid(self, worker: int = 0) -> int:
        """Process id of worker node ``worker``'s raylet."""
        import psutil

        for child in psutil.Process(self.workers[worker].pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "raylet" in child.name() or any("raylet" in a for a in child.cmdline()[:1]):
                    return int(child.pid)
        raise PrivauditError(f"local Ray cluster: no raylet under worker node {worker}")

    def kill_raylet(self, worker: int = 0) -> int:
        """SIGKILL worker node ``worker``'s raylet (a lost node); return its process id."""
        pid = self.raylet_pid(worker)
        os.kill(pid, signal.SIGKILL)
        return pid

    def remove_worker(self, proc: subprocess.Popen[bytes]) -> None:
        """End the worker node ``proc`` (one :meth:`add_worker` returned) and wait until the
        cluster no longer lists it as alive; raises
        :class:`~privaudit.errors.PrivauditError` when it still does after ``timeout``
        seconds."""
        name = self._node_names.pop(proc.pid, "")
        port = self.node_ports.pop(name, None)
        self.worker_port_blocks.pop(name, None)
        self._end(proc)
        if proc in self.workers:
            self.workers.remove(proc)
        if proc in self.procs:
            self.procs.remove(proc)

        def gone() -> bool:
            nodes = self.alive_nodes()  # empty when the probe failed: not an answer
            return bool(nodes) and port not in nodes

        if port is not None and not self._wait_for(gone):
            raise PrivauditError(
                f"local Ray cluster: worker node {name} still listed as alive after "
                f"{self.timeout:g} s"
            )

    # --- teardown ----------------------------------------------------------------

    @staticmethod
    def _end(*roots: subprocess.Popen[bytes]) -> None:
        """End the ``ray start`` processes ``roots`` and every process under them (by
        process group and id): SIGTERM (``ray start --block`` then stops its node's
        processes), SIGKILL for what is left after a grace period."""
        import psutil

        procs = []
        for p in roots:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(p.pid)
                procs.extend([root, *root.children(recursive=True)])
        for p in roots:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=8)
        for q in alive:
            with contextlib.suppress(psutil.Error):
                q.kill()
        psutil.wait_procs(alive, timeout=5)
        for p in roots:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)

    def stop(self) -> None:
        """End every process of the cluster (by process group and id) and delete its files."""
        self._end(*self.procs)
        self.procs, self.workers = [], []
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

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
        self.port = _free_ports(1)[0]
        self.address = f"127.0.0.1:{self.port}"
        self._start_head()
        for _ in range(n_workers):
            self.add_worker()

    #: The environment a driver of this cluster needs (set it before ``ray.init``).
    driver_env: dict[str, str] = {"RAY_AUTH_MODE": "disabled"}  # noqa: RUF012 - read only

    # --- nodes -------------------------------------------------------------------

    def _node_args(self, name: str) -> list[str]:
        agent, grpc, metrics, renv, wlo, manager = _free_ports(6)
        self.node_ports[name] = manager
        return [
            "--node-ip-address", "127.0.0.1",
            "--node-manager-port", str(manager),
            "--temp-dir", str(self.root / name),
            "--object-store-memory", str(100 * 1024 * 1024),
            "--dashboard-agent-listen-port", str(agent),
            "--dashboard-agent-grpc-port", str(grpc),
            "--metrics-export-port", str(metrics),
            "--runtime-env-agent-port", str(renv),
            "--min-worker-port", str(20000 + (wlo % 20000)),
            "--max-worker-port", str(20000 + (wlo % 20000) + 199),
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
        self._wait_for(lambda: self._answers(), "the head node")

    def add_worker(self) -> subprocess.Popen[bytes]:
        """Start one more worker node and wait until it has joined."""
        name = f"worker{len(self.workers)}"
        proc = self._spawn(name, ["--address", self.address, "--num-cpus", str(self.worker_cpus)])
        self.workers.append(proc)
        self._wait_for(lambda: self.node_ports[name] in self.alive_nodes(), "a worker node")
        return proc

    def _answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
            return True
        return False

    def _wait_for(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None and p in self.workers[-1:]]
            if dead or self.procs[0].poll() is not None:
                break
            if ready():
                return
            time.sleep(0.5)
        logs = "\n".join(
            p.read_text(errors="replace")[-1500:] for p in sorted(self.root.glob("*.log"))
        )
        self.stop()
        raise PrivauditError(f"local Ray cluster: {what} did not start in time\n{logs}")

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

    # --- teardown ----------------------------------------------------------------

    def stop(self) -> None:
        """End every process of the cluster (by process group and id) and delete its files."""
        import psutil

        procs = []
        for p in self.procs:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(p.pid)
                procs.extend([root, *root.children(recursive=True)])
        for p in self.procs:  # `ray start --block` stops its node's processes on SIGTERM
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=8)
        for q in alive:
            with contextlib.suppress(psutil.Error):
                q.kill()
        psutil.wait_procs(alive, timeout=5)
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self.procs, self.workers = [], []
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""A real two-node Ray cluster on this machine, for the tests of one module.

Module-scoped, and the folder's tests live in one module: the cluster and the driver's
connection end before tests elsewhere call ``ray.init`` on their own (a second ``ray.init``
in one process is an error).

``ray start --head`` plus one more ``ray start --address`` node, each with its own temp dir
and a small share of the machine (2 logical CPUs each: room for veRL's reward worker beside
the scorers' actors; 80 MB object store), so the tests exercise SPREAD placement and a
node's death the way a cluster does. :meth:`LocalCluster.add_node` starts one more,
disposable node (the raylet-kill test's victim). The head's GCS checks node health every
second and declares a node dead after 6 missed checks (Ray's defaults take ~30 s; a slow,
loaded machine still answers within 6 s). Teardown ends only the processes this fixture
started (found by their temp dirs): never ``ray stop``, which would end every Ray process on
the machine, other users' included.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

RAY_CLI = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
HEALTH = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "3000",
    "RAY_health_check_failure_threshold": "6",
}
"""How fast the head's GCS declares a node with a dead raylet dead (see the docstring)."""

# The veRL batch builders shared with tests/rl_adapters.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl_adapters"))


@dataclass
class LocalCluster:
    address: str
    head_dir: Path
    node_dir: Path
    env: dict[str, str]
    extra: list[Path]

    def add_node(self, resources: str = "{}") -> Path:
        """Start one more node (1 CPU, its own temp dir); returns the temp dir."""
        node = Path(tempfile.mkdtemp(prefix="vrx", dir="/tmp"))
        self.extra.append(node)
        _start(
            [
                f"--address={self.address}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={node}",
                "--num-cpus=1",
                "--object-store-memory=80000000",
                f"--resources={resources}",
            ],
            self.env,
        )
        return node

    def raylet_pid(self, under: Path) -> int:
        """The raylet process of the node whose temp dir is ``under``."""
        for pid in self.pids(under):
            try:
                argv0 = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if argv0.endswith(b"/raylet"):
                return pid
        raise LookupError(f"no raylet under {under}")

    def pids(self, under: Path) -> list[int]:
        """Processes whose command line names ``under`` (the node's temp dir)."""
        mine = []
        needle = str(under).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle in (entry / "cmdline").read_bytes():
                    mine.append(int(entry.name))
            except OSError:
                continue
        return mine


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(
        [*RAY_CLI, "start", *args], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _kill_tree(cluster: LocalCluster) -> None:
    for under in (*cluster.extra, cluster.node_dir, cluster.head_dir):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = cluster.pids(under)
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if not pids:
                break
            time.sleep(1.0)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalCluster]:
    import ray

    from verifiers.ray import wait_for_nodes

    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    env.update(HEALTH)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # Short paths: Ray's unix socket paths must stay under 107 bytes.
    head_dir = Path(tempfile.mkdtemp(prefix="vrh", dir="/tmp"))
    node_dir = Path(tempfile.mkdtemp(prefix="vrn", dir="/tmp"))
    port = _free_port()
    cluster = LocalCluster(f"127.0.0.1:{port}", head_dir, node_dir, env, [])
    common = ["--num-cpus=2", "--object-store-memory=80000000", "--disable-usage-stats"]
    try:
        _start(
            [
                "--head",
                f"--port={port}",
                "--node-ip-address=127.0.0.1",
                "--include-dashboard=false",
                f"--temp-dir={head_dir}",
                *common,
            ],
            env,
        )
        _start(
            [
                f"--address={cluster.address}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={node_dir}",
                *common,
            ],
            env,
        )
        ray.init(address=cluster.address, log_to_driver=False)
        wait_for_nodes(2, timeout_s=120)
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _kill_tree(cluster)
        for path in (head_dir, node_dir, *cluster.extra):
            shutil.rmtree(path, ignore_errors=True)

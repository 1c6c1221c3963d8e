"""Leaks, recycling, host-side timeouts and reaping after ``kill -9`` on the real backends."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest


def _my_children() -> int:
    me = str(os.getpid())
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[1] == me:
                        count += 1
            except (OSError, IndexError):
                pass
    return count


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found = [root]
    for pid in found:
        found.extend(child for child, parent in parents.items() if parent == pid)
    return found


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _drop_sdk_connections(provider: Any) -> None:
    """Empty the docker SDK's own connection cache (one pool per container URL, up to 25),
    so that a host fd count shows our leaks only, without first saturating that cache."""
    client = getattr(provider, "_client", None)
    if client is not None:
        for adapter in client.api.adapters.values():
            adapter.close()


def test_sequential_jobs_and_recycles_leak_nothing(backend: str, new_provider: Any) -> None:
    """240 sessions over 10 runners (9 recycles, 5 after the midpoint: one fd leaked per
    recycle or per 50 jobs shows). The SDK's connection cache is emptied before each count, so
    this proves what 1,000 sessions and 50 recycles were needed for before (the cache had to
    fill first)."""
    jobs = 240
    per_worker = 24

    async def main() -> None:
        provider = new_provider(pool_size=1, jobs_per_worker=per_worker)
        try:
            await provider.warm("python", 1)
            async with provider.session("python") as sb:
                assert (await sb.exec(["/bin/true"])).ok
            children_before = _my_children()
            fds_half = 0
            runner_fds: dict[Any, list[int]] = {}  # by worker object (an id() can be reused)
            for i in range(jobs):
                async with provider.session("python") as sb:
                    # alternate the exec path and the python fast path
                    argv = ["/bin/sh", "-c", f"echo {i}"]
                    if i % 2:
                        argv = ["/usr/bin/python3", "-c", f"print({i})"]
                    result = await sb.exec(argv)
                    assert result.stdout == f"{i}\n".encode(), result
                    assert result.returncode == 0 and not result.timed_out, result
                    worker = sb._worker
                    if worker.sessions in (1, per_worker - 2):  # the runner's fds, early, late
                        stats = await worker.call({"op": "ping"}, 10)
                        assert stats["jobs"] == 0, stats
                        runner_fds.setdefault(worker, []).append(stats["fds"])
                if i == jobs // 2:
                    await asyncio.sleep(0.5)
                    _drop_sdk_connections(provider)
                    fds_half = _fds()
            await asyncio.sleep(0.5)  # let background recycling finish
            complete = [pair for pair in runner_fds.values() if len(pair) == 2]
            assert len(complete) >= 9, runner_fds.values()
            assert all(early == late for early, late in complete), runner_fds.values()
            assert provider.counts() == {"idle": 1, "busy": 0}
            # 5 recycles since the midpoint; their channels and processes are gone
            runner_fds.clear()
            _drop_sdk_connections(provider)
            assert _fds() - fds_half <= 2, (fds_half, _fds())
            assert _my_children() <= children_before, (children_before, _my_children())
            if backend == "docker":
                assert len(provider.container_ids()) == 1
                owned = provider._client.api.containers(
                    all=True, filters={"label": f"verifiers.sandbox.owner={provider.owner}"}
                )
                assert len(owned) == 1, owned
        finally:
            await provider.close()
        if backend == "docker":
            import docker

            client = docker.from_env()
            owned = client.api.containers(
                all=True, filters={"label": f"verifiers.sandbox.owner={provider.owner}"}
            )
            client.close()
            assert owned == [], "close() left containers behind"

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 120


def test_workers_are_recycled_after_n_sessions(new_provider: Any) -> None:
    async def main() -> None:
        provider = new_provider(pool_size=1, jobs_per_worker=3)
        try:
            seen = []
            for _ in range(7):
                async with provider.session("python") as sb:
                    seen.append(id(sb._worker))
                    assert (await sb.exec(["/bin/true"])).ok
            assert len(set(seen)) == 3  # sessions 1-3, 4-6, 7
        finally:
            await provider.close()

    asyncio.run(main())


def test_host_timeout_kills_a_wedged_runner(backend: str, new_provider: Any) -> None:
    async def main() -> None:
        provider = new_provider(pool_size=1, host_grace_s=1.0)
        try:
            async with provider.session("python", timeout_s=1) as sb:
                worker = sb._worker
                if backend == "docker":
                    provider._client.api.pause(worker.cid)
                else:
                    for pid in _descendants(worker.process.pid):  # bwrap, its init, the runner
                        os.kill(pid, signal.SIGSTOP)
                started = time.monotonic()
                result = await sb.exec(["/bin/true"])
                assert result.timed_out and result.returncode == -9, result
                assert time.monotonic() - started < 6
            if backend == "docker":
                import docker

                with pytest.raises(docker.errors.NotFound):
                    for _ in range(50):
                        provider._client.api.inspect_container(worker.cid)
                        await asyncio.sleep(0.1)
            else:
                assert worker.process.returncode is not None
            async with provider.session("python") as sb:
                assert (await sb.exec(["/bin/true"])).ok
        finally:
            await provider.close()

    asyncio.run(main())


OWNER_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from verifiers.sandbox import SandboxSettings
    from verifiers.sandbox._docker import DockerProvider

    async def main():
        provider = DockerProvider(SandboxSettings(docker_channel=sys.argv[1]))
        await provider.warm("python", 2)
        async with provider.session("python") as sb:
            await sb.exec(["/bin/true"])
        print(json.dumps({"owner": provider.owner, "ids": sorted(provider.container_ids())}),
              flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


@pytest.mark.docker
@pytest.mark.parametrize("channel", ["socket", "attach"])
def test_kill_9_of_the_owner_leaves_no_container(channel: str) -> None:
    import docker
    from verifiers.sandbox._docker import DockerProvider

    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, channel], stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    info = json.loads(line)
    assert len(info["ids"]) == 2
    client = docker.from_env()
    for cid in info["ids"]:
        assert client.api.inspect_container(cid)["State"]["Running"]
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait(10)
    owner.stdout.close()

    # The attach socket closes with the process: the runners see EOF and the containers go.
    deadline = time.monotonic() + 15
    remaining = list(info["ids"])
    while remaining and time.monotonic() < deadline:
        remaining = [c for c in remaining if _exists(client, c)]
        time.sleep(0.2)
    assert remaining == [], "containers outlived their owner's kill -9"

    # And starting again reaps anything labelled with a dead owner.
    async def restart() -> None:
        provider = DockerProvider()
        await provider.close()

    asyncio.run(restart())
    left = client.api.containers(
        all=True, filters={"label": f"verifiers.sandbox.owner={info['owner']}"}
    )
    assert left == []
    client.close()


def _exists(client: Any, cid: str) -> bool:
    import docker

    try:
        client.api.inspect_container(cid)
        return True
    except docker.errors.NotFound:
        return False


@pytest.mark.docker
def test_prune_removes_dead_owners_only() -> None:
    import docker
    from verifiers.sandbox._docker import (
        JOB_UID,
        NAMESPACE_LABEL,
        owner_label,
        owner_namespace,
        prune_containers,
    )

    client = docker.from_env()
    image = client.images.get("verifiers-sandbox/python:latest").id
    here = owner_namespace()
    dead_owner = f"{os.uname().nodename}:999999:1"

    def runner_container(owner: str, namespace: str) -> Any:
        labels = {"verifiers.sandbox": "runner", "verifiers.sandbox.owner": owner}
        if namespace:
            labels[NAMESPACE_LABEL] = namespace
        return client.api.create_container(image, ["sleep", "60"], labels=labels, user=str(JOB_UID))

    dead = runner_container(dead_owner, here)
    # The same dead PID, but in another PID namespace (or of an older version without the
    # namespace label): not ours to judge.
    elsewhere = [
        runner_container(dead_owner, ns) for ns in (here.split(":")[0] + ":4026531999", "")
    ]
    alive_owner = owner_label()
    alive = runner_container(alive_owner, here)
    try:
        assert prune_containers(client) >= 1
        assert not _exists(client, dead["Id"])
        assert _exists(client, alive["Id"])
        assert all(_exists(client, c["Id"]) for c in elsewhere)
    finally:
        for other in elsewhere:
            client.api.remove_container(other["Id"], force=True)
        client.api.remove_container(alive["Id"], force=True)
        if _exists(client, dead["Id"]):
            client.api.remove_container(dead["Id"], force=True)
        client.close()


@pytest.mark.docker
def test_attach_channel_works_like_the_socket_channel() -> None:
    """The engine-attach channel (for remote engines) runs the same protocol."""
    from verifiers.sandbox import SandboxSettings
    from verifiers.sandbox._docker import DockerProvider

    async def main() -> None:
        provider = DockerProvider(SandboxSettings(docker_channel="attach", pool_size=1))
        try:
            for i in range(3):
                async with provider.session("python", timeout_s=2) as sb:
                    await sb.write_files({"in.txt": f"{i}"})
                    result = await sb.exec(
                        ["/usr/bin/python3", "-c", "print(open('in.txt').read())"]
                    )
                    assert result.stdout == f"{i}\n".encode(), result
                    slow = await sb.exec(["sleep", "10"])
                    assert slow.timed_out
            inspect = provider._client.api.inspect_container
            (cid,) = provider.container_ids()
            assert inspect(cid)["HostConfig"]["Binds"] in (None, [])
        finally:
            await provider.close()

    asyncio.run(main())


@pytest.mark.docker
def test_a_scorer_in_another_pid_namespace_never_reaps_live_containers() -> None:
    """A scorer in its own PID namespace (a container, a pod, ``unshare --pid``) sharing the
    engine must not judge our live containers dead: it cannot see our PIDs."""
    import asyncio
    import subprocess
    import sys

    import docker
    from verifiers.sandbox._docker import DockerProvider

    prune = (
        "from verifiers.sandbox._docker import connect, prune_containers\n"
        "from verifiers.sandbox import SandboxSettings\n"
        "client = connect(SandboxSettings())\n"
        "print(prune_containers(client))\n"
    )

    async def body() -> tuple[str, int, bytes]:
        provider = DockerProvider()
        try:
            await provider.warm("python", 1)
            (cid,) = provider.container_ids()
            done = await asyncio.to_thread(
                subprocess.run,
                ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", prune],
                capture_output=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-500:]
            client = docker.from_env()
            try:
                assert _exists(client, cid), "a scorer in another PID namespace reaped it"
            finally:
                client.close()
            async with provider.session("python") as sandbox:
                result = await sandbox.exec(["python3", "-c", "print('still here')"])
            return cid, result.returncode, result.stdout
        finally:
            await provider.close()

    cid, code, out = asyncio.run(body())
    assert (code, out) == (0, b"still here\n")
    client = docker.from_env()
    try:
        # Closed by its provider now; it was alive (and served the session) until then.
        assert not _exists(client, cid)
    finally:
        client.close()

"""The issue's "tests on the real engine": each escape attempt must fail or be contained.

Every test runs twice: on the Docker warm pool (marker ``docker``) and on the local backend
under real bubblewrap (marker ``bwrap``).
"""

from __future__ import annotations

import asyncio
import resource
import socket
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from verifiers.sandbox import ExecResult, Limits

from verifiers.errors import InfraError

PY = "python3"

# Lists the live processes of the job's uid (other than itself) from inside the sandbox, by
# real uid (``/proc/<pid>`` shows root as the owner of non-dumpable processes).
LIST_JOB_PROCS = textwrap.dedent(
    """
    import os
    me, mine = os.getpid(), os.getuid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                status = open("/proc/%s/status" % name).read()
            except OSError:
                continue
            uid = int(status.split("Uid:")[1].split()[0])
            state = status.split("State:")[1].split()[0]
            if uid == mine and state != "Z":
                found.append(name)
    print(len(found))
    """
)


async def run_py(sb: Any, code: str, **kwargs: Any) -> ExecResult:
    result: ExecResult = await sb.exec([PY, "-c", textwrap.dedent(code)], **kwargs)
    return result


@pytest.fixture()
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host loopback that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(b"connected")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(2)
    server.close()


def _host_ips() -> list[str]:
    ips = {"127.0.0.1"}
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ips.add(str(info[4][0]))
    except OSError:
        pass
    ips.add("172.17.0.1")  # docker0 gateway
    return sorted(ips)


def test_basic_exec_roundtrip(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python") as sb:
            await sb.write_files({"main.py": "import sys; print(sys.stdin.read()[::-1])"})
            result = await sb.exec([PY, "main.py"], stdin=b"abc")
            assert result.ok and result.stdout == b"cba\n", result
            assert result.cpu_s > 0 and result.peak_memory_mb > 1
            failing = await run_py(sb, "raise ValueError('boom')")
            assert failing.returncode == 1 and b"ValueError: boom" in failing.stderr
            await run_py(sb, "open('out.txt', 'w').write('made in sandbox')")
            assert await sb.read_file("out.txt") == b"made in sandbox"
            with pytest.raises(FileNotFoundError):
                await sb.read_file("missing.txt")

    run_with(body)


def test_no_network_to_host_loopback_or_dns(
    run_with: Any, listener: tuple[int, list[bytes]]
) -> None:
    port, accepted = listener
    targets = _host_ips()

    async def body(provider: Any) -> None:
        async with provider.session("python") as sb:
            code = f"""
            import socket
            ok = []
            for host in {targets!r}:
                s = socket.socket()
                s.settimeout(2)
                try:
                    s.connect((host, {port}))
                    ok.append(host)
                except OSError:
                    pass
            print("CONNECTED" if ok else "BLOCKED", ok)
            try:
                socket.getaddrinfo("deb.debian.org", 80)
                print("RESOLVED")
            except OSError:
                print("NO-DNS")
            """
            result = await run_py(sb, code, timeout=20)
            assert result.returncode == 0, result
            assert b"BLOCKED" in result.stdout and b"NO-DNS" in result.stdout, result

    run_with(body)
    assert accepted == []


def test_host_files_are_invisible_and_root_is_readonly(run_with: Any, tmp_path: Any) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET")
    secret.chmod(0o644)

    async def body(provider: Any) -> None:
        async with provider.session("python") as sb:
            code = f"""
            import os
            leaks = []
            for path in [{str(secret)!r}, "/etc/shadow", "/root/.bash_history",
                         "/var/run/docker.sock"]:
                try:
                    with open(path, "rb") as f:
                        leaks.append((path, f.read(20)))
                except OSError:
                    pass
            writes = []
            for path in ["/usr/evil", "/etc/evil", "/evil", "/bin/evil"]:
                try:
                    with open(path, "w") as f:
                        f.write("x")
                    writes.append(path)
                except OSError:
                    pass
            print("LEAKS", leaks, "WRITES", writes)
            """
            result = await run_py(sb, code)
            assert result.returncode == 0, result
            assert result.text().strip() == "LEAKS [] WRITES []", result

    run_with(body)


def test_fork_bomb_is_contained_and_pool_recovers(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=5, pids=32) as sb:
            code = """
            import os
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
            """
            result = await run_py(sb, code)
            assert not result.ok
            left = await run_py(sb, LIST_JOB_PROCS)
            assert left.text().strip() == "0", left
        async with provider.session("python", timeout_s=5, pids=32) as sb:
            after = await sb.exec([PY, "-c", "print('alive')"])
            assert after.ok and after.stdout == b"alive\n", after

    run_with(body)


def test_memory_bomb_is_oom_killed(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", memory_mb=128, timeout_s=20) as sb:
            code = """
            chunks = []
            while True:
                chunks.append(bytearray(16 << 20))
            """
            result = await run_py(sb, code)
            assert result.oom_killed, result
            assert not result.ok
            fine = await run_py(sb, "print(len(bytearray(32 << 20)))")
            assert fine.ok, fine

    run_with(body)


def test_huge_output_is_truncated_with_bounded_host_memory(run_with: Any) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=60) as sb:
            code = """
            import sys
            block = b"x" * (1 << 20)
            for _ in range(1024):
                sys.stdout.buffer.write(block)
            """
            result = await run_py(sb, code)
            assert result.truncated, result
            assert len(result.stdout) == Limits().output_bytes

    run_with(body)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200, f"host grew by {grown_mb:.0f} MB while the job printed 1 GB"


@pytest.mark.parametrize(
    "code",
    [
        "while True: pass",
        "import time; time.sleep(60)",
        # escapes its process group and session, then outlives its parent
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ntime.sleep(60)",
    ],
    ids=["busy-loop", "sleep", "setsid-daemon"],
)
@pytest.mark.parametrize("python", ["python3", "/usr/bin/python3"], ids=["exec", "fast"])
def test_deadline_kills_every_process_of_the_job(run_with: Any, code: str, python: str) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=1) as sb:
            result = await sb.exec([python, "-c", code])
            assert result.timed_out and result.returncode < 0, result
            assert result.duration_s < 5
            left = await sb.exec(["/usr/bin/python3", "-u", "-c", LIST_JOB_PROCS])
            assert left.ok and left.text().strip() == "0", left

    run_with(body)


def test_background_process_does_not_outlive_its_job(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=5) as sb:
            code = """
            import os, subprocess, sys
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
            print("spawned")
            """
            result = await run_py(sb, code)
            assert result.ok and result.duration_s < 4, result
            left = await sb.exec(["/usr/bin/python3", "-u", "-c", LIST_JOB_PROCS])
            assert left.text().strip() == "0", left

    run_with(body)


def test_job_cannot_kill_or_talk_to_its_runner(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=5) as sb:
            code = """
            import os, signal
            denied = 0
            for pid in (os.getppid(), 1):
                try:
                    os.kill(pid, signal.SIGKILL)
                except PermissionError:
                    denied += 1
            written = 0
            for fd in range(3, 64):
                try:
                    os.write(fd, b"\\x00\\x00\\x00\\x02{}")
                    written += 1
                except OSError:
                    pass
            print("denied", denied, "written", written)
            """
            result = await run_py(sb, code)
            assert result.ok, result
            assert result.text().strip() == "denied 2 written 0", result
            # kill -9 -1 from the job reaches only the job's own processes (Linux spares the
            # caller), never the runner.
            nuke = await sb.exec(["/bin/sh", "-c", "sleep 30 & kill -9 -1; wait; echo done"])
            assert nuke.ok and nuke.stdout == b"done\n" and nuke.duration_s < 5, nuke
            again = await run_py(sb, "print('runner alive')")
            assert again.ok and again.stdout == b"runner alive\n", again

    run_with(body)


def test_readonly_files_cannot_be_changed_and_symlinks_are_refused(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python") as sb:
            await sb.write_files({"solution.py": "x = 1\n"})
            await sb.write_files(
                {"tests/test_x.py": "assert True\n", "oracle.txt": "42"}, readonly=True
            )
            code = """
            import os, shutil
            done = []
            for action in (
                lambda: open("tests/test_x.py", "w").write("forged"),
                lambda: os.remove("tests/test_x.py"),
                lambda: os.rename("tests", "tests_old"),
                lambda: os.chmod("oracle.txt", 0o666),
                lambda: os.remove("oracle.txt"),
                lambda: open("tests/conftest.py", "w").write("forged"),
                lambda: shutil.rmtree("tests"),
            ):
                try:
                    action()
                    done.append(True)
                except OSError:
                    done.append(False)
            open("solution.py", "a").write("y = 2\\n")  # the candidate's own file stays writable
            os.symlink("/etc/passwd", "link.txt")
            print(done)
            """
            result = await run_py(sb, code)
            assert result.ok, result
            assert result.text().strip() == str([False] * 7), result
            assert await sb.read_file("tests/test_x.py") == b"assert True\n"
            assert await sb.read_file("solution.py") == b"x = 1\ny = 2\n"
            from verifiers.errors import BadInput

            with pytest.raises(BadInput):
                await sb.read_file("link.txt")

    run_with(body)


def test_jobs_never_see_each_others_files(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python") as first:
            await first.write_files({"secret.txt": "first job's secret"})
            first_dir = first.workdir
            async with provider.session("python") as second:
                code = f"""
                import os
                seen = []
                for path in [{first_dir!r} + "/secret.txt", "../job1/secret.txt"]:
                    try:
                        seen.append(open(path).read())
                    except OSError:
                        pass
                    try:
                        open(path + ".evil", "w").write("planted")
                    except OSError:
                        pass
                print(seen)
                """
                result = await run_py(second, code)
                assert result.ok and result.text().strip() == "[]", result
            listing = await run_py(first, "import os; print(sorted(os.listdir('.')))")
            assert "evil" not in listing.text(), listing
        # Sequential sessions on one worker: the next job finds a fresh, empty directory.
        async with provider.session("python") as later:
            result = await run_py(
                later, "import os; print(sorted(os.listdir('.')), os.listdir('..'))"
            )
            assert "secret" not in result.text(), result

    run_with(body, pool_size=2)


def test_runner_lost_without_the_jobs_doing_is_infra_and_replaced(run_with: Any) -> None:
    """A runner gone between jobs (here: killed by the host) is the machine's loss: the next
    exec raises ``InfraError`` (an abstain, retried), never a score; a fresh worker follows.
    (The job-caused side and kills mid-job: ``test_runner_loss.py``.)"""

    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=1) as sb:
            result = await run_py(sb, "print('ok')")
            assert result.ok
            worker = sb._worker
            await worker.kill()  # a runner that died mid-session
            with pytest.raises(InfraError, match="runner lost"):
                await run_py(sb, "print('never')")
        async with provider.session("python") as sb:
            assert (await run_py(sb, "print('fresh')")).stdout == b"fresh\n"

    run_with(body)


def test_concurrent_sessions_run_in_parallel(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async def one(i: int) -> bytes:
            async with provider.session("python") as sb:
                result = await run_py(sb, f"import time; time.sleep(0.5); print({i})")
                assert result.ok, result
                return result.stdout

        await provider.warm("python", 2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        outputs = await asyncio.gather(*(one(i) for i in range(4)))
        assert outputs == [f"{i}\n".encode() for i in range(4)]
        assert loop.time() - started < 1.9  # two at a time, not four in a row

    run_with(body, pool_size=2)

"""Start the engine so that the model's code cannot read the engine's own memory.

Runs *inside* the sandbox job (stdlib only, the runtime's ``python3``), in front of the
engine: ``python3 _jail.py <engine argv...>`` (a plain script, so the runner runs it in a
fork of its warm interpreter: no interpreter start; it imports nothing but ``ctypes``,
``os``, ``struct`` and ``sys``). It restricts itself, then ``execv``s the
engine, which keeps every restriction (both are inherited across ``execve`` and by every
child, and cannot be lifted):

- **Landlock** (kernel >= 5.13): files may be read everywhere but under ``/proc``, written
  only under the job's work dir, ``/tmp``, ``/dev/shm`` and to ``/dev/null``, and only the
  engine binary and its ELF interpreter may be executed. In the writable folders only the
  files that exist when the jail starts (the job's own, written read-only by the verifier)
  may be read: nothing the engine writes during the run can be read back, so the model's
  code cannot write a shared library and load it (``GDNative.initialize``: native code in the
  engine, which reads the harness's memory directly and calls engine methods past every
  check, ``hack-native-library`` in the corpus: it worked before this rule), nor a script
  file to ``load()`` later (runtime scripts are judged by the harness's audit anyway). GDScript's ``File`` can otherwise open
  ``/proc/self/mem`` of its own process and find the harness's token B in the heap
  (measured with Godot 3.2.3: ~6 s, ``hack-steal-token-from-memory`` in the corpus), and ``OS.execute`` could start a helper.
  The signal scope (ABI >= 6) keeps the engine from signalling anything outside it. The
  runtime's fork-server library (``/opt/verifiers/godot``) is not readable either: a script
  could otherwise load it with ``GDNative`` and reach libc's functions through its handle.
- **seccomp**: ``ptrace``, ``process_vm_readv`` and ``process_vm_writev`` fail with
  ``EPERM``: the other two ways to read a process's memory (a child the engine started,
  or the engine itself on its own pid).

Why in front of the engine and not in the runner: only the engine needs it (Godot 3 runs
without ``/proc``), and the same file works on every backend (bubblewrap and Docker both
allow unprivileged Landlock and seccomp filters under ``no_new_privs``).

When the kernel has no Landlock (or a filter cannot be installed) the jail exits
:data:`NO_JAIL` without starting the engine: the verifier turns that into ``error/infra``
(a host that cannot hide the proof from the model cannot judge ``frames``), never a score.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

NO_JAIL = 97
"""Exit status: the kernel refused the restrictions; nothing of the model's ran."""

_SYS = {  # landlock_create_ruleset, landlock_add_rule, landlock_restrict_self (all arches)
    "create": 444,
    "add": 445,
    "restrict": 446,
}
_FS = [1 << i for i in range(16)]
"""Landlock file-system rights by ABI: 13 in ABI 1, REFER (ABI 2), TRUNCATE (3), IOCTL_DEV (5)."""
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_SCOPE_SIGNAL = 2
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_DENIED = {  # arch: (AUDIT_ARCH, syscall numbers of ptrace, process_vm_readv, process_vm_writev)
    "x86_64": (0xC000003E, (101, 310, 311)),
    "aarch64": (0xC00000B7, (117, 270, 271)),
}


def _handled(abi: int) -> int:
    count = 13 + (abi >= 2) + (abi >= 3)
    mask = 0
    for bit in _FS[:count]:
        mask |= bit
    if abi >= 5:
        mask |= _IOCTL_DEV
    return mask


def _fail(libc: ctypes.CDLL, what: str) -> None:
    err = ctypes.get_errno()
    sys.stderr.write(f"jail: {what} failed: {os.strerror(err)}\n")
    sys.stderr.flush()
    os._exit(NO_JAIL)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int, handled: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this root does not have
    try:
        if not os.path.isdir(path):
            access &= _FILE_RIGHTS
        attr = struct.pack("=Qi", access & handled, fd)
        buf = ctypes.create_string_buffer(attr, len(attr))
        if libc.syscall(_SYS["add"], ruleset, 1, buf, 0) != 0:
            _fail(libc, f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _names(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _subfolders(folder: str) -> list[str]:
    return [p for p in (os.path.join(folder, n) for n in _names(folder)) if os.path.isdir(p)]


def _which(name: str) -> str | None:
    if "/" in name:
        return name if os.access(name, os.X_OK) else None
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


FORK_LIBRARY_DIR = "/opt/verifiers/godot"
"""The runtime's fork-server library (sandbox/images/godot/forkserver.c): never readable by
a jailed engine, so no script can load it (``GDNative``) and call its procedures or, through
``dlsym`` on its handle, any function of libc."""


def _allow_read(
    libc: ctypes.CDLL, ruleset: int, folder: str, writable: tuple[str, ...], handled: int
) -> None:
    """Read rights on everything under ``folder`` but ``/proc``, the fork library's folder
    and the writable folders: the ancestors of those get ``READ_DIR`` only (rights are
    inherited down the tree), so a file created in a writable folder during the run is
    never readable."""
    for entry in sorted(_names(folder)):
        path = os.path.join(folder, entry)
        if path == "/proc" or path in writable or (folder != "/" and os.path.islink(path)):
            continue  # a link below the top resolves into a folder granted on its own
        if any(w.startswith(path + "/") for w in writable) and not os.path.islink(path):
            _allow(libc, ruleset, path, _READ_DIR, handled)
            _allow_read(libc, ruleset, path, writable, handled)
        else:
            _allow(libc, ruleset, path, _READ_FILE | _READ_DIR, handled)


def _files(folder: str) -> list[str]:
    """Every file and folder under the work dir when the jail starts (the job's own files,
    bounded by the verifier's ``max_files``): the only files there the engine may read (a
    folder gets ``READ_DIR`` only: a read right on it would cover every file made in it)."""
    found = [folder]
    for top, dirs, names in os.walk(folder):
        found += [os.path.join(top, n) for n in dirs + names]
    return found


def _landlock(libc: ctypes.CDLL, binary: str) -> None:
    abi = libc.syscall(_SYS["create"], None, 0, 1)
    if abi < 1:
        _fail(libc, "landlock (kernel support)")
    handled = _handled(abi)
    if abi >= 6:
        attr = struct.pack("=QQQ", handled, 0, _SCOPE_SIGNAL)
    else:
        attr = struct.pack("=Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS["create"], buf, len(attr), 0)
    if ruleset < 0:
        _fail(libc, "landlock_create_ruleset")
    read = _READ_FILE | _READ_DIR
    writable = (os.path.realpath(os.getcwd()), "/tmp", "/dev/shm")
    _allow_read(libc, ruleset, "/", (*writable, FORK_LIBRARY_DIR), handled)
    for name in _files(writable[0]):
        _allow(libc, ruleset, name, _READ_DIR if os.path.isdir(name) else read, handled)
    write = handled & ~_EXECUTE & ~_IOCTL_DEV & ~_READ_FILE
    for folder in writable:
        _allow(libc, ruleset, folder, write, handled)
    _allow(libc, ruleset, "/dev/null", read | _WRITE_FILE | _TRUNCATE, handled)
    interpreters = [
        os.path.join(folder, name)
        for folder in ("/lib", "/lib64", *_subfolders("/lib"))
        for name in _names(folder)
        if name.startswith("ld-linux")
    ]
    for exe in {os.path.realpath(p) for p in [binary, *interpreters]}:
        _allow(libc, ruleset, exe, _EXECUTE | _READ_FILE, handled)
    if libc.syscall(_SYS["restrict"], ruleset, 0) != 0:
        _fail(libc, "landlock_restrict_self")
    os.close(ruleset)


def _seccomp(libc: ctypes.CDLL) -> None:
    machine = os.uname().machine
    if machine not in _DENIED:
        _fail(libc, f"seccomp (no syscall table for {machine})")
    arch, numbers = _DENIED[machine]
    # classic BPF: kill on a foreign arch, EPERM for the listed calls, allow the rest
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    allow, errno_eperm, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000
    prog = [(ld_w_abs, 0, 0, 4), (jeq_k, 1, 0, arch), (ret_k, 0, 0, kill), (ld_w_abs, 0, 0, 0)]
    for i, nr in enumerate(numbers):
        left = len(numbers) - i - 1
        prog.append((jeq_k, left + 1, 0, nr))
    prog += [(ret_k, 0, 0, allow), (ret_k, 0, 0, errno_eperm)]
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in prog)
    filt = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(filt))
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fbuf, 0, 0) != 0:
        _fail(libc, "seccomp filter")


def main(argv: list[str]) -> None:
    if not argv:
        sys.stderr.write("usage: python3 _jail.py ENGINE [ARGS...]\n")
        os._exit(2)
    binary = _which(argv[0])
    if binary is None:
        sys.stderr.write(f"jail: {argv[0]} not found\n")
        os._exit(127)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail(libc, "no_new_privs")
    _landlock(libc, binary)
    _seccomp(libc)
    sys.stdout.flush()
    os.execv(binary, [argv[0], *argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])

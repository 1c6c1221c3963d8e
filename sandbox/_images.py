"""Sandbox images: definitions under ``sandbox/images/<name>/``, built without any registry.

A folder with a ``runtime.toml`` is a *runtime* (see :mod:`verifiers.sandbox._runtimes`): its
root filesystem is built once and both backends use it; its Docker image is ``docker import``
of that folder, so Docker and the local backend run identical files. That is the way to add
a job environment. The older form below (a ``Dockerfile``) stays for images only Docker needs.

An image folder may instead hold a ``Dockerfile`` and, optionally, a ``prepare.py`` defining
``prepare(context: pathlib.Path) -> None``, called with a scratch copy of the folder before the
build (to place wheels, binaries or other files the build context needs, since containers
cannot reach the internet). The Dockerfile starts with::

    ARG BASE
    FROM ${BASE}

``BASE`` is a minimal Debian bookworm made with ``debootstrap --variant=minbase`` from the
same mirror the host's apt uses, then ``docker import``-ed: no registry is ever contacted.
Every image is tagged ``<prefix>/<name>:<hash>`` where the hash covers the folder's files and
the base's recipe, so unchanged images are not rebuilt and a changed folder is never mistaken
for a built one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.errors import InfraError, SandboxUnavailable
from verifiers.settings import env as setting

from ._settings import SandboxSettings

__all__ = [
    "ImageDef",
    "base_tag",
    "build_base",
    "build_image",
    "debian_mirror",
    "find_images",
    "image_tag",
]

BUILDER_VERSION = "1"
SUITE = "bookworm"
LABEL = "verifiers.sandbox"
BUILTIN_DIR = Path(__file__).with_name("images")
_DEFAULT_MIRROR = "http://deb.debian.org/debian"


@dataclass(frozen=True)
class ImageDef:
    """One image definition folder."""

    name: str
    path: Path

    def input_hash(self) -> str:
        """sha256 over every file of the folder (names and contents)."""
        digest = hashlib.sha256()
        for file in sorted(self.path.rglob("*")):
            if not file.is_file() or "__pycache__" in file.parts:
                continue
            digest.update(file.relative_to(self.path).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        return digest.hexdigest()


def image_dirs(settings: SandboxSettings) -> list[Path]:
    """Where image folders are looked up: settings, ``VERIFIERS_SANDBOX_IMAGES``, built-ins."""
    extra = [Path(p) for p in (setting("VERIFIERS_SANDBOX_IMAGES") or "").split(os.pathsep)]
    return [*settings.image_dirs, *[p for p in extra if str(p) not in ("", ".")], BUILTIN_DIR]


def find_images(settings: SandboxSettings) -> dict[str, ImageDef]:
    """Every image definition, by name (earlier folders win)."""
    found: dict[str, ImageDef] = {}
    for folder in image_dirs(settings):
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            defined = (child / "Dockerfile").is_file() or (child / "runtime.toml").is_file()
            if defined and child.name not in found:
                found[child.name] = ImageDef(child.name, child)
    return found


def get_image(name: str, settings: SandboxSettings) -> ImageDef:
    """The definition of ``name``.

    Raises:
        SandboxUnavailable: no such image folder.
    """
    images = find_images(settings)
    if name not in images:
        known = ", ".join(sorted(images)) or "none"
        raise SandboxUnavailable(
            f"no sandbox image named {name!r} (known: {known})",
            hint="add sandbox/images/<name>/runtime.toml (see docs/sandbox.md)",
            retryable=False,
        )
    return images[name]


# -- debian base -----------------------------------------------------------------------------


def _sources_entries() -> Iterable[tuple[str, list[str]]]:
    """(uri, suites) pairs from the host's apt sources, deb822 and one-line formats."""
    apt = Path("/etc/apt")
    files = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*"))]
    for file in files:
        if not file.is_file():
            continue
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if file.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.lstrip().startswith("#"):
                        key, _, value = line.partition(":")
                        fields[key.strip().lower()] = value.strip()
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" in fields.get("types", "").split():
                    for uri in fields.get("uris", "").split():
                        yield uri, fields.get("suites", "").split()
        elif file.suffix == ".list" or file.name == "sources.list":
            for line in text.splitlines():
                parts = line.split("#", 1)[0].split()
                if len(parts) >= 3 and parts[0] == "deb":
                    rest = [p for p in parts[1:] if not p.startswith("[")]
                    if len(rest) >= 2:
                        yield rest[0], [rest[1]]


def debian_mirror() -> str:
    """The Debian mirror the host's apt uses for bookworm (``VERIFIERS_DEBIAN_MIRROR`` wins)."""
    override = setting("VERIFIERS_DEBIAN_MIRROR")
    if override:
        return override
    for uri, suites in _sources_entries():
        if SUITE in suites and "security" not in uri:
            return uri.rstrip("/")
    return _DEFAULT_MIRROR


def _apt_overrides() -> str:
    """apt settings the host needs to use its mirror (e.g. a snapshot's expired Release)."""
    try:
        done = subprocess.run(
            ["apt-config", "dump", "Acquire::Check-Valid-Until"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    if '"false"' in done.stdout:
        return 'Acquire::Check-Valid-Until "false";\n'
    return ""


def _base_recipe() -> dict[str, str]:
    return {
        "builder": BUILDER_VERSION,
        "suite": SUITE,
        "variant": "minbase",
        "mirror": debian_mirror(),
        "apt": _apt_overrides(),
    }


def base_tag(settings: SandboxSettings) -> str:
    """Tag of the debootstrapped base for the current recipe."""
    blob = json.dumps(_base_recipe(), sort_keys=True).encode()
    return f"{settings.image_prefix}/base:{SUITE}-{hashlib.sha256(blob).hexdigest()[:12]}"


def image_tag(image: ImageDef, settings: SandboxSettings) -> str:
    """``<prefix>/<name>:<hash of the folder and the base recipe>``."""
    digest = hashlib.sha256(f"{image.input_hash()}:{base_tag(settings)}".encode()).hexdigest()
    return f"{settings.image_prefix}/{image.name}:{digest[:16]}"


def _cache_dir() -> Path:
    from ._runtimes import cache_dir

    return cache_dir()


def _image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_base(client: Any, settings: SandboxSettings, log: Callable[[str], None]) -> str:
    """Make the base image if it is missing: ``docker import`` of the debootstrapped base
    folder that runtimes start from (one debootstrap serves both).

    Raises:
        SandboxUnavailable: debootstrap is missing or the caller is not root.
        InfraError: debootstrap or the import failed (its output is in the message).
    """
    from ._runtimes import base_rootfs

    tag = base_tag(settings)
    if _image_exists(client, tag):
        log(f"base {tag}: up to date")
        return tag
    rootfs = base_rootfs(settings, log)
    log(f"base {tag}: docker import")
    docker_import(client, rootfs, tag, [f"LABEL {LABEL}=base"])
    return tag


def docker_import(client: Any, root: Path, tag: str, changes: list[str]) -> None:
    """``docker import`` the folder ``root`` as ``tag``, with the Dockerfile ``changes``
    (``ENV``, ``WORKDIR``, ``LABEL`` lines): the one way a folder becomes an image, for the base
    and for every runtime.

    Raises:
        InfraError: tar or the import failed, or the import made no image.
    """
    with tempfile.TemporaryDirectory(prefix="import-", dir=_cache_dir()) as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(tarball), "."],
            check=True,
            timeout=1200,
        )
        repository, _, version = tag.rpartition(":")
        client.api.import_image_from_file(
            str(tarball), repository=repository, tag=version, changes=changes
        )
    if not _image_exists(client, tag):
        raise InfraError(f"docker import did not produce {tag}")


def _run_prepare(image: ImageDef, context: Path) -> None:
    hook = image.path / "prepare.py"
    if not hook.is_file():
        return
    spec = importlib.util.spec_from_file_location(f"_verifiers_image_{image.name}", hook)
    if spec is None or spec.loader is None:
        raise InfraError(f"cannot load {hook}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prepare = getattr(module, "prepare", None)
    if not callable(prepare):
        raise InfraError(f"{hook} must define prepare(context: pathlib.Path) -> None")
    prepare(context)


def build_image(
    client: Any,
    image: ImageDef,
    settings: SandboxSettings,
    log: Callable[[str], None],
    *,
    force: bool = False,
) -> tuple[str, bool]:
    """Build ``image`` unless its tag exists; returns (tag, built).

    Raises:
        InfraError: the prepare hook or ``docker build`` failed (last log lines included).
    """
    from ._runtimes import build_rootfs, image_changes, load_runtime

    tag = image_tag(image, settings)
    runtime = load_runtime(image.path)
    if not force and _image_exists(client, tag):
        log(f"{image.name} {tag}: up to date")
        if runtime is not None:
            build_rootfs(runtime, settings, log)  # the local backend's copy of the same files
        return tag, False
    if runtime is not None:
        root, _ = build_rootfs(runtime, settings, log, force=force)
        log(f"{image.name} {tag}: docker import of {root}")
        docker_import(client, root, tag, image_changes(runtime, LABEL))
        repository, _, _ = tag.rpartition(":")
        client.api.tag(tag, repository, "latest")
        return tag, True
    base = build_base(client, settings, log)
    with tempfile.TemporaryDirectory(prefix=f"image-{image.name}-", dir=_cache_dir()) as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(image.path, context, ignore=shutil.ignore_patterns("__pycache__"))
        log(f"{image.name}: preparing build context")
        _run_prepare(image, context)
        log(f"{image.name} {tag}: docker build")
        tail: list[str] = []
        stream = client.api.build(
            path=str(context),
            tag=tag,
            buildargs={"BASE": base},
            network_mode="host",
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            labels={LABEL: "image", f"{LABEL}.image": image.name},
        )
        error: str | None = None
        for chunk in stream:
            if "stream" in chunk:
                for line in str(chunk["stream"]).splitlines():
                    if line.strip():
                        tail = [*tail[-40:], line]
                        if line.startswith("Step "):
                            log(f"  {line}")
            if "error" in chunk:
                error = str(chunk["error"])
        if error is not None:
            raise InfraError(f"building {image.name} failed: {error}\n" + "\n".join(tail[-20:]))
    repository, _, _ = tag.rpartition(":")
    client.api.tag(tag, repository, "latest")
    return tag, True

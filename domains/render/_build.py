"""Build the Blender sandbox image: ``python -m verifiers.domains.render._build``.

Thin wrapper over the sandbox layer's image builder (``verifiers.sandbox._images``), for CI
and for machines where the ``verifiers sandbox build blender`` verb is not available: it
bootstraps the Debian base if needed, builds ``sandbox/images/blender/runtime.toml`` (bpy wheels
from the host's pip), builds, and tags ``verifiers-sandbox/blender:<input hash>`` and
``:latest``, which is what the render verifier's Docker backend runs.
"""

from __future__ import annotations

import argparse
import sys

from verifiers.errors import VerifierError

__all__ = ["build_blender_image", "main"]


def build_blender_image(*, force: bool = False) -> str:
    """Build (or find up to date) the Blender image; returns its hash tag.

    Raises:
        SandboxUnavailable: no Docker engine, no debootstrap.
        InfraError: the base or the image failed to build.
    """
    from verifiers.sandbox._images import build_image, get_image
    from verifiers.sandbox._settings import SandboxSettings

    from verifiers.errors import SandboxUnavailable

    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "the docker SDK is not installed", hint="pip install 'verifiers[render]'"
        ) from None
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise SandboxUnavailable(
            f"Docker engine not reachable: {exc}", hint="start dockerd"
        ) from None
    settings = SandboxSettings()
    tag, _ = build_image(
        client,
        get_image("blender", settings),
        settings,
        lambda line: print(line, flush=True),
        force=force,
    )
    return str(tag)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verifiers.domains.render._build")
    parser.add_argument("command", choices=["build"], nargs="?", default="build")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args(argv)
    try:
        tag = build_blender_image(force=args.force)
    except VerifierError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())

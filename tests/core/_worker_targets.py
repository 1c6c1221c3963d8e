"""Functions the worker-pool tests run inside worker processes."""

from __future__ import annotations

import os
import time
from typing import Any

from verifiers.errors import BadInput


def echo(payload: Any) -> Any:
    return {"got": payload, "pid": os.getpid()}


def spin(payload: Any) -> Any:
    while True:
        pass


def sleep(payload: Any) -> Any:
    time.sleep(float(payload))
    return "slept"


def hog(payload: Any) -> Any:
    blob = bytearray(int(payload) * 1024 * 1024)
    return len(blob)


def die(payload: Any) -> Any:
    os._exit(3)


def bad(payload: Any) -> Any:
    raise BadInput(f"bad payload {payload!r}")


def noisy(payload: Any) -> Any:
    print("this must not corrupt the protocol")
    return "quiet"


def reject(payload: Any) -> Any:
    from verifiers.errors import InvalidOutput

    raise InvalidOutput(f"cannot read {payload!r}: expected a number")

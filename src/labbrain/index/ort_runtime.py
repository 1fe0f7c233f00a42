"""ONNX Runtime, imported with its usage telemetry off.

ONNX Runtime's Linux wheels (1.32 and later) carry Microsoft's telemetry client: importing the
library writes a device identifier and an event database into the user's cache directory
(``Microsoft/DeveloperTools/.onnxruntime/``), and sessions report events through it, unless
``ORT_DISABLE_TELEMETRY`` is set before the import. labbrain keeps a lab's work on the lab's
machine, so every import of the runtime in labbrain goes through :func:`load`, which sets it.
A user who sets ``ORT_DISABLE_TELEMETRY`` themselves keeps their value.
"""

from __future__ import annotations

import os
from typing import Any

TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"


def load() -> Any:
    """The ``onnxruntime`` module, imported (once) with telemetry disabled: no device id or
    event file is written and no session event is reported, unless the user's environment
    set :data:`TELEMETRY_SWITCH` otherwise. Raises ImportError when it is not installed."""
    os.environ.setdefault(TELEMETRY_SWITCH, "1")
    import onnxruntime

    if os.environ[TELEMETRY_SWITCH] == "1":
        # Also for a runtime that another library imported before labbrain did.
        onnxruntime.disable_telemetry_events()
    return onnxruntime

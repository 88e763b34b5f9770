"""Small helpers shared by the app, browser and robustness tests."""
from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlowTarget:
    """Wraps a target so that every pass sleeps `delay` seconds first (runs last long enough to Stop or to fill
    the queue); counts the passes, to see when decoding stops."""

    def __init__(self, inner, delay: float):
        self._inner, self._delay, self.calls = inner, delay, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def forward(self, *args, **kwargs):
        self.calls += 1
        time.sleep(self._delay)
        return self._inner.forward(*args, **kwargs)

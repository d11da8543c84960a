"""Stopping a training run on a signal, at a step boundary with a checkpoint."""

from __future__ import annotations

import contextlib
import logging
import signal
from typing import Callable, Iterator

log = logging.getLogger(__name__)


@contextlib.contextmanager
def stop_on_signals(request_stop: Callable[[], None]) -> Iterator[None]:
    """Inside the ``with`` block, SIGTERM (SLURM pre-emption, a time limit) and a first SIGINT (Ctrl-C,
    also passed on by the torchrun relaunch) call ``request_stop`` (the trainer stops at the next step
    boundary with a checkpoint); a second SIGINT interrupts at once, as Ctrl-C does elsewhere. The
    previous handlers afterwards, so that a process that trains and goes on (a test, a notebook) does
    not keep a stop flag's handler."""

    def handler(signum, frame):
        log.warning(
            "signal %d: stopping after this step with a checkpoint%s",
            signum,
            " (Ctrl-C again to stop at once, without one)" if signum == signal.SIGINT else "",
        )
        request_stop()
        if signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        for sig, saved in previous.items():
            signal.signal(sig, saved)

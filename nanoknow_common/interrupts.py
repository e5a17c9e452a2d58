"""Stopping promptly and cleanly on SIGTERM / SIGINT / SIGHUP, also while Java code runs.

The ``nanoknow`` CLI calls :func:`install_stop_handlers`: the signals batch schedulers and
terminals send raise :class:`Interrupted` in the main thread, so ``finally`` blocks remove
scratch files and the command exits with ``128 + signal``. A long call into the JVM (Lucene
indexing, a batch search) would keep the main thread inside Java, where Python cannot react:
:func:`call_interruptibly` runs it in a helper thread while the main thread waits, so the
signal is handled at once (the JVM is started with ``-Xrs`` and leaves these signals to Python,
see :mod:`projection.index.lucene`).
"""

from __future__ import annotations

import signal
import threading

STOP_SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGTERM", "SIGINT", "SIGHUP")) if s)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; ``signum`` is the signal. A ``KeyboardInterrupt``, so ``except
    Exception`` blocks do not swallow it."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def _raise(signum, _frame):
    raise Interrupted(signum)


def install_stop_handlers() -> dict:
    """Make SIGTERM, SIGINT and SIGHUP raise :class:`Interrupted` (main thread only; a no-op
    elsewhere); returns the handlers replaced, for :func:`restore_handlers`."""
    previous = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if current is not signal.SIG_IGN:  # nohup'd processes keep ignoring SIGHUP
            previous[signum] = current
            signal.signal(signum, _raise)
    return previous


def restore_handlers(previous: dict) -> None:
    """Put back the handlers :func:`install_stop_handlers` replaced."""
    for signum, handler in previous.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def call_interruptibly(function, *args, **kwargs):
    """``function(*args, **kwargs)``, run in a helper thread when called from the main thread,
    so that a signal handler raising in the main thread is not delayed until it returns.

    The helper is a daemon thread: when the main thread stops, it is abandoned (the CLI then
    ends the process); its result or exception is returned or raised otherwise.
    """
    if threading.current_thread() is not threading.main_thread():
        return function(*args, **kwargs)
    outcome: dict = {}
    done = threading.Event()

    def target():
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=target, name=f"nanoknow-{getattr(function, '__name__', 'call')}", daemon=True).start()
    while not done.wait(0.2):
        pass
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")

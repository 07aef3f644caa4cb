"""Interrupts (SIGINT, SIGTERM) and the artifact store: an interrupted task is never stored.

"Resume from the cache" is a promise: a resumed run must give the numbers of an
uninterrupted one. A trainer that *swallows* the interrupt breaks it unless something
outside the trainer notices: scikit-learn's ``MLPClassifier`` catches
:class:`KeyboardInterrupt`, stops early and returns a half-trained model as if it had
converged, and a user's training loop or a Hugging Face callback can do the same. So
the store does not trust what a trainer returns; it asks this module whether a signal
arrived while the task ran:

* every SIGINT or SIGTERM that reaches this process (through the handlers of
  :func:`handled` or :func:`watching`) increments a process-wide counter before the
  trainer sees anything (:func:`note`);
* a task takes :func:`mark` (the counter) when it starts; before anything of it is
  written, :func:`check` raises :class:`Interrupted` if the counter moved since. The
  guard sits in :meth:`privaudit.runtime.store.ArtifactStore.get_or_create` (around
  ``create_fn``) and :meth:`~privaudit.runtime.store.ArtifactStore.put` (``since=``),
  the one door into the store, so it holds whatever the trainer did with the signal;
* inside :func:`handled` (a CLI command) the state is *sticky*: once a signal arrived,
  every later check raises, so a run that continued past a swallowed interrupt (an
  uncached fit) stops at its next store access or report write instead of finishing with
  a half-trained model.

Worker processes of :class:`~privaudit.runtime.executor.LocalExecutor` ignore SIGINT (a
Ctrl-C on a terminal reaches the whole process group): the driver cancels them, and a
task that a worker finishes is a complete one. The task the driver runs in a thread is
cancelled with :func:`raise_in_thread` after :func:`note` (its check then fails).

Library code never prints; the CLI's line (``privaudit.cli.interrupted``) says what
:func:`privaudit.runtime.store.kept_summary` finds in the caches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = [
    "Interrupted",
    "Session",
    "check",
    "handled",
    "mark",
    "note",
    "raise_in_thread",
    "received",
    "watching",
]

#: The signals that cancel a run (SIGTERM behaves as SIGINT; exit status 128 + number).
SIGNALS: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)

#: scikit-learn's MLP prints this when it swallows the interrupt; the run is cancelled
#: anyway, so the message only misleads.
_SKLEARN_MESSAGE = r"Training interrupted by user"


class Interrupted(KeyboardInterrupt):
    """A run cancelled by a signal (a :class:`KeyboardInterrupt`, so code that cleans up
    on Ctrl-C does so); ``signum`` is the signal, ``exit_code`` 128 + its number."""

    def __init__(self, signum: int = signal.SIGINT, what: str = "") -> None:
        self.signum = int(signum)
        self.what = what
        name = signal_name(self.signum)
        super().__init__(f"{name}: {what} cancelled" if what else name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@dataclasses.dataclass
class _State:
    count: int = 0  # signals (and interrupts noted) received by this process
    last: int = signal.SIGINT  # the last signal's number
    session: int | None = None  # count when the current handled() session began
    session_signal: int | None = None
    watchers: int = 0  # nesting of handlers installed by watching()


_state = _State()


def signal_name(signum: int) -> str:
    """``"SIGINT"``, ``"SIGTERM"``, ... (the number when the platform has no name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def mark() -> int:
    """The interrupt counter now; pass it to :func:`check` when the task is done."""
    return _state.count


def received(since: int | None = None) -> bool:
    """Whether a signal arrived since ``mark() == since`` (or, inside :func:`handled`,
    since the session began: the session is sticky)."""
    n = _state.count
    if since is not None and n > since:
        return True
    return _state.session is not None and n > _state.session


def check(since: int | None = None, what: str = "") -> None:
    """Raise :class:`Interrupted` if a signal arrived since ``since`` (see :func:`received`).

    Called before a task's result is written anywhere: a trainer that swallowed the
    signal returned early, and what it returned must not be kept.
    """
    if received(since):
        raise Interrupted(_state.last, what)


def note(signum: int = signal.SIGINT) -> None:
    """Count an interrupt: every task running now fails its :func:`check`.

    The handlers call it first thing; the executor calls it for a
    :class:`KeyboardInterrupt` that did not come through them (then the task it cancels
    in a thread cannot be stored either).
    """
    _state.count += 1
    _state.last = int(signum)
    if _state.session is not None:
        if _state.session_signal is None:
            _state.session_signal = int(signum)
        warnings.filterwarnings("ignore", message=_SKLEARN_MESSAGE)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    note(signum)
    raise Interrupted(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@dataclasses.dataclass
class Session:
    """What :func:`handled` saw: the first signal of the session (None: none arrived)."""

    signum: int | None = None

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 for SIGINT, 143 for SIGTERM); 0 without one."""
        return 0 if self.signum is None else 128 + self.signum


@contextlib.contextmanager
def handled(*, last: bool = False) -> Iterator[Session]:
    """Run a command under SIGINT and SIGTERM handlers that cancel it cleanly.

    Inside the block, either signal raises :class:`Interrupted` (SIGTERM included, so it
    behaves as Ctrl-C) after :func:`note`, and the state is sticky: nothing is stored
    after a signal, whatever the code that received it did with it. The block's
    :class:`KeyboardInterrupt` is absorbed; the yielded :class:`Session` says which
    signal arrived; any other exception raised after a signal of the session is taken as
    that interrupt's doing and absorbed too. A signal the process ignores (SIGINT of a job a shell started in the
    background) stays ignored. The previous handlers are restored on exit; with ``last``
    (the process ends after the block: the ``privaudit`` script) both signals are
    ignored from then on instead, so that one arriving while the interpreter exits
    prints no traceback. Outside the main thread (where Python cannot install handlers)
    only the stickiness applies.
    """
    session = Session()
    outer = (_state.session, _state.session_signal)
    _state.session, _state.session_signal = _state.count, None
    previous: dict[int, Any] = {}
    hook = sys.unraisablehook
    if _in_main_thread():
        for s in SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:  # e.g. a background job's SIGINT
                previous[s] = signal.signal(s, _raise_interrupted)
        sys.unraisablehook = _Rearm(hook)
    try:
        yield session
    except KeyboardInterrupt as exc:
        if _state.session_signal is None:  # not through a handler: count it now
            note(getattr(exc, "signum", signal.SIGINT))
    except Exception:
        # After a signal, the cancelled work can fail in another way than the
        # KeyboardInterrupt the handler raised: a C extension whose initialisation the
        # signal interrupted re-raises it as "ImportError: initialization failed"
        # (matplotlib's ft2font, imported while the report is written). The command was
        # cancelled either way: absorb it as the interrupt, not as a traceback.
        if _state.session_signal is None:
            raise
    finally:
        session.signum = _state.session_signal
        for s, h in previous.items():
            signal.signal(s, signal.SIG_IGN if last else h)
        if _in_main_thread():
            sys.unraisablehook = hook
        _state.session, _state.session_signal = outer


class _Rearm:
    """``sys.unraisablehook`` inside :func:`handled`: an :class:`Interrupted` that the
    handler raised where Python cannot propagate it (a finalizer, a weakref callback, a
    ``__del__``; Python would print "Exception ignored in ..." with a traceback and go
    on) is raised again in the main thread's normal flow instead: the signal is sent
    again (``_thread.interrupt_main``) a moment later, from another thread, once this
    hook and the callback have returned (should it land in such a place again, this
    repeats). Anything else goes to the previous hook."""

    #: seconds before the signal is sent again (the callback ends well within it)
    DELAY = 0.05

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        exc = getattr(unraisable, "exc_value", None)
        if isinstance(exc, Interrupted):
            import _thread

            timer = threading.Timer(self.DELAY, _thread.interrupt_main, args=(exc.signum,))
            timer.daemon = True
            timer.start()
            return
        self.previous(unraisable)


@contextlib.contextmanager
def watching() -> Iterator[int]:
    """Count SIGINT for the duration of a task; yields :func:`mark` at its start.

    Inside :func:`handled` (the CLI) this only marks. In a program that installed no
    handler (a script, a notebook), the main thread's SIGINT handler is wrapped for the
    duration so that a Ctrl-C is counted before it reaches the trainer (the previous
    handler then runs as before, e.g. raising :class:`KeyboardInterrupt`). SIGTERM's
    default action kills the process, which stores nothing.
    """
    start = _state.count
    if _state.session is not None or not _in_main_thread():
        yield start
        return
    current = signal.getsignal(signal.SIGINT)
    if _state.watchers or not callable(current):  # wrapped already, or SIG_IGN / SIG_DFL
        yield start
        return

    def counting(signum: int, frame: FrameType | None) -> Any:
        note(signum)
        return current(signum, frame)

    signal.signal(signal.SIGINT, counting)
    _state.watchers += 1
    try:
        yield start
    finally:
        _state.watchers -= 1
        signal.signal(signal.SIGINT, current)


def raise_in_thread(thread: threading.Thread) -> bool:
    """Raise :class:`Interrupted` in ``thread`` at its next Python instruction (CPython's
    ``PyThreadState_SetAsyncExc``), to cancel the task it runs; whether it was sent.

    A task blocked in native code sees it when it returns to Python. Call :func:`note`
    first, so that a trainer that swallows it still fails its :func:`check`.
    """
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return False
    try:
        import ctypes

        set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):  # pragma: no cover - not CPython
        return False
    n = set_async(ctypes.c_ulong(ident), ctypes.py_object(Interrupted))
    if n > 1:  # pragma: no cover - cannot happen for one live thread id; undo as documented
        set_async(ctypes.c_ulong(ident), None)
        return False
    return n == 1

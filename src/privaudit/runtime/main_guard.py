"""The check that stops a process pool from re-running an unguarded script.

``spawn`` and ``forkserver`` workers re-import the caller's main script; without an
``if __name__ == "__main__":`` guard every worker would run the whole script again and
the parent would wait for ever. :func:`check_main_guard` parses the script first.
"""

from __future__ import annotations

from privaudit.errors import PrivauditError

__all__ = ["UnguardedMainError", "check_main_guard"]


class UnguardedMainError(PrivauditError):
    """Worker processes would re-run the caller's script (no ``__main__`` guard)."""


def _main_script() -> str | None:
    """The file a spawned worker would re-import as ``__mp_main__`` (None: nothing)."""
    import sys

    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "origin", None):
        return str(spec.origin)
    path = getattr(main, "__file__", None)
    return None if not path or not str(path).endswith(".py") else str(path)


def _has_main_guard(source: str) -> bool:
    """Whether a module's top level has ``if __name__ == "__main__":``."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:  # pragma: no cover - a running script parses
        return True
    for node in tree.body:
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        parts = [node.test.left, *node.test.comparators]
        names = any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts)
        main = any(isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)
        if names and main:
            return True
    return False


def check_main_guard(start_method: str) -> None:
    """Refuse to start ``spawn`` / ``forkserver`` workers from an unguarded script.

    Such workers import the caller's main script again (as ``__mp_main__``); without an
    ``if __name__ == "__main__":`` guard its top level (loading data, training the
    target, starting the audit) runs again in every worker, which then tries to start
    workers of its own: the parent waits for ever. Checked in the parent before any
    process starts (by parsing the script), and in a worker that is still importing it.

    Raises
    ------
    UnguardedMainError
        With the script's path and the two ways out.
    """
    if start_method == "fork":
        return
    import multiprocessing

    if (
        multiprocessing.parent_process() is not None
        and multiprocessing.current_process().name != "MainProcess"
    ):
        import sys

        mp_main = sys.modules.get("__mp_main__")
        if mp_main is not None and sys.modules.get("__main__") is mp_main:
            raise UnguardedMainError(
                "a worker process is re-running the caller's script and reached a parallel "
                'map: put the script\'s code under if __name__ == "__main__":'
            )
    path = _main_script()
    if path is None:
        return
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError):
        return
    if not _has_main_guard(source):
        raise UnguardedMainError(
            f"n_jobs > 1 starts worker processes ({start_method!r}) that re-import the "
            f"running script {path}, whose top level has no "
            "'if __name__ == \"__main__\":' guard: every worker would run the script again "
            "and the audit would never return. Put the script's code under that guard "
            "(or use n_jobs=1)."
        )

"""Ray behind the executor interface: :class:`RayExecutor` (``ray`` imported lazily)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from privaudit._validation import fail
from privaudit.runtime.executor_base import Executor, TaskError, _default_label
from privaudit.runtime.progress import ProgressOption, progress_bar

__all__ = ["RayExecutor"]

T = TypeVar("T")
R = TypeVar("R")


def _ray_call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


class RayExecutor(Executor):
    """Run tasks as Ray tasks, behind the same interface as :class:`LocalExecutor`.

    ``ray`` is imported when the first map runs; if Ray is not initialised yet,
    ``ray.init(address=address, **init_kwargs)`` is called (``address=None`` starts a
    local cluster). The function is put in the object store once and shared by all
    tasks.

    Parameters
    ----------
    address : str or None
        Ray cluster address (``"auto"`` to join a running one).
    num_cpus, num_gpus : float
        Resources each task requests.
    init_kwargs : dict, optional
        Extra arguments to ``ray.init``.
    progress : progress option
        See :class:`Executor`.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        init_kwargs: dict[str, Any] | None = None,
        progress: ProgressOption = None,
    ) -> None:
        super().__init__(progress=progress)
        if not num_cpus >= 0 or not num_gpus >= 0:
            raise fail("num_cpus/num_gpus", "non-negative resources", (num_cpus, num_gpus))
        self.address = address
        self.num_cpus = float(num_cpus)
        self.num_gpus = float(num_gpus)
        self.init_kwargs = dict(init_kwargs or {})

    @staticmethod
    def _ray() -> Any:
        try:
            import ray
        except ImportError as exc:
            raise fail(
                "executor", "ray installed (pip install 'privaudit[ray]')", "no ray"
            ) from exc
        return ray

    @property
    def n_workers(self) -> int:
        ray = self._ray()
        if not ray.is_initialized():
            return 1
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus // max(self.num_cpus, 1e-9)))

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus}, num_gpus={self.num_gpus})"

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = "tasks",
        label: Callable[[T], str] | None = None,
    ) -> list[R]:
        items = list(items)
        name = label or _default_label
        if not items:
            return []
        ray = self._ray()
        if not ray.is_initialized():
            ray.init(address=self.address, **self.init_kwargs)
        self.tasks_run += len(items)
        remote = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus)(_ray_call)
        fn_ref = ray.put(fn)
        refs = [remote.remote(fn_ref, item) for item in items]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(items)
        pending = list(refs)
        with progress_bar(desc, len(items), enabled=self.progress) as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    i = index[ref]
                    try:
                        results[i] = ray.get(ref)
                    except Exception as exc:
                        for other in pending:
                            try:
                                ray.cancel(other)
                            except Exception:  # pragma: no cover - best effort
                                pass
                        cause = getattr(exc, "cause", None)
                        original = cause if isinstance(cause, BaseException) else exc
                        raise TaskError(desc, i, name(items[i]), original) from exc
                    bar.advance()
        return results

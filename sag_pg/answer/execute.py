"""Run a DAG: every node once all its parents have finished, independent nodes in parallel."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from .plan import Plan

__all__ = ["run_dag"]


def run_dag(plan: Plan, run: Callable[[str], None], *, parallelism: int = 4) -> None:
    """Call ``run(node_id)`` for every node of ``plan`` in dependency order, up to ``parallelism`` at once.

    Ready nodes start in plan order. If ``run`` raises, no further node starts, the running ones finish,
    and the first exception is re-raised.
    """
    parallelism = max(1, parallelism)
    parents = {n.id: set(plan.parents(n.id)) for n in plan.nodes}
    order = [n.id for n in plan.nodes]
    done: set[str] = set()
    started: set[str] = set()
    error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="sag-deep") as pool:
        running: dict[Future[None], str] = {}

        def start_ready() -> None:
            for node_id in order:
                if len(running) >= parallelism:
                    break  # the others wait here, not in the pool's queue, so an error can stop them
                if node_id not in started and parents[node_id] <= done:
                    started.add(node_id)
                    running[pool.submit(run, node_id)] = node_id

        start_ready()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                done.add(running.pop(future))
                if error is None:
                    error = future.exception()
            if error is None:
                start_ready()
    if error is not None:
        raise error

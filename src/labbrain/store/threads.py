"""Work handed to another thread, under pyoxigraph's rules for threads.

What pyoxigraph allows (its classes as built by PyO3):

- a ``Store`` may be shared: any thread may query it, and the store's writes are serialised
  by the backend (:class:`~labbrain.store.local.OxigraphStore` holds a write mutex);
- one bulk load at a time per store: a graph being replaced is written only by the thread
  that replaces it (:class:`~labbrain.store.base.ThreadBoundWriter`);
- query results and iterators (``QuerySolutions``, ``QueryTriples``, the quad and graph-name
  iterators) belong to the thread that made them: used from another thread they raise, and
  dropped on another thread they are leaked with a warning ("... is unsendable, but is being
  dropped on another thread"), holding the store they came from open.

The last rule is easy to break without touching a result: an exception raised in a worker
thread carries its traceback, whose frames hold their local variables (a query result among
them), to the thread that re-raises it, where it is dropped. :func:`confined` wraps a call
handed to a worker thread so that neither its answer nor its error takes a result along.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from pyoxigraph import QuerySolutions, QueryTriples

P = ParamSpec("P")
T = TypeVar("T")

#: pyoxigraph answers that must not leave the thread that made them.
THREAD_BOUND = (QuerySolutions, QueryTriples)


def release_frames(error: BaseException) -> None:
    """Clear the local variables of every finished frame in the tracebacks of ``error`` and
    of the errors it was raised from (``__cause__``, ``__context__``), so that the error can
    be dropped on any thread. The messages and the printed tracebacks are unchanged."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending += [current.__cause__, current.__context__]


def confined(call: Callable[P, T]) -> Callable[P, T]:
    """``call``, made fit to run in a worker thread whose outcome another thread takes.

    Guarantees: an error it raises leaves without the local variables of the frames it went
    through (:func:`release_frames`); an answer that is a pyoxigraph query result (which
    belongs to the worker thread) is refused with TypeError, since the taker could neither
    read nor drop it: consume the result in the call and return plain data.
    """

    @functools.wraps(call)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            answer = call(*args, **kwargs)
        except BaseException as error:
            release_frames(error)
            raise
        if isinstance(answer, THREAD_BOUND):
            del answer
            raise TypeError(
                f"{getattr(call, '__name__', call)!s} answered a query result, which belongs "
                "to the thread that made it: read it there and return plain data"
            )
        return answer

    return run

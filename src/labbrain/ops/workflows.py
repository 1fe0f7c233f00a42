"""The work of each task workflow (ingest, reindex, embed), bound to an opened store.

:func:`task_runner` is how every adapter gets a :class:`~labbrain.tasks.runner.TaskRunner`:
the runner knows how to checkpoint and drive a task, and is handed here the executors that do
each workflow's work on one :class:`~labbrain.core.LabBrain`.
"""

from __future__ import annotations

import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from labbrain.core import LabBrain
from labbrain.errors import InputError
from labbrain.ingest.load import VAULT, LoadProgress, detect_format, read_input
from labbrain.tasks.ledger import TaskState
from labbrain.tasks.runner import StepContext, TaskRunner


# ---------------------------------------------------------------------- ingest
def ingest_params(
    source: str,
    *,
    graph: str | None = None,
    fmt: str | None = None,
    allow_unverified: bool = False,
) -> dict[str, Any]:
    """The parameters of an ingest task for ``source``: an absolute path (checked now to be a
    file, or an Obsidian vault's directory) or ``-`` for stdin, the optional target graph,
    the format (detected here, so an unknown one is refused before the task exists), the
    load id its write will carry, and whether nanopublications whose signature is not
    verified are loaded (marked so) rather than left out."""
    fmt = detect_format(source, fmt)
    label = source
    if source != "-":
        path = Path(source)
        if not (path.is_dir() if fmt == VAULT else path.is_file()):
            raise InputError(f"{source}: no such {'vault' if fmt == VAULT else 'file'}")
        source = str(path.resolve())
    return {
        "source": source,
        "label": label,
        "graph": graph,
        "format": fmt,
        "loadId": uuid.uuid4().hex,
        "allowUnverified": allow_unverified,
    }


def run_ingest(brain: LabBrain, state: TaskState, steps: StepContext) -> dict[str, Any]:
    """Load the task's file with ``state.params`` (see :func:`ingest_params`).

    Never writes twice: a load whose write was committed before the task was interrupted
    carries the task's load id in its record, and is then not written again. On resume the
    in-memory steps (read, repair_context, parse) run again from the file, which must still
    have the digest the first run read.
    """
    params = state.params
    load_id = params["loadId"]
    committed = [d for d in brain.datasets() if d["loadId"] == load_id]
    if committed:
        steps.enter("index")
        brain.index.sync(brain.store)
        record = committed[0]
        return {
            "graph": record["graph"],
            "quads": record["quads"],
            "nodes": record["nodes"],
            "note": "the write had been committed before the interruption",
        }
    steps.enter("read")
    source = params["source"]
    data = steps.inputs.get("data")
    if data is None and source == "-":
        raise InputError(
            "this load read stdin, which cannot be read again; pipe the data to "
            "`labbrain load -` once more"
        )
    read = read_input(
        source,
        brain.settings,
        params.get("format"),
        data,
        allow_unverified=bool(params.get("allowUnverified", False)),
    )
    expected = state.results.get("sourceDigest")
    if expected is not None and expected != read.digest:
        raise InputError(f"{source} changed since the task read it first; start a new load instead")
    steps.note(sourceDigest=read.digest)

    def progress(where: LoadProgress) -> None:
        steps.note(entries=where.entries)
        steps.enter(where.name)

    report = brain.load(
        source,
        graph=params.get("graph"),
        read=read,
        load_id=load_id,
        progress=progress,
    )
    # The report names the file as the user gave it; the load record has the full path.
    return report.as_dict() | {"source": params.get("label", source), "loadId": report.load_id}


def run_reindex(brain: LabBrain, state: TaskState, steps: StepContext) -> dict[str, Any]:
    """Rebuild the text index of every dataset from the store."""
    steps.enter("scan")
    datasets = brain.datasets()
    steps.enter("index")
    report = brain.reindex()
    return {"datasets": len(datasets), "indexed": report.reindexed, "removed": report.removed}


# ---------------------------------------------------------------------- embed
def run_embed(brain: LabBrain, state: TaskState, steps: StepContext) -> dict[str, Any]:
    """Embed the nodes that are new or changed since the last run (every node for another
    model) into the vector index, batch by batch, and drop the vectors of nodes that are gone
    (then keep a large index's search matrix for the next process: ``keep_snapshot``).

    Each batch is committed: a cancelled or interrupted run keeps the vectors computed so far
    and the next run (or a resume) continues from there. Progress is noted in the results
    (``embedded`` of ``toEmbed``); ``inputs["on_batch"](done, total)``, when given, is called
    before each batch and at the end."""
    from labbrain.index.embeddings import provider_for

    del state  # the plan is made again from the indexes: nothing to carry over
    steps.enter("scan")
    provider = provider_for(brain.settings)
    vectors = brain.vectors
    plan = vectors.plan(brain.index, provider.model_id)
    total = len(plan.todo)
    steps.note(model=provider.model_id, toEmbed=total, unchanged=plan.unchanged, embedded=0)
    on_batch = steps.inputs.get("on_batch")
    steps.enter("embed")
    started = time.monotonic()

    def before_batch(done: int) -> None:
        steps.enter("embed")  # where a cancellation takes effect
        steps.note(embedded=done)
        if on_batch is not None:
            on_batch(done, total)

    embedded = vectors.update(
        provider, plan, batch_size=brain.settings.embedding_batch_size, before_batch=before_batch
    )
    seconds = time.monotonic() - started
    if on_batch is not None:
        on_batch(embedded, total)
    steps.enter("prune")
    removed = vectors.remove(plan.orphans)
    vectors.keep_snapshot()  # a large set's search matrix, for the next process's first search
    return {
        "model": provider.model_id,
        "dimension": provider.dimension,
        "toEmbed": total,
        "embedded": embedded,
        "unchanged": plan.unchanged,
        "removed": removed,
        "vectors": vectors.count(),
        "seconds": round(seconds, 3),
        "textsPerSecond": round(embedded / seconds, 1) if embedded and seconds > 0 else None,
    }


#: What a cancelled run of a workflow leaves behind (default: nothing).
CANCEL_NOTES: dict[str, str] = {
    "ingest": "nothing was written and the dataset is as before; load again to load it",
    "embed": "the vectors computed so far were kept; embed again to continue",
}


def task_runner(brain: LabBrain) -> TaskRunner:
    """A task runner over ``brain``'s store, running every workflow on ``brain`` (in its mode:
    a read-only brain's runner reads task states and refuses to run anything)."""
    executors = {
        "ingest": partial(run_ingest, brain),
        "reindex": partial(run_reindex, brain),
        "embed": partial(run_embed, brain),
    }
    return TaskRunner(brain.store, executors, read_only=brain.read_only, cancel_notes=CANCEL_NOTES)

"""The int8 search matrix of a large vector index, kept beside its file for the next process.

From :data:`labbrain.index.vectors.LARGE` vectors on, the first search of a process reads
every float32 vector from ``vectors.sqlite`` and scales it to int8 (3.6 s at 1,000,000
vectors on 2 cores). ``labbrain embed`` ends by writing that matrix next to the file
(:meth:`labbrain.index.vectors.VectorIndex.keep_snapshot`), as ``vectors.sqlite.snapshot-
<tag>.npy`` (the int8 rows, memory-mapped when read) and ``.keys`` (the (dataset graph, node
IRI) of each row), so that a search process maps it instead (0.5 s, mostly the keys).
Searches never write one.

The tag names the index's state: its instance id and a stamp that every write to the index
draws anew (:func:`labbrain.index.vectors._bump`), so a snapshot is read only for exactly the
vectors it was made from, even after the file was replaced by an older copy and written
again. A snapshot is derived data and an optimisation: one that is missing, partly written or
unreadable is ignored (the vectors are read from SQLite), writing one that fails leaves
nothing behind, and writing one removes every other snapshot of the same file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labbrain.files import atomic_file

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Key = tuple[str, str]
_MATRIX, _KEYS = ".npy", ".keys"


def _base(path: Path, version: tuple[str, ...]) -> str:
    """The snapshot files' common name for ``version`` of the index at ``path``."""
    tag = hashlib.sha256("\x00".join(version).encode("utf-8")).hexdigest()[:20]
    return f"{path.name}.snapshot-{tag}"


def read(
    path: Path, version: tuple[str, ...], count: int, dimension: int
) -> tuple[list[Key], NDArray[np.int8]] | None:
    """(keys, int8 matrix memory-mapped read-only) of the snapshot of ``version``, or None when
    there is none or it does not hold ``count`` rows of ``dimension`` int8 values and as many
    keys."""
    import numpy as np

    base = path.with_name(_base(path, version))
    try:
        matrix = np.load(base.with_name(base.name + _MATRIX), mmap_mode="r", allow_pickle=False)
        graphs_line, _, rest = base.with_name(base.name + _KEYS).read_text("utf-8").partition("\n")
        graphs = json.loads(graphs_line)
        lines = rest.split("\n") if rest else []
        keys = [(graphs[int(code)], iri) for code, iri in (line.split("\t", 1) for line in lines)]
    except (OSError, ValueError, IndexError, TypeError):
        return None
    if matrix.dtype != np.int8 or matrix.shape != (count, dimension) or len(keys) != count:
        return None
    return keys, matrix


def write(path: Path, version: tuple[str, ...], keys: list[Key], matrix: Any) -> bool:
    """Keep ``keys`` and the int8 ``matrix`` as the snapshot of ``version`` (each file written
    whole, then renamed into place: :func:`labbrain.files.atomic_file`; the matrix last, so a
    reader finding it finds the keys) and remove the other snapshots of ``path``. Returns
    False, leaving nothing partial, when it cannot (a full disk, a read-only folder, a key
    that a line cannot hold)."""
    import numpy as np

    remove(stale(path, version))
    base = _base(path, version)
    if any("\n" in iri or "\t" in iri for _, iri in keys):
        return False
    graphs = sorted({graph for graph, _ in keys})
    code = {graph: str(number) for number, graph in enumerate(graphs)}
    text = json.dumps(graphs) + "\n" + "\n".join(f"{code[g]}\t{iri}" for g, iri in keys)
    written = path.with_name(base + _KEYS)
    try:
        with atomic_file(written) as handle:
            handle.write(text.encode("utf-8"))
        with atomic_file(path.with_name(base + _MATRIX)) as handle:
            np.save(handle, np.ascontiguousarray(matrix, dtype=np.int8))
    except OSError:
        remove([written])
        return False
    return True


def stale(path: Path, version: tuple[str, ...] | None) -> list[Path]:
    """The snapshot files of the index at ``path`` that are not of ``version`` (all of them
    for None), partly written ones included, in name order."""
    prefix = None if version is None else _base(path, version) + "."
    found = [
        *path.parent.glob(f"{path.name}.snapshot-*"),
        *path.parent.glob(f".{path.name}.snapshot-*.partial"),  # a write cut short
    ]
    return sorted(old for old in found if prefix is None or not old.name.startswith(prefix))


def remove(files: Iterable[Path]) -> int:
    """Delete ``files`` (those already gone or undeletable are skipped); how many were."""
    removed = 0
    for old in files:
        with contextlib.suppress(OSError):
            old.unlink()
            removed += 1
    return removed

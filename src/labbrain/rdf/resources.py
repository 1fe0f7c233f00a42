"""Access to the files that ship with labbrain: ``ontology/*.ttl`` and ``queries/*.rq``.

In a built wheel they live inside the package (``labbrain/ontology``, ``labbrain/queries``);
in an editable install they are read from the source tree's top-level directories.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


def resource_dir(name: str) -> Traversable:
    """The directory ``name`` (``ontology`` or ``queries``) shipped with the package.

    Raises FileNotFoundError when neither the installed copy nor the source tree has it.
    """
    packaged = resources.files("labbrain").joinpath(name)
    if packaged.is_dir():
        return packaged
    source_tree = Path(__file__).resolve().parents[3] / name
    if source_tree.is_dir():
        return source_tree
    raise FileNotFoundError(f"labbrain resource directory {name!r} is missing from this install")


def read_resources(name: str, suffix: str) -> dict[str, str]:
    """All files ending in ``suffix`` in resource directory ``name``, by file name, sorted."""
    folder = resource_dir(name)
    files = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(suffix)),
        key=lambda entry: entry.name,
    )
    return {entry.name: entry.read_text(encoding="utf-8") for entry in files}

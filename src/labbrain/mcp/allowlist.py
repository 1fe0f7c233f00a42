"""Which files an assistant may make labbrain read: only inside directories the user allowed.

``load_dataset`` (MCP) takes a path from a model, which may have read it on the web. A path is
accepted only when, with every symlink resolved, it names a regular file inside one of the
directories in ``LABBRAIN_LOAD_DIRS`` (also resolved). Nothing is opened to decide: the check
uses the file system's metadata only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from labbrain.errors import PathNotAllowed


def allowed_file(path: str, directories: Sequence[Path]) -> Path:
    """The resolved path of ``path`` if it is a regular file inside an allowed directory.

    A relative path is taken relative to the first allowed directory. Raises PathNotAllowed
    (saying what to do) when no directory is allowed, the path leaves them (``..``, an
    absolute path elsewhere, a symlink pointing out), or it is not a regular file.
    """
    if not directories:
        raise PathNotAllowed(
            path,
            "assistants may not load files: the user has to list the directories they may "
            "read in LABBRAIN_LOAD_DIRS (e.g. LABBRAIN_LOAD_DIRS=/data/exports, several "
            f"separated by {os.pathsep!r}; `labbrain mcp-config --load-dir DIR` writes it)",
        )
    if "\x00" in path:
        raise PathNotAllowed(path.replace("\x00", "\\0"), "a path cannot contain NUL")
    roots = [Path(directory).expanduser().resolve() for directory in directories]
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        candidate = roots[0] / candidate
    resolved = candidate.resolve()
    if not any(resolved.is_relative_to(root) for root in roots):
        raise PathNotAllowed(
            path, "outside the directories allowed by LABBRAIN_LOAD_DIRS (symlinks resolved)"
        )
    if not resolved.is_file():
        raise PathNotAllowed(path, "no such file in the allowed directories")
    return resolved

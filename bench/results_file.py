"""Writing a benchmark's result files without the folders of the machine that ran it.

Results record the commands and files they were made with; written as they are, they would
hold this checkout's absolute path. :func:`write_result` writes them relative to the project
folder instead, as the commands are run from there: the project folder becomes ``.`` and a
folder beside it ``../name`` (``../shared/data``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def portable(text: str, root: Path = ROOT) -> str:
    """``text`` with every absolute path in ``root`` written from ``root`` (``.``, ``./bench``)
    and every one in the folder around it as ``../name``. Only whole path components count
    (with the project in ``/srv/lab``, ``/srv/laboratory`` is ``../laboratory``), and a path
    inside an address (``https://host/srv/lab``) is left alone."""
    for folder, relative in ((root, "."), (root.parent, "..")):
        if folder == folder.parent:  # the file system's root: no folder around it
            continue
        text = re.sub(
            r"(?<![\w.:/-])" + re.escape(str(folder)) + r"(?=/|[^\w.-]|$)", relative, text
        )
    return text


def write_result(path: Path, text: str) -> None:
    """Write one result file (UTF-8) with :func:`portable` paths."""
    path.write_text(portable(text), encoding="utf-8")

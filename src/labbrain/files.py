"""Files written whole or not at all."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_file(target: Path) -> Iterator[IO[bytes]]:
    """A file that becomes ``target`` when the block completes: written beside it, synced,
    then renamed over it, so ``target`` is never seen half written. If the block raises, the
    file is removed and ``target`` is left as it was. A new file gets the mode any new file
    gets (0666 less the umask, as ``cp`` gives it); a file replaced keeps its mode. A
    symbolic link is written through (its target is replaced), as ``cp`` does."""
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    try:
        kept: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        kept = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        # The name stays within NAME_MAX whatever the target's length.
        partial = target.with_name(f".{target.name[:200]}.{secrets.token_hex(4)}.partial")
        try:
            descriptor = os.open(partial, flags, 0o666)  # the kernel applies the umask
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(descriptor, "wb") as handle:
            if kept is not None:
                os.chmod(partial, kept)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise

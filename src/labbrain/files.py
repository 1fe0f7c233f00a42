"""Files on disk: written whole or not at all, and paths checked before they are used.

:func:`atomic_file` writes a file so that it is never seen half written. A command checks each
path it is given before any work starts (a readable file, a directory, a file or directory it
can create) and refuses it with :class:`~labbrain.errors.UnusablePath`, one line saying what
the path is instead: missing, a directory, a device or named pipe, unreadable, in a place where
nothing can be created, a name too long. :func:`path_error` says the same for an OS error met
later, while reading or writing. The loader and the command line use them; this module imports
nothing from labbrain but the error tree.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from labbrain.errors import UnusablePath


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


#: What a path names when it is not what a command needs, by file type.
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFREG: "a file",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
}


def path_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, for a message ("a directory", "a named pipe
    (FIFO)", ...)."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def path_error(path: str, error: OSError) -> UnusablePath:
    """The one-line error for an OSError met while using ``path`` (the user's spelling of
    it), saying what went wrong in words and, where it helps, what to do."""
    if error.errno == errno.ENOTDIR:
        return UnusablePath(path, _not_a_directory(path))
    if error.errno == errno.ENAMETOOLONG:
        return UnusablePath(path, _name_too_long(path))
    reasons = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied; check the permissions of it and of its directory",
        errno.EPERM: "operation not permitted here; choose a location you may write to",
        errno.EROFS: "on a read-only file system; choose a writable location",
        errno.ENOSPC: "no space left on the device",
        errno.EISDIR: "is a directory",
        errno.ELOOP: "too many levels of symbolic links",
        errno.EEXIST: "already exists",
    }
    reason = reasons.get(error.errno or 0) or (error.strerror or type(error).__name__).lower()
    return UnusablePath(path, reason)


def _not_a_directory(path: str) -> str:
    """The reason for ENOTDIR: which part of ``path`` is not a directory, when it can tell."""
    for parent in reversed(Path(path).parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            break
        if not stat.S_ISDIR(mode):
            return f"{parent} is {path_kind(mode)}, not a directory"
    return "a part of the path is not a directory"


def _name_too_long(path: str) -> str:
    """The reason for ENAMETOOLONG, with the file system's limits when known."""
    existing = next((p for p in Path(path).absolute().parents if _exists(p)), Path("/"))
    try:
        name_max, path_max = (os.pathconf(existing, n) for n in ("PC_NAME_MAX", "PC_PATH_MAX"))
    except (OSError, ValueError):
        return "file name too long for the file system; use shorter names"
    return (
        f"file name too long (the file system allows {name_max} bytes per name and "
        f"{path_max} per path); use shorter names"
    )


def _exists(path: Path) -> bool:
    try:
        path.stat()
    except OSError:
        return False
    return True


def _stat(path: str) -> os.stat_result | None:
    """``os.stat`` of ``path`` (symbolic links followed), None when nothing is there; other
    failures (a name too long, a part not a directory, ...) raise UnusablePath."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise path_error(path, error) from None


def check_input_file(
    path: str, *, stream_hint: str | None = None, directory_hint: str | None = None
) -> Path:
    """``path``, checked to name an existing regular file this process may read (symbolic
    links followed). Otherwise raises UnusablePath saying what the path is: missing, a
    directory (``directory_hint`` says what to do), a device or named pipe (``stream_hint``,
    formatted with ``path``, says how to pass its content instead), unreadable, or a name
    too long. Devices and pipes are refused without being opened (a pipe would block)."""
    found = _stat(path)
    if found is None:
        dangling = os.path.islink(path)
        raise UnusablePath(path, "no such file" + (" (a broken symbolic link)" if dangling else ""))
    if stat.S_ISDIR(found.st_mode):
        raise UnusablePath(
            path, "is a directory, not a file" + (f"; {directory_hint}" if directory_hint else "")
        )
    if not stat.S_ISREG(found.st_mode):
        hint = f"; {stream_hint.format(path=path)}" if stream_hint else ""
        raise UnusablePath(path, f"is {path_kind(found.st_mode)}, not a file{hint}")
    if not os.access(path, os.R_OK):
        raise UnusablePath(
            path, "is not readable (permission denied); check its permissions (ls -l)"
        )
    return Path(path)


def check_input_directory(path: str, *, what: str = "directory") -> Path:
    """``path``, checked to name an existing directory this process may list and read.
    Otherwise raises UnusablePath saying what it is (``what`` names the directory asked for,
    e.g. "backup directory")."""
    found = _stat(path)
    if found is None:
        raise UnusablePath(path, f"no such {what}")
    if not stat.S_ISDIR(found.st_mode):
        raise UnusablePath(path, f"is {path_kind(found.st_mode)}, not a {what}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UnusablePath(path, "is not readable (permission denied); check its permissions")
    return Path(path)


def check_output_file(
    path: str, *, stream_hint: str | None = None, make_parents: bool = False
) -> Path:
    """``path``, checked to be a file this process can create, or replace through a file
    written beside it: it is missing or a regular file, in a directory (created later when
    ``make_parents``) where this process may write. Otherwise raises UnusablePath: a
    directory, a device or named pipe (``stream_hint``, formatted with ``path``, says how to
    write to one instead), a missing directory, a part of the path that is not a directory,
    a directory where no file can be created (tried, see :func:`_check_writable_parent`), or
    a name too long. An error met later, while writing, is for :func:`path_error`."""
    found = _stat(path)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise UnusablePath(path, "is a directory; name a file to write")
    if found is not None and not stat.S_ISREG(found.st_mode):
        hint = f"; {stream_hint.format(path=path)}" if stream_hint else ""
        raise UnusablePath(path, f"is {path_kind(found.st_mode)}, not a file{hint}")
    _check_writable_parent(path, what="file", make_parents=make_parents)
    return Path(path)


def check_new_directory(path: str, *, what: str = "directory") -> Path:
    """``path``, checked to be a directory this process can create (its parents too), or an
    existing directory. Otherwise raises UnusablePath: a file, device or named pipe, a part
    of the path that is not a directory, no permission to create it there, or a name too
    long. (Whether an existing directory is empty is for the caller.)"""
    found = _stat(path)
    if found is not None and not stat.S_ISDIR(found.st_mode):
        raise UnusablePath(
            path, f"is {path_kind(found.st_mode)}, not a directory; name a new {what}"
        )
    if found is None:
        _check_writable_parent(path, what=what, make_parents=True)
    return Path(path)


def _check_writable_parent(path: str, *, what: str, make_parents: bool) -> None:
    """Raise UnusablePath unless ``path`` can be created: its nearest existing ancestor is
    a directory (its parent, unless ``make_parents``) where this process can create a file,
    which is tried (a file created and removed at once)."""
    parent = Path(path).absolute().parent
    ancestor = parent
    while (found := _stat(str(ancestor))) is None and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if found is None or not stat.S_ISDIR(found.st_mode):
        kind = path_kind(found.st_mode) if found is not None else "missing"
        raise UnusablePath(path, f"{ancestor} is {kind}, not a directory")
    if ancestor != parent and not make_parents:
        raise UnusablePath(path, f"no such directory {parent}; create it first")
    # Creating a file says what access checks cannot (a read-only mount, or a location closed
    # even to root, such as /sys).
    probe = ancestor / f".labbrain-probe-{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as error:
        reason = path_error(str(ancestor), error).reason.split(";")[0]
        raise UnusablePath(
            path, f"cannot create a {what} in {ancestor} ({reason}); choose another location"
        ) from None

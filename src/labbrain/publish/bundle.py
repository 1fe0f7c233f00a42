"""Evidence bundles: a Result or Evidence node, its lineage and figures, as an RO-Crate
directory (``labbrain bundle``, the ``bundle_evidence`` tool).

:func:`make_bundle` reads the node and its lineage through the discourse read models
(:mod:`labbrain.publish.lineage`), the ORCID iDs of the people named from the people map
(:mod:`labbrain.publish.people`), the DOIs from the sources' titles and text, and writes the
crate (:mod:`labbrain.publish.crate`): ``ro-crate-metadata.json``, ``README.md`` and the
node's vault attachments under ``figures/``. Remote images stay references (nothing is
fetched). The directory is written whole or not at all: built in a hidden directory beside
the target and renamed into place; a failure leaves nothing behind. Only the bundle's own
files are written, under names labbrain makes (an attachment is copied by a cleaned base
name), so nothing lands outside the target whatever the graph holds.
"""

from __future__ import annotations

import getpass
import json
import mimetypes
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qs, quote, unquote, urlsplit

from pydantic import BaseModel, Field

from labbrain.discourse.models import NodeRef
from labbrain.discourse.reader import DiscourseReader
from labbrain.discourse.refs import node_ref, slug
from labbrain.errors import UnusablePath
from labbrain.files import check_new_directory, path_error
from labbrain.index.text import IndexedNode
from labbrain.publish import crate
from labbrain.publish.crate import (
    FIGURES_DIR,
    METADATA_FILE,
    README_FILE,
    CrateInput,
    CrateVersion,
    Figure,
    licence,
)
from labbrain.publish.lineage import bundled_node, lineage_of, source_dois
from labbrain.publish.people import People

#: Largest vault attachment copied into a bundle, in bytes (a larger one stays a reference).
MAX_ATTACHMENT_BYTES = 64 * 1024**2
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class BundleOptions:
    """How a bundle is made: RO-Crate version, licence (SPDX id or URL), the human who asks
    for it and the assistant that makes it (if one does), the dataset to look the uid up in,
    and whether an existing bundle at the target may be replaced."""

    crate_version: CrateVersion = "1.2"
    license: str = crate.DEFAULT_LICENSE
    human: str | None = None
    agent: str | None = None
    dataset: str | None = None
    replace: bool = False


class BundlePerson(BaseModel):
    """A person named in the bundle."""

    name: str
    orcid: str | None = Field(description="their ORCID IRI, when the people map knows it")


class BundleFigure(BaseModel):
    """One image of the node and what the bundle holds of it."""

    image: str = Field(description="the image as the node embeds it")
    inCrate: str | None = Field(
        description="its path in the bundle (copied) or its URL (a reference); None when it "
        "is in the bundle neither way"
    )
    copied: bool
    note: str | None = None


class BundleReport(BaseModel):
    """An evidence bundle written: what it holds and what the node does not say."""

    bundle: str = Field(description="the bundle's directory (the tool: its name)")
    node: NodeRef
    crateVersion: CrateVersion
    license: str
    files: list[str] = Field(description="files written, relative to the bundle")
    evidence: list[str] = Field(description="uids of the Evidence of a Result")
    statements: list[str] = Field(description="uids of the claims (hypotheses, conclusions)")
    questions: list[str] = Field(description="uids of the questions")
    sources: list[str] = Field(description="uids of the sources")
    dois: list[str] = Field(description="DOIs of the sources, as https://doi.org/ IRIs")
    people: list[BundlePerson]
    figures: list[BundleFigure]
    stated: dict[str, str] = Field(description="method, system, observable as the node states")
    missing: list[str] = Field(
        description="what the node does not state of method, system, observable (listed in "
        "the crate as lb:notStated, never filled in)"
    )
    entities: int = Field(description="entities in ro-crate-metadata.json")
    notes: list[str] = Field(default_factory=list)


def default_human() -> str:
    """Who asks for a bundle when nobody is named: the login name of this process."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown user"


def make_bundle(
    scope: DiscourseReader, uid: str, target: Path, options: BundleOptions | None = None
) -> BundleReport:
    """Write the evidence bundle of node ``uid`` (a Result or Evidence node) to the directory
    ``target``, whole or not at all, and say what it holds.

    ``target`` must not exist, or be an empty directory, or (with ``options.replace``) hold
    an earlier bundle (a ``ro-crate-metadata.json``), which is replaced at once when the new
    one is complete. Raises NodeNotFound for an unknown uid, InvalidArgument for a node of
    another type or a bad licence, UnusablePath for a target that cannot be used (said before
    anything is read); nothing is written then, and nothing is left when writing fails."""
    options = options or BundleOptions()
    chosen = licence(options.license)
    _check_target(target, replace=options.replace)
    subject = bundled_node(scope, uid, options.dataset)
    lineage = lineage_of(scope, subject)
    index = scope.brain.index
    record = next((d for d in scope.brain.datasets() if d["graph"] == subject.graph), {})
    human = " ".join((options.human or default_human()).split())[:300] or "unknown user"
    names = [n.creator for n in lineage.nodes() if n.creator]
    people = People(scope.brain.store).resolve(dict.fromkeys([*names, human]))
    dois = {source.iri: source_dois(scope.brain.index, source) for source in lineage.sources}
    images = scope.get_node_images(subject.uid, slug(subject.graph)).imageUrls
    plan = _figures(images, record.get("sourceFile"))
    data = CrateInput(
        lineage=lineage,
        content=index.content(subject.graph, subject.iri),
        dois=dois,
        people=people,
        figures=[figure for figure, _, _ in plan if figure is not None],
        crate_version=options.crate_version,
        licence=chosen,
        human=human,
        agent=options.agent,
        created=datetime.now(UTC).replace(microsecond=0).isoformat(),
        dataset=slug(subject.graph),
        export_id=record.get("exportId"),
    )
    metadata = crate.crate_metadata(data)
    files = {
        METADATA_FILE: json.dumps(metadata, ensure_ascii=False, indent=2).encode("utf-8"),
        README_FILE: crate.readme(data).encode("utf-8"),
    }
    copies = {
        unquote(figure.ident): origin
        for figure, origin, _ in plan
        if figure is not None and figure.copied and origin is not None
    }
    _write_directory(target, files, copies, replace=options.replace)
    stated = crate.stated_fields(data.content)
    return BundleReport(
        bundle=str(target),
        node=_bounded_ref(subject),
        crateVersion=options.crate_version,
        license=chosen.iri,
        files=sorted([*files, *copies]),
        evidence=[n.uid for n in lineage.evidence],
        statements=[n.uid for n in lineage.statements],
        questions=[n.uid for n in lineage.questions],
        sources=[n.uid for n in lineage.sources],
        dois=list(dict.fromkeys(d for s in lineage.sources for d in dois[s.iri])),
        people=[BundlePerson(name=name, orcid=orcid) for name, orcid in people.items()],
        figures=[
            BundleFigure(
                image=crate.cut(image, crate.MAX_NAME),
                inCrate=figure.ident if figure is not None else None,
                copied=figure is not None and figure.copied,
                note=note,
            )
            for image, (figure, _, note) in zip(images, plan, strict=True)
        ],
        stated={name: crate.cut(value, crate.MAX_NAME) for name, value in stated.items()},
        missing=crate.missing_fields(stated),
        entities=len(metadata["@graph"]),
        notes=[
            *data.cuts,
            *(
                f"{role} cut at {len(getattr(lineage, role))} of {total}"
                for role, total in lineage.cut.items()
            ),
        ],
    )


def _bounded_ref(node: IndexedNode) -> NodeRef:
    """The node's attributed reference with its title cut to a name's length."""
    ref = node_ref(node)
    ref.title = crate.cut(ref.title, crate.MAX_NAME)
    return ref


# ------------------------------------------------------------------------------ figures
def _figures(
    images: list[str], source_file: str | None
) -> list[tuple[Figure | None, Path | None, str | None]]:
    """For each image: its figure in the crate (None when it cannot be in it), the file to
    copy (an attachment), and a note on what happened to it."""
    vault = Path(source_file) if source_file and os.path.isdir(source_file) else None
    plan: list[tuple[Figure | None, Path | None, str | None]] = []
    used: set[str] = set()
    for number, image in enumerate(images, start=1):
        name = f"Figure {number}"
        scheme = urlsplit(image).scheme.lower()
        if scheme in ("http", "https"):
            kind = mimetypes.guess_type(urlsplit(image).path)[0]
            plan.append((Figure(image, name, copied=False, encoding=kind), None, None))
            continue
        if scheme != "obsidian":
            plan.append((None, None, "not an http(s) URL or a vault attachment: left out"))
            continue
        origin, why = _attachment(image, vault)
        if origin is None:
            plan.append((None, None, why))
            continue
        local = _crate_name(origin.name, used)
        kind = mimetypes.guess_type(origin.name)[0]
        ident = quote(f"{FIGURES_DIR}/{local}")
        figure = Figure(ident, name, copied=True, encoding=kind, size=origin.stat().st_size)
        plan.append((figure, origin, None))
    return plan


def _attachment(image: str, vault: Path | None) -> tuple[Path | None, str | None]:
    """The vault file an ``obsidian://open`` URI names, if it can be copied: inside the
    vault the dataset was loaded from (symbolic links resolved), a regular file, not too
    large. Else None and why."""
    if vault is None:
        return None, "the vault this dataset was loaded from is not on this machine: not copied"
    query = parse_qs(urlsplit(image).query)
    named_vault, file = query.get("vault", [""])[0], query.get("file", [""])[0]
    root = vault.resolve()
    if named_vault != root.name or not file or "\x00" in file:
        return None, "names another vault than the one this dataset was loaded from: not copied"
    path = (root / file).resolve()
    if not path.is_relative_to(root):
        return None, "points outside the vault: not copied"
    if not path.is_file():
        return None, "no such file in the vault: not copied"
    if path.stat().st_size > MAX_ATTACHMENT_BYTES:
        return None, f"larger than {MAX_ATTACHMENT_BYTES // 1024**2} MiB: not copied"
    return path, None


def _crate_name(name: str, used: set[str]) -> str:
    """A file name for an attachment in the crate's figures folder: letters, digits, ``.``,
    ``_`` and ``-`` only, not hidden, at most 100 characters, distinct from ``used``."""
    stem, suffix = os.path.splitext(PurePosixPath(name).name)
    suffix = _SAFE_NAME.sub("", suffix)[:12]
    stem = _SAFE_NAME.sub("_", stem).lstrip("._-")[:80] or "figure"
    candidate, n = stem + suffix, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}-{n}{suffix}"
    used.add(candidate)
    return candidate


# ------------------------------------------------------------------------------ writing
def _check_target(target: Path, *, replace: bool) -> None:
    """Refuse a target that cannot take the bundle (UnusablePath), before any work: a file,
    a place where no directory can be made, a directory that holds something other than an
    earlier bundle, or an earlier bundle without ``replace``."""
    check_new_directory(str(target), what="bundle directory")
    if not target.is_dir():
        return
    try:
        entries = os.listdir(target)
    except OSError as error:
        raise path_error(str(target), error) from None
    if not entries:
        return
    if METADATA_FILE not in entries:
        raise UnusablePath(
            str(target),
            "is a directory that holds other files; name a new directory for the bundle",
        )
    if not replace:
        raise UnusablePath(
            str(target),
            "holds a bundle already; name a new directory, or replace it (--replace; the "
            "tool: replace true)",
        )


def _write_directory(
    target: Path, files: dict[str, bytes], copies: dict[str, Path], *, replace: bool
) -> None:
    """Make ``target`` hold exactly ``files`` (name -> bytes) and ``copies`` (name in the
    crate -> file copied), all at once: written in a hidden directory beside it, synced, and
    renamed over it (an earlier bundle there is set aside first, and removed once the new
    one is in place). On any failure the hidden directory is removed and ``target`` is as it
    was."""
    parent = target.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        building = _hidden_directory(parent, target.name)
    except OSError as error:
        raise path_error(str(target), error) from None
    aside: Path | None = None
    try:
        for name, content in files.items():
            _write_file(building / name, content)
        for name, origin in copies.items():
            destination = building / name
            destination.parent.mkdir(exist_ok=True)
            shutil.copyfile(origin, destination)
            _sync(destination)
        _check_target(target, replace=replace)  # as it is now, not as it was at the start
        if target.is_dir() and os.listdir(target):
            aside = _hidden_directory(parent, target.name)
            os.rename(target, aside / "old")
        os.rename(building, target)
        _sync(parent)
    except BaseException as error:
        shutil.rmtree(building, ignore_errors=True)
        if aside is not None and (aside / "old").exists() and not target.exists():
            os.rename(aside / "old", target)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        if isinstance(error, OSError):
            raise path_error(str(target), error) from None
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _write_file(path: Path, content: bytes) -> None:
    with open(path, "xb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _sync(path: Path) -> None:
    """Flush ``path`` (a file or a directory) to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _hidden_directory(parent: Path, name: str) -> Path:
    """A new hidden directory in ``parent``, named after ``name``, with the mode any new
    directory gets (0777 less the umask)."""
    while True:
        path = parent / f".{name[:100]}.{secrets.token_hex(4)}.partial"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue

"""The bundle tool: an evidence bundle (RO-Crate) of a Result or Evidence node, written under
the bundle directory of the settings (``LABBRAIN_BUNDLE_DIR``) and nowhere else.

A thin adapter over :func:`~labbrain.publish.bundle.make_bundle`. A model names a bundle, never
a path: the name is one plain directory name (letters, digits, ``.``, ``_``, ``-``; not hidden,
no separator, no ``..``), and the directory it names must not be a symbolic link, so the bundle
lands in the bundle directory itself. The answer names the bundle and its files relative to it,
never a server path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from labbrain.errors import PathNotAllowed, UnusablePath
from labbrain.mcp.common import WRITE, ToolContext, ToolSpec
from labbrain.publish.bundle import BundleOptions, BundleReport, default_human, make_bundle
from labbrain.publish.crate import DEFAULT_LICENSE

Dataset = Annotated[str | None, Field(description="dataset slug, if the uid is in several")]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def bundle_path(directory: Path, name: str) -> Path:
    """The directory of bundle ``name`` in the bundle directory ``directory`` (created when
    missing). Raises PathNotAllowed when the name is not one plain directory name (a path,
    ``..``, hidden, too long) or names a symbolic link, so that nothing is ever written
    outside ``directory``."""
    if not _NAME.fullmatch(name) or ".." in name:
        shown = name[:100].replace("\x00", "\\0")
        raise PathNotAllowed(
            shown,
            "a bundle name is one directory name of letters, digits, '.', '_' and '-' (at "
            "most 100, not starting with '.', no '/' or '..'), e.g. evidence-ar5rfh34m; the "
            "bundle is written in the bundle directory (LABBRAIN_BUNDLE_DIR)",
        )
    root = directory.expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise PathNotAllowed(
            name, "the bundle directory (LABBRAIN_BUNDLE_DIR) cannot be created; ask the user"
        ) from None
    target = root / name
    if target.is_symlink() or target.resolve().parent != root.resolve():
        raise PathNotAllowed(
            name, "names a symbolic link in the bundle directory; choose another name"
        )
    return target


def bundle_evidence(
    context: ToolContext,
    uid: Annotated[str, Field(description="uid of a Result or Evidence node (search_nodes)")],
    name: Annotated[
        str,
        Field(description="bundle name: a new directory in the bundle directory, e.g. evd-x1"),
    ],
    dataset: Dataset = None,
    crateVersion: Annotated[
        Literal["1.2", "1.1"], Field(description="RO-Crate version (1.1: the lab's own)")
    ] = "1.2",
    license: Annotated[
        str, Field(description="SPDX licence id (CC-BY-4.0, CC0-1.0) or licence URL")
    ] = DEFAULT_LICENSE,
    requestedBy: Annotated[
        str | None,
        Field(description="the person asking for the bundle (default: the server's user)"),
    ] = None,
    replace: Annotated[bool, Field(description="replace an earlier bundle of that name")] = False,
) -> BundleReport:
    """Bundle a Result or Evidence node as an RO-Crate in the bundle directory: its
    statement, lineage (its evidence, the claims it supports or opposes, the questions,
    the sources with their DOIs), the people (ORCID where known), its figures (remote
    images as links, vault attachments copied), licence and who made it; and a README.
    What the node does not say of method, system and observable comes back as missing,
    never filled in. Claims and questions cannot be bundled.

    Next: get_node on a lineage uid, or tell the user the bundle's name."""
    settings = context.brain.settings
    target = bundle_path(settings.bundle_dir, name)
    options = BundleOptions(
        crate_version=crateVersion,
        license=license,
        human=requestedBy or default_human(),
        agent=settings.agent_name,
        dataset=dataset,
        replace=replace,
    )
    try:
        report = make_bundle(context.reader, uid, target, options)
    except UnusablePath as problem:  # said of the bundle's name, not of a server path
        reason = problem.reason
        for where in {str(target), str(target.parent), str(target.parent.resolve())}:
            reason = reason.replace(where, "the bundle directory")
        raise PathNotAllowed(name, reason) from None
    report.bundle = name
    return report


TOOLS = (ToolSpec(bundle_evidence, "Bundle evidence as an RO-Crate", WRITE),)

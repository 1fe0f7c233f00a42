"""The two servers the conformance tests run against, as seen by a protocol client.

- ``labbrain``: ``labbrain serve --allow-update`` on a fresh store, a process of its own on a
  free loopback port; queries and updates go to ``/sparql``, every request carries the
  update token (``Authorization: Bearer``), as a client allowed to update does. Its default
  graph is the union of all graphs (``sd:UnionDefaultGraph``), so a test's default graph is
  given by the protocol's ``default-graph-uri`` (and its named graphs by
  ``named-graph-uri``).
- ``oxigraph``: the Oxigraph server of the ``oxigraph`` package (``oxigraph serve``), queries
  at ``/query``, updates at ``/update``; its default graph is its own default graph.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from conftest import oxigraph_server
from helpers import stop_process

LABBRAIN = "labbrain"
OXIGRAPH = "oxigraph"
SERVERS = (LABBRAIN, OXIGRAPH)
TOKEN = "w3c-conformance-token"


@dataclass
class Server:
    """A running SPARQL server: its kind, where queries and updates go, the headers every
    request carries, and whether its default graph is the union of its graphs."""

    kind: str
    query_url: str
    update_url: str
    headers: dict[str, str] = field(default_factory=dict)
    union_default_graph: bool = False


def _environment(home: Path) -> dict[str, str]:
    """The environment of a labbrain server: none of the caller's LABBRAIN_* settings, its
    own data and cache directories, and the update token."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LABBRAIN_")}
    env.update(
        XDG_DATA_HOME=str(home / "xdg-data"),
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        LABBRAIN_UPDATE_TOKEN=TOKEN,
    )
    return env


@contextmanager
def labbrain_server(directory: Path) -> Iterator[Server]:
    """``labbrain serve --allow-update --port 0`` on a fresh store in ``directory``, until
    the end of the block."""
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "labbrain",
            "--store",
            str(directory / "store"),
            "serve",
            "--port",
            "0",
            "--allow-update",
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(directory),
    )
    assert process.stderr is not None
    try:
        seen: list[str] = []
        url = None
        for line in process.stderr:  # warnings may come before the banner
            seen.append(line)
            found = re.search(r" at (http://127\.0\.0\.1:\d+/) ", line)
            if found:
                url = found.group(1)
                break
        assert url, "labbrain serve did not start:\n" + "".join(seen[-20:])
        for line in process.stderr:  # uvicorn says when it is ready
            if "Application startup complete" in line:
                break
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep it drained
        yield Server(
            LABBRAIN,
            url + "sparql",
            url + "sparql",
            headers={"Authorization": f"Bearer {TOKEN}"},
            union_default_graph=True,
        )
    finally:
        stop_process(process, timeout=30)  # type: ignore[arg-type]


@contextmanager
def oxigraph(directory: Path) -> Iterator[Server]:
    """``oxigraph serve`` on a fresh store in ``directory`` (conftest.oxigraph_server)."""
    with oxigraph_server(directory) as server:
        yield Server(OXIGRAPH, server.query, server.update)


@contextmanager
def started(kind: str, directory: Path) -> Iterator[Server]:
    """A server of ``kind`` (``labbrain`` or ``oxigraph``) in ``directory``."""
    starter = labbrain_server if kind == LABBRAIN else oxigraph
    with starter(directory) as server:
        yield server

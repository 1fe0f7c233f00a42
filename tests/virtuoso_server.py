"""A Virtuoso Open Source 7 server (Debian's ``virtuoso-opensource``) started for a test.

Each server gets its own database directory and ini file, listens on two free loopback
ports (SQL for ``isql-vt``, HTTP for SPARQL), lets the anonymous ``SPARQL`` user update (as a
lab's private server might; credentials come with the authenticated endpoints), and is
stopped at the end."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helpers import answers_ask, free_port, stop_process

VIRTUOSO = "virtuoso-t"
ISQL = "isql-vt"

_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
CheckpointInterval = 60
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty_buffers}
DirsAllowed = ., {dir}

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {dir}
MaxClientConnections = 8
ServerThreads = 8

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = {max_seconds}
"""


def available() -> bool:
    """True when the Virtuoso server and its SQL client are installed."""
    return shutil.which(VIRTUOSO) is not None and shutil.which(ISQL) is not None


@dataclass
class VirtuosoServer:
    """A running Virtuoso server on 127.0.0.1: SPARQL queries and updates at ``/sparql``,
    the Graph Store Protocol at ``/sparql-graph-crud``."""

    process: subprocess.Popen[bytes]
    base: str
    sql_port: int

    @property
    def query(self) -> str:
        return self.base + "/sparql"

    @property
    def update(self) -> str:
        return self.base + "/sparql"

    @property
    def store(self) -> str:
        return self.base + "/sparql-graph-crud"

    def sql(self, statements: str, *, timeout: float = 60) -> None:
        """Run SQL statements as the database administrator (``isql-vt``), within
        ``timeout`` seconds."""
        subprocess.run(
            [ISQL, f"127.0.0.1:{self.sql_port}", "dba", "dba", f"exec={statements}"],
            check=True,
            capture_output=True,
            timeout=timeout,
        )


@contextmanager
def virtuoso_server(
    directory: Path,
    *,
    max_rows: int = 100_000,
    buffers: tuple[int, int] = (20_000, 15_000),
    max_query_seconds: int | None = 60,
) -> Iterator[VirtuosoServer]:
    """Start Virtuoso on a fresh database in ``directory`` (created), on free loopback ports,
    with ``ResultSetMaxRows`` = ``max_rows``, ``NumberOfBuffers`` and ``MaxDirtyBuffers`` =
    ``buffers`` (8 KB pages each; the defaults suit a test's few thousand quads) and
    ``MaxQueryExecutionTime`` = ``max_query_seconds`` (None: no limit); wait until it answers
    a query; let the ``SPARQL`` user update; stop it at the end."""
    directory.mkdir(parents=True, exist_ok=True)
    for _attempt in range(5):
        sql_port, http_port = free_port(), free_port()
        ini = directory / "virtuoso.ini"
        ini.write_text(
            _INI.format(
                dir=directory,
                sql_port=sql_port,
                http_port=http_port,
                max_rows=max_rows,
                buffers=buffers[0],
                dirty_buffers=buffers[1],
                max_seconds=max_query_seconds or 0,
            ),
            encoding="utf-8",
        )
        process = subprocess.Popen(
            [VIRTUOSO, "-f", "-c", str(ini)],
            cwd=directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{http_port}"
        deadline = time.monotonic() + 60
        while process.poll() is None and not answers_ask(base + "/sparql"):
            assert time.monotonic() < deadline, "the Virtuoso server did not start"
            time.sleep(0.05)
        if process.poll() is None:
            break  # answering; else a port was taken meanwhile: try others
        for leftover in directory.glob("virtuoso*"):
            if leftover.name != "virtuoso.ini":
                leftover.unlink()
    else:
        raise AssertionError("the Virtuoso server did not start (5 attempts)")
    server = VirtuosoServer(process, base, sql_port)
    try:
        server.sql('GRANT SPARQL_UPDATE TO "SPARQL";')
        yield server
    finally:
        stop_process(process, timeout=30)

"""Print the W3C SPARQL 1.1 conformance counts of labbrain and the Oxigraph server.

    python tests/conformance/report.py

Runs the protocol tests and the query-evaluation tests (as tests/conformance does) on a fresh
``labbrain serve --allow-update`` and a fresh ``oxigraph serve``, and prints, per server and
suite, how many pass, fail and are not offered, then each test that does not pass with the
reason of w3c_deviations (or "UNEXPECTED"). The numbers go into docs/sparql.md, "Conformance".
"""

from __future__ import annotations

import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import httpx2  # noqa: E402
from w3c_deviations import EVALUATION, NOT_OFFERED, PROTOCOL  # noqa: E402
from w3c_evaluation import Loaded  # noqa: E402
from w3c_evaluation import run as evaluate  # noqa: E402
from w3c_protocol import EXCHANGES  # noqa: E402
from w3c_protocol import run as exchange  # noqa: E402
from w3c_servers import SERVERS, started  # noqa: E402
from w3c_suite import QUERY_DIRS, RDFLIB_VERSION, SKIPPED_DIRS, evaluation_tests, locate  # noqa: E402


def outcomes(kind: str, suite: Path) -> dict[str, dict[str, str | None]]:
    """suite name -> test name -> None (passed) or what went wrong, on a fresh server."""
    found: dict[str, dict[str, str | None]] = {"protocol": {}, "query evaluation": {}}
    with (
        tempfile.TemporaryDirectory() as directory,
        started(kind, Path(directory) / "p") as server,
        httpx2.Client(timeout=60) as client,
    ):
        for name in EXCHANGES:
            found["protocol"][name] = exchange(client, server, name)
    with (
        tempfile.TemporaryDirectory() as directory,
        started(kind, Path(directory) / "q") as server,
        httpx2.Client(timeout=60) as client,
    ):
        loaded = Loaded()
        for query_dir in QUERY_DIRS:
            for test in evaluation_tests(suite, query_dir):
                name = f"{query_dir}/{test.name}"
                found["query evaluation"][name] = evaluate(client, server, suite, test, loaded)
    return found


def main() -> int:
    suite = locate()
    tables = {"protocol": PROTOCOL, "query evaluation": EVALUATION}
    began = time.monotonic()
    results = {kind: outcomes(kind, suite) for kind in SERVERS}
    print(
        f"W3C SPARQL 1.1 tests from the rdflib {RDFLIB_VERSION} sdist; labbrain "
        f"{version('labbrain')}, pyoxigraph {version('pyoxigraph')}, oxigraph server "
        f"{version('oxigraph')}; {time.monotonic() - began:.0f} s\n"
    )
    print("| server | suite | tests | pass | fail | not offered |")
    print("|---|---|---|---|---|---|")
    unexpected = 0
    for kind in SERVERS:
        for suite_name, found in results[kind].items():
            known = tables[suite_name][kind]
            failed = [name for name, outcome in found.items() if outcome is not None]
            offered = [name for name in failed if known.get(name, ("",))[0] == NOT_OFFERED]
            print(
                f"| {kind} | {suite_name} | {len(found)} | {len(found) - len(failed)} "
                f"| {len(failed) - len(offered)} | {len(offered)} |"
            )
    print(f"\nLeft out: {', '.join(f'{name} ({why})' for name, why in SKIPPED_DIRS.items())}")
    for kind in SERVERS:
        for suite_name, found in results[kind].items():
            known = tables[suite_name][kind]
            for name, outcome in found.items():
                if outcome is None and name not in known:
                    continue
                if outcome is None:
                    unexpected += 1
                    print(f"- {kind}, {name}: UNEXPECTED: passes but is listed")
                elif name in known:
                    print(f"- {kind}, {name}: {known[name][0]}: {known[name][1]}")
                else:
                    unexpected += 1
                    print(f"- {kind}, {name}: UNEXPECTED: {outcome}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

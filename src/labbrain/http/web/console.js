// The labbrain SPARQL console: a small editor, example queries, a results table and
// download links. Everything it loads comes from this server (see /console/config).
// The query is shared through the page's URL: /?query=... opens with it in the editor, and
// running a query puts it there (history.replaceState), so the address can be passed on.
"use strict";

(function () {
  const KEYWORDS = new Set((
    "ADD ALL AS ASC ASK BASE BIND BY CLEAR CONSTRUCT COPY COUNT CREATE DATA DEFAULT DELETE " +
    "DESC DESCRIBE DISTINCT DROP EXISTS FILTER FROM GRAPH GROUP HAVING IN INSERT INTO LIMIT " +
    "LOAD MINUS MOVE NAMED NOT OFFSET OPTIONAL ORDER PREFIX REDUCED SELECT SERVICE SILENT " +
    "UNDEF UNION USING VALUES WHERE WITH AVG MIN MAX SUM SAMPLE GROUP_CONCAT SEPARATOR " +
    "STR LANG LCASE UCASE CONTAINS STRSTARTS STRENDS REGEX BOUND IF COALESCE IRI URI"
  ).split(" "));
  const TOKEN = new RegExp([
    "(#[^\\n]*)",                                  // 1 comment
    "(\"\"\"[\\s\\S]*?\"\"\"|'''[\\s\\S]*?'''|\"(?:[^\"\\\\\\n]|\\\\.)*\"|'(?:[^'\\\\\\n]|\\\\.)*')", // 2 string
    "(<[^<>\"{}|^`\\\\\\s]*>)",                    // 3 IRI
    "([?$][A-Za-z_0-9\\u00C0-\\uFFFF]+)",          // 4 variable
    "([A-Za-z][\\w.-]*:[\\w.:%-]*|:[\\w.:%-]+)",   // 5 prefixed name
    "([A-Za-z_]+)",                                // 6 word
    "(\\d+(?:\\.\\d+)?)",                          // 7 number
  ].join("|"), "gu");
  const STORAGE_KEY = "labbrain.console.query";
  const URL_PARAMETER = "query";

  const $ = (id) => document.getElementById(id);
  const editor = $("query");
  const highlight = $("highlight");
  const gutter = $("gutter");
  const state = { config: null, prefixes: [], errorLine: null, running: false };

  // ------------------------------------------------------------------ editor
  function escapeHtml(text) {
    return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }

  function highlighted(text) {
    let html = "";
    let last = 0;
    TOKEN.lastIndex = 0;
    for (let match = TOKEN.exec(text); match; match = TOKEN.exec(text)) {
      html += escapeHtml(text.slice(last, match.index));
      const token = escapeHtml(match[0]);
      let kind = "";
      if (match[1]) kind = "comment";
      else if (match[2]) kind = "string";
      else if (match[3]) kind = "iri";
      else if (match[4]) kind = "var";
      else if (match[5]) kind = "pname";
      else if (match[6]) kind = KEYWORDS.has(match[6].toUpperCase()) ? "keyword" : "";
      else if (match[7]) kind = "number";
      html += kind ? `<span class="t-${kind}">${token}</span>` : token;
      last = match.index + match[0].length;
    }
    return html + escapeHtml(text.slice(last)) + "\n";
  }

  function refreshEditor() {
    const text = editor.value;
    highlight.innerHTML = highlighted(text);
    const lines = text.split("\n").length;
    let numbers = "";
    for (let i = 1; i <= lines; i += 1) {
      numbers += i === state.errorLine ? `<span class="error-line">${i}</span>\n` : `${i}\n`;
    }
    gutter.innerHTML = numbers;
    syncScroll();
  }

  function syncScroll() {
    highlight.scrollTop = editor.scrollTop;
    highlight.scrollLeft = editor.scrollLeft;
    gutter.scrollTop = editor.scrollTop;
  }

  function setQuery(text) {
    editor.value = text;
    state.errorLine = null;
    refreshEditor();
    remember();
  }

  function remember() {
    try {
      window.localStorage.setItem(STORAGE_KEY, editor.value);
    } catch (e) {
      // storage may be off (private windows): the console works without it
    }
  }

  function recalled() {
    try {
      return window.localStorage.getItem(STORAGE_KEY) || null;
    } catch (e) {
      return null;
    }
  }

  // The query of a shared link (/?query=...), or null.
  function linked() {
    const text = new URLSearchParams(window.location.search).get(URL_PARAMETER);
    return text && text.trim() ? text : null;
  }

  // Put the query in the page's address (no new history entry), to be copied and shared.
  function share(query) {
    try {
      const address = new URL(window.location.href);
      address.search = new URLSearchParams({ [URL_PARAMETER]: query }).toString();
      window.history.replaceState(null, "", address.toString());
    } catch (e) {
      // an address the browser will not rewrite: running works all the same
    }
  }

  editor.addEventListener("input", () => {
    state.errorLine = null;
    refreshEditor();
    remember();
  });
  editor.addEventListener("scroll", syncScroll);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  });
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey) {
      event.preventDefault();
      const start = editor.selectionStart;
      editor.setRangeText("  ", start, editor.selectionEnd, "end");
      editor.dispatchEvent(new Event("input"));
    }
  });

  function moveCaret(line, column) {
    const lines = editor.value.split("\n");
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i += 1) offset += lines[i].length + 1;
    offset += Math.max(0, (column || 1) - 1);
    editor.focus();
    editor.setSelectionRange(offset, offset);
  }

  // ------------------------------------------------------------------ results
  function compact(iri) {
    for (const [prefix, namespace] of state.prefixes) {
      if (iri.startsWith(namespace) && iri.length > namespace.length) {
        return `${prefix}:${iri.slice(namespace.length)}`;
      }
    }
    return iri;
  }

  function termNode(term) {
    if (!term) return document.createTextNode("");
    if (term.type === "uri") {
      const shown = compact(term.value);
      if (/^https?:\/\//i.test(term.value)) {
        const link = document.createElement("a");
        link.href = term.value;
        link.target = "_blank";
        link.rel = "noopener noreferrer";
        link.textContent = shown;
        link.title = term.value;
        return link;
      }
      const span = document.createElement("span");
      span.className = "iri";
      span.textContent = shown;
      span.title = term.value;
      return span;
    }
    if (term.type === "bnode") {
      const span = document.createElement("span");
      span.className = "bnode";
      span.textContent = `_:${term.value}`;
      return span;
    }
    if (term.type === "triple") {
      const span = document.createElement("span");
      span.className = "triple";
      span.append("<< ", termNode(term.value.subject), " ", termNode(term.value.predicate), " ",
        termNode(term.value.object), " >>");
      return span;
    }
    const span = document.createElement("span");
    span.className = "literal";
    span.textContent = term.value;
    if (term.datatype) span.title = compact(term.datatype);
    if (term["xml:lang"]) {
      const note = document.createElement("small");
      note.className = "datatype";
      note.textContent = `@${term["xml:lang"]}`;
      span.append(" ", note);
    }
    return span;
  }

  function renderTable(data) {
    const vars = data.head.vars || [];
    const rows = data.results.bindings || [];
    const table = document.createElement("table");
    table.className = "results";
    const head = table.createTHead().insertRow();
    const corner = document.createElement("th");
    corner.textContent = "#";
    head.append(corner);
    for (const name of vars) {
      const th = document.createElement("th");
      th.textContent = name;
      head.append(th);
    }
    const body = table.createTBody();
    rows.forEach((binding, index) => {
      const row = body.insertRow();
      const number = row.insertCell();
      number.className = "rownum";
      number.textContent = String(index + 1);
      for (const name of vars) {
        const cell = row.insertCell();
        const term = binding[name];
        if (term && term.type === "literal" && term.datatype &&
            /#(integer|decimal|double|float|long|int)$/.test(term.datatype)) {
          cell.className = "number";
        }
        cell.append(termNode(term));
      }
    });
    $("results").replaceChildren(table);
    return rows.length;
  }

  function renderBoolean(value) {
    const box = document.createElement("p");
    box.className = "boolean";
    box.textContent = value ? "true" : "false";
    $("results").replaceChildren(box);
  }

  function renderText(text) {
    const pre = document.createElement("pre");
    pre.className = "graph";
    pre.textContent = text;
    $("results").replaceChildren(pre);
  }

  const DOWNLOADS = {
    select: [["csv", "CSV"], ["json", "JSON"], ["tsv", "TSV"], ["xml", "XML"]],
    graph: [["turtle", "Turtle", "ttl"], ["ntriples", "N-Triples", "nt"], ["jsonld", "JSON-LD"],
      ["rdfxml", "RDF/XML", "rdf"]],
  };

  function showDownloads(kind, query) {
    const links = $("download-links");
    links.replaceChildren();
    for (const [format, label, extension] of DOWNLOADS[kind]) {
      const link = document.createElement("a");
      const params = new URLSearchParams({ query, format });
      link.href = `${state.config.endpoint}?${params}`;
      link.download = `results.${extension || format}`;
      link.id = `download-${format}`;
      link.textContent = label;
      links.append(link, " ");
    }
    $("downloads").hidden = false;
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  function showError(error) {
    const box = $("error");
    box.replaceChildren();
    const title = document.createElement("strong");
    title.textContent = error.type ? `${error.type}` : "Error";
    const message = document.createElement("span");
    message.textContent = ` ${error.message || "the query failed"}`;
    box.append(title, message);
    box.hidden = false;
    $("results").replaceChildren();
    $("downloads").hidden = true;
    if (error.line) {
      state.errorLine = error.line;
      refreshEditor();
      moveCaret(error.line, error.column);
    }
    setStatus(error.status ? `Failed (HTTP ${error.status}).` : "Failed.");
  }

  function plural(count, word) {
    return `${count.toLocaleString("en")} ${word}${count === 1 ? "" : "s"}`;
  }

  async function run() {
    if (state.running || !state.config) return;
    const query = editor.value;
    if (!query.trim()) {
      setStatus("The query is empty.");
      return;
    }
    state.running = true;
    share(query);
    $("run").disabled = true;
    $("error").hidden = true;
    state.errorLine = null;
    refreshEditor();
    setStatus("Running…");
    const started = performance.now();
    try {
      let response;
      try {
        response = await fetch(state.config.endpoint, {
          method: "POST",
          headers: {
            "Content-Type": "application/x-www-form-urlencoded",
            Accept: "application/sparql-results+json, text/turtle;q=0.9",
          },
          body: new URLSearchParams({ query }),
        });
      } catch (e) {
        showError({ type: "NetworkError", message: `the server did not answer (${e.message})` });
        return;
      }
      if (!response.ok) {
        let body = null;
        try {
          body = await response.json();
        } catch (e) {
          body = null;
        }
        showError((body && body.error) || { status: response.status, message: response.statusText });
        return;
      }
      const elapsed = Math.round(performance.now() - started);
      const truncated = response.headers.get("X-Labbrain-Truncated") === "true";
      const type = response.headers.get("Content-Type") || "";
      let summary;
      if (type.startsWith("application/sparql-results+json")) {
        const data = await response.json();
        if (typeof data.boolean === "boolean") {
          renderBoolean(data.boolean);
          summary = `Answer: ${data.boolean} (${elapsed} ms).`;
        } else {
          const count = renderTable(data);
          summary = `${plural(count, "row")} in ${elapsed} ms.`;
        }
        showDownloads("select", query);
      } else {
        renderText(await response.text());
        summary = `Graph in ${elapsed} ms.`;
        showDownloads("graph", query);
      }
      if (truncated) {
        summary += ` Cut at ${state.config.maxRows.toLocaleString("en")}: add LIMIT or narrow the query.`;
      }
      setStatus(summary);
    } finally {
      state.running = false;
      $("run").disabled = false;
    }
  }

  $("run").addEventListener("click", run);

  // ------------------------------------------------------------------ side panels
  function fillExamples(examples) {
    const select = $("examples");
    for (const example of examples) {
      const option = document.createElement("option");
      option.value = example.name;
      option.textContent = example.title;
      option.title = example.description;
      select.append(option);
    }
    select.addEventListener("change", () => {
      const chosen = examples.find((example) => example.name === select.value);
      if (chosen) {
        setQuery(chosen.query);
        editor.focus();
      }
    });
  }

  function fillPrefixes(prefixes) {
    const list = $("prefix-list");
    for (const [prefix, namespace] of Object.entries(prefixes)) {
      const term = document.createElement("dt");
      term.textContent = `${prefix}:`;
      const value = document.createElement("dd");
      value.textContent = namespace;
      list.append(term, value);
    }
    // Longest namespaces first, so the most specific prefix names an IRI.
    state.prefixes = Object.entries(prefixes).sort((a, b) => b[1].length - a[1].length);
  }

  function fillGraphs(graphs) {
    const list = $("graph-list");
    for (const iri of graphs) {
      const item = document.createElement("li");
      const name = document.createElement("code");
      name.textContent = iri;
      const link = document.createElement("a");
      link.href = `${state.config.graphStore}?${new URLSearchParams({ graph: iri, format: "turtle" })}`;
      link.download = `${iri.replace(/[^A-Za-z0-9_-]+/g, "_")}.ttl`;
      link.textContent = "Turtle";
      item.append(name, " ", link);
      list.append(item);
    }
  }

  // The example the editor starts with when there is no query of its own.
  function defaultQuery(config) {
    const examples = config.examples || [];
    const chosen = examples.find((example) => example.name === config.defaultExample) || examples[0];
    return chosen ? chosen.query : "";
  }

  async function start() {
    const own = linked() || recalled();
    if (own) setQuery(own);
    try {
      const response = await fetch("console/config", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      state.config = await response.json();
    } catch (e) {
      showError({ type: "NetworkError", message: `could not read the console's settings (${e.message})` });
      return;
    }
    if (!own) setQuery(defaultQuery(state.config));
    fillPrefixes(state.config.prefixes);
    fillExamples(state.config.examples);
    fillGraphs(state.config.graphs);
    $("run").disabled = false;
    document.body.dataset.ready = "true";
  }

  $("run").disabled = true;
  start();
})();

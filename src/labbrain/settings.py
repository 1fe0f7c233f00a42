"""Effective settings: defaults, then ``LABBRAIN_*`` environment variables, then CLI flags.

Safe defaults live here and only here: no network for JSON-LD contexts, input size and
nesting limits, row caps. ``labbrain info`` prints the effective values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from platformdirs import user_data_dir
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MEMORY_STORE = ":memory:"


def default_store_path() -> str:
    """The per-user store directory, e.g. ``~/.local/share/labbrain/store`` on Linux."""
    return str(Path(user_data_dir("labbrain", appauthor=False)) / "store")


def _text_list(value: Any, separator: str) -> Any:
    """A list given as text (an environment variable): a JSON list when it starts with
    ``[``, else the parts between ``separator`` (blank parts dropped). Anything else is
    left for the field's own validation."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a JSON list ({error.msg} at character {error.pos})") from None
    return [part.strip() for part in text.split(separator) if part.strip()]


#: An example of each setting whose value is not a plain word or number, for the one-line
#: message about a value that cannot be read.
EXAMPLES = {
    "load_dirs": f"LABBRAIN_LOAD_DIRS=/data/exports{os.pathsep}/data/vaults",
    "image_hosts": "LABBRAIN_IMAGE_HOSTS=firebasestorage.googleapis.com,images.example.org",
    "http_allowed_hosts": "LABBRAIN_HTTP_ALLOWED_HOSTS=lab.example.org,lab.example.org:8080",
    "http_allowed_origins": "LABBRAIN_HTTP_ALLOWED_ORIGINS=https://notebook.example.org",
    "jsonld_contexts": 'LABBRAIN_JSONLD_CONTEXTS=\'{"https://example.org/ctx.jsonld": '
    '"/data/ctx.jsonld"}\'',
}


class Settings(BaseSettings):
    """Every knob of labbrain, with its safe default. Construct with overrides for CLI flags."""

    model_config = SettingsConfigDict(env_prefix="LABBRAIN_", extra="forbid")

    store: str = Field(
        default_factory=default_store_path,
        description="Store directory, or ':memory:' for a throwaway in-memory store.",
    )
    jsonld_engine: Literal["native", "pyld"] = Field(
        default="native",
        description="Engine that turns a repaired discourse-graph export into RDF: pyoxigraph's "
        "native JSON-LD parser (fast) or pyld (the reference).",
    )
    jsonld_contexts: dict[str, Path] = Field(
        default_factory=dict,
        description="Local copies of remote JSON-LD contexts, as a JSON object url -> file. "
        "Any other remote context is refused: labbrain never fetches one.",
    )
    max_input_bytes: int = Field(
        default=2 * 1024**3, gt=0, description="Largest input file accepted by `load`."
    )
    max_json_depth: int = Field(
        default=64, gt=1, description="Deepest JSON nesting accepted in a JSON-LD input."
    )
    strict_load: bool = Field(
        default=False,
        description="Treat load warnings (dangling relation ends, unknown node types, missing "
        "creators) as errors that abort the load.",
    )
    progress_min_nodes: int = Field(
        default=10_000, ge=0, description="Show a progress bar on a terminal from this many nodes."
    )
    max_rows: int = Field(
        default=10_000, gt=0, description="Row cap for query results printed by the CLI."
    )
    query_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Time limit of a SPARQL query sent by an assistant."
    )
    mcp_max_chars: int = Field(
        default=50_000,
        ge=1000,
        description="Character cap of every MCP tool answer (its JSON text; images are "
        "exempt): longer answers are cut, longest lists first, with a note or a `truncated` "
        "field saying what was kept and which argument gets more.",
    )
    image_fetch: bool = Field(
        default=False,
        description="Let get_node_images fetch the key image as MCP image content (off: only "
        "URLs are returned).",
    )
    image_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["firebasestorage.googleapis.com"],
        description="Hosts images may be fetched from (comma-separated, or a JSON list).",
    )
    image_max_bytes: int = Field(
        default=5_000_000, gt=0, description="Largest image fetched, in bytes."
    )
    image_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Time limit of one image fetch."
    )
    image_allow_http: bool = Field(
        default=False, description="Also fetch images over plain http (https only by default)."
    )
    image_allow_private: bool = Field(
        default=False,
        description="Allow image hosts that resolve to private, loopback or link-local "
        "addresses (for an intranet image server; off against SSRF).",
    )
    memory_traverse_max_nodes: int = Field(
        default=200,
        gt=0,
        description="Most nodes one traverse_memories answer holds (it stops there, with a note).",
    )
    brain_exploration_visits: int = Field(
        default=3,
        ge=1,
        description="Visits from which suggest_next_steps sees a project as exploring (it "
        "suggests synthesising what was read); below, at cold start (it suggests searches).",
    )
    brain_convergence_findings: int = Field(
        default=5,
        ge=1,
        description="Findings from which suggest_next_steps sees a project as converging (it "
        "suggests claims to formulate, open questions, contradictions to check).",
    )

    load_dirs: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Directories the load_dataset tool may read files from (one path, several "
        f"separated by {os.pathsep!r}, or a JSON list; symlinks resolved). Empty: assistants "
        "cannot load files.",
    )
    bundle_dir: Path = Field(
        default_factory=lambda: Path(user_data_dir("labbrain", appauthor=False)) / "bundles",
        description="Directory the bundle_evidence tool writes evidence bundles (RO-Crates) "
        "into, one directory per bundle name; created when missing. The tool writes nowhere "
        "else (default: `bundles` beside the default store, e.g. "
        "~/.local/share/labbrain/bundles).",
    )
    task_wait_max_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Longest an MCP tool call may wait for a task (waitSeconds) before "
        "returning its state.",
    )
    http_host: str = Field(
        default="127.0.0.1",
        description="Address `labbrain serve` binds to (loopback only by default).",
    )
    http_port: int = Field(
        default=7879, ge=0, le=65535, description="Port `labbrain serve` listens on."
    )
    http_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host header values the endpoint accepts besides the bound host, localhost "
        "and 127.0.0.1 with its port (comma-separated, or a JSON list; 'name' allows any port, "
        "'*' any host). Guards against DNS rebinding.",
    )
    http_allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins (e.g. 'https://lab.example.org') whose pages may call the endpoint "
        "besides its own (comma-separated, or a JSON list); browsers' requests from any other "
        "origin are refused.",
    )
    http_max_request_bytes: int = Field(
        default=1_000_000, gt=0, description="Largest HTTP request body (or query string)."
    )
    http_max_update_bytes: int = Field(
        default=64_000_000,
        gt=0,
        description="Largest body of a request that carries the update token (loads through "
        "another labbrain's --endpoint send data as updates of a few MB each).",
    )
    http_max_rows: int = Field(
        default=10_000,
        gt=0,
        description="Most rows (or triples) one endpoint answer holds; a cut answer carries "
        "the header X-Labbrain-Truncated: true.",
    )
    http_query_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Time limit of one endpoint query; its worker process is killed after it.",
    )
    http_query_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Worker processes that run endpoint queries (each one query at a time).",
    )
    update_token: SecretStr | None = Field(
        default=None,
        description="Bearer token that SPARQL updates to `labbrain serve --allow-update` must "
        "carry (Authorization: Bearer <token>).",
    )
    endpoint: str | None = Field(
        default=None,
        description="SPARQL 1.1 query endpoint of a remote store to use instead of the embedded "
        "one (Oxigraph server: http://HOST:7878/query). The store setting is then ignored.",
    )
    update_endpoint: str | None = Field(
        default=None,
        description="SPARQL update endpoint of the remote store (default: the query endpoint "
        "with a final /query replaced by /update, else the query endpoint itself).",
    )
    gsp_endpoint: str | None = Field(
        default=None,
        description="Graph Store Protocol endpoint loads send data to (Oxigraph server: "
        "http://HOST:7878/store); unset: loads send chunked INSERT DATA updates.",
    )
    endpoint_auth: SecretStr | None = Field(
        default=None,
        description="Authorization header value sent with every request to the remote store "
        "(e.g. 'Basic dXNlcjpwYXNz' or 'Bearer TOKEN'); never printed.",
    )
    endpoint_user: str | None = Field(
        default=None,
        description="User name for the remote store, with LABBRAIN_ENDPOINT_PASSWORD: HTTP "
        "Digest or Basic, whichever the server asks for.",
    )
    endpoint_password: SecretStr | None = Field(
        default=None,
        description="Password of LABBRAIN_ENDPOINT_USER for the remote store; never printed.",
    )
    endpoint_token: SecretStr | None = Field(
        default=None,
        description="Token sent as 'Authorization: Bearer <token>' with every request to the "
        "remote store; never printed.",
    )
    netrc: Path | None = Field(
        default=None,
        description="netrc file whose entry for the endpoint's host (machine HOST login USER "
        "password PASS, or its default entry) holds the remote store's user and password "
        "when no LABBRAIN_ENDPOINT_* credential is set (unset: ~/.netrc when it exists).",
    )
    endpoint_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Time limit of one query or small update sent to the remote store.",
    )
    endpoint_write_timeout_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="Time limit of one bulk write request to the remote store (a chunk of a "
        "load, the move that commits it, dropping a dataset): servers copy every quad.",
    )
    endpoint_union: Literal["auto", "union-default-graph", "dataset", "native"] = Field(
        default="auto",
        description="How a query over the union of all graphs (sparql_query) asks the remote "
        "store for it: Oxigraph's union-default-graph parameter, 'dataset' (every graph named "
        "in default-graph-uri and named-graph-uri), 'native' (the server's default graph "
        "already is the union: GraphDB, QLever), or 'auto': 'dataset' on a server that names "
        "itself Virtuoso (whose default graph also holds its own graphs), else "
        "'union-default-graph'.",
    )
    endpoint_check_rows: int = Field(
        default=1000,
        ge=1,
        description="A remote SELECT answer of at least this many rows is checked against a "
        "count of its rows; one the server cut at its row limit (Virtuoso's ResultSetMaxRows) "
        "is read again in pages. Set it to the server's row limit if that is lower.",
    )
    endpoint_index_refresh_seconds: float = Field(
        default=5.0,
        ge=0,
        description="How often (at most) a process rechecks the remote store's load records to "
        "bring its local text index up to date with loads made by other processes.",
    )

    @field_validator("load_dirs", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        """Paths as written in the environment: one path, several separated by the
        platform's path separator (``:`` or ``;``, as PATH), or a JSON list."""
        return _text_list(value, os.pathsep)

    @field_validator("image_hosts", "http_allowed_hosts", "http_allowed_origins", mode="before")
    @classmethod
    def _name_list(cls, value: Any) -> Any:
        """Names as written in the environment: comma-separated, or a JSON list."""
        return _text_list(value, ",")

    @field_validator("endpoint", "update_endpoint", "gsp_endpoint")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        """Endpoint URLs are absolute http(s) URLs without credentials (those come from
        the LABBRAIN_ENDPOINT_* credential settings or a netrc file, and are never printed)."""
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected an http:// or https:// URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "no credentials in the URL; set LABBRAIN_ENDPOINT_USER and "
                "LABBRAIN_ENDPOINT_PASSWORD, LABBRAIN_ENDPOINT_TOKEN or LABBRAIN_ENDPOINT_AUTH, "
                "or put them in a netrc file (LABBRAIN_NETRC) instead"
            )
        if parts.fragment:
            raise ValueError("an endpoint URL has no #fragment")
        return value.strip()

    embedding_model: str = Field(
        default="all-MiniLM-L6-v2",
        description="Sentence-transformers model for semantic search: a local directory, or a "
        "model name found in the local model cache or an installed model package (needs the "
        "semantic extra; `labbrain embed` says how to add it to this installation).",
    )
    embedding_allow_download: bool = Field(
        default=False,
        description="Let labbrain download the embedding model from the model hub when it is "
        "not on this machine (off: nothing is downloaded).",
    )
    embedding_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Texts embedded per batch by `labbrain embed`."
    )
    embedding_runtime: Literal["onnx", "sentence-transformers"] = Field(
        default="onnx",
        description="What runs the embedding model: `onnx` (ONNX Runtime, int8, no PyTorch; "
        "BERT models such as all-MiniLM-L6-v2) or `sentence-transformers` (PyTorch; any model "
        "that library loads, installed separately).",
    )
    cache_dir: str | None = Field(
        default=None,
        description="Where derived files that outlive a store are kept: the int8 encoder "
        "built from the embedding model's weights (`encoders/`; rebuilt in seconds when "
        "deleted). Default: the user cache directory.",
    )
    embedding_max_tokens: int = Field(
        default=96,
        ge=8,
        le=512,
        description="Word pieces of a node's text the onnx runtime embeds: its title and the "
        "opening of its content (96: over 150 texts/s on 2 cores, with the search quality "
        "of the model's full 256).",
    )
    console_query_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Time limit of one query in `labbrain console` (on-disk stores: the query "
        "runs in a child process, stopped at the limit or by Ctrl-C).",
    )
    max_json_objects: int = Field(
        default=2_000_000,
        gt=0,
        description="Most JSON objects one JSON-LD input may hold (counted before it is parsed: "
        "the JSON-LD parser keeps a few hundred bytes per object).",
    )
    max_context_terms: int = Field(
        default=1_000,
        gt=0,
        description="Most term definitions all the @context values of a JSON-LD input may hold "
        "together (each context applied costs time in proportion to its size).",
    )
    max_json_array_items: int = Field(
        default=2_000,
        gt=0,
        description="Longest array of property values in a plain JSON-LD file (read by pyld, "
        "whose time grows with its square); exports and @graph lists are exempt.",
    )
    toolsets: str = Field(
        default="default",
        description="MCP toolsets `labbrain mcp` offers, comma-separated: discourse, sparql, "
        "notes, notebook, memory, claims, tasks, semantic, bundles; `default` is "
        "discourse,sparql,notes and `all` is every toolset (see docs/tools.md).",
    )
    read_only: bool = Field(
        default=False,
        description="`labbrain mcp` offers no tool that writes, records no visit and holds no "
        "lock on the store (a writer may load beside it; its answers follow).",
    )
    agent_name: str = Field(
        default="assistant",
        description="Who agent writes are attributed to: prov:wasAttributedTo the agent IRI "
        "that ends in this name.",
    )

    @property
    def in_memory(self) -> bool:
        """True when the store is a throwaway in-memory store."""
        return self.store == MEMORY_STORE

    def describe(self) -> list[tuple[str, Any, str]]:
        """Each setting as (env variable, effective value, description), in declaration order."""
        rows = []
        for name, field in type(self).model_fields.items():
            rows.append((f"LABBRAIN_{name.upper()}", getattr(self, name), field.description or ""))
        return rows

"""Effective settings: defaults, then ``LABBRAIN_*`` environment variables, then CLI flags.

Safe defaults live here and only here: no network for JSON-LD contexts, input size and
nesting limits, row caps. ``labbrain info`` prints the effective values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MEMORY_STORE = ":memory:"


def default_store_path() -> str:
    """The per-user store directory, e.g. ``~/.local/share/labbrain/store`` on Linux."""
    return str(Path(user_data_dir("labbrain", appauthor=False)) / "store")


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
        default=50_000, gt=0, description="Character cap of one sparql_query answer."
    )
    image_fetch: bool = Field(
        default=False,
        description="Let get_node_images fetch the key image as MCP image content (off: only "
        "URLs are returned).",
    )
    image_hosts: list[str] = Field(
        default_factory=lambda: ["firebasestorage.googleapis.com"],
        description="Hosts images may be fetched from (JSON list).",
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

    load_dirs: list[Path] = Field(
        default_factory=list,
        description="Directories the load_dataset tool may read files from (JSON list; "
        "symlinks resolved). Empty: assistants cannot load files.",
    )
    task_wait_max_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Longest an MCP tool call may wait for a task (waitSeconds) before "
        "returning its state.",
    )
    agent_name: str = Field(
        default="assistant",
        description="Who agent writes are attributed to (prov:wasAttributedTo "
        "urn:labbrain:agent:<name>).",
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

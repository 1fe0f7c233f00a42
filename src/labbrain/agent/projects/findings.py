"""Findings: what the assistant learned in a project, with the node or page it came from.

A finding (``lb:Finding``) lives in its project's graph with its text (``sioc:content``),
tags (``lb:tag``), the lab node it came from (``lb:sourceNode``, also ``prov:wasDerivedFrom``)
or the web page (``lb:sourceUrl``), its place in the project's log and PROV provenance (see
:mod:`labbrain.agent.projects.projects`). :class:`Findings` logs, lists (newest first, or by
BM25 relevance) and deletes them, every write through the notebook's writer.

Notes need no project: with none named and none active, findings go to the project "Notes"
(slug ``notes``), made at the first finding and never made active, so that an assistant
offered only ``log_finding`` and ``list_findings`` can keep notes from its first call.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pyoxigraph import NamedNode, Quad

from labbrain.agent.projects.models import (
    DeletedFinding,
    Finding,
    FindingList,
    FindingResult,
)
from labbrain.agent.projects.projects import (
    CONTENT,
    FINDING,
    PART_OF,
    POSITION,
    SOURCE_NODE,
    SOURCE_URL,
    TAG,
    TYPE,
    Projects,
    iso,
    project_graph,
    required,
)
from labbrain.agent.writer import WritePlan
from labbrain.discourse.reader import node_ref
from labbrain.errors import InvalidArgument, ItemNotFound
from labbrain.index.bm25 import rank
from labbrain.rdf.namespaces import FINDING_PREFIX, PROJECT_PREFIX, slugify
from labbrain.rdf.terms import integer, new_iri, now, text

MAX_CONTENT = 10_000
MAX_TAGS = 20
MAX_TAG = 50
MAX_URL = 2_000
MAX_PAGE = 100
#: The project of findings logged with no project named and none active.
NOTES_PROJECT = "Notes"
NOTES_DESCRIPTION = "findings logged while no project was active"


class Findings:
    """The findings of the projects of one :class:`~labbrain.agent.projects.projects.Projects`."""

    def __init__(self, projects: Projects) -> None:
        self.projects = projects

    def log_finding(
        self,
        content: str,
        source_uid: str | None = None,
        source_url: str | None = None,
        tags: list[str] | None = None,
        dataset: str | None = None,
        project: str | None = None,
        *,
        key: str | None = None,
    ) -> FindingResult:
        """Log a finding in ``project`` (or the active one), linked to the lab node
        ``source_uid`` (resolved: an unknown uid is an error) or the http(s) page
        ``source_url``."""
        arguments = {
            "content": content,
            "sourceUid": source_uid,
            "sourceUrl": source_url,
            "tags": tags,
            "dataset": dataset,
            "project": project,
        }
        clean = required(content, "content", MAX_CONTENT)
        if source_uid and source_url:
            raise InvalidArgument("sourceUrl", "give sourceUid or sourceUrl, not both")
        url = _web_url(source_url) if source_url else None
        clean_tags = _tags(tags or [])
        node = self.projects.reader.resolve(source_uid, dataset)[0] if source_uid else None
        slug = self.projects.resolve_optional(project) or self._notes_project()

        def plan() -> WritePlan[FindingResult]:
            graph = NamedNode(project_graph(slug))
            finding = new_iri(FINDING_PREFIX)
            origin = [NamedNode(node.iri)] if node else [url] if url else []
            moment = now()
            provenance = self.projects.writer.provenance(
                finding, graph, derived_from=origin, at=moment
            )
            add = [
                Quad(finding, TYPE, FINDING, graph),
                Quad(finding, CONTENT, text(clean), graph),
                Quad(finding, PART_OF, graph, graph),
                Quad(finding, POSITION, integer(self.projects.next_position(slug)), graph),
                *(Quad(finding, TAG, text(tag), graph) for tag in clean_tags),
                *provenance,
            ]
            if node:
                add.append(Quad(finding, SOURCE_NODE, NamedNode(node.iri), graph))
            if url:
                add.append(Quad(finding, SOURCE_URL, url, graph))
            model = Finding(
                id=finding.value.rsplit(":", 1)[-1],
                project=slug,
                content=clean,
                tags=sorted(clean_tags),
                source=node_ref(node) if node else None,
                sourceUrl=url.value if url else None,
                createdAt=iso(moment),
                session=self.projects.writer.session_id,
            )
            count = self.projects.count(slug, TYPE, FINDING)
            result = FindingResult(
                finding=model,
                findings=count + 1,
                availableActions=["list_findings", "suggest_next_steps", "get_related_pages"],
            )
            return WritePlan(result, add)

        return self.projects.writer.write(
            "log_finding", plan, key=key, arguments=arguments, model=FindingResult
        )

    def list_findings(
        self,
        project: str | None = None,
        *,
        query: str | None = None,
        tag: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> FindingList:
        """A page of a project's findings: newest first, or best BM25 match first for
        ``query``; only those tagged ``tag`` when given."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument("limit", f"{limit} is outside 1..{MAX_PAGE}")
        if offset < 0:
            raise InvalidArgument("offset", "must be 0 or more")
        slug = self.projects.resolve_optional(project) or slugify(NOTES_PROJECT)
        kept = self.projects.exists(slug)  # the notes project exists from the first note
        findings = list(reversed(self.projects.read(slug).findings)) if kept else []
        if tag and tag.strip():
            findings = [f for f in findings if tag.strip() in f.tags]
        if query and query.strip():
            findings = [
                hit.item
                for hit in rank(query, findings, lambda f: f"{f.content} {' '.join(f.tags)}")
            ]
        page = findings[offset : offset + limit]
        refs = self.projects.refs(f.node for f in page)
        more = offset + limit < len(findings)
        note = None
        if more:
            note = f"showing {len(page)} of {len(findings)}; pass offset={offset + limit} for more"
        elif not findings and (query or tag):
            note = "no findings match; log_finding records one"
        elif not findings:
            note = "no findings yet; log_finding records what you learn"
        return FindingList(
            project=slug,
            findings=[self.projects.finding_model(slug, f, refs) for f in page],
            listed=len(page),
            total=len(findings),
            offset=offset,
            nextOffset=offset + limit if more else None,
            note=note,
        )

    def _notes_project(self) -> str:
        """The slug of the notes project, made (not activated) when it does not exist yet."""
        slug = slugify(NOTES_PROJECT)
        if not self.projects.exists(slug):
            self.projects.create_project(NOTES_PROJECT, NOTES_DESCRIPTION, activate=False)
        return slug

    def delete_finding(
        self, finding_id: str, project: str | None = None, *, key: str | None = None
    ) -> DeletedFinding:
        """Delete a finding (by id or IRI) from ``project``, or from whichever project holds
        it. Raises ItemNotFound for an unknown id."""
        arguments = {"findingId": finding_id, "project": project}
        wanted = finding_id.strip()
        if not wanted:
            raise InvalidArgument(
                "findingId", "give the id of a finding (list_findings lists them)"
            )
        hint = "list_findings lists findings with their ids"
        try:
            subject = NamedNode(wanted if wanted.startswith("urn:") else FINDING_PREFIX + wanted)
        except ValueError:
            raise ItemNotFound("finding", wanted, hint) from None
        slugs = [self.projects.resolve(project)] if project else self._project_slugs()

        def plan() -> WritePlan[DeletedFinding]:
            for slug in slugs:
                quads = list(self.projects.store.quads(project_graph(slug), subject))
                if not any(q.predicate == TYPE and q.object == FINDING for q in quads):
                    continue
                data = self.projects.read(slug)
                entry = next(f for f in data.findings if f.iri == subject.value)
                result = DeletedFinding(
                    deleted=self.projects.finding_model(
                        slug, entry, self.projects.refs([entry.node])
                    ),
                    findings=len(data.findings) - 1,
                    availableActions=["list_findings", "log_finding"],
                )
                return WritePlan(result, remove=quads)
            raise ItemNotFound("finding", wanted, hint)

        return self.projects.writer.write(
            "delete_finding", plan, key=key, arguments=arguments, model=DeletedFinding
        )

    def _project_slugs(self) -> list[str]:
        return [
            graph.removeprefix(PROJECT_PREFIX)
            for graph in self.projects.store.graphs()
            if graph.startswith(PROJECT_PREFIX)
        ]


def _web_url(value: str) -> NamedNode:
    """An http(s) URL as an IRI; InvalidArgument for anything else."""
    url = value.strip()
    parts = urlsplit(url)
    reason = None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        reason = "must be an http:// or https:// URL"
    elif len(url) > MAX_URL:
        reason = f"is longer than {MAX_URL} characters"
    if reason is None:
        try:
            return NamedNode(url)
        except ValueError:
            reason = "is not a valid URL (encode spaces and special characters)"
    raise InvalidArgument("sourceUrl", f"{value!r} {reason}")


def _tags(tags: list[str]) -> list[str]:
    """Tags stripped and deduplicated, in order; at most MAX_TAGS of at most MAX_TAG chars."""
    clean = list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))
    if len(clean) > MAX_TAGS:
        raise InvalidArgument("tags", f"{len(clean)} tags; at most {MAX_TAGS}")
    for tag in clean:
        if len(tag) > MAX_TAG:
            raise InvalidArgument("tags", f"{tag[:20]!r}... is longer than {MAX_TAG} characters")
    return clean

"""What to do next in a project: concrete tool calls, read from the shape of its graph.

The project's stage comes from its counts and two settings:

- **coldStart** (fewer visits than ``brain_exploration_visits``): searches for the key terms
  of the project description (:func:`~labbrain.index.bm25.key_terms`), as
  ``search_nodes`` calls;
- **exploration** (enough visits, fewer findings than ``brain_convergence_findings``): the
  visited nodes no finding comes from yet, most visited and then most recently visited first,
  each as a ``get_node`` and a ``log_finding`` call;
- **convergence** (enough findings): claims to formulate (findings from Evidence or Results
  that support or oppose nothing yet, as ``add_proposition`` with the finding's text), questions
  still open (Questions among, or linked to, the project's nodes that nothing addresses, as
  ``get_linked_nodes``), and contradictions among the findings' sources (one opposes another,
  or they take both sides on one claim, as ``get_claim_status``).

Every step names the lab node it is about with its attribution, and says why.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from labbrain.agent.projects.models import NextStep, NextSteps, Stage, StepKind, ToolCall
from labbrain.agent.projects.projects import ProjectLog, Projects
from labbrain.discourse.models import NodeRef
from labbrain.discourse.reader import node_ref
from labbrain.index.bm25 import key_terms
from labbrain.index.text import IndexedNode
from labbrain.rdf.namespaces import DG, LB
from labbrain.store import templates
from labbrain.store.ontology import vocabulary

MAX_TERMS = 5
MAX_PER_KIND = 4
SYNTHESIS_PLACEHOLDER = "<what this node contributes to the project, in your own words>"

#: Core kinds whose findings should become claims once they support or oppose nothing.
_CLAIMABLE = {DG + "Evidence", LB + "Result"}
_QUESTION = DG + "Question"


def suggest_next_steps(projects: Projects, project: str | None = None) -> NextSteps:
    """The next steps for ``project`` (default: the active one), for the stage it is at."""
    slug = projects.resolve(project)
    data = projects.read(slug)
    settings = projects.brain.settings
    visits, findings = len(data.visits), len(data.findings)
    explore, converge = settings.brain_exploration_visits, settings.brain_convergence_findings
    visited, logged = _many(visits, "visit"), _many(findings, "finding")
    stage: Stage
    if findings >= converge:
        stage = "convergence"
        reason = (
            f"{logged} (converging from {converge}): time to formulate claims, close open "
            "questions and check contradictions"
        )
        steps = _convergence(projects, data)
    elif visits >= explore:
        stage = "exploration"
        reason = f"{visited} (exploring from {explore}) and {logged}: synthesise what was read"
        steps = _exploration(projects, data)
    else:
        stage = "coldStart"
        reason = (
            f"{visited} (exploring from {explore}): search the lab's graph for the project's "
            "key terms"
        )
        steps = _cold_start(data)
    note = None
    if not steps:
        note = "nothing specific to suggest; find_gaps shows where the lab's graph is thin"
    return NextSteps(
        project=slug,
        stage=stage,
        stageReason=reason,
        visits=visits,
        findings=findings,
        steps=steps,
        note=note,
    )


def _many(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _step(
    kind: StepKind, tool: str, arguments: dict[str, Any], why: str, node: NodeRef | None = None
) -> NextStep:
    return NextStep(kind=kind, call=ToolCall(tool=tool, arguments=arguments), why=why, node=node)


def _core_kind(node_type: str) -> str | None:
    """The core class (dg:Question, lb:Result, ...) of a node type label, if it has one."""
    kind = vocabulary().node_kind_by_label(node_type)
    return kind.iri if kind else None


# ---------------------------------------------------------------------- cold start
def _cold_start(data: ProjectLog) -> list[NextStep]:
    """Searches for the key terms of the description (of the name, without one)."""
    terms = key_terms(data.description, MAX_TERMS) or key_terms(data.name, MAX_TERMS)
    if not terms:
        return [
            _step(
                "search",
                "get_schema",
                {},
                "the project has no description to take search terms from: see what the "
                "lab's graph holds",
            )
        ]
    steps = []
    if len(terms) > 1:
        steps.append(
            _step(
                "search",
                "search_nodes",
                {"query": " ".join(terms[:3])},
                "the project description's main key terms together: nodes holding all of them "
                "come first",
            )
        )
    steps += [
        _step("search", "search_nodes", {"query": term}, f"{term!r} is a key term of the project")
        for term in terms
    ]
    return steps


# ---------------------------------------------------------------------- exploration
def _exploration(projects: Projects, data: ProjectLog) -> list[NextStep]:
    """Visited nodes no finding comes from: reread each and log what it contributes."""
    synthesised = {f.node for f in data.findings}
    counts = Counter(v.node for v in data.visits if v.node)
    last = {v.node: v.position for v in data.visits if v.node}
    order = sorted(counts, key=lambda iri: (-counts[iri], -last[iri]))
    refs = projects.node_refs(order)
    open_nodes = [iri for iri in order if iri not in synthesised and iri in refs]
    steps: list[NextStep] = []
    for iri in open_nodes[:MAX_PER_KIND]:
        ref = refs[iri]
        times = "once" if counts[iri] == 1 else f"{counts[iri]} times"
        where = {"uid": ref.uid, "dataset": ref.dataset}
        steps.append(
            _step(
                "read",
                "get_node",
                where,
                f"visited {times} and no finding comes from it yet: reread it",
                ref,
            )
        )
        steps.append(
            _step(
                "synthesise",
                "log_finding",
                {"content": SYNTHESIS_PLACEHOLDER, "sourceUid": ref.uid, "dataset": ref.dataset},
                f"record what {ref.nodeType} {ref.title!r} contributes to the project",
                ref,
            )
        )
    if not steps and refs:
        ref = refs[order[0]]
        steps.append(
            _step(
                "search",
                "get_related_pages",
                {"uid": ref.uid, "dataset": ref.dataset},
                "every visited node has a finding: look for related pages around the most "
                "visited one",
                ref,
            )
        )
    return steps


# ---------------------------------------------------------------------- convergence
def _convergence(projects: Projects, data: ProjectLog) -> list[NextStep]:
    sources = projects.refs(f.node for f in data.findings)
    stances = {
        iri: [
            (row["target"], row["stance"])
            for row in templates.run(projects.store, "projects_stances", node=iri, graph=node.graph)
        ]
        for iri, node in sources.items()
    }
    return [
        *_claims_to_formulate(data, sources, stances),
        *_open_questions(projects, data, sources),
        *_contradictions(projects, sources, stances),
    ]


def _claims_to_formulate(
    data: ProjectLog,
    sources: dict[str, IndexedNode],
    stances: dict[str, list[tuple[str, str]]],
) -> list[NextStep]:
    """Newest findings from Evidence or Results that support or oppose nothing yet."""
    steps: list[NextStep] = []
    done: set[str] = set()
    for finding in reversed(data.findings):
        node = sources.get(finding.node or "")
        if node is None or node.iri in done or stances[node.iri]:
            continue
        if _core_kind(node.node_type) not in _CLAIMABLE:
            continue
        done.add(node.iri)
        steps.append(
            _step(
                "formulate",
                "add_proposition",
                {"content": finding.content, "confidence": 0.5, "source": node.uid},
                f"your finding comes from {node.node_type} {node.title!r}, which supports or "
                "opposes no claim in the lab's graph yet: state the claim it bears on",
                node_ref(node),
            )
        )
        if len(steps) == MAX_PER_KIND:
            break
    return steps


def _open_questions(
    projects: Projects, data: ProjectLog, sources: dict[str, IndexedNode]
) -> list[NextStep]:
    """Questions among the project's nodes, or linked to them, that nothing addresses."""
    nodes = {**projects.refs(v.node for v in data.visits), **sources}
    linked: dict[str, set[str]] = defaultdict(set)  # question IRI -> project nodes linking it
    refs: dict[str, NodeRef] = {}
    for iri, node in nodes.items():
        if _core_kind(node.node_type) == _QUESTION:
            linked[iri].add(iri)
            refs[iri] = node_ref(node)
        for link in projects.reader.get_linked_nodes(node.uid, "both", node.graph).linkedNodes:
            if _core_kind(link.node.nodeType) == _QUESTION:
                linked[link.node.url].add(iri)
                refs[link.node.url] = link.node
    open_questions = {
        row["question"]
        for graph in {node.graph for node in nodes.values()}
        for row in templates.run(projects.store, "projects_unaddressed_questions", graph=graph)
    }
    chosen = sorted(
        (iri for iri in linked if iri in open_questions),
        key=lambda iri: (-len(linked[iri]), refs[iri].uid),
    )
    steps = []
    for iri in chosen[:MAX_PER_KIND]:
        ref = refs[iri]
        near = len(linked[iri] - {iri})
        how = f"linked to {near} of your project's nodes" if near else "one of your project's nodes"
        steps.append(
            _step(
                "openQuestion",
                "get_linked_nodes",
                {"uid": ref.uid, "direction": "incoming", "dataset": ref.dataset},
                f"Question {ref.title!r} is {how} and nothing addresses it yet: see what informs "
                "it, then formulate an answer with add_proposition",
                ref,
            )
        )
    return steps


def _contradictions(
    projects: Projects,
    sources: dict[str, IndexedNode],
    stances: dict[str, list[tuple[str, str]]],
) -> list[NextStep]:
    """Findings' sources that oppose one another, or take both sides on one claim."""
    sides: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for source, edges in stances.items():
        for target, stance in edges:
            sides[target][stance].add(source)

    def titles(iris: set[str]) -> str:
        return " and ".join(repr(sources[iri].title) for iri in sorted(iris))

    reasons: dict[str, str] = {}
    for target, by_stance in sorted(sides.items()):
        opposers, supporters = by_stance["opposes"], by_stance["supports"]
        if target in sources and opposers:
            reasons[target] = (
                f"the sources of your findings disagree: {titles(opposers)} opposes it"
            )
        elif opposers and supporters:
            reasons[target] = (
                f"the sources of your findings take both sides on it: {titles(supporters)} "
                f"supports it, {titles(opposers)} opposes it"
            )
    refs = projects.node_refs(reasons)
    steps = []
    for target in sorted(reasons, key=lambda iri: refs[iri].uid if iri in refs else iri):
        if target not in refs:
            continue
        ref = refs[target]
        steps.append(
            _step(
                "contradiction",
                "get_claim_status",
                {"uid": ref.uid, "dataset": ref.dataset},
                f"{ref.nodeType} {ref.title!r}: {reasons[target]}; weigh both sides",
                ref,
            )
        )
    return steps[:MAX_PER_KIND]

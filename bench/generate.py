"""Seeded generator of synthetic discourse-graph exports in the Roam exporter's JSON-LD format.

The output reproduces what the Roam "Discourse Graphs" extension writes for
"JSON-LD (Experimental)" (``apps/roam/src/utils/jsonld.ts``), quirks included:

- ``@context`` in one of three variants: ``2025-12`` (``dc:`` terms, ``dgb``/``dg`` prefixes
  without a trailing ``#``, ``backlink``), ``2026-06`` (``dct:`` terms, no ``dg``/``backlink``)
  and ``v0`` (``dg: .../schema/v0#``, nodeSchema ids are random 9-character uids);
- ``@graph`` = nodeSchema entries, relationDefs, their ``-inverse`` twins, page nodes, then
  blank relationInstances, each object with the exporter's key order;
- page ``content`` is the exporter's markdown: a YAML front matter (``title``, ``url``,
  ``author``, ``date`` as JavaScript ``Date.toString()``) and Roam bullets with wikilinks to
  other nodes by full title (``[[[[CLM]] - ...]]``), plain-page and daily-page wikilinks,
  markdown links to Roam page URLs and firebase image URLs;
- ``textRefersToNode`` values use the undefined ``page:`` (singular) prefix; ``backlinks``
  (2025-12 only) are not in the context at all;
- some nodes lack ``modified`` or ``creator`` (``JSON.stringify`` drops undefined values);
- with ``quirks=True`` (the default), one page node is typed ``"nodeSchema"`` (the exporter's
  fallback for an unknown node type) and one relationInstance has a dangling destination;
- the file is ``JSON.stringify(data, undefined, "  ")``: two-space indent, raw UTF-8, no
  trailing newline.

Everything is derived from ``(n_nodes, seed, graph, quirks)`` with private ``random.Random``
streams, so equal arguments give byte-identical files. The variant changes only the context,
the v0 schema ids and which optional keys are written: page titles, contents, dates, creators
and relation instances are the same in all three variants.

Usage::

    python bench/generate.py 20000 -o /tmp/dg-20k.jsonld --seed 1 --variant 2026-06
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import pathlib
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import TextIO

VARIANTS: tuple[str, ...] = ("2025-12", "2026-06", "v0")
"""The ``@context`` variants :func:`generate_export` can write."""

Entry = dict[str, str | list[str]]
"""One ``@graph`` object: strings, or lists of strings (``textRefersToNode``, ``backlinks``)."""

_UID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_ROAM_APP = "https://roamresearch.com/#/app/"
_FIREBASE = (
    "https://firebasestorage.googleapis.com/v0/b/firescript-577a2.appspot.com/o/imgs%2Fapp%2F"
)

# Dates of page nodes: 2019-01-01T00:00:00Z .. 2026-05-31T23:59:59Z (epoch milliseconds).
_DATE_START_MS = 1_546_300_800_000
_DATE_END_MS = 1_780_271_999_000
_EXPORT_START_MS = 1_780_272_000_000  # 2026-06-01T00:00:00Z; the export is stamped in June 2026
_DAY_MS = 86_400_000


# --------------------------------------------------------------------------------------------
# Schema: node types and relation definitions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeType:
    """A discourse node type: its schema key, label, title prefix and share of page nodes."""

    code: str
    """Short code used in titles (``CLM``), or ``SRC`` for sources (titled ``@citekey``)."""
    key: str
    """Schema page uid in the 2025-12 / 2026-06 exports, e.g. ``_CLM-node``."""
    label: str
    share: float
    """Fraction of page nodes of this type."""
    length: float
    """Relative content length (1.0 = the overall median)."""


@dataclass(frozen=True, slots=True)
class RelationDef:
    """A relation definition; the export writes it and an ``-inverse`` twin."""

    key: str
    label: str
    complement: str
    source: str
    """Domain node type code."""
    destination: str
    """Range node type code."""
    share: float
    """Fraction of relation instances using this definition."""


NODE_TYPES: tuple[NodeType, ...] = (
    NodeType("RES", "_RES-node", "Result", 0.20, 1.1),
    NodeType("QUE", "_QUE-node", "Question", 0.06, 0.7),
    NodeType("CON", "_CON-node", "Conclusion", 0.06, 0.9),
    NodeType("EVD", "_EVD-node", "Evidence", 0.22, 1.25),
    NodeType("CLM", "_CLM-node", "Claim", 0.22, 0.85),
    NodeType("HYP", "_HYP-node", "Hypothesis", 0.08, 0.85),
    NodeType("ISS", "_ISS-node", "Issue", 0.04, 0.6),
    NodeType("SRC", "_SRC-node", "Source", 0.12, 1.5),
)
"""Discourse node types, in the order their nodeSchema entries are written."""

_EXTRA_SCHEMAS: tuple[tuple[str, str], ...] = (("page-node", "Page"), ("blck-node", "Block"))

RELATION_DEFS: tuple[RelationDef, ...] = (
    RelationDef("_SUPP-rel", "Supports", "Supported By", "EVD", "CLM", 0.30),
    RelationDef("_OPPO-rel", "Opposes", "Opposed By", "EVD", "CLM", 0.06),
    RelationDef("_INFO-rel", "Informs", "Informed By", "EVD", "QUE", 0.08),
    RelationDef("_ADDR-rel", "Addresses", "Addressed By", "CLM", "QUE", 0.10),
    RelationDef("_RESSUPP-rel", "Supports", "Supported By", "RES", "HYP", 0.16),
    RelationDef("_RESOPPO-rel", "Opposes", "Opposed By", "RES", "HYP", 0.05),
    RelationDef("_RESINFO-rel", "Informs", "Informed By", "RES", "QUE", 0.10),
    RelationDef("_RESCON-rel", "Supports", "Supported By", "RES", "CON", 0.08),
    RelationDef("_SRCINFO-rel", "Informs", "Informed By", "SRC", "QUE", 0.07),
)
"""Relation definitions, in the order they are written (inverses follow all of them)."""

_TYPE_INDEX = {t.code: i for i, t in enumerate(NODE_TYPES)}
_HYP = _TYPE_INDEX["HYP"]
_SRC = _TYPE_INDEX["SRC"]


def _context(variant: str, graph: str) -> dict[str, str]:
    """Return the ``@context`` of ``variant`` for ``graph``, keys in the exporter's order."""
    pages = f"{_ROAM_APP}{graph}/page/"
    if variant == "v0":
        return {
            "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
            "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
            "owl": "http://www.w3.org/2002/07/owl#",
            "dc": "http://purl.org/dc/elements/1.1/",
            "prov": "http://www.w3.org/ns/prov#",
            "sioc": "http://rdfs.org/sioc/ns#",
            "dg": "https://discoursegraphs.com/schema/v0#",
            "title": "dc:title",
            "label": "rdfs:label",
            "modified": "dc:modified",
            "created": "dc:date",
            "creator": "dc:creator",
            "content": "sioc:content",
            "source": "dg:source",
            "destination": "dg:destination",
            "predicate": "rdf:predicate",
            "nodeSchema": "dg:NodeSchema",
            "relationDef": "dg:RelationDef",
            "relationInstance": "dg:RelationInstance",
            "inverseOf": "owl:inverseOf",
            "pages": pages,
        }
    dc = "dct" if variant == "2026-06" else "dc"
    ctx = {
        "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
        "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
        "owl": "http://www.w3.org/2002/07/owl#",
        dc: "http://purl.org/dc/terms/" if dc == "dct" else "http://purl.org/dc/elements/1.1/",
        "prov": "http://www.w3.org/ns/prov#",
        "sioc": "http://rdfs.org/sioc/ns#",
        "dgb": "https://discoursegraphs.com/schema/dg_base",
    }
    if variant == "2025-12":
        ctx["dg"] = "https://discoursegraphs.com/schema/dg_core"
    ctx.update(
        {
            "subClassOf": "rdfs:subClassOf",
            "title": f"{dc}:title",
            "label": "rdfs:label",
            "modified": f"{dc}:modified",
            "created": f"{dc}:date",
            "creator": f"{dc}:creator",
            "content": "sioc:content",
            "source": "dgb:source",
            "destination": "dgb:destination",
            "textRefersToNode": "dgb:textRefersToNode",
            "predicate": "rdf:predicate",
            "nodeSchema": "dgb:NodeSchema",
            "relationDef": "dgb:RelationDef",
            "relationInstance": "dgb:RelationInstance",
            "inverseOf": "owl:inverseOf",
        }
    )
    if variant == "2025-12":
        ctx["backlink"] = "dg:backlink"
    ctx["pages"] = pages
    return ctx


# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------
# Each list is ordered from common to rare; picks follow a Zipf law over that order, so the
# text has a skewed term distribution like a real lab's notes.

_PROTEINS = (
    "actin",
    "Arp2/3 complex",
    "clathrin",
    "dynamin",
    "N-WASP",
    "cofilin",
    "myosin-I",
    "capping protein",
    "cortactin",
    "AP2",
    "epsin",
    "Sla2",
    "Las17",
    "Hip1R",
    "profilin",
    "formin",
    "FCHo2",
    "endophilin",
    "amphiphysin",
    "SNX9",
    "Abp1",
    "Pan1",
    "Ede1",
    "Myo5",
    "Rvs167",
    "Vrp1",
    "Bzz1",
    "Syp1",
    "End3",
    "intersectin",
    "PI(4,5)P2",
    "septin",
    "spectrin",
    "ezrin",
    "talin",
    "vinculin",
    "α-actinin",
    "fimbrin",
    "Sac6",
    "tropomyosin",
    "Ena/VASP",
    "WAVE complex",
    "Cdc42",
    "Rac1",
    "RhoA",
    "mDia1",
    "coronin",
    "Aip1",
    "GMF",
    "twinfilin",
    "CARMIL",
    "WASH complex",
    "ESCRT-III",
    "synaptojanin",
    "auxilin",
    "Hsc70",
    "OCRL",
    "PI3K",
    "β-actin",
    "γ-actin",
    "non-muscle myosin II",
    "filamin",
    "BAR-domain proteins",
    "F-BAR proteins",
    "Ent1",
    "Yap1802",
    "Inp52",
    "Bbc1",
    "Scd5",
    "Crn1",
)
_STRUCTURES = (
    "endocytic site",
    "plasma membrane",
    "clathrin-coated pit",
    "actin cortex",
    "endocytic coat",
    "membrane invagination",
    "lamellipodium",
    "actin patch",
    "branched actin network",
    "invagination neck",
    "cell wall",
    "leading edge",
    "filopodium",
    "vesicle",
    "focal adhesion",
    "stress fiber",
    "membrane tube",
    "eisosome",
    "coated vesicle",
    "cell cortex",
    "podosome",
    "phagocytic cup",
    "macropinosome",
    "bud neck",
    "cytokinetic ring",
    "lipid bilayer",
    "actin comet tail",
    "membrane bleb",
)
_PROCESSES = (
    "clathrin-mediated endocytosis",
    "actin polymerization",
    "vesicle scission",
    "membrane invagination",
    "filament nucleation",
    "force generation",
    "coat assembly",
    "membrane bending",
    "network branching",
    "pit maturation",
    "cargo sorting",
    "filament severing",
    "barbed-end capping",
    "actin turnover",
    "membrane remodeling",
    "cell migration",
    "treadmilling",
    "vesicle uncoating",
    "coat disassembly",
    "endocytic internalization",
    "phagocytosis",
    "macropinocytosis",
    "lamellipodial protrusion",
    "cytokinesis",
    "membrane fission",
    "actin network disassembly",
    "lipid phase separation",
    "receptor clustering",
    "cortical flow",
    "mechanotransduction",
    "actin bundling",
    "filament elongation",
    "membrane scission",
    "coat curvature generation",
    "nucleation-promoting factor activation",
    "endosome fusion",
    "tubule formation",
)
_MEASURES = (
    "membrane tension",
    "actin filament density",
    "patch lifetime",
    "invagination depth",
    "coat lifetime",
    "polymerization rate",
    "turgor pressure",
    "force per filament",
    "recruitment timing",
    "fluorescence intensity",
    "membrane curvature",
    "bending rigidity",
    "internalization efficiency",
    "network elasticity",
    "branch density",
    "filament length",
    "stall force",
    "scission time",
    "number of Arp2/3 complexes",
    "nucleation rate",
    "disassembly rate",
    "diffusion coefficient",
    "off-rate",
    "coat radius",
    "pit density",
    "vesicle diameter",
    "protrusion velocity",
    "cortical thickness",
    "Young's modulus",
    "persistence length",
    "lifetime variability",
    "abortive pit fraction",
    "actin intensity peak",
    "retrograde flow speed",
    "spring constant",
    "energy dissipation",
    "tether force",
)
_SYSTEMS = (
    "budding yeast",
    "SK-MEL-2 cells",
    "fission yeast",
    "HeLa cells",
    "Cytosim simulations",
    "reconstituted actin networks",
    "mammalian cells",
    "fibroblasts",
    "Dictyostelium",
    "Xenopus egg extracts",
    "keratocytes",
    "giant unilamellar vesicles",
    "supported lipid bilayers",
    "neurons",
    "macrophages",
    "MEDYAN simulations",
    "a continuum model",
    "RPE1 cells",
    "U2OS cells",
    "COS-7 cells",
    "Drosophila S2 cells",
    "a stochastic model",
    "hTERT-RPE1 cells",
    "zebrafish embryos",
    "C. elegans embryos",
)
_METHODS = (
    "live-cell imaging",
    "TIRF microscopy",
    "Cytosim",
    "cryo-electron tomography",
    "particle tracking",
    "kymograph analysis",
    "FRAP",
    "CLEM",
    "optical tweezers",
    "micropipette aspiration",
    "single-molecule imaging",
    "super-resolution microscopy",
    "CRISPR knock-in",
    "endogenous tagging",
    "agent-based simulation",
    "finite element modeling",
    "Brownian dynamics",
    "western blot",
    "AFM indentation",
    "STORM",
    "lattice light-sheet microscopy",
    "spinning-disk confocal",
    "image segmentation",
    "MATLAB tracking scripts",
    "TrackMate",
    "a parameter sweep",
    "Bayesian inference",
    "linear mixed-effects models",
    "bootstrap resampling",
    "tether pulling",
    "expansion microscopy",
    "FCS",
    "pyrene-actin assays",
    "single-filament TIRF assays",
)
_PERTURBATIONS = (
    "latrunculin A treatment",
    "CK-666 treatment",
    "hypotonic shock",
    "sorbitol treatment",
    "deletion of SLA2",
    "Arp2/3 inhibition",
    "cofilin overexpression",
    "PI(4,5)P2 depletion",
    "increased turgor pressure",
    "reduced membrane tension",
    "jasplakinolide treatment",
    "blebbistatin treatment",
    "dynasore treatment",
    "a shift to 37 °C",
    "FCHo2 knockdown",
    "dynamin-2 knockout",
    "myosin-I deletion",
    "capping protein depletion",
    "osmotic swelling",
    "cholesterol depletion",
    "cell spreading on stiff substrates",
    "cytochalasin D treatment",
    "SMIFH2 treatment",
    "expression of a dominant-negative dynamin",
    "doubling the Arp2/3 concentration",
    "removing the membrane-binding domain",
    "halving the polymerization rate",
    "adding a capping protein gradient",
)
_CLAIM_VERBS = (
    "increases",
    "reduces",
    "is required for",
    "promotes",
    "inhibits",
    "regulates",
    "is sufficient for",
    "controls",
    "limits",
    "drives",
    "scales with",
    "accelerates",
    "delays",
    "does not depend on",
    "buffers",
    "stabilizes",
    "is rate-limiting for",
    "sets the timing of",
    "tunes",
    "facilitates",
    "impairs",
    "antagonizes",
    "couples to",
    "is dispensable for",
    "enhances",
)
_CONTEXTS = (
    "",
    " in budding yeast",
    " in mammalian cells",
    " under high membrane tension",
    " at endocytic sites",
    " in Cytosim simulations",
    " in vitro",
    " during cell migration",
    " at low Arp2/3 density",
    " in the absence of BAR-domain proteins",
    " under osmotic stress",
    " at physiological turgor pressure",
    " in fission yeast",
    " in the lamellipodium",
    " when capping is limiting",
    " in reconstituted systems",
    " at the leading edge",
    " in polarized cells",
    " during the late stage of endocytosis",
    " at 25 °C",
)
_MECHANISMS = (
    "increasing local filament density",
    "generating pushing forces against the membrane",
    "sensing membrane curvature",
    "storing elastic energy in the network",
    "recruiting the Arp2/3 complex",
    "coupling the coat to the actin network",
    "lowering the energy barrier for scission",
    "limiting barbed-end diffusion",
    "accelerating filament disassembly",
    "concentrating nucleation-promoting factors",
    "tilting filaments toward the membrane",
    "bundling filaments at the neck",
    "releasing membrane tension",
    "increasing the effective stall force",
    "sequestering monomeric actin",
    "forming a condensate with the coat",
)
_CHANGE_UP = ("increased", "rose", "was elevated", "went up")
_CHANGE_DOWN = ("decreased", "dropped", "was reduced", "fell")
_HEDGES = (
    "This suggests that",
    "Consistent with this,",
    "Interestingly,",
    "However,",
    "Notably,",
    "We therefore propose that",
    "One possibility is that",
    "Taken together, these data indicate that",
    "In contrast,",
    "As expected,",
    "Surprisingly,",
    "In our hands,",
    "Our model predicts that",
    "It is likely that",
    "Previous work showed that",
)
_PLAIN_PAGES = (
    "Cytosim",
    "actin",
    "endocytosis",
    "Methods",
    "Reading Notes",
    "lab meeting",
    "membrane tension",
    "Arp2/3 complex",
    "clathrin",
    "image analysis pipeline",
    "yeast strains",
    "TIRF",
    "plasmids",
    "Figure 3",
    "Figure 2",
    "MEDYAN",
    "simulation parameters",
    "protocols",
    "grant",
    "paper draft",
    "journal club",
    "open questions",
    "microscope booking",
    "Fiji",
    "Supplementary Figure 4",
    "model assumptions",
    "reviewer comments",
    "data management",
)
_TAGS = (
    "#todo",
    "#[[to read]]",
    "#important",
    "#question",
    "#resultGrounded",
    "#firstPass",
    "#[[needs review]]",
    "#idea",
    "#methods",
    "#[[follow up]]",
)
_PARAMS: tuple[tuple[str, float, float, str, int], ...] = (
    ("membrane tension", 0.001, 1.0, " pN/nm", 3),
    ("bending rigidity", 10.0, 400.0, " pN·nm", 0),
    ("branching rate", 0.01, 5.0, " s⁻¹", 2),
    ("polymerization rate", 1.0, 60.0, " nm/s", 1),
    ("turgor pressure", 0.1, 1.0, " MPa", 2),
    ("coat radius", 15.0, 60.0, " nm", 0),
    ("stall force", 1.0, 9.0, " pN", 1),
    ("capping rate", 0.1, 10.0, " µM⁻¹s⁻¹", 2),
    ("number of Arp2/3 complexes", 50.0, 400.0, "", 0),
    ("filament rigidity", 0.01, 0.1, " pN·µm²", 3),
    ("actin concentration", 0.5, 40.0, " µM", 1),
    ("linker stiffness", 10.0, 1000.0, " pN/µm", 0),
    ("time step", 0.0001, 0.01, " s", 4),
    ("viscosity", 0.1, 5.0, " pN·s/µm²", 2),
)
_SURNAMES = (
    "Kaksonen",
    "Drubin",
    "Akamatsu",
    "Mogilner",
    "Nedelec",
    "Pollard",
    "Kirchhausen",
    "Idrissi",
    "Picco",
    "Sun",
    "Mund",
    "Serwas",
    "Lacy",
    "Ferguson",
    "Taylor",
    "Merrifield",
    "Sochacki",
    "Taraska",
    "Haucke",
    "McMahon",
    "Boulant",
    "Roux",
    "Sens",
    "Carlsson",
    "Bieling",
    "Mullins",
    "Fletcher",
    "Theriot",
    "Sykes",
    "Plastino",
    "Blanchoin",
    "Goode",
    "Michelot",
    "Faix",
    "Hinze",
    "Rangamani",
    "Dmitrieff",
    "Lemiere",
    "Berro",
    "Wu",
    "Chen",
    "Zhang",
    "Li",
    "Wang",
    "Smith",
    "Johnson",
    "Garcia",
    "Kumar",
    "Nguyen",
    "Müller",
    "Schmidt",
    "Rossi",
    "Tanaka",
    "Kim",
    "Park",
    "Silva",
    "Novak",
    "Andersen",
    "Dubois",
    "Cohen",
)
_JOURNALS = (
    "eLife",
    "Journal of Cell Biology",
    "Molecular Biology of the Cell",
    "Nature Cell Biology",
    "Cell",
    "PNAS",
    "Current Biology",
    "Developmental Cell",
    "Biophysical Journal",
    "Nature Communications",
    "PLoS Computational Biology",
    "Science",
    "Nature",
    "Journal of Cell Science",
    "Cell Reports",
    "bioRxiv",
)
_TITLE_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "and",
        "or",
        "with",
        "from",
        "during",
        "is",
        "are",
        "does",
        "do",
        "that",
        "as",
        "its",
        "under",
        "we",
        "our",
    )
)
_CREATORS = (
    "Maria Akamatsu",
    "David Chen",
    "Sofia Rossi",
    "Jonas Weber",
    "Priya Raman",
    "Tom Becker",
    "Aiko Tanaka",
    "Lucas Moreau",
    "Hannah Kim",
    "Omar Haddad",
    "Elena Petrova",
    "Ben Carter",
    "Chloé Martin",
    "Rahul Mehta",
    "Julia Novak",
    "Samuel Okafor",
    "Laura Fischer",
    "Kenji Sato",
    "Ana Souza",
    "Ethan Brooks",
    "Nina Lindqvist",
    "Felix Wagner",
    "Grace Liu",
    "Mateo García",
    "Ines Costa",
    "Victor Dubois",
    "Yuki Nakamura",
    "Zoe Evans",
    "Arjun Nair",
    "Clara Hoffmann",
    "Daniel Ortiz",
    "Mia Jensen",
    "Noah Schwartz",
    "Lea Keller",
    "Ivan Horvat",
    "Sara Cohen",
    "Paul Leclerc",
    "Amara Diallo",
    "Erik Nilsson",
    "Wen Zhao",
)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS_SHORT = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

_Picker = Callable[[random.Random], str]


class _Zipf:
    """Picks items of a sequence with probability proportional to ``1 / rank**s``."""

    __slots__ = ("_cum", "_hi", "_items", "_total")

    def __init__(self, items: Sequence[str], s: float = 1.0) -> None:
        """Prepare cumulative weights; ``items`` must be non-empty."""
        self._items = tuple(items)
        cum: list[float] = []
        acc = 0.0
        for rank in range(1, len(self._items) + 1):
            acc += rank**-s
            cum.append(acc)
        self._cum = cum
        self._total = acc
        self._hi = len(cum) - 1

    def __call__(self, rng: random.Random) -> str:
        """Return one item, consuming exactly one ``rng.random()`` draw."""
        return self._items[bisect.bisect(self._cum, rng.random() * self._total, 0, self._hi)]


class _Linked:
    """A picker whose result is written as a wikilink ``[[...]]`` with probability ``p``."""

    __slots__ = ("_inner", "_p")

    def __init__(self, inner: _Picker, p: float) -> None:
        """Wrap ``inner``; ``p`` is the wikilink probability."""
        self._inner = inner
        self._p = p

    def __call__(self, rng: random.Random) -> str:
        """Return the inner pick, sometimes as ``[[pick]]``."""
        word = self._inner(rng)
        return f"[[{word}]]" if rng.random() < self._p else word


def _num(lo: int, hi: int) -> _Picker:
    """Return a picker of integers in ``[lo, hi]`` as text."""

    def pick(rng: random.Random) -> str:
        """Return an integer in ``[lo, hi]`` as text."""
        return str(rng.randint(lo, hi))

    return pick


def _fold(rng: random.Random) -> str:
    """Return a fold change in [1.2, 6.0] with one decimal."""
    return f"{rng.uniform(1.2, 6.0):.1f}"


def _seconds(rng: random.Random) -> str:
    """Return a duration in [0.5, 40.0] with one decimal (unit left to the sentence)."""
    return f"{rng.uniform(0.5, 40.0):.1f}"


def _pvalue(rng: random.Random) -> str:
    """Return a conventional p-value threshold."""
    return ("0.05", "0.01", "0.001", "0.0001")[rng.randrange(4)]


def _param(rng: random.Random) -> str:
    """Return ``name = value unit`` for a model parameter, the value within its usual range."""
    name, lo, hi, unit, digits = _PARAMS[rng.randrange(len(_PARAMS))]
    return f"{name} = {rng.uniform(lo, hi):.{digits}f}{unit}"


def _figure(rng: random.Random) -> str:
    """Return a figure panel label such as ``3B``."""
    return f"{rng.randint(1, 7)}{'ABCDEF'[rng.randrange(6)]}"


def _change(rng: random.Random) -> str:
    """Return a past-tense change phrase: a percentage, a fold change, none, or a delay."""
    r = rng.random()
    if r < 0.3:
        return f"{_CHANGE_UP[rng.randrange(4)]} by {rng.randint(8, 240)}%"
    if r < 0.6:
        return f"{_CHANGE_DOWN[rng.randrange(4)]} by {rng.randint(5, 90)}%"
    if r < 0.75:
        return f"{'increased' if rng.random() < 0.5 else 'decreased'} {_fold(rng)}-fold"
    if r < 0.88:
        return "was not significantly changed"
    return f"was {'delayed' if rng.random() < 0.5 else 'shortened'} by {_seconds(rng)} s"


def _roam_date(ms: int) -> str:
    """Return the Roam daily-page title of ``ms``, e.g. ``March 3rd, 2024``."""
    d = datetime.fromtimestamp(ms / 1000, tz=UTC)
    day = d.day
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{_MONTHS[d.month - 1]} {day}{suffix}, {d.year}"


def _daily_page(rng: random.Random) -> str:
    """Return a wikilink to a random Roam daily page between 2019 and mid-2026."""
    return "[[" + _roam_date(rng.randint(_DATE_START_MS, _DATE_END_MS)) + "]]"


_SLOTS: dict[str, _Picker] = {
    "PROT": _Linked(_Zipf(_PROTEINS, 0.9), 0.06),
    "PROT_": _Zipf(_PROTEINS, 0.9),
    "STRUCT": _Zipf(_STRUCTURES),
    "PROC": _Linked(_Zipf(_PROCESSES, 0.9), 0.05),
    "PROC_": _Zipf(_PROCESSES, 0.9),
    "MEAS": _Zipf(_MEASURES, 0.9),
    "SYS": _Linked(_Zipf(_SYSTEMS), 0.04),
    "SYS_": _Zipf(_SYSTEMS),
    "METHOD": _Linked(_Zipf(_METHODS), 0.08),
    "METHOD_": _Zipf(_METHODS),
    "PERT": _Zipf(_PERTURBATIONS, 0.8),
    "VERB": _Zipf(_CLAIM_VERBS, 0.8),
    "CONTEXT": _Zipf(_CONTEXTS, 0.7),
    "MECH": _Zipf(_MECHANISMS, 0.7),
    "HEDGE": _Zipf(_HEDGES, 0.6),
    "PAGE": _Zipf(_PLAIN_PAGES),
    "TAG": _Zipf(_TAGS),
    "PERSON": _Zipf(_CREATORS, 1.1),
    "CHANGE": _change,
    "PCT": _num(5, 95),
    "N": _num(12, 480),
    "P": _pvalue,
    "SEC": _seconds,
    "FOLD": _fold,
    "PAGENO": _num(1, 40),
    "FIG": _figure,
    "PARAM": _param,
    "DATE": _daily_page,
}


class _Template:
    """A sentence pattern with ``{SLOT}`` holes filled from :data:`_SLOTS`."""

    __slots__ = ("_parts",)

    def __init__(self, text: str) -> None:
        """Split ``text`` into literal text and slot pickers; unknown slots raise ``KeyError``."""
        parts: list[str | _Picker] = []
        rest = text
        while "{" in rest:
            head, _, tail = rest.partition("{")
            name, _, rest = tail.partition("}")
            if head:
                parts.append(head)
            parts.append(_SLOTS[name])
        if rest:
            parts.append(rest)
        self._parts = tuple(parts)

    def fill(self, rng: random.Random) -> str:
        """Return the pattern with every hole filled, first letter capitalised."""
        out = "".join(p if isinstance(p, str) else p(rng) for p in self._parts)
        return _cap(out)


def _cap(text: str) -> str:
    """Capitalise an ASCII lower-case first letter unless the word is like ``mDia1``."""
    if len(text) > 1 and "a" <= text[0] <= "z" and not ("A" <= text[1] <= "Z"):
        return text[0].upper() + text[1:]
    return text


def _templates(*texts: str) -> tuple[_Template, ...]:
    """Compile each text into a :class:`_Template`."""
    return tuple(_Template(t) for t in texts)


_TITLE_TEMPLATES: dict[str, tuple[_Template, ...]] = {
    "CLM": _templates(
        "{PROT_} {VERB} {PROC_}{CONTEXT}",
        "{MEAS} {VERB} {PROC_}{CONTEXT}",
        "{PROT_} recruitment {VERB} {PROC_}{CONTEXT}",
        "{PROC_} {VERB} {MEAS}{CONTEXT}",
    ),
    "EVD": _templates(
        "{MEAS} {CHANGE} after {PERT} in {SYS_}",
        "{PROT_} {MEAS} {CHANGE} in {SYS_} upon {PERT}",
        "In {SYS_}, {MEAS} {CHANGE} after {PERT} (n = {N})",
    ),
    "RES": _templates(
        "{MEAS} {CHANGE} in {SYS_} after {PERT}",
        "{METHOD_} shows {MEAS} {CHANGE} with {PERT}",
        "{PROT_} {MEAS} {CHANGE} in our {SYS_} data after {PERT}",
        "{SYS_} with {PARAM}: {MEAS} {CHANGE}",
    ),
    "QUE": _templates(
        "How does {MEAS} affect {PROC_}{CONTEXT}?",
        "What is the role of {PROT_} in {PROC_}?",
        "Is {PROT_} required for {PROC_}{CONTEXT}?",
        "What sets the {MEAS} during {PROC_}?",
        "Does {MEAS} scale with {MEAS}{CONTEXT}?",
        "Why does {PERT} change {MEAS}?",
    ),
    "CON": _templates(
        "{PROT_} {VERB} {PROC_}{CONTEXT}",
        "{MEAS} {VERB} {PROC_}{CONTEXT}",
        "{PROC_} depends on {PROT_}{CONTEXT}",
    ),
    "HYP": _templates(
        "{PROT_} {VERB} {PROC_} by {MECH}",
        "{MEAS} {VERB} {PROC_} by {MECH}",
        "{PROT_} promotes {PROC_}{CONTEXT} by {MECH}",
    ),
    "ISS": _templates(
        "Quantify {MEAS} in {SYS_} with {METHOD_}",
        "Set up {METHOD_} for {PROT_} in {SYS_}",
        "Re-analyse {METHOD_} data for {PERT}",
        "Run a Cytosim parameter sweep over {MEAS}",
        "Test whether {PERT} changes {MEAS}",
        "Build a {SYS_} strain with tagged {PROT_}",
    ),
}

_SENTENCES = _templates(
    "{HEDGE} {PROT} {VERB} {PROC}{CONTEXT}.",
    "{MEAS} {CHANGE} after {PERT} ({SYS}, n = {N}; p < {P}).",
    "{PROT} arrives at the {STRUCT} ~{SEC} s before {PROT} and persists for {SEC} s.",
    "In {SYS} with {PARAM}, {PROC} {CHANGE}.",
    "We used {METHOD} to measure {MEAS} in {SYS}.",
    "{METHOD} of {SYS} showed that {MEAS} {CHANGE} when {PROT} was depleted.",
    "It remains unclear whether {MEAS} sets the {MEAS} during {PROC}.",
    "Need to check whether {PERT} also affects {MEAS}, see [[{PAGE}]].",
    "Key parameter: {PARAM} (literature range spans at least {FOLD}-fold).",
    "{PROT} and {PROT} co-localize at the {STRUCT} in {PCT}% of events (n = {N}).",
    "Figure {FIG}: {MEAS} vs. {MEAS} for {SYS}.",
    "Discussed with [[{PERSON}]] on {DATE}: {PROC} may be limited by {MEAS}.",
    "{HEDGE} {MEAS} {VERB} {PROC}{CONTEXT}, which would explain the {MEAS} we see.",
    "The {STRUCT} is {SEC} nm wider in {SYS} than in {SYS}.",
    "{PERT} abolished {PROC} in {PCT}% of {STRUCT}s.",
    "Model fit: {PARAM} reproduces the {MEAS} within {PCT}% ({METHOD}).",
    "{HEDGE} {PROC} requires both {PROT} and {PROT}.",
    "Our {METHOD} data suggest {MEAS} is {FOLD}x higher at the {STRUCT} than in bulk.",
    "Open question: does {MEAS} feed back on {PROT} recruitment? {TAG}",
    "Compare with the {METHOD} measurements in [[{PAGE}]] ({DATE}).",
)
_QUOTES = _templates(
    '"{HEDGE} {PROT_} {VERB} {PROC_}{CONTEXT}." (p. {PAGENO})',
    '"{MEAS} {CHANGE} following {PERT} (Fig. {FIG})." (p. {PAGENO})',
    '"We found that {PROT_} {VERB} {PROC_} in {SYS_}." (p. {PAGENO})',
)
_TASKS = _templates(
    "[ ] re-run {METHOD} with {PERT}",
    "[x] quantify {MEAS} in {SYS}",
    "[ ] add {PROT} to the Cytosim config",
    "[ ] ask [[{PERSON}]] about {METHOD}",
    "[x] check {MEAS} against {SYS} controls",
    "[ ] repeat with n > {N} {TAG}",
)

_SECTIONS: dict[str, tuple[str, ...]] = {
    "CLM": ("## Asserted by", "## Notes", "## Open questions", "## Related work"),
    "EVD": (
        "## Summary of Result (with supporting snippets)",
        "## Summary of Method (with supporting snippets)",
        "## Notes",
        "## Caveats",
    ),
    "RES": ("**Experiment**", "**Observation**", "**Analysis**", "**Next steps**"),
    "QUE": ("## Context", "## Possible approaches", "## Related"),
    "CON": ("## Conclusion", "## Supporting results", "## Caveats"),
    "HYP": ("## Rationale", "## Predictions", "## Tests"),
    "ISS": ("## Steps", "## Notes"),
    "SRC": ("### [[Reading Notes]]", "Key claims", "Methods", "Scratchpad"),
}

_LINK_FORMS = (
    "Supported by {}",
    "see {}",
    "{}",
    "Related: {}",
    "cf. {}",
    "Informs {}",
    "Compare {}",
    "{} (discussed in lab meeting)",
    "Builds on {}",
    "Contradicts? {}",
)

# Poisson(1.55) cumulative weights for the number of wikilinks to other nodes.
_LINK_COUNT_CUM = tuple(
    sum(math.exp(-1.55) * 1.55**j / math.factorial(j) for j in range(k + 1)) for k in range(12)
)


# --------------------------------------------------------------------------------------------
# Small formatting helpers
# --------------------------------------------------------------------------------------------


def _uid(rng: random.Random, length: int = 9) -> str:
    """Return ``length`` characters of ``[A-Za-z0-9_-]`` drawn from one ``getrandbits`` call."""
    bits = rng.getrandbits(6 * length)
    chars = []
    for _ in range(length):
        chars.append(_UID_ALPHABET[bits & 63])
        bits >>= 6
    return "".join(chars)


def _iso(ms: int) -> str:
    """Return JavaScript ``Date.toJSON()`` of epoch milliseconds: ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    d = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return (
        f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
        f".{ms % 1000:03d}Z"
    )


def _js_date(ms: int) -> str:
    """Return JavaScript ``Date.toString()`` of epoch milliseconds on a UTC machine."""
    d = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return (
        f"{_WEEKDAYS[d.weekday()]} {_MONTHS_SHORT[d.month - 1]} {d.day:02d} {d.year:04d} "
        f"{d.hour:02d}:{d.minute:02d}:{d.second:02d} GMT+0000 (Coordinated Universal Time)"
    )


def _uuid(rng: random.Random) -> str:
    """Return a random version-4 style UUID string."""
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _quotas(total: int, shares: Sequence[float]) -> list[int]:
    """Split ``total`` into integers proportional to ``shares``; they sum to ``total``.

    Uses the largest-remainder method, ties broken by position, so the split is deterministic.
    """
    weight = sum(shares)
    if total <= 0 or weight <= 0:
        return [0] * len(shares)
    raw = [total * s / weight for s in shares]
    counts = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: (counts[i] - raw[i], i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


# --------------------------------------------------------------------------------------------
# Planning: everything but the page contents
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    """The graph's structure, decided before any content is written.

    Invariants: ``uids`` are distinct 9-character strings; ``titles`` are distinct; every
    relation ``(d, s, t)`` has ``types[s]`` / ``types[t]`` equal to the domain / range of
    ``RELATION_DEFS[d]``, ``s != t``, and no ``(s, t)`` pair repeats; ``quirk_node`` (if any) is
    in no relation; ``links[i]`` never contains ``i``.
    """

    graph: str
    seed: int
    quirks: bool
    generated_ms: int
    uids: list[str]
    types: list[int]
    titles: list[str]
    paper_titles: dict[int, str]
    """Per source node: the paper title its citekey was made from."""
    creators: list[str | None]
    created: list[int]
    modified: list[int | None]
    lengths: list[int]
    links: list[list[int]]
    url_links: list[int]
    """Per node: a node to link by Roam page URL, or -1."""
    refers: list[bool]
    """Per node: write ``textRefersToNode`` (2025-12 / 2026-06)."""
    backlinks: dict[int, list[int]]
    """Nodes that get a ``backlinks`` key (2025-12), with the nodes linking to them."""
    relations: list[tuple[int, int, int]]
    quirk_node: int
    """Index of the Hypothesis typed ``nodeSchema`` when ``quirks`` (-1 if ``n_nodes`` is 0)."""
    dangling: tuple[int, str, str, str] | None
    """``(position among relation instances, predicate key, source uid, missing uid)``."""


def _plan(n_nodes: int, seed: int, graph: str, quirks: bool) -> _Plan:
    """Decide uids, types, titles, metadata, links and relations of ``n_nodes`` page nodes."""
    rng = random.Random(f"dg-bench:{seed}:structure")

    counts = _quotas(n_nodes, [t.share for t in NODE_TYPES])
    if n_nodes > 0 and counts[_HYP] == 0:
        biggest = max(range(len(counts)), key=lambda i: counts[i])
        counts[biggest] -= 1
        counts[_HYP] += 1
    types = [ti for ti, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(types)
    by_type: list[list[int]] = [[] for _ in NODE_TYPES]
    for i, ti in enumerate(types):
        by_type[ti].append(i)

    uid_set: set[str] = set()
    uids: list[str] = []
    for _ in range(n_nodes):
        uid = _uid(rng)
        while uid in uid_set:
            uid = _uid(rng)
        uid_set.add(uid)
        uids.append(uid)

    # Creators (Zipf-skewed, ~1% missing) and dates (growing activity, ~10% without modified).
    creator_pick = _Zipf(_CREATORS, 1.0)
    creators: list[str | None] = []
    created: list[int] = []
    modified: list[int | None] = []
    span = _DATE_END_MS - _DATE_START_MS
    for _ in range(n_nodes):
        creators.append(None if rng.random() < 0.01 else creator_pick(rng))
        c = _DATE_START_MS + int(span * rng.random() ** 0.75)
        created.append(c)
        if rng.random() < 0.10:
            modified.append(None)
        else:
            delay = int(rng.expovariate(1.0 / (40 * _DAY_MS))) if rng.random() < 0.8 else 0
            modified.append(min(c + delay, _DATE_END_MS))

    # Content lengths: log-normal around a ~600 character median, capped near 8 kB.
    lengths = [
        min(int(rng.lognormvariate(math.log(420 * NODE_TYPES[ti].length), 0.75)), 7800)
        for ti in types
    ]

    titles, paper_titles = _titles(rng, types, by_type, n_nodes)
    # One Hypothesis is set aside, in no relation, whether or not ``quirks`` types it
    # "nodeSchema": the rest of the graph is the same either way.
    quirk_node = rng.choice(by_type[_HYP]) if by_type[_HYP] else -1

    relations = _relations(rng, by_type, n_nodes, quirk_node)

    # Wikilinks to other nodes: Poisson(1.55) per node, drawn from relation neighbours,
    # already-popular link targets and uniformly random nodes.
    neighbours: list[list[int]] = [[] for _ in range(n_nodes)]
    for _, s, t in relations:
        neighbours[s].append(t)
        neighbours[t].append(s)
    links: list[list[int]] = []
    urn: list[int] = []
    for i in range(n_nodes):
        k = bisect.bisect(_LINK_COUNT_CUM, rng.random(), 0, len(_LINK_COUNT_CUM) - 1)
        chosen: list[int] = []
        for _ in range(k):
            r = rng.random()
            if r < 0.4 and neighbours[i]:
                j = rng.choice(neighbours[i])
            elif r < 0.7 and urn:
                j = rng.choice(urn)
            else:
                j = rng.randrange(n_nodes)
            if j != i and j not in chosen:
                chosen.append(j)
                urn.append(j)
        links.append(chosen)
    url_links = [
        rng.randrange(n_nodes) if n_nodes > 1 and rng.random() < 0.06 else -1
        for _ in range(n_nodes)
    ]
    for i, j in enumerate(url_links):
        if j == i:
            url_links[i] = -1

    # textRefersToNode on ~10% of nodes: they must mention at least one other node.
    refers = [n_nodes > 1 and rng.random() < 0.10 for _ in range(n_nodes)]
    for i in range(n_nodes):
        if refers[i] and not links[i] and url_links[i] < 0:
            j = rng.randrange(n_nodes - 1)
            links[i].append(j if j < i else j + 1)

    # backlinks on ~5% of nodes, chosen among nodes that something links to.
    incoming: dict[int, list[int]] = {}
    for i in range(n_nodes):
        for j in links[i]:
            incoming.setdefault(j, []).append(i)
        if url_links[i] >= 0 and i not in incoming.get(url_links[i], ()):
            incoming.setdefault(url_links[i], []).append(i)
    p_back = min(1.0, 0.05 * n_nodes / len(incoming)) if incoming else 0.0
    backlinks = {j: incoming[j] for j in sorted(incoming) if rng.random() < p_back}

    generated_ms = _EXPORT_START_MS + rng.randrange(29 * _DAY_MS)

    dangling: tuple[int, str, str, str] | None = None
    if quirks:
        missing = _uid(rng)
        while missing in uid_set:
            missing = _uid(rng)
        # The source exists and fits the predicate's domain whenever the graph allows it.
        predicate, source_uid = RELATION_DEFS[0].key, uids[0] if uids else _uid(rng)
        for rdef in RELATION_DEFS:
            domain = [i for i in by_type[_TYPE_INDEX[rdef.source]] if i != quirk_node]
            if domain:
                predicate, source_uid = rdef.key, uids[rng.choice(domain)]
                break
        dangling = (rng.randint(0, len(relations)), predicate, source_uid, missing)

    return _Plan(
        graph=graph,
        seed=seed,
        quirks=quirks,
        generated_ms=generated_ms,
        uids=uids,
        types=types,
        titles=titles,
        paper_titles=paper_titles,
        creators=creators,
        created=created,
        modified=modified,
        lengths=lengths,
        links=links,
        url_links=url_links,
        refers=refers,
        backlinks=backlinks,
        relations=relations,
        quirk_node=quirk_node,
        dangling=dangling,
    )


def _paper_title(rng: random.Random) -> str:
    """Return a plausible paper title (title case not applied, like most Zotero records)."""
    form = rng.randrange(4)
    if form == 0:
        return _cap(
            f"{_SLOTS['PROT_'](rng)} {_SLOTS['VERB'](rng)} {_SLOTS['PROC_'](rng)}"
            f"{_SLOTS['CONTEXT'](rng)}"
        )
    if form == 1:
        return _cap(f"{_SLOTS['MEAS'](rng)} and {_SLOTS['PROC_'](rng)} in {_SLOTS['SYS_'](rng)}")
    if form == 2:
        return _cap(f"Mechanics of {_SLOTS['PROC_'](rng)} revealed by {_SLOTS['METHOD_'](rng)}")
    return _cap(
        f"A {_SLOTS['METHOD_'](rng)} study of {_SLOTS['PROT_'](rng)} during {_SLOTS['PROC_'](rng)}"
    )


def _citekey(rng: random.Random, paper_title: str) -> str:
    """Return a Better-BibTeX style citekey: author, three title words, year."""
    words = []
    for raw in paper_title.split():
        word = "".join(ch for ch in raw if ch.isalnum() and ch.isascii())
        if word and word.lower() not in _TITLE_STOPWORDS:
            words.append(word[0].upper() + word[1:])
        if len(words) == 3:
            break
    author = _SURNAMES[rng.randrange(len(_SURNAMES))].lower()
    author = author.replace("ü", "u")
    return f"{author}{''.join(words)}{rng.randint(1998, 2025)}"


def _titles(
    rng: random.Random, types: list[int], by_type: list[list[int]], n: int
) -> tuple[list[str], dict[int, str]]:
    """Return distinct titles and, per source, the paper title behind its citekey.

    Discourse nodes get ``[[XXX]] - sentence``, sources ``@citekey``. Sources are titled
    first so that Evidence titles can end with ``- [[@citekey]]`` of an existing source.
    """
    titles = [""] * n
    paper_titles: dict[int, str] = {}
    seen: set[str] = set()

    def unique(make: Callable[[], str]) -> str:
        for _ in range(40):
            candidate = make()
            if candidate not in seen:
                seen.add(candidate)
                return candidate
        base = make()
        k = 2
        while f"{base} ({k})" in seen:
            k += 1
        seen.add(f"{base} ({k})")
        return f"{base} ({k})"

    for i in by_type[_SRC]:

        def source_title(i: int = i) -> str:
            paper_titles[i] = _paper_title(rng)
            return "@" + _citekey(rng, paper_titles[i])

        titles[i] = unique(source_title)
    sources = by_type[_SRC]
    cite_urn: list[int] = []

    def cited_source() -> str:
        j = rng.choice(cite_urn) if cite_urn and rng.random() < 0.6 else rng.choice(sources)
        cite_urn.append(j)
        return f" - [[{titles[j]}]]"

    for i in range(n):
        node_type = NODE_TYPES[types[i]]
        if node_type.code == "SRC":
            continue
        patterns = _TITLE_TEMPLATES[node_type.code]
        prefix = f"[[{node_type.code}]] - "

        def make(
            code: str = node_type.code, pats: tuple[_Template, ...] = patterns, pre: str = prefix
        ) -> str:
            text = pre + pats[rng.randrange(len(pats))].fill(rng)
            if code in ("CLM", "CON", "HYP") and rng.random() < 0.6:
                text += "."
            elif code == "EVD" and sources:
                text += cited_source()
            return text

        titles[i] = unique(make)
    return titles, paper_titles


def _relations(
    rng: random.Random, by_type: list[list[int]], n_nodes: int, quirk_node: int
) -> list[tuple[int, int, int]]:
    """Return ``(def index, source, destination)`` triples, about one per page node.

    Destinations follow a Yule process per node type (preferential attachment: a few nodes
    collect many relations); sources walk a shuffled list so most are used once or twice.
    """
    pools = [[i for i in nodes if i != quirk_node] for nodes in by_type]
    usable = [
        bool(pools[_TYPE_INDEX[d.source]]) and bool(pools[_TYPE_INDEX[d.destination]])
        for d in RELATION_DEFS
    ]
    quota = _quotas(
        n_nodes, [d.share if ok else 0.0 for d, ok in zip(RELATION_DEFS, usable, strict=True)]
    )
    urns: list[list[int]] = [[] for _ in NODE_TYPES]
    walks: dict[int, list[int]] = {}
    walked = [0] * len(NODE_TYPES)
    pairs: set[tuple[int, int]] = set()
    relations: list[tuple[int, int, int]] = []
    for d_index, (rdef, want) in enumerate(zip(RELATION_DEFS, quota, strict=True)):
        if want == 0:
            continue
        src_type = _TYPE_INDEX[rdef.source]
        dst_type = _TYPE_INDEX[rdef.destination]
        src_pool, dst_pool, urn = pools[src_type], pools[dst_type], urns[dst_type]
        if src_type not in walks:
            walks[src_type] = src_pool[:]
            rng.shuffle(walks[src_type])
        walk = walks[src_type]
        for _ in range(want):
            for _attempt in range(30):
                if rng.random() < 0.25:
                    s = rng.choice(src_pool)
                else:
                    s = walk[walked[src_type] % len(walk)]
                    walked[src_type] += 1
                t = rng.choice(dst_pool) if not urn or rng.random() < 0.5 else rng.choice(urn)
                if s != t and (s, t) not in pairs:
                    pairs.add((s, t))
                    urn.append(t)
                    relations.append((d_index, s, t))
                    break
    return relations


# --------------------------------------------------------------------------------------------
# Page contents and @graph entries
# --------------------------------------------------------------------------------------------


class _Writer:
    """Turns a :class:`_Plan` into ``@graph`` entries, writing page contents on the way."""

    def __init__(self, plan: _Plan, variant: str) -> None:
        """Prepare schema ids for ``variant``; contents use their own seeded stream."""
        self.plan = plan
        self.variant = variant
        self.rng = random.Random(f"dg-bench:{plan.seed}:content")
        self.schema_ids = self._schema_ids()
        self.graph_url = f"{_ROAM_APP}{plan.graph}"

    def _schema_ids(self) -> list[str]:
        """Return one ``pages:...`` id per node type; random uids in the v0 variant."""
        if self.variant != "v0":
            return [f"pages:{t.key}" for t in NODE_TYPES]
        rng = random.Random(f"dg-bench:{self.plan.seed}:schema")
        taken = set(self.plan.uids)
        ids: list[str] = []
        for _ in NODE_TYPES:
            uid = _uid(rng)
            while uid in taken:
                uid = _uid(rng)
            taken.add(uid)
            ids.append(f"pages:{uid}")
        return ids

    def schema_entries(self) -> Iterator[Entry]:
        """Yield nodeSchema entries, then relationDefs, then their inverses (exporter order)."""
        stamp = _iso(self.plan.generated_ms)
        ids = self.schema_ids + [f"pages:{key}" for key, _ in _EXTRA_SCHEMAS]
        labels = [t.label for t in NODE_TYPES] + [label for _, label in _EXTRA_SCHEMAS]
        for schema_id, label in zip(ids, labels, strict=True):
            yield {
                "@id": schema_id,
                "@type": "nodeSchema",
                "label": label,
                "content": "",
                "modified": stamp,
                "created": stamp,
                "creator": "Unknown",
            }
        for d in RELATION_DEFS:
            yield {
                "@id": f"pages:{d.key}",
                "@type": "relationDef",
                "domain": self.schema_ids[_TYPE_INDEX[d.source]],
                "range": self.schema_ids[_TYPE_INDEX[d.destination]],
                "label": d.label,
            }
        for d in RELATION_DEFS:
            yield {
                "@id": f"pages:{d.key}-inverse",
                "@type": "relationDef",
                "domain": self.schema_ids[_TYPE_INDEX[d.destination]],
                "range": self.schema_ids[_TYPE_INDEX[d.source]],
                "label": d.complement,
                "inverseOf": f"pages:{d.key}",
            }

    def node_entries(self) -> Iterator[Entry]:
        """Yield one entry per page node, in node order, with the exporter's key order."""
        plan = self.plan
        refers_ok = self.variant != "v0"
        backlinks_ok = self.variant == "2025-12"
        for i in range(len(plan.uids)):
            entry: Entry = {
                "@id": f"pages:{plan.uids[i]}",
                "@type": "nodeSchema"
                if i == plan.quirk_node and plan.quirks
                else self.schema_ids[plan.types[i]],
                "title": plan.titles[i],
                "content": self.content(i),
            }
            modified = plan.modified[i]
            if modified is not None:
                entry["modified"] = _iso(modified)
            entry["created"] = _iso(plan.created[i])
            creator = plan.creators[i]
            if creator is not None:
                entry["creator"] = creator
            if refers_ok and plan.refers[i]:
                targets = list(plan.links[i])
                if plan.url_links[i] >= 0 and plan.url_links[i] not in targets:
                    targets.append(plan.url_links[i])
                entry["textRefersToNode"] = [f"page:{plan.uids[j]}" for j in targets]
            if backlinks_ok and i in plan.backlinks:
                entry["backlinks"] = [f"pages:{plan.uids[j]}" for j in plan.backlinks[i]]
            yield entry

    def relation_entries(self) -> Iterator[Entry]:
        """Yield blank relationInstance entries; the dangling one sits at its planned position."""
        uids = self.plan.uids
        triples = [(RELATION_DEFS[d].key, uids[s], uids[t]) for d, s, t in self.plan.relations]
        if self.plan.dangling is not None:
            position, key, source, missing = self.plan.dangling
            triples.insert(position, (key, source, missing))
        for key, source, destination in triples:
            yield {
                "@type": "relationInstance",
                "predicate": f"pages:{key}",
                "source": f"pages:{source}",
                "destination": f"pages:{destination}",
            }

    def entries(self) -> Iterator[Entry]:
        """Yield the whole ``@graph`` in exporter order."""
        yield from self.schema_entries()
        yield from self.node_entries()
        yield from self.relation_entries()

    # -- content -------------------------------------------------------------------------

    def _image(self) -> str:
        """Return a markdown image of a Roam firebase upload in this graph."""
        rng = self.rng
        token = _uid(rng, 10)
        r = rng.random()
        if r < 0.4:
            name = f"{token}.{rng.randint(0, 59):02d}.{rng.randint(0, 59):02d}.png"
        elif r < 0.6:
            name = f"{token}.{rng.randint(0, 59):02d}.{rng.randint(0, 59):02d}%20PM.png"
        else:
            name = f"{token}.png"
        return f"![]({_FIREBASE}{self.plan.graph}%2F{name}?alt=media&token={_uuid(rng)})"

    def _link_line(self, j: int) -> str:
        """Return a short bullet text containing ``[[full title of node j]]``."""
        form = _LINK_FORMS[self.rng.randrange(len(_LINK_FORMS))]
        return form.format(f"[[{self.plan.titles[j]}]]")

    def _source_metadata(self, i: int, lines: list[str]) -> None:
        """Append the Zotero-import ``metadata::`` block of source node ``i`` to ``lines``."""
        rng = self.rng
        authors = ", ".join(
            f"{_CREATORS[rng.randrange(len(_CREATORS))].split()[0]} "
            f"{_SURNAMES[rng.randrange(len(_SURNAMES))]}"
            for _ in range(rng.randint(1, 6))
        )
        key = "".join(_UID_ALPHABET[rng.randrange(26)] for _ in range(8))
        group = rng.randint(1_000_000, 9_999_999)
        abstract = " ".join(
            _SENTENCES[rng.randrange(len(_SENTENCES))].fill(rng) for _ in range(rng.randint(1, 4))
        )
        lines.extend(
            (
                "- metadata::",
                f"    - Title:: {self.plan.paper_titles[i]}",
                f"    - Year:: {rng.randint(1998, 2025)}",
                f"    - Author(s):: {authors}",
                f"    - Abstract:: {abstract}",
                "    - Type:: Article",
                f"    - Publication:: {_JOURNALS[rng.randrange(len(_JOURNALS))]}",
                f"    - URL:: https://doi.org/10.{rng.randint(1000, 99999)}/{_uid(rng, 8).lower()}",
                f"    - Date Added:: {_daily_page(rng)}",
                (
                    f"    - Zotero Links:: "
                    f"[Local Library](zotero://select/groups/{group}/items/{key}), "
                    f"[Web Library](https://www.zotero.org/groups/{group}/items/{key})"
                ),
            )
        )

    def _sentence(self) -> str:
        """Return one bullet's text: a note sentence, a quote with page number, or a task."""
        rng = self.rng
        r = rng.random()
        if r < 0.07:
            return _TASKS[rng.randrange(len(_TASKS))].fill(rng)
        if r < 0.14:
            return _QUOTES[rng.randrange(len(_QUOTES))].fill(rng)
        text = _SENTENCES[rng.randrange(len(_SENTENCES))].fill(rng)
        if rng.random() < 0.02:
            text += f" (({_uid(rng)}))"
        return text

    def content(self, i: int) -> str:
        """Return node ``i``'s markdown: front matter, then Roam bullets of about the planned size.

        Every node in ``links[i]`` appears as ``[[full title]]`` and ``url_links[i]`` (if set)
        as a markdown link to its Roam page URL.
        """
        plan = self.plan
        rng = self.rng
        title = plan.titles[i]
        code = NODE_TYPES[plan.types[i]].code
        front = [
            "---",
            'title: "' + title.replace('"', '\\"') + '"',
            f"url: {self.graph_url}/page/{plan.uids[i]}",
        ]
        if plan.creators[i] is not None:
            front.append(f"author: {plan.creators[i]}")
        front.append(f"date: {_js_date(plan.created[i])}")
        front.append("---")
        header = "\n".join(front)

        inserts = [self._link_line(j) for j in plan.links[i]]
        url_target = plan.url_links[i]
        if url_target >= 0:
            inserts.append(
                f"[{plan.titles[url_target]}]({self.graph_url}/page/{plan.uids[url_target]})"
            )
        if rng.random() < 0.08:
            for _ in range(1 + (rng.random() < 0.3) + (rng.random() < 0.1)):
                image = self._image()
                page = f" (p. {rng.randint(1, 40)})" if rng.random() < 0.3 else ""
                inserts.append(image + page)
        if rng.random() < 0.15:
            inserts.append(f"Tags: [[{_SLOTS['PAGE'](rng)}]] {_SLOTS['TAG'](rng)}")

        lines: list[str] = []
        if code == "SRC":
            self._source_metadata(i, lines)
        fixed = len(lines)  # a source's metadata block stays together
        size = len(header) + sum(len(line) + 1 for line in lines)
        size += sum(len(text) + 7 for text in inserts)
        budget = plan.lengths[i]
        sections = _SECTIONS[code]
        s = 0
        while size < budget:
            heading = sections[s] if s < len(sections) else f"Notes {_daily_page(rng)}"
            s += 1
            lines.append("- " + heading)
            size += len(heading) + 3
            for _ in range(rng.randint(1, 4)):
                text = "    - " + self._sentence()
                lines.append(text)
                size += len(text) + 1
                if rng.random() < 0.25:
                    text = "        - " + self._sentence()
                    lines.append(text)
                    size += len(text) + 1
                if size >= budget:
                    break

        for text in inserts:
            pos = rng.randint(fixed, len(lines))
            lines.insert(pos, ("- " if pos == fixed else "    - ") + text)

        return f"{header}\n\n" + "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _check_args(n_nodes: int, variant: str, graph: str | None) -> str:
    """Validate arguments and return the graph name; raise ``ValueError`` when invalid."""
    if n_nodes < 0:
        raise ValueError(f"n_nodes must be >= 0, got {n_nodes}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    name = f"bench-{n_nodes}" if graph is None else graph
    if not name or any(ch in name for ch in "/#?% \t\n"):
        raise ValueError(f"graph name {name!r} is empty or has a character not allowed in a URL")
    return name


def _header(plan: _Plan, variant: str) -> tuple[dict[str, str], str, str]:
    """Return the export's ``@context``, ``@id`` and ``prov:generatedAtTime``."""
    return _context(variant, plan.graph), f"{_ROAM_APP}{plan.graph}", _iso(plan.generated_ms)


def generate_export(
    n_nodes: int,
    seed: int = 0,
    variant: str = "2025-12",
    graph: str | None = None,
    *,
    quirks: bool = True,
) -> dict[str, object]:
    """Return a synthetic export of ``n_nodes`` page nodes as the exporter's JSON-LD object.

    Guarantees:
    - keys ``@context``, ``@id``, ``prov:generatedAtTime``, ``@graph`` in that order; ``@graph``
      holds 10 nodeSchema entries, 18 relationDefs (9 + inverses), ``n_nodes`` page nodes, then
      relationInstances (about ``n_nodes`` of them, plus the dangling one with ``quirks``);
    - equal arguments give equal objects; ``variant`` does not change titles, contents, dates,
      creators or relations, only the context, v0 schema ids and the optional keys;
    - page uids are distinct 9-character strings of ``[A-Za-z0-9_-]``, titles are distinct;
    - every relationInstance predicate is a defined relationDef, no (predicate, source,
      destination) repeats, and its ends exist with the def's domain and range types, except,
      with ``quirks``, exactly one instance whose destination is not in the file;
    - with ``quirks``, exactly one page node (titled ``[[HYP]] - ...``, in no relation) has
      ``@type`` ``"nodeSchema"``; with ``quirks=False`` that node is an ordinary Hypothesis;
    - created <= modified for every node that has ``modified``.

    Raises ``ValueError`` for a negative ``n_nodes``, an unknown ``variant`` or a graph name
    that cannot be used in a Roam URL.
    """
    name = _check_args(n_nodes, variant, graph)
    plan = _plan(n_nodes, seed, name, quirks)
    context, graph_id, stamp = _header(plan, variant)
    return {
        "@context": context,
        "@id": graph_id,
        "prov:generatedAtTime": stamp,
        "@graph": list(_Writer(plan, variant).entries()),
    }


def _dump_entry(entry: Entry, out: list[str]) -> None:
    """Append ``entry`` as ``JSON.stringify(..., "  ")`` writes it at depth 2 in ``@graph``."""
    out.append("    {\n")
    first = True
    for key, value in entry.items():
        if not first:
            out.append(",\n")
        first = False
        out.append(f"      {encode_basestring(key)}: ")
        if isinstance(value, str):
            out.append(encode_basestring(value))
        elif value:
            out.append("[\n        ")
            out.append(",\n        ".join(encode_basestring(v) for v in value))
            out.append("\n      ]")
        else:
            out.append("[]")
    out.append("\n    }")


def _write_stream(fh: TextIO, plan: _Plan, variant: str) -> None:
    """Write the export to ``fh`` exactly as ``json.dumps(obj, indent=2, ensure_ascii=False)``."""
    context, graph_id, stamp = _header(plan, variant)
    ctx = json.dumps(context, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    fh.write(
        f'{{\n  "@context": {ctx},\n  "@id": {encode_basestring(graph_id)},\n'
        f'  "prov:generatedAtTime": {encode_basestring(stamp)},\n  "@graph": [\n'
    )
    buf: list[str] = []
    first = True
    for entry in _Writer(plan, variant).entries():
        if not first:
            buf.append(",\n")
        first = False
        _dump_entry(entry, buf)
        if len(buf) > 4000:
            fh.write("".join(buf))
            buf.clear()
    buf.append("\n  ]\n}")
    fh.write("".join(buf))


def write_export(
    path: pathlib.Path,
    n_nodes: int,
    seed: int = 0,
    variant: str = "2025-12",
    graph: str | None = None,
    *,
    quirks: bool = True,
) -> None:
    """Write the export of :func:`generate_export` with the same arguments to ``path``.

    The file is ``json.dumps(generate_export(...), indent=2, ensure_ascii=False)`` byte for
    byte (what the exporter's ``JSON.stringify(data, undefined, "  ")`` gives: UTF-8, no
    trailing newline), streamed without holding the serialised text in memory. It is written
    to a temporary file beside ``path`` and renamed, so ``path`` is never left half-written.
    Raises ``ValueError`` like :func:`generate_export`, ``OSError`` when it cannot write.
    """
    name = _check_args(n_nodes, variant, graph)
    plan = _plan(n_nodes, seed, name, quirks)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            _write_stream(fh, plan, variant)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status (0 on success)."""
    parser = argparse.ArgumentParser(
        prog="generate.py",
        description="Write a synthetic discourse-graph export in the Roam exporter's JSON-LD.",
    )
    parser.add_argument("n_nodes", type=int, metavar="N", help="number of page nodes")
    parser.add_argument("-o", "--output", type=pathlib.Path, required=True, metavar="FILE")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument(
        "--variant", choices=VARIANTS, default="2025-12", help="@context variant (default 2025-12)"
    )
    parser.add_argument("--graph", metavar="NAME", help="Roam graph name (default bench-N)")
    parser.add_argument(
        "--no-quirks",
        action="store_true",
        help="leave out the unknown-type node and the dangling relation",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        write_export(
            args.output,
            args.n_nodes,
            args.seed,
            args.variant,
            args.graph,
            quirks=not args.no_quirks,
        )
    except ValueError as exc:
        parser.error(str(exc))
    except OSError as exc:
        print(f"generate.py: cannot write {args.output}: {exc}", file=sys.stderr)
        return 1
    size = args.output.stat().st_size
    elapsed = time.perf_counter() - started
    print(
        f"wrote {args.output}: {args.n_nodes} page nodes, {size:,} bytes in {elapsed:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

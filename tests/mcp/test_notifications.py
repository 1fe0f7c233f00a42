"""Resource notifications: a client that subscribed to a dataset, a node or the resource list
hears of the loads that change them, in both protocol eras (``subscriptions/listen`` from
2026-07-28, ``resources/subscribe`` before), and of nothing else.

Which nodes a load changes is known from the export files themselves (the test edits one
page, removes one and leaves one as it was), read with ``json`` only.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated

from conftest import SAMPLE, settings_for
from generate_vault import make_lab, note_path, write_vault
from labbrain.core import LabBrain
from labbrain.mcp import announce
from labbrain.mcp.announce import dataset_uri, node_uri
from labbrain.mcp.server import LabbrainServer, build_server

Json = dict[str, Any]


def pages(document: Json) -> list[Json]:
    return [e for e in document["@graph"] if "title" in e and "content" in e]


def uid(page: Json) -> str:
    """The Roam uid of a page: its id is ``pages:<uid>``."""
    return str(page["@id"]).removeprefix("pages:")


@pytest.fixture
def lab(tmp_path: Path) -> Any:
    export = tmp_path / "lab.jsonld"
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    export.write_text(json.dumps(document), encoding="utf-8")
    brain = LabBrain(settings_for(tmp_path / "store"))
    report = brain.load(str(export))
    yield brain, export, document, report.slug
    brain.close()


def edit(export: Path, document: Json) -> tuple[Json, Json, Json]:
    """Edit the first page's content and remove the last page, on disk. Returns (edited,
    removed, a page left as it was)."""
    changed = json.loads(json.dumps(document))
    nodes = pages(changed)
    edited, removed, kept = nodes[0], nodes[-1], nodes[1]
    edited["content"] += "\nA new observation."
    changed["@graph"] = [e for e in changed["@graph"] if e is not removed]
    export.write_text(json.dumps(changed), encoding="utf-8")
    return edited, removed, kept


@asynccontextmanager
async def serving(brain: LabBrain) -> AsyncIterator[LabbrainServer]:
    """The server over ``brain``, its announcer running (as ``run_stdio_async`` runs it)."""
    server = build_server(brain)
    assert server.announcer is not None
    async with anyio.create_task_group() as group:
        group.start_soon(server.announcer.run)
        yield server
        group.cancel_scope.cancel()


async def load_in_thread(brain: LabBrain, path: Path) -> None:
    await anyio.to_thread.run_sync(lambda: brain.load(str(path)))


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(announce, "POLL_SECONDS", 0.2)


def test_a_listen_stream_hears_of_the_dataset_and_the_nodes_a_load_changed(lab: Any) -> None:
    brain, export, document, slug = lab
    nodes = pages(document)
    edited, removed, kept = nodes[0], nodes[-1], nodes[1]
    watched = [dataset_uri(slug), node_uri(uid(edited)), node_uri(uid(removed))]
    watched.append(node_uri(uid(kept)))

    async def main() -> list[Any]:
        heard: list[Any] = []
        async with (
            serving(brain) as server,
            Client(server, mode="2026-07-28") as client,
            client.listen(resources_list_changed=True, resource_subscriptions=watched) as stream,
        ):
            assert edit(export, document)[0]["@id"] == edited["@id"]
            await load_in_thread(brain, export)
            with anyio.move_on_after(10):
                async for event in stream:
                    heard.append(event)
                    if len(heard) == 3:
                        break
            # nothing more comes: the kept node did not change, the list neither
            with anyio.move_on_after(0.6):
                async for event in stream:
                    heard.append(event)
        return heard

    heard = anyio.run(main)
    assert {event.uri for event in heard if isinstance(event, ResourceUpdated)} == {
        dataset_uri(slug),
        node_uri(uid(edited)),
        node_uri(uid(removed)),
    }
    assert len(heard) == 3, heard


def test_a_new_dataset_changes_the_list_and_shows_in_it(lab: Any, tmp_path: Path) -> None:
    brain, _export, document, slug = lab
    other = tmp_path / "other-lab.jsonld"
    copy = json.loads(json.dumps(document))
    for page in pages(copy):  # another lab's export: another graph, another name
        page["content"] += " (other lab)"
    copy["@id"] = str(copy.get("@id", "urn:other")) + "-other"
    other.write_text(json.dumps(copy), encoding="utf-8")

    async def main() -> tuple[list[Any], list[str], list[str]]:
        heard: list[Any] = []
        async with serving(brain) as server, Client(server, mode="2026-07-28") as client:
            before = [str(r.uri) for r in (await client.list_resources()).resources]
            async with client.listen(resources_list_changed=True) as stream:
                await load_in_thread(brain, other)
                with anyio.move_on_after(10):
                    async for event in stream:
                        heard.append(event)
                        break
            after = [str(r.uri) for r in (await client.list_resources()).resources]
        return heard, before, after

    heard, before, after = anyio.run(main)
    assert heard and isinstance(heard[0], ResourcesListChanged)
    assert dataset_uri(slug) in before
    new = set(after) - set(before)
    assert len(new) == 1 and next(iter(new)).startswith("labbrain://dataset/")


def test_an_earlier_client_subscribes_per_uri_and_hears_on_its_connection(lab: Any) -> None:
    brain, export, document, slug = lab
    edited = pages(document)[0]
    kept = pages(document)[1]
    notes: list[types.ServerNotification] = []

    async def collect(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notes.append(message)

    async def main() -> Json:
        async with (
            serving(brain) as server,
            Client(server, mode="legacy", message_handler=collect) as client,
        ):
            capabilities = client.session.server_capabilities
            assert capabilities is not None and capabilities.resources is not None
            declared = capabilities.resources.model_dump()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(node_uri(uid(edited)))
                await client.subscribe_resource(node_uri(uid(kept)))
                await client.subscribe_resource(dataset_uri(slug))
                await client.unsubscribe_resource(dataset_uri(slug))
            await client.list_resources()  # a lister hears of list changes
            edit(export, document)
            await load_in_thread(brain, export)
            with anyio.move_on_after(10):
                while not notes:
                    await anyio.sleep(0.05)
            await anyio.sleep(0.6)  # anything else would have come by now
        return declared

    declared = anyio.run(main)
    assert declared["subscribe"] is True and declared["list_changed"] is True
    updated = [n.params.uri for n in notes if isinstance(n, types.ResourceUpdatedNotification)]
    assert updated == [node_uri(uid(edited))], notes
    assert not [n for n in notes if isinstance(n, types.ResourceListChangedNotification)]


@pytest.mark.subprocess
def test_mcp_watch_tells_a_listening_client_of_a_vault_edit(tmp_path: Path) -> None:
    """`labbrain mcp --watch` over stdio, DATA_PATH a vault: a note saved in the vault reaches
    a client listening for its node (its uid is its nodeInstanceId) and for its dataset, and
    a note left alone sends nothing."""
    lab = make_lab(5, nodes=8, relations=6)
    vault = write_vault(lab, tmp_path / "vault")
    with_ids = [node for node in lab.nodes if node.instance_id is not None]
    edited, kept = with_ids[0], with_ids[1]
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("labbrain")),
        args=["--store", str(tmp_path / "store"), "mcp", "--watch"],
        env={"DATA_PATH": str(vault)},
    )

    async def main() -> tuple[list[Any], list[str]]:
        heard: list[Any] = []
        async with Client(params, read_timeout_seconds=120) as client:
            datasets = [
                str(r.uri)
                for r in (await client.list_resources()).resources
                if str(r.uri).startswith("labbrain://dataset/")
            ]
            watched = [*datasets, node_uri(str(edited.instance_id))]
            watched.append(node_uri(str(kept.instance_id)))
            async with client.listen(resource_subscriptions=watched) as stream:
                await anyio.sleep(1.5)  # the watcher's first check of the vault is done
                note = vault / note_path(lab, edited)
                note.write_text(note.read_text(encoding="utf-8") + "\nSeen again.\n", "utf-8")
                with anyio.move_on_after(30):
                    async for event in stream:
                        heard.append(event)
                        if len(heard) == 2:
                            break
                with anyio.move_on_after(1.0):
                    async for event in stream:
                        heard.append(event)
        return heard, datasets

    heard, datasets = anyio.run(main)
    assert len(datasets) == 1
    assert sorted(event.uri for event in heard) == sorted(
        [datasets[0], node_uri(str(edited.instance_id))]
    ), heard

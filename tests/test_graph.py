"""The entity graph: linked at indexing, kept in step with the chunks, used to expand queries."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
from django.core.management import call_command

from indexing import pipeline, sources
from knowledge import graph
from knowledge.entities import extract, query_keys
from knowledge.models import Chunk, ChunkEntity, Document, Entity, EntityEdge
from knowledge.search import search
from knowledge.services import workspace_delete
from tests.scripted_llm import answer, tool_call

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def graph_on(settings):
    settings.GRAPH_EXPANSION = True

CREW = """# Crew notes

## Moorings

Odalys Brennecke inspects the Pelican buoy every April with the NOAA checklist.

## Engines

Odalys Brennecke and Teodor Vasquez-Lind service the harbour tug each autumn.

## Radio

Teodor Vasquez-Lind keeps the VHF logbook in the harbour office.
"""


def expected_graph(workspace) -> tuple[Counter, Counter]:
    """Chunk counts and edge weights recomputed from scratch from the links."""
    links: dict[int, set[int]] = {}
    for chunk_id, entity_id in ChunkEntity.objects.filter(
        entity__workspace=workspace
    ).values_list("chunk_id", "entity_id"):
        links.setdefault(chunk_id, set()).add(entity_id)
    counts = Counter(e for entities in links.values() for e in entities)
    edges = Counter(pair for entities in links.values()
                    for pair in combinations(sorted(entities), 2))
    return counts, edges


def stored_graph(workspace) -> tuple[Counter, Counter]:
    counts = Counter(dict(Entity.objects.filter(workspace=workspace, chunk_count__gt=0)
                          .values_list("id", "chunk_count")))
    edges = Counter({(s, t): w for s, t, w in EntityEdge.objects.filter(
        source__workspace=workspace).values_list("source_id", "target_id", "weight")})
    return counts, edges


def add(workspace, path, embedder) -> Document:
    document = sources.add_path(workspace=workspace, path=path)
    outcome = pipeline.index_document(document_id=document.pk, embedder=embedder)
    assert outcome.status == Document.Status.INDEXED, outcome.error
    return Document.objects.get(pk=document.pk)


def test_entities_without_a_model():
    found = {e.label: e.kind for e in extract(
        "Desmond argued the date slipped. After the call, Marisol Quenby paid the ARM "
        "runners from the CI budget and called high_tides() through os.path.join.", limit=20)}
    assert found["Marisol Quenby"] == "name" and found["Desmond"] == "name"
    assert found["ARM"] == "acronym" and found["CI"] == "acronym"
    assert found["high_tides"] == "symbol" and found["os.path.join"] == "symbol"
    assert "After" not in found  # a common word starting a sentence is not a name
    assert len(extract("Alpha Beta, Gamma Delta, Epsilon Zeta, Eta Theta", limit=2)) == 2
    assert "launch date" in query_keys("When did the launch date move?")


def test_indexing_links_entities_and_keeps_counts_and_edges_in_step(
    workspace, counting_embedder, tmp_path
):
    path = tmp_path / "crew.md"
    path.write_text(CREW)
    document = add(workspace, path, counting_embedder)
    odalys = Entity.objects.get(workspace=workspace, key="odalys brennecke")
    teodor = Entity.objects.get(workspace=workspace, key="teodor vasquez-lind")
    assert odalys.kind == "name" and odalys.chunk_count >= 1
    assert stored_graph(workspace) == expected_graph(workspace)
    assert EntityEdge.objects.filter(source_id=min(odalys.pk, teodor.pk),
                                     target_id=max(odalys.pk, teodor.pk)).exists()

    # A re-index of changed content: new chunks linked, the replaced ones unlinked.
    path.write_text(CREW.replace("VHF logbook", "VHF logbook and the Zanzibar ledger"))
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert Entity.objects.get(workspace=workspace, key="zanzibar").chunk_count == 1
    assert stored_graph(workspace) == expected_graph(workspace)
    changed = Chunk.objects.get(document=document, text__contains="Zanzibar")
    assert ChunkEntity.objects.filter(chunk=changed).count() >= 2

    # Deleting the document takes its links off the counts, and its edges away.
    document.delete()
    assert not ChunkEntity.objects.exists() and not EntityEdge.objects.exists()
    assert set(Entity.objects.values_list("chunk_count", flat=True)) == {0}


def test_off_no_graph_is_kept_and_a_backfill_catches_up(
    workspace, counting_embedder, tmp_path, settings
):
    path = tmp_path / "crew.md"
    path.write_text(CREW)
    add(workspace, path, counting_embedder)
    before = stored_graph(workspace)
    ChunkEntity.objects.all().delete()
    assert stored_graph(workspace) == (Counter(), Counter())

    settings.GRAPH_EXPANSION = False
    other = tmp_path / "more.md"
    other.write_text("# More\n\nIsolde Marchetti paints the Pelican buoy.\n")
    add(workspace, other, counting_embedder)
    assert not ChunkEntity.objects.exists()

    call_command("graph", workspace=workspace.slug)
    counts, edges = stored_graph(workspace)
    assert counts >= before[0] and edges >= before[1]
    assert Entity.objects.get(workspace=workspace, key="isolde marchetti").chunk_count == 1
    assert stored_graph(workspace) == expected_graph(workspace)


def test_expansion_adds_a_keyword_leg_of_the_querys_neighbours(
    workspace, counting_embedder, tmp_path, settings
):
    path = tmp_path / "crew.md"
    path.write_text(CREW)
    add(workspace, path, counting_embedder)
    radio = Chunk.objects.get(text__contains="VHF logbook")
    question = "Who services the tug together with Odalys Brennecke?"

    settings.GRAPH_EXPANSION = False
    off = search(query=question, workspace=workspace, limit=10, legs=("keyword",))
    assert "related_entities" not in off.metadata
    assert radio.pk not in [h.chunk_id for h in off.hits]  # none of the question's words
    settings.GRAPH_EXPANSION = True
    on = search(query=question, workspace=workspace, limit=10, legs=("keyword",))
    assert "Teodor Vasquez-Lind" in on.metadata["related_entities"]
    assert "Odalys Brennecke" not in on.metadata["related_entities"]  # asked already
    # One hop away: the partner's radio log is found through the partner's name.
    assert radio.pk in [h.chunk_id for h in on.hits]
    assert on.hits[0].chunk_id == off.hits[0].chunk_id  # the direct answer stays first


def test_the_search_tool_shows_related_entities_but_never_as_a_citation(
    workspace, counting_embedder, tmp_path, settings, llm, api
):
    settings.GRAPH_EXPANSION = True
    path = tmp_path / "crew.md"
    path.write_text(CREW)
    add(workspace, path, counting_embedder)
    llm.script = [tool_call("search_knowledge_base", {"query": "Odalys Brennecke"}),
                  answer("Odalys inspects the buoy [1].")]
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    response = api.post(f"/api/threads/{thread}/messages", {"content": "Odalys?"},
                        format="json")
    assert response.status_code == 201, response.content
    (tool_result,) = [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    line = tool_result.splitlines()[-1]
    assert line.startswith("Related entities in the knowledge base")
    assert '"Teodor Vasquez-Lind"' in line and "[" not in line


def test_a_workspace_delete_removes_its_graph(workspace, counting_embedder, tmp_path):
    path = tmp_path / "crew.md"
    path.write_text(CREW)
    add(workspace, path, counting_embedder)
    assert graph.related_entities(workspace=workspace, query="Odalys Brennecke", limit=3)
    workspace_delete(workspace=workspace)
    assert not Entity.objects.exists() and not EntityEdge.objects.exists()
    assert not ChunkEntity.objects.exists()

"""Real documentation folders end to end: navigation, assets, PDF labels, honest progress."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from indexing import pipeline, sources
from indexing.pipeline import REPEATED_BLOCKS_KEY
from knowledge import selectors
from knowledge.models import Document, IngestJob
from tests.unit.test_doc_sites import contents_pdf

pytestmark = pytest.mark.django_db

NAV = (
    '<div class="topbar">Harbour Docs 2.3: the manual for harbour staff</div>'
    '<table class="menu"><tr><td>Cranes</td><td>Tides</td><td>Gauges</td><td>Search</td></tr>'
    "</table>"
)
FOOTER = "<p>Harbour Docs. Report problems to the harbour office, room 12.</p>"
PAGES = {
    "cranes.html": ("Cranes", "The harbour crane is serviced every April by the vendor."),
    "tides.html": ("Tides", "High water is predicted to the nearest minute for each station."),
    "gauges.html": ("Gauges", "The gauges record the water level every six minutes."),
}


def docs_site(root):
    """Three pages sharing a navigation bar and a footer, plus the site's assets."""
    root.mkdir()
    for name, (title, body) in PAGES.items():
        (root / name).write_text(
            f"<html><head><title>{title}</title></head><body>{NAV}<h1>{title}</h1>"
            f"<p>{body}</p>{FOOTER}</body></html>"
        )
    (root / "stylesheet.css").write_text("body { font-family: serif; }\n")
    (root / "_static").mkdir()
    (root / "_static" / "searchtools.js").write_text("function search(q) {\n  return q;\n}\n")
    (root / "app.min.js").write_text("var a=1;\n")
    (root / "app.js.map").write_text("{}")
    return root


def test_a_docs_folder_loses_its_repeated_navigation_and_its_assets(
    workspace, counting_embedder, tmp_path
):
    site = docs_site(tmp_path / "site")
    documents = sources.add_directory(workspace=workspace, root=site)
    assert sorted(d.metadata["path"] for d in documents) == sorted(PAGES)
    assert all(len(d.metadata[REPEATED_BLOCKS_KEY]) == 3 for d in documents)
    for document in documents:
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    for document in Document.objects.filter(workspace=workspace):
        title, body = PAGES[document.metadata["path"]]
        assert document.text == f"{title}\n\n{body}"
        assert not document.chunks.filter(text__contains="Harbour Docs").exists()

    with_assets = sources.add_directory(workspace=workspace, root=site, include_assets=True)
    assert sorted(d.metadata["path"] for d in with_assets) == sorted(
        [*PAGES, "stylesheet.css", "_static/searchtools.js", "app.min.js"]
    )


def test_a_repository_keeps_its_scripts_but_not_its_bundles(workspace, tmp_path):
    repo = tmp_path / "harbour"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "search.js").write_text("export function search(q) {\n  return q;\n}\n")
    (repo / "src" / "vendor.js").write_text("!function(){" + "var a=1;" * 300 + "}();\n")
    (repo / "src" / "lib.min.js").write_text("var a=1;\n")
    documents = sources.add_repository(workspace=workspace, root=repo)
    assert [d.metadata["path"] for d in documents] == ["src/search.js"]


def test_pdf_chunks_are_labelled_with_the_printed_page(client, user, workspace, tmp_path):
    (tmp_path / "manual.pdf").write_bytes(contents_pdf())
    document = sources.add_path(workspace=workspace, path=tmp_path / "manual.pdf")
    pipeline.index_document(document_id=document.pk)
    document.refresh_from_db()
    assert document.metadata["contents_pages"] == [2, 6]
    client.force_login(user)
    chunks = client.get(f"/api/documents/{document.pk}/chunks").json()["results"]
    (calibration,) = [c for c in chunks if "calibrated" in c["text"]]
    assert calibration["label"] == "p. 2"
    assert calibration["locator"]["page"] == 4
    assert calibration["locator"]["heading_path"] == ["Tide gauges", "Calibration"]
    assert not [c for c in chunks if c["locator"]["page"] in (2, 6)]


# ---------------------------------------------------------------- what happened


def test_files_gone_from_a_folder_are_named_marked_stale_and_pruned(
    workspace, tmp_path, capsys
):
    folder = tmp_path / "valves"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nAlpha valves open at dawn.\n")
    (folder / "beta.md").write_text("# Beta\n\nBeta valves close at dusk.\n")
    call_command("ingest", str(folder), workspace=workspace.slug, inline=True)
    (folder / "beta.md").rename(tmp_path / "beta.md")
    capsys.readouterr()

    call_command("ingest", str(folder), workspace=workspace.slug, inline=True)
    out = capsys.readouterr().out
    assert f"GONE    {(folder / 'beta.md').as_uri()}: the file is gone" in out
    assert "1 document's file is gone: --prune deletes them" in out
    assert "alpha.md: the file is gone" not in out

    call_command("stale", workspace=workspace.slug)  # status 0: only a report
    beta = Document.objects.get(uri=(folder / "beta.md").as_uri())
    assert beta.status == Document.Status.STALE and "no longer exists" in beta.last_error
    # --check: status 2 for cron or monitoring while any source is stale, said plainly:
    # it was a CommandError, printed as "CommandError: 1 out of date (…)".
    capsys.readouterr()
    with pytest.raises(SystemExit) as raised:
        call_command("stale", workspace=workspace.slug, check=True)
    assert raised.value.code == 2
    assert capsys.readouterr().err == (
        "1 out of date (stale, outdated, unreachable, FAILED changed since, new or deleted "
        "upstream)\n"
    )
    (tmp_path / "beta.md").rename(folder / "beta.md")  # back where it was
    call_command("stale", workspace=workspace.slug, check=True)  # nothing stale: status 0
    beta.refresh_from_db()
    assert beta.status == Document.Status.INDEXED and not beta.last_error

    (folder / "beta.md").unlink()
    call_command("ingest", str(folder), workspace=workspace.slug, inline=True, prune=True)
    assert f"DELETED {(folder / 'beta.md').as_uri()}" in capsys.readouterr().out
    assert list(Document.objects.values_list("title", flat=True)) == ["Alpha"]

    # A folder with nothing left in it, or gone itself, is pruned all the same.
    (folder / "alpha.md").unlink()
    folder.rmdir()
    call_command("ingest", str(folder), workspace=workspace.slug, inline=True, prune=True)
    assert f"DELETED {(folder / 'alpha.md').as_uri()}" in capsys.readouterr().out
    assert not Document.objects.exists()


def test_ingest_reports_unchanged_files_and_re_embedded_chunks(workspace, tmp_path, capsys):
    site = docs_site(tmp_path / "site")
    call_command("ingest", str(site), workspace=workspace.slug, inline=True)
    first = capsys.readouterr().out
    assert "3 indexed, 0 failed" in first
    chunks = Document.objects.filter(workspace=workspace).values_list("chunk_count", flat=True)
    assert f"{sum(chunks)} of {sum(chunks)} chunks embedded" in first

    call_command("ingest", str(site), workspace=workspace.slug, inline=True)
    again = capsys.readouterr().out
    assert "3 unchanged, 0 indexed, 0 failed" in again
    assert "chunks embedded" not in again

    (site / "tides.html").write_text(
        (site / "tides.html").read_text().replace("nearest minute", "nearest second")
    )
    call_command("ingest", str(site), workspace=workspace.slug, inline=True)
    edited = capsys.readouterr().out
    tides = Document.objects.get(workspace=workspace, metadata__path="tides.html")
    assert tides.chunks_embedded == 1 and not tides.unchanged
    assert f"2 unchanged, 1 indexed, 0 failed, 1 of {tides.chunk_count} chunks embedded" in edited

    job = IngestJob.objects.latest("pk")
    body = client_job(workspace, job)
    assert body["unchanged"] == 2 and body["chunks_embedded"] == 1
    assert body["summary"].startswith("2 unchanged, 1 indexed")
    assert {d["unchanged"] for d in body["documents"]} == {True, False}


def test_documents_indexed_by_older_code_are_re_indexed_reusing_unchanged_vectors(
    workspace, tmp_path, capsys
):
    site = docs_site(tmp_path / "site")
    call_command("ingest", str(site), workspace=workspace.slug, inline=True)
    capsys.readouterr()
    documents = Document.objects.filter(workspace=workspace)
    before = {d.pk: sorted(d.chunks.values_list("pk", flat=True)) for d in documents}
    # As a document indexed before a loader fix: same bytes, another indexer.
    documents.filter(metadata__path="tides.html").update(indexed_by="an older indexer")

    call_command("stale", workspace=workspace.slug)
    listed = capsys.readouterr().out
    assert "OUTDATED" in listed and "tides.html" in listed
    assert "1 stale (1 of them outdated), 2 unchanged" in listed

    call_command("ingest", str(site), workspace=workspace.slug, inline=True)
    again = capsys.readouterr().out
    # Re-read and re-chunked, but the same text keeps its rows and vectors.
    assert "2 unchanged, 1 indexed, 0 failed" in again
    tides = documents.get(metadata__path="tides.html")
    assert tides.status == Document.Status.INDEXED and not tides.unchanged
    assert tides.chunks_embedded == 0 and tides.indexed_by == documents.first().indexed_by
    assert {d.pk: sorted(d.chunks.values_list("pk", flat=True)) for d in documents} == before


def test_a_new_chunk_budget_re_chunks_documents_on_the_next_ingest(
    workspace, tmp_path, capsys, settings
):
    (tmp_path / "tides.md").write_text(
        "# Tides\n\n" + " ".join(f"High water {n} comes {n} minutes later." for n in range(40))
    )
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True)
    document = Document.objects.get(workspace=workspace)
    assert document.chunk_count < 5
    capsys.readouterr()

    settings.CHUNK_MAX_TOKENS, settings.CHUNK_OVERLAP_TOKENS = 40, 8
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True)
    assert "Done in" in (out := capsys.readouterr().out) and " 1 indexed, 0 failed" in out
    document.refresh_from_db()
    assert document.chunk_count > 8
    assert max(document.chunks.values_list("token_count", flat=True)) <= 40


def client_job(workspace, job) -> dict:
    from django.test import Client

    client = Client()
    client.force_login(workspace.owner)
    response = client.get(f"/api/jobs/{job.pk}?workspace={workspace.slug}")
    assert response.status_code == 200, response.content
    return response.json()


class ProgressWatcher:
    """The real embedder, noting the document's saved progress each time it is called."""

    def __init__(self, inner, document_id: int) -> None:
        self.inner, self.document_id = inner, document_id
        self.model_id, self.dimensions = inner.model_id, inner.dimensions
        self.seen: list[tuple[str, int, int]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        row = Document.objects.values_list("status", "chunks_embedded", "progress").get(
            pk=self.document_id
        )
        self.seen.append(row)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def test_progress_counts_chunks_per_embedding_batch(workspace, local_embedder, tmp_path, settings):
    settings.INGEST_EMBED_BATCH = 2
    (tmp_path / "log.md").write_text(
        "\n\n".join(f"# Entry {i}\n\nThe crane moved container {i} at dawn." for i in range(7))
    )
    document = sources.add_path(workspace=workspace, path=tmp_path / "log.md")
    watcher = ProgressWatcher(local_embedder, document.pk)
    pipeline.index_document(document_id=document.pk, embedder=watcher)
    assert [embedded for _, embedded, _ in watcher.seen] == [0, 2, 4, 6]
    assert {status for status, _, _ in watcher.seen} == {Document.Status.INDEXING}
    percents = [percent for _, _, percent in watcher.seen]
    assert percents == sorted(percents) and percents[-1] < 100
    document.refresh_from_db()
    assert (document.chunks_embedded, document.chunk_count, document.progress) == (7, 7, 100)


def test_queued_documents_read_waiting_in_queue(client, staff, workspace, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nThe slipway is closed on Sundays.\n")
    job = IngestJob.objects.create(workspace=workspace, description="waiting")
    sources.add_path(workspace=workspace, path=tmp_path / "a.md", job=job)  # not queued
    progress = selectors.job_progress(job=job)
    assert progress.summary() == "0 indexed, 0 failed, 1 waiting in queue"
    client.force_login(staff)
    page = client.get(reverse("admin:knowledge_ingestjob_change", args=[job.pk]))
    assert b"0/1 done: 0 indexed, 0 failed, 1 waiting in queue" in page.content
    assert page.content.count(b"waiting in queue") >= 2  # the job and its document
    document = page.context["inline_admin_formsets"][0].formset.queryset.get().document
    page = client.get(reverse("admin:knowledge_document_change", args=[document.pk]))
    assert reverse("admin:knowledge_ingestjob_change", args=[job.pk]).encode() in page.content


# ---------------------------------------------------------------- commands


def test_stale_with_an_unknown_workspace_is_an_error(workspace):
    with pytest.raises(CommandError, match="No workspace 'acmee'"):
        call_command("stale", workspace="acmee")


def test_stale_counts_the_documents_it_did_not_check(workspace, tmp_path, capsys):
    # Waiting for a worker (its task lost with a killed one): in no count, it read as if
    # the workspace had been checked whole.
    (tmp_path / "a.md").write_text("# A\n\nThe slipway is closed on Sundays.\n")
    sources.add_path(workspace=workspace, path=tmp_path / "a.md")  # not queued
    call_command("stale", workspace=workspace.slug)
    assert capsys.readouterr().out.strip().endswith(
        "; 1 not checked (waiting for a worker or being indexed)"
    )


@pytest.mark.parametrize("question", ["", "   "])
def test_ask_refuses_an_empty_question(workspace, question):
    with pytest.raises(CommandError, match="question is empty"):
        call_command("ask", question, workspace=workspace.slug)


def test_ask_about_a_missing_document_leaves_no_conversation(workspace):
    from chat.models import Thread

    with pytest.raises(CommandError, match="No document '999' in workspace 'acme'"):
        call_command("ask", "When is the launch?", workspace=workspace.slug, document=[999])
    assert not Thread.objects.exists()


@pytest.mark.parametrize("query", ["", "   "])
def test_search_refuses_an_empty_query(workspace, query):
    with pytest.raises(CommandError, match="query is empty"):
        call_command("search", query, workspace=workspace.slug)

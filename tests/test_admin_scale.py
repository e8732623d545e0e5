"""The admin's pages at scale: a job of thousands of documents, documents of megabytes
of text, tens of thousands of chunks. Each page reads what it shows (no document text it
does not show, no query per row) and offers only the user's workspaces' rows."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from knowledge.models import Document, IngestJob, Workspace
from knowledge.serializers import JOB_DOCUMENTS_LISTED
from tests.security.test_admin_trust import staff_with

pytestmark = pytest.mark.django_db

DOCUMENT_TEXT = re.compile(r'"knowledge_document"\."text"')


def documents(workspace: Workspace, n: int, prefix: str, **fields) -> list[Document]:
    return Document.objects.bulk_create(
        Document(
            workspace=workspace, source_type="markdown", uri=f"file:///{prefix}-{i}.md",
            title=f"{prefix} {i}", text=f"the whole text of {prefix} {i}", **fields,
        )
        for i in range(n)
    )


@pytest.fixture
def two_tenants():
    owner = get_user_model().objects.create_user("owner", password="pw")
    ours = Workspace.objects.create(name="Ours", slug="ours", owner=owner)
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=owner)
    documents(theirs, 3, "Secret title of theirs")
    user = staff_with("view_ingestjob", "change_ingestjob", "view_document", member=False)
    ours.members.add(user)
    return ours, user


def job_of(workspace: Workspace, n: int, name: str) -> IngestJob:
    job = IngestJob.objects.create(workspace=workspace, description=name)
    job.documents.set(documents(workspace, n, name, status=Document.Status.PENDING))
    return job


def job_page(client, job: IngestJob):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("admin:knowledge_ingestjob_change", args=[job.pk]))
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


def test_a_job_page_lists_its_first_documents_and_links_to_the_rest(client, two_tenants):
    ours, user = two_tenants
    client.force_login(user)
    small, big = job_of(ours, 5, "small"), job_of(ours, 150, "big")
    Document.objects.filter(title="big 149").update(status=Document.Status.FAILED)

    job_page(client, small)  # Django's caches (content types) filled
    page, small_queries = job_page(client, small)
    assert "Secret title of theirs" not in page  # no box of every workspace's documents
    assert 'name="documents"' not in page
    assert "IngestJob_documents object" not in page  # Django's name for a link row
    page, big_queries = job_page(client, big)
    assert "Secret title of theirs" not in page
    listed = re.findall(r">big \d+</a>", page)
    assert len(listed) == JOB_DOCUMENTS_LISTED and listed[0] == ">big 149</a>"  # failed first
    assert '<meta http-equiv="refresh"' in page  # still running: it reloads itself

    link = reverse("admin:knowledge_document_changelist") + f"?job={big.pk}"
    assert f'href="{link}"' in page and "All 150 documents of this job" in page
    rest = client.get(link).content.decode()
    assert rest.count('class="field-document_title"') == 100  # the changelist's page
    assert "small 0" not in rest and "Secret title" not in rest

    # Never a document's text, and as many queries for 150 documents as for 5.
    assert not [q for q in small_queries + big_queries if DOCUMENT_TEXT.search(q)]
    assert len(big_queries) == len(small_queries)


def test_member_scoping_covers_many_to_many_choices(rf, two_tenants):
    from django.contrib import admin

    ours, user = two_tenants
    request = rf.get("/")
    request.user = user
    model_admin = admin.site._registry[IngestJob]
    field = model_admin.formfield_for_manytomany(IngestJob._meta.get_field("documents"), request)
    assert {d.workspace_id for d in field.queryset} <= {ours.pk}
    assert not field.queryset.filter(title__startswith="Secret").exists()


def chunks(document: Document, n: int) -> None:
    from django.conf import settings

    from knowledge.models import Chunk

    Chunk.objects.bulk_create(
        Chunk(
            document=document, workspace_id=document.workspace_id, ordinal=i,
            text=f"passage {i} of {document.title}", content_hash=str(i), token_count=5,
            embedding=[0.1] * settings.EMBEDDING_DIMENSIONS,
        )
        for i in range(n)
    )


def test_the_chunks_of_a_document_are_listed_without_its_text_or_their_vectors(
    client, two_tenants
):
    ours, user = two_tenants
    user.user_permissions.add(Permission.objects.get(codename="view_chunk"))
    client.force_login(user)
    (document,) = documents(ours, 1, "Big")
    chunks(document, 30)
    url = reverse("admin:knowledge_chunk_changelist") + f"?document__id__exact={document.pk}"
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert "passage 29 of Big 0" in page
    sql = [q["sql"] for q in queries.captured_queries]
    for column in (DOCUMENT_TEXT, re.compile(r'"embedding"'), re.compile(r'"search_vector"')):
        assert not [q for q in sql if column.search(q)], column.pattern
    chunk = document.chunks.first()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(
            reverse("admin:knowledge_chunk_change", args=[chunk.pk])
        ).status_code == 200
    assert not [q["sql"] for q in queries.captured_queries if DOCUMENT_TEXT.search(q["sql"])]


def rows(workspace: Workspace, n: int, tag: str, by) -> None:
    """n documents, each in its own folder below a parent folder, and n jobs."""
    from knowledge.models import Folder

    parents = Folder.objects.bulk_create(
        Folder(workspace=workspace, name=f"{tag} parent {i}") for i in range(n)
    )
    folders = Folder.objects.bulk_create(
        Folder(workspace=workspace, name=f"{tag} {i}", parent=parent)
        for i, parent in enumerate(parents)
    )
    made = documents(workspace, n, tag)
    for document, folder in zip(made, folders, strict=True):
        document.folder = folder
    Document.objects.bulk_update(made, ["folder"])
    for i, document in enumerate(made):
        job = IngestJob.objects.create(workspace=workspace, description=f"{tag} {i}", created_by=by)
        job.documents.add(document)


def queries_of(client, url: str) -> list[str]:
    client.get(url)  # Django's caches filled
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in queries.captured_queries]


def test_changelists_read_a_page_in_as_many_queries_for_30_rows_as_for_5(client, staff):
    client.force_login(staff)
    few, many = (
        Workspace.objects.create(name=name, slug=name, owner=staff) for name in ("few", "many")
    )
    rows(few, 5, "few", staff)
    rows(many, 30, "many", staff)
    for name in ("document", "folder", "ingestjob"):
        url = reverse(f"admin:knowledge_{name}_changelist") + "?workspace__id__exact="
        few_queries = queries_of(client, url + str(few.pk))
        many_queries = queries_of(client, url + str(many.pk))
        assert len(many_queries) == len(few_queries), name
        assert not [q for q in many_queries if DOCUMENT_TEXT.search(q)], name

    # A document's page names its folder choices by their paths: one query for every
    # workspace's folders, not one a workspace.
    url = reverse("admin:knowledge_document_change", args=[Document.objects.first().pk])
    before = len(queries_of(client, url))
    for i in range(5):
        rows(Workspace.objects.create(name=f"w{i}", slug=f"w{i}", owner=staff), 1, f"w{i}", staff)
    page_queries = queries_of(client, url)
    assert len(page_queries) == before
    assert not [q for q in page_queries if DOCUMENT_TEXT.search(q)]


def test_the_chunk_list_filters_by_the_chunks_own_workspace_without_a_scan(
    client, two_tenants
):
    ours, user = two_tenants
    user.user_permissions.add(Permission.objects.get(codename="view_chunk"))
    client.force_login(user)
    (document,) = documents(ours, 1, "Listed")
    chunks(document, 3)
    sql = queries_of(client, reverse("admin:knowledge_chunk_changelist"))
    assert not [q for q in sql if "DISTINCT" in q]  # no SELECT DISTINCT over the chunks
    assert not [q for q in sql if 'INNER JOIN "knowledge_document"' in q and "COUNT" in q]
    page = client.get(
        reverse("admin:knowledge_chunk_changelist") + f"?workspace__id__exact={ours.pk}"
    ).content.decode()
    assert "passage 2 of Listed 0" in page and "Theirs" not in page


def test_the_chunk_search_reads_the_text_index_and_the_users_document_titles(
    client, two_tenants
):
    """A substring test over every chunk's text took 2-7 s at 475,000 chunks: the search
    box reads words as keyword search does, through the text index."""
    ours, user = two_tenants
    user.user_permissions.add(Permission.objects.get(codename="view_chunk"))
    client.force_login(user)
    (harbour, ledger) = documents(ours, 2, "Harbour")
    chunks(harbour, 2)
    chunks(ledger, 2)
    ledger.title = "Ledger"
    ledger.save()
    url = reverse("admin:knowledge_chunk_changelist")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url, {"q": "passages"}).content.decode()  # stemmed: "passage"
    assert page.count("passage 1 of") == 2
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "@@" in sql and 'UPPER("knowledge_chunk"."text"' not in sql

    by_title = client.get(url, {"q": "ledg"}).content.decode()
    assert "passage 1 of Harbour 1" in by_title and "Harbour 0" not in by_title
    # Another workspace's titles are not searched, nor its chunks listed.
    secret = Document.objects.get(title="Secret title of theirs 0")
    chunks(secret, 1)
    assert "passage 0 of Secret" not in client.get(url, {"q": "Secret"}).content.decode()
    assert "passage 0 of Secret" not in client.get(url, {"q": "passage"}).content.decode()


def test_a_job_delete_confirmation_counts_instead_of_listing_its_documents(
    client, two_tenants
):
    ours, user = two_tenants
    user.user_permissions.add(Permission.objects.get(codename="delete_ingestjob"))
    client.force_login(user)
    big = job_of(ours, 150, "big")
    url = reverse("admin:knowledge_ingestjob_delete", args=[big.pk])
    page = client.get(url).content.decode()
    assert "IngestJob_documents object" not in page and "big 0" not in page
    assert "its documents stay" in page
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not IngestJob.objects.filter(pk=big.pk).exists()
    assert Document.objects.filter(workspace=ours).count() == 150


def test_the_folder_filter_offers_the_folder_chosen_once_folders_are_many(client, two_tenants):
    from knowledge.models import Folder

    ours, user = two_tenants
    client.force_login(user)
    folders = Folder.objects.bulk_create(
        Folder(workspace=ours, name=f"folder {i:03}") for i in range(101)
    )
    url = reverse("admin:knowledge_document_changelist")
    page = client.get(url).content.decode()
    assert "(top level)" in page and "folder 000" not in page
    page = client.get(url, {"folder": folders[7].pk}).content.decode()
    assert "folder 007" in page and "folder 008" not in page

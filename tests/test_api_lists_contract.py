"""The knowledge lists refuse what they cannot honour, as search does: a page or page size
out of range is a 400 naming the parameter, never a silently wider answer; an invalid id
is a 400 on a POST as on a list."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from knowledge.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user, workspace, settings, tmp_path) -> APIClient:
    settings.MEDIA_ROOT = tmp_path / "media"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def documents(workspace) -> list[Document]:
    """Three documents (a.md FAILED, b.md and c.md INDEXED), none with chunks."""
    return [
        Document.objects.create(workspace=workspace, uri=f"upload://{name}", title=name,
                                status=status)
        for name, status in (("a.md", Document.Status.FAILED), ("b.md", Document.Status.INDEXED),
                             ("c.md", Document.Status.INDEXED))
    ]


def refusal(api: APIClient, url: str) -> dict:
    response = api.get(url)
    assert response.status_code == 400, (url, response.status_code, response.content)
    return response.json()


@pytest.mark.parametrize("page", ["0", "-1", "abc", "", "1.5"])
def test_a_page_that_is_no_positive_number_is_a_400_naming_page(api, documents, page):
    # It was 404 {"detail": "Invalid page."}, where search answers a field error.
    for url in ("/api/documents", f"/api/documents/{documents[0].pk}/chunks"):
        assert set(refusal(api, f"{url}?page={page}")) == {"page"}


def test_a_page_past_the_last_is_a_400_naming_page_as_on_search(api, documents):
    assert api.get("/api/documents?page_size=1&page=3").json()["count"] == 3
    assert refusal(api, "/api/documents?page_size=1&page=4") == {
        "page": ["Page 4 is past the last page."]
    }
    assert api.get("/api/documents?page=last&page_size=2").json()["results"][0]["title"] == "c.md"


@pytest.mark.parametrize("size", ["0", "-5", "abc", "", "201"])
def test_a_page_size_out_of_1_to_200_is_a_400_not_50_or_200_items(api, documents, size):
    # 0, -5 and abc gave the default 50, 201 was cut to 200.
    assert set(refusal(api, f"/api/documents?page_size={size}")) == {"page_size"}
    assert api.get("/api/documents?page_size=200").status_code == 200


def test_post_documents_refuses_an_invalid_folder_id_as_the_list_does(api, workspace):
    # -1 was "404 No such folder" on the POST, a 400 on the list.
    for folder_id in (-1, 0, 2**63):
        upload = SimpleUploadedFile("tides.md", b"# Tides\n\nSpring tides.\n")
        negative = api.post("/api/documents", {"files": [upload], "folder_id": folder_id},
                            format="multipart")
        assert negative.status_code == 400 and set(negative.json()) == {"folder_id"}, folder_id
        assert set(refusal(api, f"/api/documents?folder_id={folder_id}")) == {"folder_id"}
    assert not Document.objects.exists()

"""Bounds that let one user or one file spend what was meant for all (real database):
page images drawn per user, replacement uploads against the workspace quota, an Excel
sheet's stray far cell against the cell budget, and a UTF-16 page's DOCTYPE subset."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from chat import services
from indexing import page_images, pipeline, sources
from knowledge.models import Document
from tests.conftest import SAMPLE_CORPUS
from tests.test_citation_pages import PNG_SIGNATURE, cite

pytestmark = pytest.mark.django_db


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_one_user_drawing_pages_does_not_hold_every_turn(
    workspace, user, counting_embedder, settings, tmp_path
):
    """PDF_RENDERS_PER_USER: alice, with as many pages being drawn as she may have, is
    told so (429, Retry-After) while bob, in the same web process, still gets his."""
    settings.PDF_PAGE_CACHE_DIR = tmp_path / "page-cache"
    settings.PDF_RENDERS_AT_ONCE, settings.PDF_RENDERS_PER_USER = 2, 1
    settings.PDF_RENDER_SECONDS = 3  # also how long a request waits for its turn
    pdf = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf")
    pipeline.index_document(document_id=pdf.pk, embedder=counting_embedder)
    chunk = Document.objects.get(pk=pdf.pk).chunks.order_by("ordinal").first()
    bob = get_user_model().objects.create_user("bob")
    workspace.members.add(bob)
    urls = {}
    for someone in (user, bob):
        thread = services.create_thread(workspace=workspace, user=someone)
        urls[someone.pk] = f"/api/threads/{thread.pk}/citations/{cite(thread, chunk)}/pages"
    alice, other = client_of(user), client_of(bob)
    assert alice.get(f"{urls[user.pk]}/1").status_code == 200  # drawn, and cached

    with page_images._user_turn(user.pk, page=4):  # a page of alice's being drawn
        refused = alice.get(f"{urls[user.pk]}/2")
        assert (refused.status_code, refused["Retry-After"]) == (429, "5")
        assert refused.json()["detail"] == (
            "Drawing page 2 did not start: 1 pages you asked for are being drawn, and at "
            "most 1 are drawn for you at a time; try again"
        )
        # A page already drawn is no turn taken.
        assert alice.get(f"{urls[user.pk]}/1").content.startswith(PNG_SIGNATURE)
        # Bob's page is drawn meanwhile.
        drawn = other.get(f"{urls[bob.pk]}/3")
        assert drawn.status_code == 200 and drawn.content.startswith(PNG_SIGNATURE)

    again = alice.get(f"{urls[user.pk]}/2")
    assert again.status_code == 200 and again.content.startswith(PNG_SIGNATURE)


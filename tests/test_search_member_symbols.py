"""A name defined inside a chunk that is not named after it (a method of a class that fits
one chunk, a module constant, one type of a Go `type ( ... )` group) ranks that chunk
first and is cited at its own lines. Real PostgreSQL, the real embedder and chunker."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import pipeline, sources
from knowledge.search import search

pytestmark = pytest.mark.django_db

INVOICE = '''\
"""Invoices: rendering and delivery."""

import logging

MAX_RETRY_COUNT = 5
logger = logging.getLogger(__name__)


class InvoiceRenderer:
    """Turns an invoice into HTML or PDF."""

    def __init__(self, invoice):
        self.invoice = invoice

    def render_html(self):
        lines = [f"<li>{item}</li>" for item in self.invoice.items]
        return "<ul>" + "".join(lines) + "</ul>"

    def render_pdf(self):
        html = self.render_html()
        return html.encode("utf-8")


def send_invoice(invoice, mailer):
    """Mail the invoice as a PDF, retrying a few times."""
    pdf = InvoiceRenderer(invoice).render_pdf()
    for attempt in range(MAX_RETRY_COUNT):
        if mailer.send(invoice.customer, pdf):
            return attempt
    logger.warning("could not send invoice %s", invoice.number)
    return None
'''

IDS = '''\
package billing

type (
	InvoiceID  string
	CustomerID string
)

// Lookup finds a customer's invoices.
func Lookup(customer CustomerID) []InvoiceID {
	return nil
}
'''


@pytest.fixture
def code(workspace, counting_embedder, tmp_path):
    documents = []
    for name, text in (("invoice.py", INVOICE), ("ids.go", IDS)):
        (tmp_path / name).write_text(text)
        document = sources.add_path(workspace=workspace, path=tmp_path / name,
                                    metadata={"path": f"billing/{name}"})
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        documents.append(document)
    return documents


def test_a_method_of_a_class_cited_whole_is_found_and_named(code, workspace, user):
    renderer = next(c for c in code[0].chunks.all()
                    if c.locator.get("symbol") == "InvoiceRenderer")
    assert "def render_pdf" in renderer.text  # the class is one chunk
    assert {"name": "InvoiceRenderer.render_pdf", "line_start": 19, "line_end": 21} in (
        renderer.locator["symbols"]
    )

    first = search(query="render_pdf", workspace=workspace, limit=3).hits[0]
    assert first.chunk_id == renderer.pk  # not send_invoice, which calls it
    assert first.locator["member"]["name"] == "InvoiceRenderer.render_pdf"

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    body = client.get("/api/search", {"q": "render_pdf", "limit": 3}).json()
    assert body["results"][0]["label"] == "lines 19–21 (InvoiceRenderer.render_pdf)"


def test_a_module_constant_is_cited_where_it_is_set(code, workspace):
    first = search(query="where is MAX_RETRY_COUNT defined", workspace=workspace,
                   limit=3).hits[0]
    assert first.locator["member"] == {"name": "MAX_RETRY_COUNT", "line_start": 5,
                                       "line_end": 5}
    assert "MAX_RETRY_COUNT = 5" in first.text


def test_each_type_of_a_go_group_is_cited_under_its_own_name(code, workspace):
    first = search(query="CustomerID", workspace=workspace, limit=3).hits[0]
    assert first.locator["symbol"] == "InvoiceID, CustomerID"
    assert first.locator["member"] == {"name": "CustomerID", "line_start": 5, "line_end": 5}


def test_a_chunk_named_after_the_name_is_cited_as_before(code, workspace):
    first = search(query="send_invoice", workspace=workspace, limit=3).hits[0]
    assert first.locator["symbol"] == "send_invoice" and "member" not in first.locator


def test_a_conversation_keeps_the_method_it_was_shown_when_read_again(
    code, workspace, user, settings
):
    """The method a search named travels with the passage it registered: reading the
    conversation's citation later still says where the method is, not the whole class."""
    from chat import services

    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user)
    services.post_message(thread=thread, text="render_pdf", stream=False)
    client = APIClient()
    client.force_authenticate(user)
    shown = [client.get(f"/api/threads/{thread.pk}/citations/{n}").json() for n in (1, 2, 3)]
    labels = [c.get("label") for c in shown]
    assert "lines 19–21 (InvoiceRenderer.render_pdf)" in labels, labels

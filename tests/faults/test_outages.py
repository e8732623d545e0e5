"""Database outages, parallel posts on one thread, and a model that fails mid-turn."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from chat import services
from chat.models import CitationEntry, Message
from indexing import pipeline, sources
from tests.conftest import SAMPLE_CORPUS


@pytest.mark.django_db(transaction=True)
def test_database_outage_is_a_clear_503(user, staff, client):
    api = APIClient()
    api.force_authenticate(user)
    client.force_login(staff)  # the admin then needs the database for the session
    db = connection.settings_dict
    saved = {**db, "OPTIONS": dict(db.get("OPTIONS", {}))}
    connection.close()
    # A real connection attempt to a port where nothing listens.
    db.update(HOST="127.0.0.1", PORT="1", OPTIONS={"connect_timeout": 2})
    try:
        api_response = api.get("/api/documents")
        page_response = client.get("/admin/")
    finally:
        connection.close()
        db.clear()
        db.update(saved)
    assert api_response.status_code == 503
    assert "database is unavailable" in api_response.json()["detail"]
    assert api_response["Retry-After"] == "5"
    assert page_response.status_code == 503


@pytest.mark.django_db(transaction=True)
def test_an_outage_is_told_from_a_query_the_database_refused():
    """What decides whether an indexing task waits the database out or gives up."""
    from django.db import OperationalError

    with pytest.raises(OperationalError), connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 1")
        cursor.execute("SELECT pg_sleep(1)")  # canceled: an OperationalError, no outage
    assert pipeline.database_reachable()
    db = connection.settings_dict
    saved = {**db, "OPTIONS": dict(db.get("OPTIONS", {}))}
    db.update(HOST="127.0.0.1", PORT="1", OPTIONS={"connect_timeout": 2})
    try:
        assert not pipeline.database_reachable()
    finally:
        connection.close()
        db.clear()
        db.update(saved)
    assert pipeline.database_reachable()


@pytest.mark.django_db(transaction=True)
def test_parallel_posts_keep_order_and_unique_numbers(workspace, user, counting_embedder,
                                                      settings):
    settings.LLM_PROVIDER = "extractive"
    settings.CHAT_MAX_ANSWERS_WRITING = 6  # the user's six asks at once are the point
    for name in ("handbook.md", "tide-faq.html"):
        document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    thread = services.create_thread(workspace=workspace, user=user)
    questions = [
        "How quickly must a security incident be reported?",
        "When do on-call shifts hand over?",
        "How accurate are the predictions?",
        "What license is tidewatch released under?",
        "How do I install tidewatch?",
        "Who owns the release calendar?",
    ]
    errors: list[BaseException] = []

    def ask(question: str) -> None:
        try:
            services.post_message(thread=thread, text=question)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=ask, args=(q,)) for q in questions]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    messages = list(Message.objects.filter(thread=thread).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, 2 * len(questions) + 1))
    assert sorted(m.content for m in messages if m.role == "user") == sorted(questions)
    assert all(m.status == "complete" for m in messages)
    # Each answer stands right after its own question, however the turns overlapped.
    assert [m.role for m in messages] == ["user", "assistant"] * len(questions)
    for question, answer in zip(messages[::2], messages[1::2], strict=True):
        asked = answer.metadata["searches"][0]["query"]
        assert asked == question.content, (question.content, asked)
    numbers = sorted(CitationEntry.objects.filter(registry__thread=thread).values_list("n",
                                                                                       flat=True))
    assert numbers == list(range(1, len(numbers) + 1))
    for message in messages:
        for citation in message.citations:
            entry = CitationEntry.objects.get(registry__thread=thread, n=citation["n"])
            assert entry.text == citation["text"], "a number never changes meaning"


@pytest.mark.django_db
def test_requeue_sends_documents_stranded_by_a_broker_outage(workspace, tmp_path, capsys):
    from django.core.management import call_command

    from knowledge.models import Document

    path = tmp_path / "note.md"
    path.write_text("# Note\n\nThe crane is serviced in April.\n")
    stranded = sources.add_path(workspace=workspace, path=path)  # registered, never sent
    call_command("requeue", minutes=0)
    assert "Re-queued 1 document\n" in capsys.readouterr().out
    stranded.refresh_from_db()
    assert stranded.status == Document.Status.INDEXED  # eager Celery ran the task


def _embedding_reply(body):
    return {"data": [{"index": i, "embedding": [1.0] + [0.0] * 383}
                     for i, _ in enumerate(body["input"])]}


@pytest.mark.django_db
@pytest.mark.parametrize("failures, expected", [(2, "INDEXED"), (99, "FAILED")])
def test_transient_embedding_failures_are_retried_then_given_up(
    workspace, tmp_path, settings, fake, failures, expected
):
    from indexing.tasks import index_document_task
    from tests.conftest import Fake

    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_BASE_URL = f"{fake}/v1"
    settings.EMBEDDING_MODEL = f"flaky-{failures}"
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        if calls["n"] <= failures:
            return {"error": "overloaded"}
        return _embedding_reply(body)

    class Route(dict):
        def get(self, path, default=None):
            status = 503 if calls["n"] < failures else 200
            return (status, flaky) if path == "/v1/embeddings" else default

    Fake.responses = Route()
    path = tmp_path / "tides.md"
    path.write_text("# Tides\n\nSpring tides follow the full moon.\n")
    document = sources.add_path(workspace=workspace, path=path)
    # Eager: each retry runs inline (countdown skipped) until it succeeds or gives up;
    # retries only chain when eager exceptions are not re-raised.
    conf = index_document_task.app.conf
    propagates, conf.task_eager_propagates = conf.task_eager_propagates, False
    try:
        index_document_task.apply(args=[document.pk])
    finally:
        conf.task_eager_propagates = propagates
    document.refresh_from_db()
    assert document.status == expected
    if expected == "INDEXED":
        assert calls["n"] == failures + 1
    else:
        attempts = settings.INGEST_TASK_MAX_RETRIES + 1
        assert calls["n"] == attempts
        assert f"Gave up after {attempts} attempts" in document.last_error
        assert "503" in document.last_error

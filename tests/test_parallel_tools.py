"""Several tool calls in one model round run at once and still number deterministically."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection

from chat import services
from chat.models import Thread
from indexing import pipeline, sources
from tests.conftest import SAMPLE_CORPUS
from tests.scripted_llm import answer, tool_call

# The calls gather on connections of their own: they must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = ["security incident reporting", "launch date March 10", "tide gauge"]


@pytest.fixture
def corpus(workspace, counting_embedder):
    for name in ("handbook.md", "q3-launch-notes.pdf", "tide-faq.html"):
        document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return workspace


def at_once() -> dict:
    calls = [tool_call("search_knowledge_base", {"query": q}, f"call_{i}")["tool_calls"][0]
             for i, q in enumerate(QUERIES)]
    return {"tool_calls": calls}


def numbered_results(thread: Thread) -> list[list[int]]:
    """The [n] of each tool result of the thread's answer, in call order."""
    message = thread.messages.get(role="assistant")
    return [[int(n) for n in re.findall(r"^\[(\d+)\]", call["result"], re.M)]
            for call in message.tool_calls]


def test_three_searches_at_once_number_like_three_in_a_row(llm, corpus, user, settings):
    settings.CHAT_PARALLEL_TOOLS = 3
    llm.script = [at_once(), answer("Done [1].")]
    parallel = services.create_thread(workspace=corpus, user=user)
    services.post_message(thread=parallel, text="Three things")

    llm.script = [*(tool_call("search_knowledge_base", {"query": q}) for q in QUERIES),
                  answer("Done [1].")]
    sequential = services.create_thread(workspace=corpus, user=user)
    services.post_message(thread=sequential, text="Three things")

    assert numbered_results(parallel) == numbered_results(sequential)
    assert all(numbered_results(parallel)), "every search showed passages"
    keys = lambda t: list(  # noqa: E731
        t.citation_registry.entries.order_by("n").values_list("n", "source_key")
    )
    assert keys(parallel) == keys(sequential)


def test_parallel_posts_on_one_thread_never_collide(llm, corpus, user, settings):
    settings.CHAT_PARALLEL_TOOLS = 3
    thread = services.create_thread(workspace=corpus, user=user)
    llm.script = [at_once(), answer("A [1]."), at_once(), answer("B [1].")]
    errors: list[BaseException] = []

    def post(text: str) -> None:
        try:
            services.post_message(thread=Thread.objects.get(pk=thread.pk), text=text)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=post, args=(t,)) for t in ("one", "two")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    numbers = list(thread.citation_registry.entries.values_list("n", flat=True))
    assert sorted(numbers) == list(range(1, len(numbers) + 1)), "unique and gap-free"

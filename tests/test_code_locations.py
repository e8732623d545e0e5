""""Where is X defined?": answered with the file that defines it, and a sentence saying
where code is defined is supported by the passage that is that definition (its title
names the file, its section the enclosing class), offline and from a model."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from indexing import pipeline, sources
from tests.conftest import SAMPLE_CORPUS
from tests.scripted_llm import answer, tool_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def predict(workspace, counting_embedder):
    document = sources.add_path(
        workspace=workspace, path=SAMPLE_CORPUS / "tidewatch" / "predict.py",
        metadata={"path": "tidewatch/predict.py"},
    )
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    return document


def ask(question: str, workspace) -> dict:
    out = io.StringIO()
    call_command("ask", question, workspace=workspace.slug, json=True, stdout=out)
    return json.loads(out.getvalue())


def test_the_offline_answerer_names_the_file_defining_what_is_asked(predict, workspace, settings):
    settings.LLM_PROVIDER = "extractive"
    message = ask("Where is height_at defined?", workspace)
    assert message["answer"].startswith(
        "`HarmonicPredictor.height_at` is defined in tidewatch/predict.py. [citation:")
    [citation] = message["citations"]
    assert citation["locator"]["symbol"] == "HarmonicPredictor.height_at"
    support = citation["support"]
    assert support["verdict"] == "supported", support
    # The span shown is the definition's line, not the whole chunk.
    start, end = (support["document_span"][k] for k in ("char_start", "char_end"))
    assert predict.text[start:end] == "def height_at(self, when: datetime) -> float:"
    assert [s["verdict"] for s in message["grounding"]["sentences"]] == ["supported"]


def test_a_name_the_corpus_only_calls_is_not_given_a_place(predict, workspace, settings):
    settings.LLM_PROVIDER = "extractive"
    # height_at's chunk calls it; only its own chunk may say where it is.
    message = ask("Where is _hours_since_epoch defined?", workspace)
    assert message["answer"].startswith("`HarmonicPredictor._hours_since_epoch` is defined in "
                                        "tidewatch/predict.py. [citation:")
    for citation in message["citations"]:
        assert citation["locator"]["symbol"] == "HarmonicPredictor._hours_since_epoch"


def test_a_models_sentence_saying_where_code_is_defined_is_supported(
    llm, predict, workspace, api
):
    llm.script = [tool_call("search_knowledge_base", {"query": "height_at"}),
                  answer("height_at is defined in the HarmonicPredictor class of "
                         "tidewatch/predict.py [1]. It is defined in tidewatch/forecast.py [1].")]
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    response = api.post(f"/api/threads/{thread}/messages",
                        {"content": "Where is height_at defined?"}, format="json")
    assert response.status_code == 201, response.content
    message = response.json()
    # [1] is whichever passage the search ranked first: the model cites the definition.
    assert message["citations"][0]["locator"]["symbol"] == "HarmonicPredictor.height_at"
    assert [s["verdict"] for s in message["grounding"]["sentences"]][0] == "supported"
    assert message["grounding"]["sentences"][1]["verdict"] != "supported"


def test_a_notebooks_code_is_said_to_be_defined_in_its_file(workspace, counting_embedder,
                                                            settings, tmp_path):
    # Titled by its Markdown ("Invoice analysis"): the place is the notebook's file.
    cells = [{"cell_type": "markdown", "metadata": {},
              "source": ["# Invoice analysis\n", "Loads the invoices."]},
             {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
              "source": ["def load_invoices(path):\n", "    return open(path).read()"]}]
    path = tmp_path / "invoices.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    document = sources.add_path(workspace=workspace, path=path,
                                metadata={"path": "invoices.ipynb"})
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    settings.LLM_PROVIDER = "extractive"
    message = ask("Which file defines load_invoices?", workspace)
    assert message["answer"].startswith(
        "`load_invoices` is defined in invoices.ipynb. [citation:"), message["answer"]
    assert message["citations"][0]["locator"]["cell"] == 2
    assert [s["verdict"] for s in message["grounding"]["sentences"]] == ["supported"]

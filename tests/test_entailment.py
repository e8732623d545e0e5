"""An optional entailment (NLI) model in the grounding engine (embeddings/entailment.py)."""

from __future__ import annotations

import pytest

from citations.grounding import Grounder
from embeddings.entailment import EntailmentModelError, OnnxEntailment
from tests.nli_models import constant_nli_model
from tests.unit.test_grounding import PASSAGE, BagOfWords

CLAIM = "The Denver Broncos defeated the Carolina Panthers 24–10."


def test_a_claim_the_model_finds_not_entailed_is_partial_whatever_its_words(tmp_path):
    assert Grounder(BagOfWords()).check_claim(CLAIM, [PASSAGE]).verdict == "supported"
    model = OnnxEntailment(constant_nli_model(tmp_path, entailed=False))
    support = Grounder(BagOfWords(), entailment=model).check_claim(CLAIM, [PASSAGE])
    assert support.verdict == "partial"
    assert support.reason == "an entailment model does not read this in the passage"
    assert support.span is not None  # the span the model read is still shown
    # A sentence quoted word for word is not read by the model: it says what it quotes.
    quoted = "The Denver Broncos defeated the Carolina Panthers 24–10 to earn their third " \
        "Super Bowl title."
    assert Grounder(BagOfWords(), entailment=model).check_claim(quoted, [PASSAGE]).verdict \
        == "supported"


def test_the_model_neither_rescues_a_contradiction_nor_changes_an_entailed_claim(tmp_path):
    model = OnnxEntailment(constant_nli_model(tmp_path, entailed=True))
    grounder = Grounder(BagOfWords(), entailment=model)
    assert grounder.check_claim(CLAIM, [PASSAGE]).verdict == "supported"
    wrong = grounder.check_claim("The Denver Broncos defeated the Carolina Panthers 24–17.",
                                 [PASSAGE])
    assert (wrong.verdict, wrong.reason) == ("unsupported", "the passage says 10, not 17")


@pytest.mark.parametrize("width", [None, 12])
def test_pairs_are_batched_and_fitted_to_a_fixed_length_export(tmp_path, width):
    model = OnnxEntailment(constant_nli_model(tmp_path, entailed=True, width=width),
                           batch_size=2)
    pairs = [(PASSAGE, CLAIM), ("Short.", "Also short."), (PASSAGE * 3, CLAIM), ("A", "B")]
    assert model.entailment(pairs) == pytest.approx([0.9997] * 4, abs=1e-4)
    assert model.entailment([]) == []


def test_a_missing_model_or_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(EntailmentModelError, match="model .* does not exist"):
        OnnxEntailment(tmp_path / "nothing.onnx")
    path = constant_nli_model(tmp_path, entailed=True)
    with pytest.raises(EntailmentModelError, match="tokenizer .* does not exist"):
        OnnxEntailment(path, tokenizer=tmp_path / "missing.json")

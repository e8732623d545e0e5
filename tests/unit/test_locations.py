"""Sentences saying where code is defined, checked against the passage's place
(citations.locations): the passage shows the definition and its title names the file."""

from __future__ import annotations

import pytest

from citations.locations import asked_definition, location_span, with_file

METHOD = (
    "    def height_at(self, when: datetime) -> float:\n"
    '        """Predicted water level in metres above datum at ``when``."""\n'
    "        return self.mean_level"
)
METHOD_TITLE = "tidewatch/predict.py › HarmonicPredictor.height_at"
CALLER = (
    "def load_constituents(path: str) -> list[Constituent]:\n"
    "    return [Constituent(row) for row in read(path)]"
)
CALLER_TITLE = "tidewatch/predict.py › load_constituents"


@pytest.mark.parametrize("claim", [
    "HarmonicPredictor.height_at is defined in tidewatch/predict.py.",
    "height_at is defined in predict.py.",
    "The height_at method is defined in the HarmonicPredictor class.",
    "height_at lives in tidewatch/predict.py",
    "tidewatch.predict defines height_at.",
    "The height_at method is implemented in the tidewatch package.",
])
def test_a_place_the_passage_is_backs_the_sentence_naming_it(claim):
    start, end = location_span(claim, METHOD, METHOD_TITLE)
    assert METHOD[start:end] == "def height_at(self, when: datetime) -> float:"


@pytest.mark.parametrize(("claim", "passage", "title"), [
    # another file
    ("height_at is defined in tidewatch/forecast.py.", METHOD, METHOD_TITLE),
    # another class than the one the section nests it in
    ("height_at is defined in the Constituent class.", METHOD, METHOD_TITLE),
    ("Constituent.height_at is defined in tidewatch/predict.py.", METHOD, METHOD_TITLE),
    # the passage uses Constituent, it does not define it
    ("Constituent is defined in tidewatch/predict.py.", CALLER, CALLER_TITLE),
    # a name the passage only shows, as a place
    ("load_constituents is defined in Constituent.", CALLER, CALLER_TITLE),
    # more than where: left to the other checks
    ("height_at is defined in predict.py and returns feet.", METHOD, METHOD_TITLE),
    # no place at all
    ("height_at is defined in height_at.", METHOD, METHOD_TITLE),
    # no title: nothing says which file the passage is
    ("height_at is defined in predict.py.", METHOD, None),
])
def test_a_place_the_passage_is_not_is_left_to_the_other_checks(claim, passage, title):
    assert location_span(claim, passage, title) is None


def test_a_module_assignment_is_a_definition():
    passage = "STANDARD_SPEEDS: dict[str, float] = {\n    'M2': 28.984,\n}"
    start, end = location_span("STANDARD_SPEEDS is defined in tidewatch/predict.py.",
                               passage, "tidewatch/predict.py")
    assert passage[start:end].startswith("STANDARD_SPEEDS: dict")


@pytest.mark.parametrize(("question", "name"), [
    ("Where is height_at defined?", "height_at"),
    ("Where is the Constituent class defined?", "Constituent"),
    ("where is HarmonicPredictor.low_tides implemented", "HarmonicPredictor.low_tides"),
    ("Which file defines load_constituents?", "load_constituents"),
    ("Where is `parseConfig()` declared?", "parseConfig"),
    ("Where is the on-call rotation defined?", None),
    ("Where is Harbor Lights located?", None),
    ("When is the launch?", None),
])
def test_a_question_asking_where_code_is_defined_names_it(question, name):
    assert asked_definition(question) == name


def test_a_notebooks_cell_is_defined_in_the_file_named_after_its_markdown_title():
    # A notebook is titled by its Markdown ("Invoice analysis"), not by its path.
    cell = "def load_invoices(path):\n    return open(path).read()"
    title = f"{with_file('Invoice analysis', 'work/invoices.ipynb')} › load_invoices"
    for claim in ("load_invoices is defined in work/invoices.ipynb.",
                  "load_invoices is defined in invoices.ipynb."):
        start, end = location_span(claim, cell, title)
        assert cell[start:end] == "def load_invoices(path):"
    assert location_span("load_invoices is defined in reports.ipynb.", cell, title) is None
    # Another document keeps its title: a PDF is no place code is defined in.
    assert with_file("Q3 Launch Notes", "q3.pdf") == "Q3 Launch Notes"

"""Checks of a claim against the passage text aligned to it.

Pure Python, no Django. Each ``*_issues`` function compares a claim's ``Features``
(``citations.claims.analyze``) with the passage's and returns an ``Issue`` (a short human
reason) for each thing the passage lacks or contradicts: the mistakes language models make
that similarity scores miss, such as a changed number or date, a swapped name, a dropped or
added "not", a reason or superlative nobody stated, or the doer and receiver swapped.
"""

from .association import association_issues
from .code import code_issues
from .comparisons import comparison_issues
from .cues import cue_issues
from .examples import example_issues
from .issue import Issue
from .names import entity_issues, owner_issues, slot_issues
from .negation import negation_issues
from .numbers import (
    bound_issues,
    converted_terms,
    counted_issues,
    month_issues,
    number_issues,
    placed_issues,
    too_many_figures,
    values_given,
)
from .opposites import contrast_issues, direction_issues, opposite_issues, ratio_issues
from .roles import attribution_issues, inversion_issues, parallel_issues, role_issues

__all__ = [
    "Issue",
    "association_issues",
    "attribution_issues",
    "bound_issues",
    "code_issues",
    "comparison_issues",
    "contrast_issues",
    "converted_terms",
    "counted_issues",
    "cue_issues",
    "direction_issues",
    "entity_issues",
    "example_issues",
    "inversion_issues",
    "month_issues",
    "negation_issues",
    "number_issues",
    "opposite_issues",
    "owner_issues",
    "parallel_issues",
    "placed_issues",
    "too_many_figures",
    "ratio_issues",
    "role_issues",
    "slot_issues",
    "values_given",
]

"""Units written after a number, as the grounding checks read them."""

from __future__ import annotations

import pytest

from citations.units import same_quantity, unit_after


@pytest.mark.parametrize(
    ("text", "name", "dimension"),
    [
        ("a 180-foot tree", "feet", "length"),
        ("55m tall", "metres", "length"),
        ("at 5 km/h", "km/h", "speed"),
        ("60 miles per hour", "mph", "speed"),
        ("20 km² of forest", "square kilometres", "area"),
        ("20 sq mi", "square miles", "area"),
        ("3 cubic feet", "cubic feet", "volume"),
        ("40 °C", "°C", "temperature"),
        ("for 738 days", "days", "time"),
    ],
)
def test_the_unit_after_a_number(text: str, name: str, dimension: str) -> None:
    end = next(i for i, c in enumerate(text) if c.isdigit())
    while end < len(text) and text[end].isdigit():
        end += 1
    unit = unit_after(text, end)
    assert unit is not None and (unit.name, unit.dimension) == (name, dimension)


@pytest.mark.parametrize("text", ["grade 5 C", "5 to 10", "3 more", "the 5 men"])
def test_no_unit_where_a_letter_is_no_unit(text: str) -> None:
    end = text.index("5") + 1 if "5" in text else text.index("3") + 1
    assert unit_after(text, end) is None


def test_a_converted_figure_is_the_same_quantity_and_temperatures_are_not_converted() -> None:
    feet, metres = unit_after("180 feet", 3), unit_after("55 metres", 2)
    assert same_quantity(180, feet, 55, metres)
    assert not same_quantity(180, feet, 180, metres)
    celsius, fahrenheit = unit_after("40 °C", 2), unit_after("104 °F", 3)
    assert not same_quantity(40, celsius, 104, fahrenheit)  # compared, never converted

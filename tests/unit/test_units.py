"""Units written after a number, as the grounding checks read them."""

from __future__ import annotations

import pytest

from citations.units import rates_after, same_quantity, unit_after


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
        ("within 2 business days", "days", "time"),
        ("for 3 calendar months", "months", "time"),
        ("with 50 GB of storage", "GB", "data"),
        ("a 2 terabyte disk", "TB", "data"),
        ("in 200 ms", "milliseconds", "time"),
        ("in 5 min", "minutes", "time"),
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


@pytest.mark.parametrize(
    ("text", "per"),
    [
        ("costs $19 per month and includes 3 seats", ["month"]),
        ("costs $19 a year", ["year"]),
        ("costs $19 annually", ["year"]),
        ("€180 per night in most cities", ["night"]),
        ("50 GB of storage per seat", ["seat"]),
        ("$5/user/mo", ["user", "month"]),
        ("19 dollars a month", ["month"]),
        ("meets 3 times a year", ["year"]),
        ("grew 5% every year", ["year"]),
        ("3 seats and a year of support", []),
        ("5 per cent of the vote", []),
        ("took 2 weeks in the spring", []),
    ],
)
def test_what_an_amount_is_counted_per(text: str, per: list[str]) -> None:
    end = next(i for i, c in enumerate(text) if c.isdigit()) + 1
    while end < len(text) and text[end].isdigit():
        end += 1
    end += text[end:].startswith("%")
    assert [p.word for p in rates_after(text, end)] == per


def test_a_night_is_a_days_rate_and_a_seat_a_things() -> None:
    (night,) = rates_after("€180 per night", 4)
    (day,) = rates_after("€180 a day", 4)
    (seat,) = rates_after("$19 per seat", 3)
    assert night.key == day.key and night.time
    assert not seat.time

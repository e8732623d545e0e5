"""Harmonic tide prediction for a single station.

The astronomical tide at a station is modelled as a sum of cosine waves, one
per tidal constituent::

    h(t) = Z0 + sum(A_i * cos(w_i * t - g_i))

where ``A_i`` is the constituent's amplitude in metres, ``w_i`` its angular
speed in degrees per hour, ``g_i`` its phase lag in degrees and ``t`` the
number of hours since the reference epoch. ``Z0`` is the mean water level
above the station's datum.

The principal lunar semidiurnal constituent, M2, has a period of 12.4206012
hours (a speed of 28.9841042 degrees per hour) and dominates the tide at most
ports. This module does not apply nodal corrections; predictions are therefore
only accurate to within a few percent of amplitude over periods of a year or
two around the analysis epoch.

Only the standard library is used, so the module runs anywhere Python does.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = [
    "M2_PERIOD_HOURS",
    "DEFAULT_EPOCH",
    "STANDARD_SPEEDS",
    "Constituent",
    "HarmonicPredictor",
    "load_constituents",
]

#: Period of the principal lunar semidiurnal constituent, in hours.
M2_PERIOD_HOURS = 12.4206012

#: Reference epoch for phase lags: 00:00 UTC on 1 January 2025.
DEFAULT_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)

#: Angular speeds (degrees per hour) of common constituents, used when a
#: constituent file gives only names, amplitudes and phases.
STANDARD_SPEEDS = {
    "M2": 360.0 / M2_PERIOD_HOURS,  # principal lunar semidiurnal
    "S2": 30.0,  # principal solar semidiurnal
    "N2": 28.4397295,  # larger lunar elliptic
    "K2": 30.0821373,  # lunisolar semidiurnal
    "K1": 15.0410686,  # lunisolar diurnal
    "O1": 13.9430356,  # principal lunar diurnal
    "P1": 14.9589314,  # principal solar diurnal
    "M4": 57.9682084,  # shallow-water overtide of M2
}


@dataclass(frozen=True)
class Constituent:
    """One tidal constituent at one station.

    ``amplitude`` is in metres, ``phase`` is the phase lag (Greenwich epoch,
    degrees) relative to :data:`DEFAULT_EPOCH` and ``speed`` is the angular
    speed in degrees per hour.
    """

    name: str
    amplitude: float
    phase: float
    speed: float

    @property
    def period_hours(self) -> float:
        """Time for one full cycle, e.g. 12.4206012 hours for M2."""
        return 360.0 / self.speed


class HarmonicPredictor:
    """Predict water levels at one station from its harmonic constituents.

    Heights are in metres above the station datum; times must be
    timezone-aware datetimes and are returned in UTC.
    """

    def __init__(
        self,
        constituents: Iterable[Constituent],
        mean_level: float = 0.0,
        epoch: datetime = DEFAULT_EPOCH,
    ) -> None:
        self.constituents = list(constituents)
        if not self.constituents:
            raise ValueError("a predictor needs at least one constituent")
        self.mean_level = mean_level
        self.epoch = epoch

    def _hours_since_epoch(self, when: datetime) -> float:
        if when.tzinfo is None:
            raise ValueError("naive datetime; pass a timezone-aware time")
        return (when - self.epoch).total_seconds() / 3600.0

    def _phase(self, constituent: Constituent, hours: float) -> float:
        """Argument of the constituent's cosine, in radians, ``hours`` after the epoch."""
        return math.radians((constituent.speed * hours - constituent.phase) % 360.0)

    def height_at(self, when: datetime) -> float:
        """Predicted water level in metres above datum at ``when``."""
        hours = self._hours_since_epoch(when)
        return self.mean_level + sum(
            c.amplitude * math.cos(self._phase(c, hours)) for c in self.constituents
        )

    def series(
        self, start: datetime, end: datetime, step_minutes: int = 6
    ) -> Iterator[tuple[datetime, float]]:
        """Yield ``(time, height)`` pairs from ``start`` to ``end`` inclusive.

        The default step of 6 minutes matches the sampling interval of most
        modern tide gauges.
        """
        step = timedelta(minutes=step_minutes)
        when = start
        while when <= end:
            yield when.astimezone(UTC), self.height_at(when)
            when += step

    def _extremes(self, start: datetime, end: datetime, sign: int) -> list[tuple[datetime, float]]:
        """Local maxima (``sign=1``) or minima (``sign=-1``) between two times.

        Candidates are found on a 6-minute grid and refined by fitting a
        parabola through the three samples around each turning point, which
        places high and low water to well under a minute.
        """
        samples = list(self.series(start, end))
        found = []
        for (t0, h0), (t1, h1), (t2, h2) in zip(samples, samples[1:], samples[2:]):
            if sign * h1 > sign * h0 and sign * h1 >= sign * h2:
                denom = h0 - 2.0 * h1 + h2
                offset = 0.5 * (h0 - h2) / denom if denom else 0.0
                when = t1 + (t2 - t1) * offset
                found.append((when, self.height_at(when)))
        return found

    def high_tides(self, start: datetime, end: datetime) -> list[tuple[datetime, float]]:
        """Times and heights of every high water between ``start`` and ``end``.

        With a semidiurnal tide there are usually two high waters per lunar day,
        which is about 50 minutes longer than a solar day, so expect about 1.93
        high waters per calendar day.
        """
        return self._extremes(start, end, sign=1)

    def low_tides(self, start: datetime, end: datetime) -> list[tuple[datetime, float]]:
        """Times and heights of every low water between ``start`` and ``end``."""
        return self._extremes(start, end, sign=-1)

    def tidal_range(self, start: datetime, end: datetime) -> float:
        """Difference in metres between the highest high and lowest low water."""
        highs = self.high_tides(start, end)
        lows = self.low_tides(start, end)
        if not highs or not lows:
            raise ValueError("the interval contains no complete tidal cycle")
        return max(h for _, h in highs) - min(h for _, h in lows)


def load_constituents(path: str | Path) -> list[Constituent]:
    """Read constituents from a CSV file with a header row.

    Required columns are ``name``, ``amplitude`` (metres) and ``phase``
    (degrees). An optional ``speed`` column (degrees per hour) may be left
    blank for constituents listed in :data:`STANDARD_SPEEDS`. Lines starting
    with ``#`` are treated as comments.
    """
    constituents = []
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.lstrip().startswith("#"))
        for row in rows:
            name = row["name"].strip().upper()
            speed_text = (row.get("speed") or "").strip()
            if speed_text:
                speed = float(speed_text)
            elif name in STANDARD_SPEEDS:
                speed = STANDARD_SPEEDS[name]
            else:
                raise ValueError(f"{path}: no speed given for unknown constituent {name!r}")
            constituents.append(
                Constituent(name, float(row["amplitude"]), float(row["phase"]), speed)
            )
    return constituents


if __name__ == "__main__":
    # Illustrative constituents for Port Elsey (station HL-0001).
    port_elsey = HarmonicPredictor(
        [
            Constituent("M2", 1.52, 118.0, STANDARD_SPEEDS["M2"]),
            Constituent("S2", 0.51, 152.0, STANDARD_SPEEDS["S2"]),
            Constituent("N2", 0.29, 101.0, STANDARD_SPEEDS["N2"]),
            Constituent("K1", 0.09, 64.0, STANDARD_SPEEDS["K1"]),
            Constituent("O1", 0.07, 331.0, STANDARD_SPEEDS["O1"]),
        ],
        mean_level=2.35,
    )
    day = datetime(2025, 6, 21, tzinfo=UTC)
    for when, height in port_elsey.high_tides(day, day + timedelta(days=2)):
        print(f"High water {when:%Y-%m-%d %H:%M} UTC  {height:.2f} m")

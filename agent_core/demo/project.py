"""The small project folder the demo's runs read: written out fresh into the home folder,
so the demo needs nothing but the installed package."""

from __future__ import annotations

from pathlib import Path

README = """\
# tiny-weather

A small weather-station logger. It reads sensor samples every ten minutes, converts units
and writes a daily summary.

Modules: src/sensors.py (reading the hardware), src/units.py (unit conversion) and
src/report.py (the daily summary).

Calibration temperatures: 21.5, 23.0 and 19.25 °C.
"""

SENSORS = '''\
"""Reading samples from the station's sensors."""

from dataclasses import dataclass


@dataclass
class Sample:
    minute: int
    temperature_f: float
    humidity: float


def read_sample(minute: int) -> Sample:
    # TODO: read the real sensor instead of this fixed curve
    return Sample(minute, 68.0 + (minute % 60) / 10, 40.0 + (minute % 30))
'''

UNITS = '''\
"""Unit conversion."""


def fahrenheit_to_celsius(value: float) -> float:
    return (value - 32.0) * 5.0 / 9.0


def celsius_to_fahrenheit(value: float) -> float:
    return value * 9.0 / 5.0 + 32.0
'''

REPORT = '''\
"""The daily summary."""

from src.units import fahrenheit_to_celsius


def summary(samples):
    # TODO: report the humidity range too
    temperatures = [fahrenheit_to_celsius(s.temperature_f) for s in samples]
    return {"min": min(temperatures), "max": max(temperatures)}
'''

NOTES = """\
# Notes

- The humidity sensor drifts in winter; recalibrate monthly.
- TODO: move the station off the roof before the storm season.
"""


def _readings() -> str:
    lines = ["minute,temperature_f,humidity"]
    for minute in range(0, 24 * 60 * 3, 10):  # three days, every ten minutes
        temperature = 60.0 + ((minute // 10) * 7 % 23) / 2
        humidity = 35.0 + ((minute // 10) * 11 % 41) / 2
        lines.append(f"{minute},{temperature:.1f},{humidity:.1f}")
    return "\n".join(lines) + "\n"


FILES = {
    "README.md": README,
    "src/sensors.py": SENSORS,
    "src/units.py": UNITS,
    "src/report.py": REPORT,
    "notes/todo.md": NOTES,
    "data/readings.csv": _readings(),
}


def write_project(folder: Path) -> Path:
    """Write the demo project under `folder` (overwriting earlier copies); return it."""
    for relative, text in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder

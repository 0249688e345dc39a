"""Calibration of our estimate to a model's reported usage (SPEC 4): a bounded, outlier-resistant
moving average of ``reported prompt tokens / our estimate of the same request``, per endpoint and model.

Calibration moves the trigger, never the window check (``context_engine.policy.trigger.fits_window``
compares our raw estimate too), and it moves slowly: every reading, the first included, moves the
factor by at most ``MAX_STEP`` of its value, so only several agreeing readings move it far (one
under-reporting proxy once doubled the effective trigger by setting 0.5 outright).

Pure: :class:`Calibration` is an immutable value; :class:`CalibrationMemory` holds one in memory, shared
by the two middlewares of an agent (``agent_platform.calibration.services`` keeps one per endpoint and
model in a process and stores the readings).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

# The factor stays within these bounds whatever providers report.
FACTOR_MIN, FACTOR_MAX = 0.5, 2.0
# A reading whose ratio falls outside these bounds is ignored: providers misreport (a cached prefix
# counted as zero, a proxy that adds its own prompt), and no profile is off by that much.
READING_MIN, READING_MAX = 0.4, 2.5
# Requests this small are mostly fixed overheads (role markers, reply priming): no signal.
MIN_ESTIMATE = 64
# Each reading, the first included, moves the factor half-way to its ratio (consecutive requests of a
# conversation share most of their content, so the latest reading predicts the next request best), and
# by at most MAX_STEP of its value, so one odd request (a misreporting proxy, another thread's very
# different content) cannot swing it: reaching 0.5 from 1.0 takes at least 7 agreeing readings.
ALPHA = 0.5
MAX_STEP = 0.10


@dataclass(frozen=True)
class Calibration:
    factor: float = 1.0
    observations: int = 0

    def corrected(self, tokens: int) -> int:
        """``tokens`` (an estimate under the model's profile) times the factor."""
        return tokens if self.factor == 1.0 else round(tokens * self.factor)

    def observe(self, *, estimated: int, reported: int | None) -> Calibration:
        """This calibration after one reading; itself when the reading is unusable or an outlier."""
        if not reported or estimated < MIN_ESTIMATE:
            return self
        ratio = reported / estimated
        if not READING_MIN <= ratio <= READING_MAX:
            return self
        factor = self.factor + (ratio - self.factor) * ALPHA
        factor = min(max(factor, self.factor * (1 - MAX_STEP)), self.factor * (1 + MAX_STEP))
        return Calibration(round(min(max(factor, FACTOR_MIN), FACTOR_MAX), 4), self.observations + 1)

    def as_dict(self) -> dict[str, float | int]:
        return {"factor": self.factor, "observations": self.observations}

    @classmethod
    def from_dict(cls, value: object) -> Calibration:
        """The calibration ``as_dict`` recorded (e.g. with a measurement); neutral for anything else."""
        if not isinstance(value, dict):
            return NEUTRAL
        factor, observations = value.get("factor"), value.get("observations")
        if (
            not isinstance(factor, int | float)
            or isinstance(factor, bool)
            or not isinstance(observations, int)
        ):
            return NEUTRAL
        return cls(min(max(float(factor), FACTOR_MIN), FACTOR_MAX), max(observations, 0))


NEUTRAL = Calibration()


class CalibrationSource(Protocol):
    """Where the middlewares get a model's calibration and send its readings."""

    def current(self) -> Calibration: ...

    def observe(self, *, estimated: int, reported: int | None) -> Calibration: ...


class CalibrationMemory:
    """A calibration kept in memory (thread-safe): the two middlewares of one agent share one."""

    def __init__(self, calibration: Calibration = NEUTRAL) -> None:
        self._value = calibration
        self._lock = threading.Lock()

    def current(self) -> Calibration:
        return self._value

    def observe(self, *, estimated: int, reported: int | None) -> Calibration:
        with self._lock:
            self._value = self._value.observe(estimated=estimated, reported=reported)
            return self._value

    def set(self, calibration: Calibration) -> None:
        with self._lock:
            self._value = calibration

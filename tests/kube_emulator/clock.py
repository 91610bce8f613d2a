"""The emulator's clock: simulated time runs `speed` times faster than real time.

Every timestamp the emulator writes (creationTimestamp, status times, managedFields times) comes from this clock,
so that a job that "ran for 10 minutes" at speed 200 shows ten minutes between its start and completion times
although it took three real seconds. A clock faster than real time starts one day in the past, so that its
timestamps stay behind the wall clock for a while (kubectl shows a future timestamp's age as `<invalid>`): up to
86400 / (speed - 1) real seconds, 434 s at speed 200. At speed 1 (or slower) it starts at the real time.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone


class Clock:
    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._start_real = time.monotonic()
        head_start = timedelta(days=1) if speed > 1 else timedelta(0)
        self._start_sim = datetime.now(timezone.utc).replace(microsecond=0) - head_start

    def now(self) -> datetime:
        return self._start_sim + timedelta(seconds=(time.monotonic() - self._start_real) * self.speed)

    def stamp(self) -> str:
        return self.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def sleep(self, sim_seconds: float, stop: threading.Event | None = None) -> bool:
        """Sleep `sim_seconds` of simulated time; True if `stop` was set meanwhile (then return early)."""
        real = max(sim_seconds, 0) / self.speed
        if stop is None:
            time.sleep(real)
            return False
        return stop.wait(real)

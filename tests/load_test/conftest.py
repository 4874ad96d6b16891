"""A stand-in server for the fan-out tests (the engine tests' own, with its known timings)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.benchmark.conftest import SCENARIOS
from tests.benchmark.stand_ins.server import ServerProcess


@pytest.fixture(scope="session")
def stand_in() -> Iterator[ServerProcess]:
    with ServerProcess(SCENARIOS) as server:
        yield server

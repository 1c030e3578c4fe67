"""One local SparkSession for the whole test run (starting one costs ~7 s); stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from spark_load.jobs.session import spark_session

    session = spark_session("local[2]", app_name="spark_load tests")
    yield session
    session.stop()

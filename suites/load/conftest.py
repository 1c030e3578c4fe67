"""Load suite fixtures: the shared local SparkSession, a fresh Tansu per test (memory storage).

Tests marked ``load_full`` are the on-demand size (``tox -e load`` sets
``KH_LOAD_FULL=1``); the default run deselects them to stay within its budget.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from spark_load.tests.conftest import spark  # noqa: F401  (one SparkSession for the whole run)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("KH_LOAD_FULL") == "1":
        return
    deselected = [item for item in items if item.get_closest_marker("load_full")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("load_full")]


@pytest.fixture
def tansu() -> Iterator[Target]:
    with launch("tansu") as target:
        yield target

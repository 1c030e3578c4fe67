"""Reference-cluster acceptance: tests marked ``cluster_full`` are the on-demand set
(``KH_CLUSTER_FULL=1``: 100,000 records and three kills); the default run keeps shorter versions."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("KH_CLUSTER_FULL") == "1":
        return
    deselected = [item for item in items if item.get_closest_marker("cluster_full")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("cluster_full")]

"""Load suite fixtures: the shared local SparkSession, a fresh Tansu per test (memory storage).

Tests marked ``load_full`` are the on-demand size (``tox -e load`` sets
``KH_LOAD_FULL=1``; :mod:`fixtures.hooks.on_demand`); the default run deselects them to stay
within its budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from spark_load.tests.conftest import spark  # noqa: F401  (one SparkSession for the whole run)


@pytest.fixture
def tansu() -> Iterator[Target]:
    with launch("tansu") as target:
        yield target


@pytest.fixture(scope="session")
def spark_standalone() -> Iterator[str]:
    """A one-worker Spark standalone cluster on loopback (:mod:`spark_load.standalone`): its master URL.
    Every process it started is stopped at the end of the run."""
    from spark_load.standalone import standalone_cluster

    with standalone_cluster("pytest", workers=1, cores=2, memory="1g") as cluster:
        yield cluster.master_url

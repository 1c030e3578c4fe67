"""The SparkSession every load job runs in: local by default, any master when asked.

Why these settings: on a shared machine Spark must bind to loopback and skip
its web UI; executors must run the same Python as the driver (the venv that has
the Kafka clients); and a task must never be retried, because a retried
producing task sends its records a second time and the verifier would then
report duplicates the broker did not cause.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from fixtures.wire.security import COMMAND_CONFIG_ENV

DEFAULT_MASTER = "local[2]"


def spark_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "kafka-harness load",
    packages: Sequence[str] = (),
    conf: Sequence[tuple[str, str]] = (),
) -> SparkSession:
    """Start (or reuse) the session; ``packages`` go to ``spark.jars.packages`` (needs Maven access)."""
    local = master.startswith("local")
    loopback = local or master.startswith(("spark://127.0.0.1:", "spark://localhost:"))
    if loopback:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.task.maxFailures", "1")
        .config("spark.speculation", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.sql.adaptive.enabled", "true")
    )
    if loopback:  # a cluster on this machine (kafka-harness spark up) too: the driver stays on loopback
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "8")
        )
    properties = os.environ.get(COMMAND_CONFIG_ENV)
    if properties:  # a secured target: the tasks' clients read the same client properties
        builder = builder.config(f"spark.executorEnv.{COMMAND_CONFIG_ENV}", properties)
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    for key, value in conf:
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not local:
        session.sparkContext.addPyFile(str(_package_zip()))
    return session


def _package_zip() -> Path:
    """spark_load as a zip for executors on other machines (their Python still needs the Kafka clients)."""
    package = Path(__file__).resolve().parents[1]
    target = Path(tempfile.mkdtemp(prefix="spark-load-pyfiles-")) / "spark_load.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*.py")):
            if "tests" not in path.relative_to(package).parts:
                archive.write(path, Path("spark_load") / path.relative_to(package))
    return target


def default_parallelism(spark: SparkSession) -> int:
    return max(1, int(spark.sparkContext.defaultParallelism))

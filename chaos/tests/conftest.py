"""The shared local SparkSession of the Spark checkers' tests (started only by a test that asks)."""

from spark_load.tests.conftest import spark  # noqa: F401

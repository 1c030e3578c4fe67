"""spark_load (see README)."""

"""Partition storage: Kafka's on-disk log format, and an in-memory twin for the simulator."""

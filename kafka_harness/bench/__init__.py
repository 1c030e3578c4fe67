"""``kafka-harness bench``: throughput and end-to-end latency, reference broker against Tansu, same run.

``model`` holds the scenarios and figures, ``clients`` the measurements
(confluent-kafka on loopback), ``table`` the text table, ``cli`` the command.
"""

from __future__ import annotations

from .cli import main

__all__ = ["main"]

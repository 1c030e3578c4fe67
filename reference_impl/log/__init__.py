"""Partition storage: Kafka's on-disk log format, and an in-memory twin for the simulator.

Layers, as Kafka's storage module: ``index`` and ``segment`` (one segment's
files) → ``segments`` (the ordered set) → ``local_log`` (roll, read, truncate)
→ ``partition_log`` (``FileLog``: log start, epochs, retention, flush policy)
→ ``manager`` (a data directory and its checkpoint files). ``loader`` opens
and recovers a directory; ``memory`` is the in-memory log the simulator runs.
"""

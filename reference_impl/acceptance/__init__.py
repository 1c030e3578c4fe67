"""Acceptance sets that only the reference broker can run: they start, kill and pause its processes
(``cluster/``) or drive its own state machines in-process (``property/``: the replication model and
the mutation check). The target-agnostic suites are in ``suites/``."""

"""Workloads: clients that act on a target and record what happened (queue, transactional)."""

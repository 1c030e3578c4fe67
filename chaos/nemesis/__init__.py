"""Nemeses: topology of proxies, faults, and seeded schedules."""

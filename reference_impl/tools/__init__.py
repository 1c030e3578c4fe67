"""Operator tools that read the reference broker's files directly (dump-log, find-record)."""

"""Cluster metadata: the records a controller writes, and the image brokers serve from.

KRaft's shape: every change is a record in an ordered metadata log, and the
image is what replaying that log yields. A single-node broker is its own
controller (:mod:`.local_controller`); the replicated cluster's Raft quorum
produces the same records.
"""

"""Cluster metadata: the records a controller writes, and the image brokers serve from.

KRaft's shape: every change is a record in an ordered metadata log, and the
image is what replaying that log yields. The controllers that write them are
:mod:`reference_impl.core.controller`.
"""

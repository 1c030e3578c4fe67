"""The file-backed storage port: Kafka's on-disk format under a data directory."""

from __future__ import annotations

from reference_impl.core.ports import LogStore


class StorageError(RuntimeError):
    """The data directory cannot be used (message says why)."""


def open_file_store(data_dir: str, node_id: int, cluster_id: str | None, now_ms: int) -> tuple[LogStore, str]:
    """Open (or create) the data directory; returns the store and the cluster id it belongs to."""
    raise StorageError("file storage is not available yet; use --storage memory")

"""UpdateFeatures on a three-node reference cluster (issue 20): sent to every node in turn until one
that is not the active controller has forwarded it, the FeatureLevelRecord is committed to the
metadata log and replicated, so every node's ApiVersions shows the new level, and a restarted node
shows it too (replayed from its log). The level is put back after.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from fixtures.targets import launch
from fixtures.wire import WireClient

from .settle import until as _until

FEATURE = "transaction.version"


def _ask(address: str, api: str, version: int, **fields: Any) -> Any:
    wire = WireClient(address)
    try:
        return wire.request(api, version, **fields)
    finally:
        wire.close()


def _level(address: str) -> int:
    answer = _ask(address, "api_versions", 4, client_software_name="kh", client_software_version="1")
    return {str(f.name): int(f.max_version_level) for f in answer.finalized_features}.get(FEATURE, 0)


def _at(address: str, level: int) -> bool:
    return _level(address) == level


def _update(address: str, level: int, upgrade_type: int) -> int:
    keys = [{"feature": FEATURE, "max_version_level": level, "upgrade_type": upgrade_type}]
    answer = _ask(address, "update_features", 1, feature_updates=keys, timeout=10_000)
    return int(answer.error_code.value)


def _controller(address: str) -> int:
    return int(_ask(address, "metadata", 12, topics=[]).controller_id)


def test_update_features_is_forwarded_replicated_and_replayed(tmp_path: Path) -> None:
    with launch("reference", workdir=tmp_path, brokers=3) as target:
        addresses = [f"{n.host}:{n.port}" for n in target.nodes]
        _until(lambda: _controller(addresses[0]) >= 0, "a controller is elected")
        _until(lambda: all(_level(a) == 1 for a in addresses), f"every node finalizes {FEATURE} at 1")
        controller = _controller(addresses[0])
        others = [f"{n.host}:{n.port}" for n in target.nodes if n.node_id != controller]
        assert len(others) == 2, f"controller {controller}, nodes {[n.node_id for n in target.nodes]}"
        assert _update(others[0], 0, 2) == 0  # SAFE_DOWNGRADE through a node that must forward
        for address in addresses:
            _until(partial(_at, address, 0), f"{address} shows {FEATURE} at 0")
        target.nodes[0].restart()
        _until(lambda: _level(addresses[0]) == 0, "the restarted node shows the level from its log")
        # UPGRADE back, retried while a restarted controller's successor is elected (NOT_CONTROLLER)
        _until(lambda: _update(others[-1], 1, 1) == 0, f"{FEATURE} raised back to 1")
        for address in addresses:
            _until(partial(_at, address, 1), f"{address} shows {FEATURE} back at 1")

"""The disk-full nemesis (:mod:`chaos.nemesis.disk`): a size-limited tmpfs, filled to the last byte
for the window and freed after; without the tmpfs the fault is recorded as an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chaos.history import Recorder
from chaos.nemesis.disk import Disk, unavailable_reason
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_disk_full_fills_the_brokers_filesystem_and_frees_it(tmp_path: Path) -> None:
    disk = Disk(tmp_path / "data", size_mb=4)
    try:
        disk.mount()
    except Exception as exc:  # a container without CAP_SYS_ADMIN
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        (disk.path / "segment").write_bytes(b"x" * 1000)
        nemesis = Nemesis(Recorder(), Topology.plan("http://unused", [1]), None, "t", disk=disk)
        plan = Planned(0, "disk-full", 0.0, 1.0, 0)
        nemesis.start(plan)
        assert disk.free_bytes() == 0
        with pytest.raises(OSError), (disk.path / "more").open("wb") as f:
            f.write(b"y" * 65536)
            f.flush()
            os.fsync(f.fileno())
        start = nemesis.recorder.history.nemesis_ops()[0].value
        assert start["filled_bytes"] > 3 * (1 << 20) and "error" not in start
        nemesis.stop(plan)
        assert disk.free_bytes() > 3 * (1 << 20) and (disk.path / "segment").read_bytes() == b"x" * 1000
    finally:
        disk.unmount()


def test_disk_full_without_a_controlled_disk_is_recorded_as_an_error() -> None:
    nemesis = Nemesis(Recorder(), Topology.plan("http://unused", [1]), None, "t")
    nemesis.start(Planned(0, "disk-full", 0.0, 1.0, 0))
    assert "disk it controls" in nemesis.recorder.history.nemesis_ops()[0].value["error"]

"""A bare KRaft quorum in the simulator: voters on their disks, the quorum's invariants, its fuzz."""

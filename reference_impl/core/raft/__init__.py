"""The KRaft-style controller quorum as sans-IO state machines (see :mod:`.client`)."""

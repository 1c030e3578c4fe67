"""The classic group coordinator: membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed
offsets and their persistence in ``__consumer_offsets`` (seed 003; Kafka 4's classic protocol)."""

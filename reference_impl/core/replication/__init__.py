"""Partition replication: the leader's view of its followers, ISR and high watermark."""

"""The controller state machine on the Raft quorum: records, elections, the active controller."""

"""The controller: admin requests decided, written as metadata records, and committed.

* :mod:`.writer`: the decisions, once (topic creation and deletion, partitions, configs,
  AlterPartition's checks, elections and reassignments via :mod:`.leadership` and
  :mod:`.elections`); a :class:`~.writer.RecordWriter` only lacks where its records go.
* :mod:`.quorum`: KRaft's ``QuorumController`` on the Raft quorum (:mod:`reference_impl.core.raft`):
  the active controller's records go to the quorum and are answered once committed; broker
  registration, heartbeats, fencing, controlled shutdown, producer-id blocks. :mod:`.records` is its
  image and record codec, :mod:`.messages` its requests and answers, :mod:`.node` a controller-only
  process (its Raft replica and this state machine) as one sans-IO node.
* :mod:`.broker_client`: what a cluster member's admin handlers call: the active controller's
  writer on its node, NOT_CONTROLLER (or a forwarded creation) elsewhere.

There is one controller path (issue 24): a single broker is the only voter of its own quorum and
runs the quorum controller too, answering its own controller requests in process; its Raft log is
the same ``__cluster_metadata`` partition log a single broker always wrote (docs/ARCHITECTURE.md,
"One controller").
"""

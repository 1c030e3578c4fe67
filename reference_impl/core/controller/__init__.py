"""The controller: admin requests decided, written as metadata records, and committed.

* :mod:`.writer`: the decisions, once (topic creation and deletion, partitions, configs,
  AlterPartition's checks, elections and reassignments via :mod:`.leadership` and
  :mod:`.elections`); a :class:`~.writer.RecordWriter` only lacks where its records go.
* :mod:`.local`: a single broker's own controller (a one-voter KRaft combined node): the records
  go to its ``__cluster_metadata`` log, flushed, then to its image.
* :mod:`.quorum`: KRaft's ``QuorumController`` on the Raft quorum (:mod:`reference_impl.core.raft`):
  the active controller's records go to the quorum and are answered once committed; broker
  registration, heartbeats, fencing, controlled shutdown, producer-id blocks. :mod:`.records` is its
  image and record codec, :mod:`.messages` its requests and answers, :mod:`.node` a controller-only
  process (its Raft replica and this state machine) as one sans-IO node.
* :mod:`.broker_client`: what a cluster member's admin handlers call: the active controller's
  writer on its node, NOT_CONTROLLER (or a forwarded creation) elsewhere.

A single broker keeps its own class (:class:`~.local.LocalController`) rather than running the quorum
controller over a one-voter Raft log. Not for its data: the Raft log is the same ``__cluster_metadata``
partition log, and a single broker's directory starts as a one-voter quorum unchanged
(``tests/integration/test_single_broker_dir_as_quorum.py``). Because its answers are synchronous (an
admin write is committed and applied within the request's step, which 328 in-process tests rely on),
a lone voter still waits an election timeout, and a voter needs a controller listener: the plan and
its order are in docs/ARCHITECTURE.md, "One controller".
"""

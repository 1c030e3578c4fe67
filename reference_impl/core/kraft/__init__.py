"""KRaft membership: the reference broker as a node of a multi-node cluster run by a controller quorum.

``quorum.py`` wires the sans-IO Raft replica (:mod:`reference_impl.core.raft`) and, on a voter, the
quorum controller (:mod:`reference_impl.core.controller`) into a
:class:`~reference_impl.core.broker.Broker`, and runs the broker's lifecycle (registration,
heartbeats, controlled shutdown); ``roles.py`` is ``process.roles``; ``wire.py`` carries their
messages as Kafka APIs, ``inbound.py`` makes the first checks of a request from a peer and
``raft_errors.py`` answers one the quorum or the controller did not answer in time. The admin
handlers reach the controller through :mod:`reference_impl.core.controller.broker_client`.
"""

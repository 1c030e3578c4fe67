"""The reference broker as a member of a multi-node cluster (KRaft-style controller quorum).

``quorum.py`` wires the sans-IO Raft replica and controller of
:mod:`reference_impl.core.raft` into a :class:`~reference_impl.core.broker.Broker`;
``wire.py`` carries their messages as Kafka APIs; the admin handlers reach the
controller through :mod:`reference_impl.core.controller.broker_client`.
"""

"""UnregisterBroker (API 64) on the quorum controller, in the simulator: Kafka's
``ReplicationControlManager.unregisterBroker`` (BROKER_ID_NOT_REGISTERED for an unknown id; the
broker leaves every ISR and its leaderships, then ``UnregisterBrokerRecord`` removes it), seen the
same by every replica of the metadata log, and no new replica placed on it."""

from __future__ import annotations

import itertools

from kio.schema.errors import ErrorCode

from reference_impl.core.controller.messages import UnregisterBrokerRequest
from reference_impl.core.controller.records import ControllerImage, decode_record, encode_record
from reference_impl.core.metadata.records import RegisterBrokerRecord, UnregisterBrokerRecord
from reference_impl.sim.engine.simulation import Simulation

from .test_controller import BROKERS, active, ask, cluster, create, partition, settle

_ids = itertools.count(70_000)


def unregister(sim: Simulation, broker_id: int) -> ErrorCode:
    answer = ask(sim, UnregisterBrokerRequest(correlation_id=next(_ids), broker_id=broker_id))
    return ErrorCode(answer.error_code)


def test_an_unknown_broker_id_is_not_registered() -> None:
    sim, _ = cluster()
    assert unregister(sim, 999) == ErrorCode.broker_id_not_registered
    assert sorted(active(sim).active.image.brokers) == list(BROKERS)


def test_a_stopped_broker_leaves_every_isr_and_the_metadata_of_every_node() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "t", partitions=3, rf=3)
    before = {p: partition(sim, "t", p) for p in range(3)}
    assert all(103 in info.isr for info in before.values())
    sim.crash(103)  # stopped, still registered and unfenced (its session has not run out)
    assert unregister(sim, 103) == ErrorCode.none
    image = active(sim).image  # the committed image: answered only once committed
    assert 103 not in image.brokers and 103 not in image.broker_epochs
    for p, old in before.items():
        new = image.topics["t"].partitions[p]
        assert 103 not in new.isr and new.leader != 103
        assert new.replicas == old.replicas  # an operator reassigns them away; unregistering does not
        if old.leader == 103:
            assert new.leader_epoch == old.leader_epoch + 1 and new.leader in (101, 102)
    settle(sim)
    for node in (101, 102):
        assert 103 not in sim.node(node).image.brokers
    create(sim, "after", partitions=6, rf=2)
    assert all(103 not in partition(sim, "after", p).replicas for p in range(6))
    assert unregister(sim, 103) == ErrorCode.broker_id_not_registered


def test_an_unregistered_broker_that_starts_again_registers_with_a_new_epoch() -> None:
    sim, _ = cluster()
    old_epoch = sim.node(102).broker_epoch
    sim.crash(102)
    assert unregister(sim, 102) == ErrorCode.none
    sim.restart(102)
    assert sim.run_until_true(lambda: not sim.node(102).fenced, 15_000)
    assert sim.node(102).broker_epoch > old_epoch
    assert 102 in active(sim).image.brokers


def test_the_record_round_trips_and_a_stale_epoch_is_ignored() -> None:
    record = UnregisterBrokerRecord(broker_id=7, broker_epoch=42)
    assert decode_record(encode_record(record)) == record
    image = ControllerImage(cluster_id="c", controller_id=-1)
    image.apply(RegisterBrokerRecord(broker_id=7, host="h", port=1), 42)
    image.apply(UnregisterBrokerRecord(broker_id=7, broker_epoch=41), 43)  # another registration's
    assert 7 in image.brokers and image.broker_epochs[7] == 42
    image.apply(UnregisterBrokerRecord(broker_id=7, broker_epoch=42), 44)
    assert 7 not in image.brokers and 7 not in image.broker_epochs and image.offset == 44
    image.apply(RegisterBrokerRecord(broker_id=7, host="h", port=1), 45)
    image.apply(UnregisterBrokerRecord(broker_id=7, broker_epoch=-1), 46)  # a one-node controller's
    assert 7 not in image.brokers


def test_a_running_broker_that_is_unregistered_registers_again_on_its_next_heartbeat() -> None:
    """Its heartbeat is refused BROKER_ID_NOT_REGISTERED, so it registers anew (a new epoch) and is
    unfenced once caught up: operators stop a broker before unregistering it for good."""
    sim, _ = cluster()
    old_epoch = sim.node(103).broker_epoch
    assert unregister(sim, 103) == ErrorCode.none
    assert sim.run_until_true(lambda: sim.node(103).broker_epoch > old_epoch, 15_000)
    assert sim.run_until_true(lambda: not sim.node(103).fenced, 15_000)
    assert 103 in active(sim).image.brokers

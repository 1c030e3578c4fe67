"""One module per API, named ``kNN_api_name`` after Kafka's API key (kfake's habit).

Importing this package registers every handler; the registry then answers
ApiVersions. Each module opens with its version range, behaviour, version
notes and what it does not implement.
"""

from . import (  # noqa: F401  (imported to register)
    k00_produce,
    k01_fetch,
    k02_list_offsets,
    k03_metadata,
    k08_offset_commit,
    k09_offset_fetch,
    k10_find_coordinator,
    k11_join_group,
    k12_heartbeat,
    k13_leave_group,
    k14_sync_group,
    k15_describe_groups,
    k16_list_groups,
    k17_sasl_handshake,
    k18_api_versions,
    k19_create_topics,
    k20_delete_topics,
    k21_delete_records,
    k22_init_producer_id,
    k23_offset_for_leader_epoch,
    k24_add_partitions_to_txn,
    k25_add_offsets_to_txn,
    k26_end_txn,
    k27_write_txn_markers,
    k28_txn_offset_commit,
    k32_describe_configs,
    k33_alter_configs,
    k35_describe_log_dirs,
    k36_sasl_authenticate,
    k37_create_partitions,
    k42_delete_groups,
    k43_elect_leaders,
    k44_incremental_alter_configs,
    k45_alter_partition_reassignments,
    k46_list_partition_reassignments,
    k47_offset_delete,
    k52_vote,
    k53_begin_quorum_epoch,
    k54_end_quorum_epoch,
    k55_describe_quorum,
    k56_alter_partition,
    k59_fetch_snapshot,
    k60_describe_cluster,
    k61_describe_producers,
    k62_broker_registration,
    k63_broker_heartbeat,
    k65_describe_transactions,
    k66_list_transactions,
    k67_allocate_producer_ids,
    k68_consumer_group_heartbeat,
    k69_consumer_group_describe,
)
from .registry import HANDLERS, Deferred, Handler, NoResponse, Reply, Respond, handles

__all__ = ["HANDLERS", "Deferred", "Handler", "NoResponse", "Reply", "Respond", "handles"]

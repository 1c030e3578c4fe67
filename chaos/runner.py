"""One campaign: proxies, target, topic, workload, seeded nemesis, final drain, history, verdict.

The order matters: the proxies exist before the brokers start, so the brokers advertise the
proxies' ports from their first answer and no client ever holds a direct address.
After the last fault every link is healed and the consumers read to the high watermarks
(bounded by ``drain_s``); only then does an acknowledged record never read count as ``unseen``.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.alongside import LoadAlongside, LoadOutcome, check_spec
from chaos.checkers import CheckResult, check
from chaos.history import Recorder, write_history
from chaos.nemesis.clock import CLOCK_FAULTS, Clock
from chaos.nemesis.clock import unavailable_reason as clock_unavailable
from chaos.nemesis.disk import DISK_FAULTS, Disk
from chaos.nemesis.disk import unavailable_reason as disk_unavailable
from chaos.nemesis.faults import LINK_TOXICS, PARTITIONS, RESTART_ISOLATED, Nemesis, run_schedule
from chaos.nemesis.log_dirs import LOG_DIR_FAULTS, LOG_DIRS_CONFIG
from chaos.nemesis.membership import KRAFT_VERSION_CONFIG, MEMBERSHIP_FAULTS, Membership
from chaos.nemesis.packet import PACKET_FAULTS, PacketRules, unavailable_reason
from chaos.nemesis.restart_probe import RestartProbe, topic_id_of
from chaos.nemesis.schedule import Planned, schedule
from chaos.nemesis.topology import Topology
from chaos.nodes import NodeSpec, NodeSpecError, SpecTarget, load_nodes, missing_for
from chaos.toxiproxy.finder import find_toxiproxy
from chaos.workloads.probes import PROBES, ProbeWorkload
from chaos.workloads.queue import FINAL, QueueOptions, QueueWorkload, high_watermarks
from chaos.workloads.restart import run_restart_phase
from chaos.workloads.share import DRAIN_FACTOR as SHARE_DRAIN_FACTOR
from chaos.workloads.share import ShareWorkload
from chaos.workloads.transactional import TransactionalWorkload
from chaos.workloads.txn_append import TxnAppendWorkload
from fixtures.targets import adopt_security, check_broker_configs, launch, parse_target
from fixtures.wire.security import with_run_security

WORKLOADS = ("queue", "transactional", "txn-append", "share", *PROBES)
READ_COMMITTED = ("transactional", "txn-append", *PROBES)
LAUNCHED = ("reference", "tansu", "noida")
UNPROXIED = ("noida",)
"""Targets that advertise the port they listen on: no proxy can sit in front, so no link faults."""
PROCESS_FAULTS = (
    "kill",
    RESTART_ISOLATED,
    "pause",
    "bounce",
    *CLOCK_FAULTS,
    *DISK_FAULTS,
    *MEMBERSHIP_FAULTS,
    *LOG_DIR_FAULTS,
)


class CampaignError(RuntimeError):
    """The campaign could not run (exit 2); the message says why."""


@dataclass
class Campaign:
    target: str = "tansu"
    workload: str = "queue"
    faults: list[str] = field(default_factory=lambda: ["partition-leader", "kill", "pause"])
    time_s: float = 60.0
    rate: float = 2000.0
    seed: int = 7
    acks: str = "all"
    idempotence: bool = True
    retries: int | None = None
    min_isr: int | None = None
    rf: int = 1
    brokers: int = 1
    partitions: int = 3
    consumer_mode: str = "assign"
    group_protocol: str = "classic"
    """classic (JoinGroup/SyncGroup) or consumer (KIP-848's ConsumerGroupHeartbeat) for group consumers."""
    unclean_election: bool = False
    toxiproxy_url: str | None = None
    drain_s: float = 30.0
    out_dir: Path = field(default_factory=lambda: Path("/tmp/kh-chaos") / uuid.uuid4().hex[:8])
    history_format: str = "jsonl"
    """``jsonl`` or ``parquet`` (``history.parquet``, for the Spark checkers of large histories)."""
    broker_configs: list[str] = field(default_factory=list)
    security: str | None = None
    """Launch the target secured (ssl, sasl_ssl, sasl_plaintext): every listener and link; the
    proxies stay at TCP level, TLS passes through them (the certificates name 127.0.0.1, where
    clients and peers dial the proxies)."""
    packet_faults: bool = False
    """Allow the iptables faults (packet-drop, packet-loss); needs root."""
    load_spec: str | None = None
    """A ``kafka-harness load`` spec run alongside the workload, under the same faults."""
    restart_check: bool | None = None
    """The durability-after-restart phase at the end (:mod:`chaos.workloads.restart`); None: run it
    when the faults include ``kill``."""
    restart_bound_s: float = 30.0
    """How long after the restart everything acknowledged may take to become readable."""
    restart_probe: bool = True
    """Ask each node the nemesis starts again for the topic's Metadata as soon as its port opens
    (:mod:`chaos.nemesis.restart_probe`)."""
    strict_cycles: bool = False
    """Count the dependency cycles Kafka does not promise to prevent (:mod:`chaos.checkers.graph`)."""
    topic_configs: list[str] = field(default_factory=list)
    """``KEY=VALUE`` configs of the campaign's topics, given when they are created."""
    nodes_file: Path | None = None
    """A node-control spec (:mod:`chaos.nodes`): drive a cluster started elsewhere through its
    commands (and its Toxiproxy, when it names one) instead of launching one here."""
    crash_clients: bool = False
    """txn-append: tear processors down mid-transaction at seeded times and reopen them with fresh
    transactional ids (:mod:`chaos.workloads.txn_append`)."""

    @property
    def runs_restart_check(self) -> bool:
        return self.restart_check if self.restart_check is not None else "kill" in self.faults

    def meta(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "target": self.target,
            "faults": self.faults,
            "time_s": self.time_s,
            "rate": self.rate,
            "seed": self.seed,
            "acks": self.acks,
            "idempotence": self.idempotence,
            "retries": self.retries,
            "min_isr": self.min_isr,
            "rf": self.rf,
            "brokers": self.brokers,
            "partitions": self.partitions,
            "consumer_mode": self.consumer_mode,
            "group_protocol": self.group_protocol,
            "unclean_election": self.unclean_election,
            "restart_check": self.runs_restart_check,
            "restart_probe": self.restart_probe,
            "crash_clients": self.crash_clients,
            "strict_cycles": self.strict_cycles,
            "security": self.security or "PLAINTEXT",
        }


@dataclass
class Outcome:
    result: CheckResult
    history_path: Path
    plan: list[Planned]
    nemesis_events: list[dict[str, Any]]
    started_ms: int
    stopped_ms: int
    load: LoadOutcome | None = None


def _create_topic(bootstrap: str, topic: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(with_run_security({"bootstrap.servers": bootstrap}))
    futures = admin.create_topics([NewTopic(topic, partitions, rf, config=configs)], operation_timeout=15)
    try:
        futures[topic].result(30)
    except Exception as exc:
        raise CampaignError(f"cannot create topic {topic}: {exc}") from exc
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until every partition has a leader
        metadata = admin.list_topics(topic, timeout=5)
        found = metadata.topics.get(topic)
        if (
            found
            and len(found.partitions) == partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        time.sleep(0.2)
    raise CampaignError(f"topic {topic} has no leader for every partition after 30 s")


def run(c: Campaign, progress: Callable[[str], None] = print) -> Outcome:
    """Run the campaign; raises CampaignError when it cannot run."""
    if c.workload not in WORKLOADS:
        raise CampaignError(f"unknown workload {c.workload!r} (known: {', '.join(WORKLOADS)})")
    try:
        spec = parse_target(c.target)
    except ValueError as exc:
        raise CampaignError(str(exc)) from exc
    node_spec: NodeSpec | None = None
    if c.nodes_file is not None:
        node_spec = _node_spec(c, spec.kind)
    elif spec.kind not in LAUNCHED:
        raise CampaignError(
            f"target {c.target}: chaos needs a target launched here ({', '.join(LAUNCHED)}) so "
            "it can kill and restart its brokers (and put proxies in front of them)"
        )
    if node_spec is None and spec.kind != "reference" and (c.brokers != 1 or c.rf != 1):
        raise CampaignError(f"{spec.kind} runs one broker here: use --rf 1")
    try:
        check_broker_configs(c.broker_configs, spec.kind)
    except ValueError as exc:
        raise CampaignError(str(exc)) from None
    link_faults = [f for f in c.faults if f not in PROCESS_FAULTS]
    if node_spec is not None and node_spec.toxiproxy is None and link_faults:
        raise CampaignError(
            f"{', '.join(link_faults)} need a Toxiproxy holding the cluster's proxies: the node spec "
            'names none ("toxiproxy")'
        )
    if spec.kind in UNPROXIED and link_faults:
        raise CampaignError(
            f"{spec.kind} advertises the port it listens on, so no proxy can sit in front of it: "
            f"{', '.join(link_faults)} cannot run (process faults only: {', '.join(PROCESS_FAULTS)})"
        )
    wants_packets = [f for f in c.faults if f in PACKET_FAULTS]
    if wants_packets and not c.packet_faults:
        raise CampaignError(f"{', '.join(wants_packets)} need --packet-faults (iptables, root)")
    if c.packet_faults and (reason := unavailable_reason()):
        raise CampaignError(reason)
    clock_faults = [f for f in c.faults if f in CLOCK_FAULTS]
    if clock_faults and (reason := clock_unavailable()):
        raise CampaignError(reason)
    if any(f in MEMBERSHIP_FAULTS for f in c.faults) and (
        spec.kind != "reference" or node_spec is not None or c.brokers < 2
    ):
        raise CampaignError("membership changes need a reference cluster launched here (--brokers 2 or more)")
    disk_faults = [f for f in c.faults if f in DISK_FAULTS]
    if disk_faults and (reason := disk_unavailable()):
        raise CampaignError(reason)
    log_dir_faults = [f for f in c.faults if f in LOG_DIR_FAULTS]
    if log_dir_faults and (spec.kind != "reference" or node_spec is not None):
        raise CampaignError(
            f"{', '.join(log_dir_faults)} fails a log directory of a reference broker launched here"
        )
    if any("=" not in kv or kv.startswith("=") for kv in c.topic_configs):
        raise CampaignError(f"a topic config takes KEY=VALUE, not {c.topic_configs}")
    if c.load_spec is not None:
        try:
            check_spec(c.load_spec)
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
    c.out_dir.mkdir(parents=True, exist_ok=True)
    node_ids = node_spec.node_ids if node_spec is not None else list(range(1, c.brokers + 1))
    topic = f"chaos-{c.seed}-{uuid.uuid4().hex[:6]}"
    recorder = Recorder({**c.meta(), "topic": topic})
    plan = schedule(c.faults, c.time_s, c.seed)
    progress(
        f"plan (seed {c.seed}): " + ", ".join(f"{p.fault}@{p.start_s:.1f}s+{p.duration_s:.1f}s" for p in plan)
    )
    started_ms = int(time.time() * 1000)
    with contextlib.ExitStack() as stack:
        if node_spec is not None:
            addresses = {n.node_id: n.address for n in node_spec.nodes}
            topology = Topology.existing_on(node_spec.toxiproxy, node_ids, addresses)
            links = f"proxies on {node_spec.toxiproxy}" if node_spec.toxiproxy else "no Toxiproxy"
            progress(f"node spec {c.nodes_file}: nodes {node_ids}, {links}")
        elif spec.kind in UNPROXIED:
            topology = Topology.direct(node_ids)
            progress(f"target {c.target}: no proxy (it advertises its own port); process faults only")
        else:
            try:
                endpoint = stack.enter_context(find_toxiproxy(c.toxiproxy_url))
            except Exception as exc:
                raise CampaignError(f"no Toxiproxy: {exc}") from exc
            progress(f"toxiproxy: {endpoint.kind} server at {endpoint.url}")
            # a replicated reference cluster reaches its peers through given addresses: proxy those links too
            broker_links = spec.kind == "reference" and c.brokers > 1
            topology = Topology.plan(endpoint.url, node_ids, broker_links=broker_links)
            topology.create()
        recorder.history.meta["proxies"] = [p["name"] for p in topology.proxies()]
        clock = Clock(c.out_dir / "faketime" / "offset") if clock_faults else None
        if clock is not None:  # every broker process, restarts included, runs on the faked clock
            stack.enter_context(clock.applied())
            progress(f"clock faults: brokers run under libfaketime ({clock.path})")
        disk = Disk(c.out_dir / "data", DISK_MB) if disk_faults else None
        if disk is not None:  # the brokers' data on a tmpfs the nemesis can fill
            try:
                disk.mount()
            except Exception as exc:
                raise CampaignError(f"cannot mount a tmpfs for the brokers' data: {exc}") from exc
            stack.callback(disk.unmount)
            progress(f"disk faults: brokers' data on a {DISK_MB} MiB tmpfs at {disk.path}")
        configs = list(c.broker_configs)
        if spec.kind == "reference" and node_spec is None:
            if c.min_isr is not None:
                configs.append(f"min.insync.replicas={c.min_isr}")
            configs.append(f"unclean.leader.election.enable={'true' if c.unclean_election else 'false'}")
            if log_dir_faults and not any(kv.startswith(("log.dirs=", "log.dir=")) for kv in configs):
                configs.append(LOG_DIRS_CONFIG)  # several log directories per broker, one to fail
            if any(f in MEMBERSHIP_FAULTS for f in c.faults) and not any(
                kv.startswith(f"{KRAFT_VERSION_CONFIG}=") for kv in configs
            ):  # formatted with the initial controllers, so the nemesis can change voters (KIP-853)
                configs.append(f"{KRAFT_VERSION_CONFIG}=1")
            if c.workload == "share":  # the share group's short lock and session (Kafka's floors: 15 s, 45 s)
                configs += [f"{SHARE_MIN_LOCK}=1000", f"{SHARE_MIN_SESSION}=6000"]
        try:
            target: Any = (
                SpecTarget(node_spec)
                if node_spec is not None
                else stack.enter_context(
                    launch(
                        spec,
                        brokers=c.brokers,
                        listen_ports=[topology.listen_ports[n] for n in node_ids],
                        advertised_ports=[topology.advertised_ports[n] for n in node_ids],
                        broker_configs=configs,
                        peer_ports=topology.peer_ports or None,
                        controller_ports=topology.controller_ports or None,
                        controller_peer_ports=topology.controller_peer_ports or None,
                        security=c.security,
                        security_dir=c.out_dir / "security" if c.security else None,
                        workdir=disk.path if disk is not None else None,
                    )
                )
            )
        except Exception as exc:
            raise CampaignError(f"target {c.target} did not start: {exc}") from exc
        # every client of the campaign, and the load's
        if node_spec is None and adopt_security(target).secured is not None:
            assert target.secured is not None
            progress(f"target {c.target}: secured, {target.secured.protocol} on every listener and link")
        progress(f"target {c.target}: brokers advertise {topology.bootstrap} (proxied)")
        topic_configs = (
            {"min.insync.replicas": str(c.min_isr)}
            if c.min_isr and (spec.kind == "reference" or node_spec is not None)
            else {}
        )
        for kv in c.topic_configs:
            key, _, value = kv.partition("=")
            topic_configs[key] = value
        topics = [topic] if c.workload != "transactional" else [topic, f"{topic}-out"]
        for name in topics:
            _create_topic(topology.bootstrap, name, c.partitions, c.rf, topic_configs)
        workload, parts = _workloads(c, recorder, topology.bootstrap, topics)
        group = _group_of(workload)
        nemesis = Nemesis(recorder, topology, target, topic, clock=clock, disk=disk, group=group)
        if any(f in MEMBERSHIP_FAULTS for f in c.faults):
            dynamic = f"{KRAFT_VERSION_CONFIG}=1" in configs
            nemesis.membership = Membership(recorder, target, topics, voters=dynamic)
            stack.callback(nemesis.membership.stop_controllers)  # controllers it started, whatever happens
        if c.restart_probe:
            first = topology.bootstrap.split(",")[0]
            nemesis.probe = RestartProbe(recorder, topic, topic_id=topic_id_of(first, topic))
        if c.packet_faults:
            nemesis.packets = PacketRules(f"kh-chaos-{topic}")
            stack.callback(nemesis.packets.clear)
        stop = threading.Event()
        for part in parts:
            stack.callback(part.stop)
            try:
                part.start()
            except RuntimeError as exc:  # the share workload's group configs (or no share groups)
                raise CampaignError(f"{c.workload}: {exc}") from exc
        if isinstance(workload, TxnAppendWorkload | ProbeWorkload):  # faults begin once transactions commit
            ready = workload.wait_ready(60.0)
            if ready is None:
                raise CampaignError(f"{c.workload}: no transaction committed within 60 s of the start")
            progress(f"{c.workload}: first commit after {ready:.1f} s")
        if isinstance(workload, ShareWorkload):  # faults begin once the share consumers get records
            ready = workload.wait_ready(60.0)
            if ready is None:
                raise CampaignError(f"{c.workload}: no share consumer was given a record within 60 s")
            progress(f"{c.workload}: first delivery after {ready:.1f} s")
        load = None
        if c.load_spec is not None:
            load = LoadAlongside(c.load_spec, topology.bootstrap, c.out_dir)
            stack.callback(load.stop)
            load.start()
            progress(f"load alongside: {c.load_spec} (log: {load.log})")
        t0 = time.monotonic()
        nemesis_thread = threading.Thread(
            target=run_schedule, args=(nemesis, plan, t0, stop), name="nemesis", daemon=True
        )
        nemesis_thread.start()
        try:
            _progress_loop(recorder, workload, nemesis, t0, c.time_s, progress)
        finally:
            stop.set()
            nemesis_thread.join(60)
            nemesis.heal()
        progress("faults healed; producers finishing")
        workload.stop_producers()
        stable = True
        if c.workload in READ_COMMITTED:
            stable = _wait_stable(topology.bootstrap, topics, c.partitions, STABLE_WAIT_S, progress)
            recorder.history.meta["stable_at_final_read"] = stable
        drain_s = c.drain_s * SHARE_DRAIN_FACTOR if c.workload == "share" else c.drain_s
        caught_up = _drain(parts, topology.bootstrap, topics, c.partitions, drain_s, progress)
        recorder.history.meta["final_drain"] = caught_up
        highs = high_watermarks(topology.bootstrap, topics, c.partitions)
        if highs is not None:
            # A read_committed read stops at the last stable offsets: with a transaction still open
            # it is no read of the whole log, and a committed value past the open one is not lost
            # for being absent from it (the checkers count what a complete final read lacks as lost).
            complete = (
                workload.final_read(highs, c.drain_s, read_committed=reads_committed(c.workload)) and stable
            )
            recorder.history.meta.update(final_reader=FINAL, final_read_complete=complete)
            progress(f"final read of the whole log {'complete' if complete else 'INCOMPLETE'} up to {highs}")
        for part in parts:
            part.stop()
        load_outcome = None
        if load is not None:
            progress("waiting for the load run to finish")
            load_outcome = load.finish(timeout_s=c.time_s + c.drain_s + 600)
            progress(f"load alongside: {load_outcome.verdict_line}")
        if c.runs_restart_check:  # last: nothing else writes any more
            run_restart_phase(
                recorder,
                target,
                workload,
                topology.bootstrap,
                topic,
                c.partitions,
                bound_s=c.restart_bound_s,
                fault_id=len(plan),
                read_committed=bool(reads_committed(c.workload)),
                progress=progress,
                probe=nemesis.probe,
            )
    history_path = c.out_dir / f"history.{c.history_format}"
    write_history(recorder.history, history_path)
    result = check(recorder.history)
    events = [{"f": op.f, **op.value} for op in recorder.history.nemesis_ops()]
    return Outcome(result, history_path, plan, events, started_ms, int(time.time() * 1000), load_outcome)


def _node_spec(c: Campaign, kind: str) -> NodeSpec:
    """The campaign's node spec, checked against what it asks for."""
    assert c.nodes_file is not None
    if kind != "bootstrap":
        raise CampaignError(
            f"--nodes drives a cluster started elsewhere: use --target bootstrap:HOST:PORT, not {kind}"
        )
    if c.broker_configs:
        raise CampaignError("--broker-config is for brokers launched here, not for a cluster from --nodes")
    try:
        node_spec = load_nodes(c.nodes_file)
    except NodeSpecError as exc:
        raise CampaignError(f"node spec: {exc}") from None
    missing = missing_for(node_spec, c.faults)
    if missing:
        raise CampaignError("node spec: " + "; ".join(missing[:5]))
    return node_spec


def _progress_loop(
    recorder: Recorder,
    workload: QueueWorkload,
    nemesis: Nemesis,
    t0: float,
    total_s: float,
    progress: Callable[[str], None],
) -> None:
    next_report = t0 + 5
    while (now := time.monotonic()) < t0 + total_s:
        time.sleep(min(0.5, t0 + total_s - now))
        if time.monotonic() >= next_report:
            next_report += 5
            ops = recorder.history.ops
            ok = sum(1 for op in ops[-20_000:] if op.type == "ok" and op.f in ("send", "txn"))
            faults = ",".join(s["fault"] for s in nemesis.active.values()) or "none"
            progress(
                f"  t={time.monotonic() - t0:5.1f}s sent={workload.sent} ops={len(ops)} "
                f"recent_ok={ok} errors={sum(workload.errors.values())} faults={faults}"
            )


SHARE_MIN_LOCK = "group.share.min.record.lock.duration.ms"
SHARE_MIN_SESSION = "group.share.min.session.timeout.ms"
"""Lowered for the share workload on reference brokers, so its group may lock records for 3 s
(:data:`chaos.workloads.share.LOCK_MS`: locks run out within a campaign) and drop a member that died
without leaving after 10 s (:data:`chaos.workloads.share.SESSION_MS`)."""

DISK_MB = 256
"""The brokers' tmpfs under disk faults: room for a campaign's logs, small enough to fill fast."""

STABLE_WAIT_S = 45.0
"""Longer than the workloads' transaction timeouts (10 s, 30 s for consume-transform-produce)."""


def _wait_stable(
    bootstrap: str, topics: list[str], partitions: int, bound_s: float, progress: Callable[[str], None]
) -> bool:
    """Wait until every partition's last stable offset reached its high watermark: no transaction is
    open any more (one a client left open ends when the coordinator aborts it after its
    ``transaction.timeout.ms``). Until then read_committed readers stop at the open transaction's
    first offset, and a final read would miss what was committed after it."""
    deadline = time.monotonic() + bound_s
    started = time.monotonic()
    lso: dict[tuple[str, int], int] | None = None
    hw: dict[tuple[str, int], int] | None = None
    while time.monotonic() < deadline:
        hw = high_watermarks(bootstrap, topics, partitions, committed=False)
        lso = high_watermarks(bootstrap, topics, partitions, committed=True)
        if hw is not None and lso == hw:
            progress(
                f"no open transaction: last stable offsets at the high watermarks after "
                f"{time.monotonic() - started:.1f} s"
            )
            return True
        time.sleep(0.5)
    progress(
        f"open transactions remain after {bound_s:.0f} s: last stable offsets {lso}, high watermarks {hw}"
    )
    return False


def _drain(
    parts: list[Any],
    bootstrap: str,
    topics: list[str],
    partitions: int,
    drain_s: float,
    progress: Callable[[str], None],
) -> bool:
    """Wait until every reader (consumers, transactional processors) reached the high watermarks."""
    deadline = time.monotonic() + drain_s
    highs: dict[tuple[str, int], int] | None = None
    while time.monotonic() < deadline:
        highs = high_watermarks(bootstrap, topics, partitions) or highs
        if highs is not None and all(part.caught_up(highs) for part in parts):
            progress(f"readers caught up with high watermarks {highs}")
            return True
        time.sleep(0.5)
    progress(f"readers did not reach the high watermarks {highs} within {drain_s:.0f} s")
    return False


def reads_committed(workload: str) -> bool | None:
    """The isolation of the reads after the faults (the final read, the restart phase's read).

    A workload that writes in transactions is judged on what a read_committed reader sees, as its
    own readers do: a read_uncommitted final read returns the records of aborted transactions, and
    a transaction aborted and retried (a consume-transform-produce batch whose offsets commit was
    refused with UNKNOWN_MEMBER_ID) then shows its outputs twice, a ``duplicate`` no broker made,
    while the live readers' skip over the aborted offsets looks like a ``poll_skip``. None: the
    workload's own choice (``--read-committed`` for the queue workload)."""
    return True if workload in READ_COMMITTED else None


def _workloads(
    c: Campaign, recorder: Recorder, bootstrap: str, topics: list[str]
) -> tuple[QueueWorkload, list[Any]]:
    """(the producing workload, every part to start and stop)."""
    options = QueueOptions(
        topics[0],
        partitions=c.partitions,
        rate=c.rate,
        acks=c.acks,
        retries=c.retries,
        idempotence=c.idempotence,
        consumer_mode=c.consumer_mode,
        group_protocol=c.group_protocol,
    )
    if c.workload == "queue":
        main = QueueWorkload(recorder, bootstrap, options, group=f"{topics[0]}-group")
        return main, [main]
    if c.workload == "txn-append":
        appender = TxnAppendWorkload(
            recorder,
            bootstrap,
            topics[0],
            partitions=c.partitions,
            group=f"{topics[0]}-txn",
            rate=c.rate,
            seed=c.seed,
            crash_clients=c.crash_clients,
        )
        return appender, [appender]
    if c.workload == "share":
        options.consumers = 0
        share = ShareWorkload(recorder, bootstrap, options, group=f"{topics[0]}-share", seed=c.seed)
        return share, [share]
    if c.workload in PROBES:
        probe = ProbeWorkload(
            recorder, bootstrap, topics[0], kind=c.workload, partitions=c.partitions,
            group=f"{topics[0]}-probe", rate=c.rate, seed=c.seed,
        )  # fmt: skip
        return probe, [probe]
    options.consumers = 0  # the transactional processors read the input topic
    main = QueueWorkload(recorder, bootstrap, options, group=f"{topics[0]}-group")
    observe = QueueOptions(topics[1], partitions=c.partitions, producers=0, read_committed=True)
    observers = QueueWorkload(recorder, bootstrap, observe, group=f"{topics[1]}-observers")
    processors = TransactionalWorkload(recorder, bootstrap, topics[0], topics[1], group=f"{topics[0]}-txn")
    return main, [main, processors, observers]


def _group_of(workload: QueueWorkload) -> str | None:
    """The group whose coordinator ``partition-coordinator`` isolates: the share group, or the queue
    workload's consumer group."""
    if isinstance(workload, ShareWorkload) or workload.options.consumer_mode == "group":
        return workload.group
    return None


def needs_links(faults: list[str]) -> bool:
    return any(f in PARTITIONS or f in LINK_TOXICS or f == RESTART_ISOLATED for f in faults)

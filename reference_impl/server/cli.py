"""``kafka-harness broker``: run one reference broker process.

    kafka-harness broker --node-id 1 --listen 127.0.0.1:9092 \\
        --advertised-listener 127.0.0.1:9092 --data-dir /tmp/kh-1 [--config key=value ...]

``--listen`` and ``--advertised-listener`` are the shorthand for the PLAINTEXT listener; Kafka's
``listeners``, ``advertised.listeners``, ``listener.security.protocol.map`` and
``controller.listener.names`` configs name any others. Alone, the broker is the only voter of its
own KRaft quorum and needs no controller listener. A cluster node (``--controller-quorum-voters``)
needs one when it is a voter among others:

    kafka-harness broker --node-id 1 --listen 127.0.0.1:9092 --data-dir /tmp/kh-1 \\
        --controller-quorum-voters 1@127.0.0.1:9093 \\
        --config listeners=CONTROLLER://127.0.0.1:9093 --config controller.listener.names=CONTROLLER

Secured listeners take Kafka's names (``listeners=SASL_SSL://127.0.0.1:9094``,
``listener.security.protocol.map``, ``ssl.keystore.location``, ``sasl.enabled.mechanisms``,
``listener.name.sasl_ssl.plain.sasl.jaas.config``; see ``reference_impl/core/security``), with no
``--listen`` at all if no PLAINTEXT listener is wanted; ``--add-scram`` gives SCRAM users as
``kafka-storage format --add-scram`` does. A cluster node's links to its peers and controllers
speak the protocol of the inter-broker and controller listeners, as the node's own user
(``sasl.mechanism.inter.broker.protocol``, ``sasl.mechanism.controller.protocol`` and the
``username``/``password`` of the listener's JAAS entry; ``server/links.py``):

    kafka-harness broker --node-id 1 --data-dir /tmp/kh-1 \
        --config listeners=SASL_PLAINTEXT://127.0.0.1:9092 \
        --config inter.broker.listener.name=SASL_PLAINTEXT \
        --config sasl.enabled.mechanisms=SCRAM-SHA-256 \
        --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'

It logs to stderr in plain words, serves until SIGTERM or SIGINT, then
flushes its logs, writes its checkpoints and exits 0. Bad arguments, a listener setup Kafka
refuses, an unreadable ``quorum-state`` or an unusable data directory exit 2 with a message,
before anything listens. A failed log directory takes its partitions offline and the broker serves
on (JBOD); when the directory holding the metadata log, or every one, fails it exits 1 at once, as
Kafka halts.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import random
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Mapping

from reference_impl import defects
from reference_impl.core.broker import Broker
from reference_impl.core.configs.model import ConfigError, parse_quorum_voters
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.controller.scram import bootstrap_records
from reference_impl.core.kraft.peer_addresses import (
    BOOTSTRAP_SERVERS,
    bootstrap_voters,
    parse_bootstrap_servers,
)
from reference_impl.core.kraft.quorum import QuorumPorts
from reference_impl.core.kraft.roles import BROKER_ROLE, CONTROLLER_ROLE, node_roles
from reference_impl.core.listeners import CLIENT_LISTENER, Endpoint, ListenerSetup, listener_setup
from reference_impl.core.ports import LogStore, MemoryLogStore
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore, QuorumStateError
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.core.security import parse_add_scram
from reference_impl.log.manager import LogDirError
from reference_impl.server.raft_files import FileQuorumStateStore, FileSnapshotStore

from .links import Links, links_for
from .listener import size_log_descriptor_pool
from .profiling import run_profiled
from .shell import BrokerShell, monotonic_ms, wall_clock_ms
from .storage import StorageError, log_dir_paths, open_file_store
from .tls import server_context

REPLAY_LIMIT_MS = 600_000

log = logging.getLogger("reference_impl.server")


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host, int(port)


def _endpoint(name: str, address: tuple[str, int] | None, more: str) -> str:
    """``more`` (a listeners value) with ``name://address`` first, when the shorthand gave one."""
    if address is None:
        return more
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return ",".join(item for item in (f"{name}://{host}:{address[1]}", more) if item)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kafka-harness broker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-id", type=int, required=True, help="this broker's node id (≥ 0)")
    parser.add_argument(
        "--listen",
        type=_host_port,
        metavar="HOST:PORT",
        help="the PLAINTEXT listener (shorthand for listeners=PLAINTEXT://HOST:PORT)",
    )
    parser.add_argument(
        "--advertised-listener",
        type=_host_port,
        metavar="HOST:PORT",
        help="the address clients are told to use for the PLAINTEXT listener (default: --listen)",
    )
    parser.add_argument(
        "--data-dir",
        help="where partitions and checkpoints live (file storage needs it or log.dirs); with log.dirs, "
        "the one of them holding the metadata log",
    )
    parser.add_argument("--cluster-id", help="cluster id for a new data directory (default: random)")
    parser.add_argument("--rack", help="broker.rack (overrides --config broker.rack=...)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker or default topic config, Kafka's names (repeatable)",
    )
    parser.add_argument(
        "--storage",
        choices=("file", "memory"),
        default="file",
        help="file: Kafka's on-disk format (default); memory: nothing survives a restart",
    )
    parser.add_argument(
        "--controller-quorum-voters",
        metavar="ID@HOST:PORT,...",
        help="run as a member of a cluster whose metadata quorum has these voters "
        "(controller.quorum.voters; a broker whose id is listed is also a controller)",
    )
    parser.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="'MECHANISM=[name=N,password=P]'",
        help="a SCRAM credential in kafka-storage format's syntax (repeatable): written to the metadata log "
        "at the first start (an empty log), as kafka-storage format does; later: AlterUserScramCredentials",
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s [broker %(process)d] %(message)s",
    )
    pairs = list(args.config)
    if args.controller_quorum_voters:
        pairs.append(f"controller.quorum.voters={args.controller_quorum_voters}")
    try:
        config = BrokerConfig.parse(args.node_id, pairs)
        voters = parse_quorum_voters(config.get("controller.quorum.voters") or "")
        if not voters:  # KIP-853: a node that finds the quorum through its bootstrap servers
            voters = bootstrap_voters(parse_bootstrap_servers(config.get(BOOTSTRAP_SERVERS) or ""))
        roles = node_roles(config.get("process.roles") or "", args.node_id, voters)
        listeners = _listeners(args, config, roles, bool(voters), set(voters) == {args.node_id})
        tls = {e.name: server_context(config.static, e.name) for e in listeners.listeners}
        lone = not voters or set(voters) == {args.node_id}
        links = Links() if lone else links_for(config.static, listeners)  # a lone broker has no peers
        scram = [parse_add_scram(value) for value in args.add_scram]
    except ConfigError as exc:
        print(f"kafka-harness broker: {exc}", file=sys.stderr)
        return 2
    if args.node_id < 0:
        print("kafka-harness broker: --node-id must be ≥ 0", file=sys.stderr)
        return 2
    seeded = defects.parse(config.get(defects.DEFECTS_CONFIG) or "")
    if seeded:
        defects.enable(seeded)
        log.warning("seeded defects switched on (never in production): %s", ", ".join(sorted(seeded)))
    advertised = listeners.inter_broker or listeners.listeners[0]  # a controller-only node advertises none
    log.info("log files hold at most %d file descriptors at once", size_log_descriptor_pool())
    store: LogStore
    try:
        if args.storage == "memory":
            store, cluster_id = MemoryLogStore(), args.cluster_id or "kh-memory-cluster"
        else:
            try:
                paths = log_dir_paths(args.data_dir, config.get("log.dirs"), config.get("log.dir"))
            except ValueError as exc:
                print(f"kafka-harness broker: {exc}", file=sys.stderr)
                return 2
            args.data_dir = paths[0]  # the metadata directory: Raft's quorum-state and snapshots too
            store, cluster_id = open_file_store(paths, args.node_id, args.cluster_id, wall_clock_ms())
    except StorageError as exc:
        print(f"kafka-harness broker: {exc}", file=sys.stderr)
        return 2
    bootstrap = tuple(bootstrap_records(scram))
    host = advertised.host or socket.getfqdn()
    voters = voters or {args.node_id: (host, advertised.port)}  # a lone broker: its quorum's only voter
    if args.storage == "memory":
        quorum = QuorumPorts(voters, MemoryQuorumStateStore(), MemorySnapshotStore(), bootstrap)
    else:
        quorum = QuorumPorts(
            voters,
            FileQuorumStateStore(args.data_dir, cluster_id),
            FileSnapshotStore(os.path.join(args.data_dir, "__cluster_metadata-0")),
            bootstrap,
        )
    try:
        broker = Broker(
            config=config,
            store=store,
            advertised_host=host,
            advertised_port=advertised.port,
            cluster_id=cluster_id,
            now_ms=wall_clock_ms(),
            mono_ms=monotonic_ms(),
            rng=random.Random(),
            rack=args.rack or config.get("broker.rack") or None,
            quorum=quorum,
        )
    except QuorumStateError as exc:  # never reset silently: the operator decides
        print(f"kafka-harness broker: {exc}; refusing to start", file=sys.stderr)
        return 2
    except LogDirError as exc:  # a partition's checkpoint cannot be read: Kafka's log dir goes offline
        print(f"kafka-harness broker: cannot use data directory {args.data_dir}: {exc}", file=sys.stderr)
        return 2
    broker.listener_addresses = {e.name: (e.host or socket.getfqdn(), e.port) for e in listeners.advertised}
    broker.client_quotas.request.clock_ns = time.perf_counter_ns  # the request-time quota's clock port
    if lone:
        try:
            _replay_before_listening(broker)
        except LogDirError as exc:  # as at construction: a partition's checkpoint cannot be read
            print(f"kafka-harness broker: cannot use data directory {args.data_dir}: {exc}", file=sys.stderr)
            return 2
    return run_profiled(
        args.node_id,
        lambda: asyncio.run(
            _serve(broker, listeners.listeners, config.get_int("socket.request.max.bytes"), tls, links)
        ),
    )


def _replay_before_listening(broker: Broker) -> None:
    """A lone voter needs nobody to lead and commit: tick it until it has replayed its metadata log
    and opened (recovered) its partitions, before anything listens, as a single broker always did, so
    a launcher that waits for the port waits for the recovery too. Bounded by REPLAY_LIMIT_MS; past
    it, the broker listens and finishes as it serves."""
    deadline = monotonic_ms() + REPLAY_LIMIT_MS
    linger = threading.Event()  # never set: a bounded wait for the metadata log's append linger
    while not broker.quorum.ready and monotonic_ms() < deadline:
        broker.tick(wall_clock_ms(), monotonic_ms())  # no connection yet: nothing to send
        if not broker.quorum.ready:
            # Not time.sleep: under libfaketime with DONT_FAKE_MONOTONIC (the chaos clock faults) its
            # clock_nanosleep fails with EINVAL; a condition wait, like the shell's epoll, does not.
            linger.wait(0.001)


def _listeners(
    args: argparse.Namespace, config: BrokerConfig, roles: frozenset[str], kraft: bool, lone_voter: bool
) -> ListenerSetup:
    """The node's listeners: ``--listen``/``--advertised-listener`` (PLAINTEXT) and Kafka's configs."""
    static = config.static
    bound = _endpoint(CLIENT_LISTENER, args.listen, static.get("listeners", ""))
    advertised = _endpoint(CLIENT_LISTENER, args.advertised_listener, static.get("advertised.listeners", ""))
    if args.advertised_listener is not None and "advertised.listeners" not in static:
        others = [i for i in bound.split(",") if i.partition("://")[0].strip().upper() != CLIENT_LISTENER]
        advertised = ",".join([advertised, *others])  # the other listeners advertised as bound
    return listener_setup(
        bound,
        advertised or None,
        explicit_protocol_map=static.get("listener.security.protocol.map"),
        controller_names=static.get("controller.listener.names", ""),
        inter_broker_name=static.get("inter.broker.listener.name", ""),
        is_broker=BROKER_ROLE in roles,
        is_controller=CONTROLLER_ROLE in roles,
        kraft=kraft,
        lone_voter=lone_voter,
    )


async def _serve(
    broker: Broker,
    endpoints: tuple[Endpoint, ...],
    max_frame_bytes: int,
    tls: Mapping[str, ssl.SSLContext | None] | None = None,
    links: Links | None = None,
) -> int:
    shell = BrokerShell(broker, max_frame_bytes=max_frame_bytes, links=links)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    for endpoint in endpoints:
        try:
            context = (tls or {}).get(endpoint.name)
            host, port = await shell.listen(endpoint.host, endpoint.port, endpoint.name, context)
        except OSError as exc:
            log.error("cannot listen on %s: %s", endpoint, exc)
            await shell.close()
            return 2
        if broker.listener_addresses.get(endpoint.name, ("", -1))[1] == 0:  # bound to a port the OS chose
            broker.listener_addresses[endpoint.name] = (broker.listener_addresses[endpoint.name][0], port)
        log.info(
            "broker %d listening on %s:%d (listener %s, %s)",
            broker.node_id,
            host,
            port,
            endpoint.name,
            endpoint.protocol,
        )
    # What start-up built (kio's schema classes and generated codecs, the handler registry, the
    # config catalogue, the logs opened) is never garbage: frozen, the collector's full passes stop
    # walking it. Measured with gc callbacks in a 3-broker acks=all latency run, each full pass
    # paused a broker 40-100 ms, and every record arriving meanwhile waited (issue 22).
    gc.collect()
    gc.freeze()
    halted = asyncio.ensure_future(_halt_when_told(broker, stop))
    await stop.wait()
    halted.cancel()
    if broker.halt_reason is not None:  # Kafka halts: no controlled shutdown
        log.critical("broker %d halting: %s", broker.node_id, broker.halt_reason)
        await shell.close()
        return 1
    if broker.quorum is not None:
        await _controlled_shutdown(shell, broker)
    log.info("broker %d stopping: flushing logs and writing checkpoints", broker.node_id)
    await shell.close()
    return 0


async def _halt_when_told(broker: Broker, stop: asyncio.Event) -> None:
    """Stop the broker when its core says it must halt (a fatal log directory failure)."""
    while broker.halt_reason is None:
        await asyncio.sleep(0.1)
    stop.set()


async def _controlled_shutdown(shell: BrokerShell, broker: Broker) -> None:
    """Let the controller move this broker's leaderships away, then hand the quorum over.

    Bounded by ``broker.session.timeout.ms``: a controller that cannot be
    reached would fence this broker after that long anyway.
    """
    quorum = broker.quorum
    assert quorum is not None
    log.info("broker %d: controlled shutdown, moving leaderships away", broker.node_id)
    quorum.begin_controlled_shutdown(wall_clock_ms())
    shell.tick()
    deadline = monotonic_ms() + broker.config.get_int("broker.session.timeout.ms")
    while not quorum.should_shut_down and monotonic_ms() < deadline:
        await asyncio.sleep(0.05)
    quorum.resign(wall_clock_ms())
    shell.tick()
    await asyncio.sleep(0.2)  # EndQuorumEpoch and the last fetches go out

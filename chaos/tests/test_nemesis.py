"""Nemesis scheduling (seeded, replayable), topology selections, and faults applied through the API."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable

import pytest
import requests

from chaos.history import Recorder, fault_windows
from chaos.nemesis import faults
from chaos.nemesis.faults import Nemesis, run_schedule
from chaos.nemesis.schedule import FAULTS, Planned, parse_faults, schedule
from chaos.nemesis.topology import Topology, broker_proxy, client_proxy, controller_proxy
from chaos.toxiproxy.server import ServerThread


def test_same_seed_same_schedule_and_different_seed_differs() -> None:
    faults = ["partition-leader", "kill", "pause", "latency"]
    first = schedule(faults, 60, seed=7)
    assert first == schedule(faults, 60, seed=7)
    assert [p.to_json() for p in first] != [p.to_json() for p in schedule(faults, 60, seed=8)]


@pytest.mark.parametrize("seed", range(20))
def test_windows_do_not_overlap_and_leave_a_quiet_tail(seed: int) -> None:
    plan = schedule(list(FAULTS), 60, seed=seed)
    assert plan, "a 60 s campaign gets faults"
    for before, after in itertools.pairwise(plan):
        assert before.start_s + before.duration_s < after.start_s
    assert plan[0].start_s >= 5
    assert plan[-1].start_s + plan[-1].duration_s <= 60 * 0.75
    assert {p.fault for p in plan} <= set(FAULTS)


def test_short_campaign_still_gets_one_fault() -> None:
    plan = schedule(["kill"], 12, seed=1)
    assert len(plan) == 1 and plan[0].fault == "kill"


def test_parse_faults_names_the_unknown() -> None:
    assert parse_faults("partition-leader, kill,pause") == ["partition-leader", "kill", "pause"]
    assert parse_faults("partition") == ["partition-node"]
    with pytest.raises(ValueError, match="unknown nemesis earthquake"):
        parse_faults("kill,earthquake")


def test_topology_selections_for_a_three_broker_cluster() -> None:
    """Every link of the reference cluster has its proxy: clients to each broker, each broker to each
    broker (replica fetches) and each node to each voter's controller listener (the quorum); a
    partition cuts both kinds of link between the sides."""
    topology = Topology.plan("http://unused", [1, 2, 3], broker_links=True)
    names = {p["name"] for p in topology.proxies()}
    pairs = [(a, b) for a in (1, 2, 3) for b in (1, 2, 3) if a != b]
    assert names == (
        {client_proxy(n) for n in (1, 2, 3)}
        | {broker_proxy(a, b) for a, b in pairs}
        | {controller_proxy(a, b) for a, b in pairs}
    )
    assert set(topology.isolate([2])) == {
        client_proxy(2),
        broker_proxy(2, 1),
        broker_proxy(2, 3),
        broker_proxy(1, 2),
        broker_proxy(3, 2),
        controller_proxy(2, 1),
        controller_proxy(2, 3),
        controller_proxy(1, 2),
        controller_proxy(3, 2),
    }
    upstreams = {p["name"]: p["upstream"] for p in topology.proxies()}
    assert upstreams[controller_proxy(1, 2)] == f"127.0.0.1:{topology.controller_ports[2]}"
    assert upstreams[broker_proxy(1, 2)] == f"127.0.0.1:{topology.listen_ports[2]}"
    ports = {p["listen"] for p in topology.proxies()}
    assert len(ports) == len(names), "every proxy listens on its own port"
    client_only = Topology.plan("http://unused", [1])
    assert client_only.isolate([1]) == [client_proxy(1)] and client_only.ring() == []


def test_an_unproxied_topology_has_no_proxies_and_advertises_what_it_listens_on() -> None:
    """noida-db advertises the port it listens on: its campaigns run without proxies (nothing to
    create on a Toxiproxy server, no links to cut) and clients reach each broker directly."""
    topology = Topology.direct([1])
    assert topology.proxies() == [] and not topology.proxied
    assert topology.listen_ports == topology.advertised_ports
    assert topology.bootstrap == f"127.0.0.1:{topology.listen_ports[1]}"
    topology.create()  # no server behind it: nothing is sent


def test_faults_add_and_remove_toxics_and_are_recorded() -> None:
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1, 2])
        topology.create()
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, None, "t")
        plan = [Planned(0, "partition-node", 0.0, 0.05, pick=1), Planned(1, "latency", 0.1, 0.05, pick=0)]
        seen: list[dict[str, list[str]]] = []
        original_stop = nemesis.stop

        def stop_and_look(entry: Planned) -> None:
            seen.append(
                {
                    p: [t["name"] for t in requests.get(f"{server.url}/proxies/{p}/toxics", timeout=5).json()]
                    for p in (client_proxy(1), client_proxy(2))
                }
            )
            original_stop(entry)

        nemesis.stop = stop_and_look  # type: ignore[assignment]
        run_schedule(nemesis, plan, time.monotonic(), threading.Event())
        # pick=1 over nodes [1, 2] isolates node 2 only; latency hits every client link
        assert seen[0][client_proxy(1)] == [] and len(seen[0][client_proxy(2)]) == 2
        assert all(len(names) == 2 for names in seen[1].values())
        for proxy in (client_proxy(1), client_proxy(2)):
            assert requests.get(f"{server.url}/proxies/{proxy}/toxics", timeout=5).json() == []
        windows = fault_windows(recorder.history)
        assert [w[0] for w in windows] == ["partition-node", "latency"]
        assert all(end is not None and end >= start for _, start, end in windows)
        starts = [op.value for op in recorder.history.nemesis_ops() if op.f == "start"]
        assert starts[0]["nodes"] == [2] and "error" not in starts[0]


def test_a_process_fault_without_processes_is_recorded_as_an_error() -> None:
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1])
        topology.create()
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, None, "t")
        nemesis.start(Planned(0, "kill", 0.0, 1.0, 0))
        nemesis.heal()
        start, stop = recorder.history.nemesis_ops()
        assert "no processes" in start.value["error"] and stop.f == "stop"


def test_packet_drop_silences_a_port_and_removal_restores_it() -> None:
    """iptables DROP on one loopback port: connecting times out (silence, not refusal), then works again."""
    import socket

    from chaos.nemesis.packet import PacketRules, unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    rules = PacketRules(f"kh-chaos-test-{port}")
    try:
        added = rules.drop([port])
        assert len(added) == 2
        with pytest.raises(TimeoutError):
            socket.create_connection(("127.0.0.1", port), timeout=0.5)
        rules.clear()
        assert rules.rules == []
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        rules.clear()
        server.close()


def test_packet_fault_without_the_layer_is_recorded_as_an_error() -> None:
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1])
        topology.create()
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, None, "t")
        nemesis.start(Planned(0, "packet-drop", 0.0, 1.0, 0))
        nemesis.heal()
        start, _stop = recorder.history.nemesis_ops()
        assert "--packet-faults" in start.value["error"]


def test_partition_leader_peers_cuts_the_leaders_peer_links_but_not_its_clients() -> None:
    """No metadata answers here, so the seeded pick names the leader (pick 1 over [1, 2, 3]: node 2):
    its replica and controller links both ways get black holes, its client proxy none."""
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1, 2, 3], broker_links=True)
        topology.create()
        nemesis = Nemesis(Recorder(), topology, None, "t")

        def toxics(proxy: str) -> int:
            return len(requests.get(f"{server.url}/proxies/{proxy}/toxics", timeout=5).json())

        nemesis.start(Planned(0, "partition-leader-peers", 0.0, 1.0, pick=1))
        cut = [broker_proxy(2, 1), broker_proxy(1, 2), broker_proxy(3, 2), controller_proxy(2, 3),
               controller_proxy(1, 2)]  # fmt: skip
        assert all(toxics(p) == 2 for p in cut), {p: toxics(p) for p in cut}
        assert toxics(client_proxy(2)) == 0 and toxics(broker_proxy(1, 3)) == 0
        nemesis.heal()
        assert toxics(broker_proxy(2, 1)) == 0


def test_strand_leader_cuts_replication_only_then_kills_the_leader() -> None:
    """Replica links of the leader cut both ways, its client and controller links kept; halfway the
    kill (here recorded as an error: no processes), at the end the links healed."""
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1, 2, 3], broker_links=True)
        topology.create()
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, None, "t")

        def toxics(proxy: str) -> int:
            return len(requests.get(f"{server.url}/proxies/{proxy}/toxics", timeout=5).json())

        plan = Planned(0, "strand-leader", 0.0, 0.2, pick=1)
        nemesis.start(plan)
        assert all(toxics(p) == 2 for p in (broker_proxy(2, 1), broker_proxy(1, 2), broker_proxy(3, 2)))
        assert toxics(client_proxy(2)) == 0 and toxics(controller_proxy(2, 1)) == 0
        deadline = time.monotonic() + 5
        killed = lambda: any(op.f == "kill" for op in recorder.history.nemesis_ops())  # noqa: E731
        while not killed() and time.monotonic() < deadline:
            time.sleep(0.02)
        [kill] = [op for op in recorder.history.nemesis_ops() if op.f == "kill"]
        assert kill.value["nodes"] == [2] and "no processes" in kill.value["error"]
        nemesis.stop(plan)
        assert toxics(broker_proxy(2, 1)) == 0


def test_a_proxy_port_taken_after_planning_is_planned_again() -> None:
    """The clean-clone CI once lost a campaign because a planned proxy port was taken before
    Toxiproxy bound it; the brokers have not started at that point, so the topology plans afresh."""
    with ServerThread() as server, socket.socket() as squatter:
        topology = Topology.plan(server.url, [1, 2], broker_links=True)
        taken = topology.advertised_ports[2]
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        topology.create()
        names = requests.get(f"{server.url}/proxies", timeout=5).json()
        listens = {name: proxy["listen"] for name, proxy in names.items()}
        assert len(listens) == len(topology.proxies())
        assert f"127.0.0.1:{taken}" not in listens.values()
        assert listens[client_proxy(2)] == f"127.0.0.1:{topology.advertised_ports[2]}"
        topology.delete()


def test_planned_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    topology = Topology.plan("http://unused", [1, 2, 3, 4, 5], broker_links=True)
    proxy_ports = [int(proxy["listen"].rsplit(":", 1)[1]) for proxy in topology.proxies()]
    every = proxy_ports + list(topology.listen_ports.values()) + list(topology.controller_ports.values())
    assert len(every) == len(set(every))
    assert all(port < 32768 for port in every)


def test_partition_coordinator_isolates_the_node_find_coordinator_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``partition-coordinator`` cuts off the node FindCoordinator (key type 0) names for the campaign's
    group; with no answer (nothing listens behind the proxies here) or no group, the seeded pick."""
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1, 2, 3])
        topology.create()
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, None, "t", group="g")
        assert nemesis._coordinator() is None  # no broker answers: FindCoordinator cannot be asked
        nemesis.start(Planned(0, "partition-coordinator", 0.0, 1.0, pick=1))
        nemesis.stop(Planned(0, "partition-coordinator", 0.0, 1.0, pick=1))
        monkeypatch.setattr(Nemesis, "_coordinator", lambda self: 3)
        nemesis.start(Planned(1, "partition-coordinator", 0.0, 1.0, pick=1))
        assert len(requests.get(f"{server.url}/proxies/{client_proxy(3)}/toxics", timeout=5).json()) == 2
        assert requests.get(f"{server.url}/proxies/{client_proxy(2)}/toxics", timeout=5).json() == []
        nemesis.heal()
    starts = [op.value for op in recorder.history.nemesis_ops() if op.f == "start"]
    assert [s["nodes"] for s in starts] == [[2], [3]]


class _Node:
    """A process stand-in recording what the nemesis did to it and when."""

    def __init__(self, node_id: int, seen: list[tuple[str, int]], cut: Callable[[], int]) -> None:
        self.node_id, self.seen, self.cut = node_id, seen, cut
        self.host, self.port, self.is_running = "127.0.0.1", 1, True

    def kill(self) -> None:
        self.seen.append(("kill", self.cut()))

    def start(self) -> None:
        self.seen.append(("start", self.cut()))


class _Target:
    def __init__(self, nodes: dict[int, _Node]) -> None:
        self.nodes = nodes

    def node(self, node_id: int) -> _Node:
        return self.nodes[node_id]


def test_restart_isolated_starts_the_node_while_its_peer_links_are_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The killed node is started with its broker and controller links still black holes, so it cannot
    catch up before clients ask; clients reach it throughout; the links heal after the hold."""
    monkeypatch.setattr(faults, "ISOLATED_HOLD_S", 0.05)
    with ServerThread() as server:
        topology = Topology.plan(server.url, [1, 2, 3], broker_links=True)
        topology.create()

        def toxics(proxy: str) -> int:
            return len(requests.get(f"{server.url}/proxies/{proxy}/toxics", timeout=5).json())

        seen: list[tuple[str, int]] = []
        peers = [broker_proxy(2, 1), broker_proxy(3, 2), controller_proxy(2, 3), controller_proxy(1, 2)]
        nodes = {n: _Node(n, seen, lambda: sum(toxics(p) for p in peers)) for n in (1, 2, 3)}
        recorder = Recorder()
        nemesis = Nemesis(recorder, topology, _Target(nodes), "t")  # type: ignore[arg-type]
        plan = Planned(0, faults.RESTART_ISOLATED, 0.0, 0.2, pick=1)
        nemesis.start(plan)
        assert all(toxics(p) == 2 for p in peers) and toxics(client_proxy(2)) == 0
        nemesis.stop(plan)
        assert seen == [("kill", 0), ("start", 2 * len(peers))], seen
        assert all(toxics(p) == 0 for p in peers)
        started = [op for op in recorder.history.nemesis_ops() if op.f == "start"]
        assert started[0].value["nodes"] == [2] and "error" not in started[0].value

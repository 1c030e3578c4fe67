"""The node-control spec (``kafka-harness chaos --nodes FILE``): how to drive a cluster this harness
did not start (issue 21). A JSON file::

    {
      "toxiproxy": "http://127.0.0.1:8474",
      "nodes": [
        {"id": 1, "address": "kafka-1:9092",
         "kill": "ssh {host} sudo systemctl kill -s KILL kafka",
         "start": "ssh {host} sudo systemctl start kafka",
         "stop": "ssh {host} sudo systemctl stop kafka",
         "pause": "ssh {host} sudo systemctl kill -s STOP kafka",
         "resume": "ssh {host} sudo systemctl kill -s CONT kafka",
         "running": "ssh {host} systemctl is-active --quiet kafka"}
      ]
    }

Each node: its broker id, the address clients bootstrap from, and shell command templates
(``{id}``, ``{host}``, ``{port}``, ``{address}`` filled in) for the process faults (``kill`` and
``start`` for kill, ``stop`` and ``start`` for bounce, ``pause`` and ``resume`` for pause); a
command exits 0 or the fault is recorded with its error. ``running`` (optional) exits 0 while the
node runs. ``toxiproxy`` (optional) is a Toxiproxy server that already holds the campaign's proxies,
named as the harness names them (``client-to-N`` in front of broker N, which advertises it;
``broker-A-to-B`` and ``controller-A-to-B`` for the links between nodes,
:mod:`chaos.nemesis.topology`): link faults then cut them. Without it only process faults run.

Bounds: at most :data:`MAX_NODES` nodes, templates of at most :data:`MAX_TEMPLATE` characters,
every command ended after :data:`COMMAND_TIMEOUT_S`.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACTIONS = ("kill", "start", "stop", "pause", "resume", "running")
MAX_NODES = 64
MAX_TEMPLATE = 2000
MAX_FILE = 1 << 20
COMMAND_TIMEOUT_S = 60.0


class NodeSpecError(ValueError):
    """The spec file cannot be used; the message says where."""


@dataclass
class SpecNode:
    """One node of the spec, with the interface the nemesis drives (:class:`fixtures.targets.Node`'s)."""

    node_id: int
    address: str
    commands: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    """Every command run, with its exit status (the campaign's record of what it did to the node)."""

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    def _run(self, action: str) -> int:
        template = self.commands.get(action)
        if template is None:
            raise RuntimeError(f"node {self.node_id}: the spec has no {action!r} command")
        command = template.format(id=self.node_id, host=self.host, port=self.port, address=self.address)
        try:
            done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            self.log.append(f"{action}: {command} (timed out)")
            raise RuntimeError(
                f"node {self.node_id}: {action} did not end in {COMMAND_TIMEOUT_S:.0f} s"
            ) from None
        self.log.append(f"{action}: {command} (exit {done.returncode})")
        if action != "running" and done.returncode != 0:
            raise RuntimeError(
                f"node {self.node_id}: {action} exited {done.returncode}: {done.stderr.strip()[:300]}"
            )
        return done.returncode

    def kill(self) -> None:
        self._run("kill")

    def start(self) -> None:
        self._run("start")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        self._run("stop")
        return None

    def pause(self) -> None:
        self._run("pause")

    def resume(self) -> None:
        self._run("resume")

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def is_running(self) -> bool:
        return "running" not in self.commands or self._run("running") == 0


@dataclass
class NodeSpec:
    nodes: list[SpecNode]
    toxiproxy: str | None = None

    @property
    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes)


@dataclass
class SpecTarget:
    """A cluster driven through a spec: what the nemesis and the restart phase ask of a target."""

    spec: NodeSpec

    @property
    def nodes(self) -> list[SpecNode]:
        return self.spec.nodes

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap

    def node(self, node_id: int) -> SpecNode:
        for n in self.spec.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} in the spec")


def parse_nodes(raw: Any) -> NodeSpec:
    """A spec from its JSON value; NodeSpecError says what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        raise NodeSpecError('a node spec is an object with a "nodes" list')
    items = raw["nodes"]
    if not 1 <= len(items) <= MAX_NODES:
        raise NodeSpecError(f"a node spec lists 1 to {MAX_NODES} nodes, not {len(items)}")
    toxiproxy = raw.get("toxiproxy")
    if toxiproxy is not None and (not isinstance(toxiproxy, str) or not toxiproxy.startswith("http")):
        raise NodeSpecError('"toxiproxy" is the URL of a Toxiproxy server (http://HOST:PORT)')
    nodes: list[SpecNode] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise NodeSpecError(f"node {i}: an object")
        node_id, address = item.get("id"), item.get("address")
        if not isinstance(node_id, int) or isinstance(node_id, bool) or node_id < 0:
            raise NodeSpecError(f'node {i}: "id" is the broker id, a non-negative integer')
        if not isinstance(address, str) or not address.rpartition(":")[2].isdigit() or ":" not in address:
            raise NodeSpecError(f'node {node_id}: "address" is HOST:PORT')
        unknown = set(item) - {"id", "address", *ACTIONS}
        if unknown:
            raise NodeSpecError(
                f"node {node_id}: unknown keys {sorted(unknown)} (known: id, address, {', '.join(ACTIONS)})"
            )
        commands = {}
        for action in ACTIONS:
            template = item.get(action)
            if template is None:
                continue
            if not isinstance(template, str) or not template.strip() or len(template) > MAX_TEMPLATE:
                raise NodeSpecError(
                    f"node {node_id}: {action!r} is a shell command of 1 to {MAX_TEMPLATE} characters"
                )
            try:
                template.format(id=node_id, host="h", port=1, address="h:1")
            except (KeyError, IndexError, ValueError) as exc:
                raise NodeSpecError(f"node {node_id}: {action!r} has a bad placeholder ({exc})") from None
            commands[action] = template
        nodes.append(SpecNode(node_id, address, commands))
    if len({n.node_id for n in nodes}) != len(nodes):
        raise NodeSpecError("node ids repeat")
    return NodeSpec(nodes, toxiproxy)


def load_nodes(path: Path) -> NodeSpec:
    try:
        if path.stat().st_size > MAX_FILE:
            raise NodeSpecError(f"{path}: larger than {MAX_FILE} bytes")
        raw = json.loads(path.read_text())
    except OSError as exc:
        raise NodeSpecError(f"{path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise NodeSpecError(f"{path}: not JSON ({exc})") from None
    return parse_nodes(raw)


def missing_for(spec: NodeSpec, faults: list[str]) -> list[str]:
    """What the spec lacks for ``faults``: one line per node and command."""
    needs = {
        "kill": ("kill", "start"),
        "restart-isolated": ("kill", "start"),
        "bounce": ("stop", "start"),
        "pause": ("pause", "resume"),
    }
    out = []
    for fault in faults:
        for action in needs.get(fault, ()):
            out += [
                f"{fault} needs {action!r} for node {n.node_id}"
                for n in spec.nodes
                if action not in n.commands
            ]
    return out

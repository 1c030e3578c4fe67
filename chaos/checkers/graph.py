"""The dependency graph over sends, polls and offsets, as Jepsen's Kafka checker infers it.

Definitions from Jepsen's Kafka workload (``jepsen.tests.kafka``, jepsen-io/jepsen,
``jepsen/src/jepsen/tests/kafka.clj``, its namespace docstring "Analysis" items 1-8), restated for
this project's histories (``chaos/history/README.md``): a *key* is one (topic, partition); every
client op that sends or polls is a *transaction* (a ``send`` op writes one value, a ``poll`` op
reads, a ``txn`` op does both: ``records`` are its sends in the order it made them, ``value.read``
its reads in the order its polls returned them).

* **Version order.** Per key, the values known at each offset (from acknowledged writes and from
  every read), sorted by offset. Gaps in offsets are ignored (transaction markers take offsets
  too), so positions are dense *indices* in that order.
* **Edges** between two distinct transactions T1 -> T2:
  ``ww`` T1 wrote v1 to k and T2 wrote v2 to k later in k's version order (drawn between
  successive writers, which implies the rest by transitivity); ``wr`` T2's highest read of k is
  a value T1 wrote; ``rw`` T1's highest read of k is at index i and T2 wrote the next value after
  i. Only the highest read of a key draws edges: a poll observes a range written by many
  transactions, already related by ww (Jepsen's reasoning, item 4).
* **Cycles**, classified as Elle does: ``G0`` only ww edges; ``G1c`` ww and wr edges, at least
  one wr; ``G-single`` exactly one rw edge; ``G2`` more than one rw.
* ``G1a`` (aborted read): a value read whose writing transaction certainly failed (aborted).
* ``G1b`` (intermediate read): Jepsen's item 7 asks what an intermediate read means for Kafka.
  Here: a transaction read some of T1's writes to key k and read across the index of another of
  T1's writes to k without reading it, so it saw T1 committed in part (read_committed promises a
  committed transaction's records are all visible together). A read that ends between two of
  T1's writes is not one: the next poll may return the rest.
* ``int_poll_skip`` / ``int_nonmonotonic_poll``: two successive reads of k within one transaction
  not adjacent in the version order / going backwards (item 5).
* ``int_send_skip`` / ``int_nonmonotonic_send``: two successive sends to k within one transaction
  landing apart / in the reverse order (item 6).
* ``precommitted_read``: a transaction read a value it wrote itself: a read_committed consumer must
  never see uncommitted records (item 8).

Kafka orders a partition by arrival, not by commit: open transactions of different producers
interleave their records in a partition, so ww edges between concurrent transactions form G0,
G1c and G-single cycles, and int_send_skip, that Kafka does not promise to prevent. They are
reported with their explanation and drawing; :data:`CYCLES_ALLOWED_BY_KAFKA` says which of them
count only when the run's ``meta.strict_cycles`` asks for serializable transactions.

Lost writes inferred from higher polled offsets, poll-skip and nonmonotonic poll and send across
operations are the queue detectors' (:mod:`.queue`): they walk the same offsets.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.history import History

from .queue import Anomaly

Key = tuple[str, int]

NAMES = (
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G2",
    "int_poll_skip",
    "int_nonmonotonic_poll",
    "int_send_skip",
    "int_nonmonotonic_send",
    "precommitted_read",
)
CYCLES_ALLOWED_BY_KAFKA = frozenset({"G0", "G1c", "G-single", "G2", "int_send_skip"})
"""Reported, but counted only with ``meta.strict_cycles``: see the module docstring."""

MAX_CYCLES = 50
"""Cycles reported per class (one per strongly connected component, as Elle does)."""
RW_TRIES = 200
"""rw edges of a component tried for a G-single cycle before it is called G2."""
RW_LOOKAHEAD = 1000
"""How far past a highest read the next known writer is looked for (bounded walk)."""


@dataclass(slots=True)
class Node:
    """One transaction: a send, a poll or a txn op."""

    id: int
    """History index of its invoke."""
    done: int | None
    process: int | str
    f: str
    status: str  # ok | fail | info | open
    sends: list[tuple[Key, int | None, Any]] = field(default_factory=list)
    reads: list[tuple[Key, int, Any]] = field(default_factory=list)

    def label(self) -> str:
        return f"op {self.id} ({self.f} {self.status}, process {self.process})"

    def summary(self, limit: int = 4) -> str:
        parts = [f"send {_k(k)}={v!r}@{'?' if o is None else o}" for k, o, v in self.sends[:limit]]
        parts += [f"read {_k(k)}@{o}={v!r}" for k, o, v in self.reads[:limit]]
        more = len(self.sends) + len(self.reads) - len(parts)
        return "; ".join(parts) + (f"; +{more} more" if more > 0 else "")


def _k(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


@dataclass
class Graph:
    nodes: dict[int, Node]
    values: dict[Key, list[Any]]
    """Per key, values in version order."""
    offsets: dict[Key, list[int]]
    """Per key, the offset of each index."""
    index_of: dict[Key, dict[int, int]]
    """Per key, offset -> index."""
    value_index: dict[Any, tuple[Key, int]]
    writer: dict[Any, int]
    """Value -> the transaction that wrote it (ok, info or open)."""
    aborted_writer: dict[Any, int]
    """Value -> the transaction that wrote it and certainly failed."""
    edges: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)
    """(T1, T2) -> edge type -> why (one reason per type)."""
    succ: dict[str, dict[int, set[int]]] = field(
        default_factory=lambda: {t: defaultdict(set) for t in ("ww", "wr", "rw")}
    )

    def add(self, kind: str, a: int, b: int, why: str) -> None:
        if a == b:
            return
        reasons = self.edges.setdefault((a, b), {})
        if kind not in reasons:
            reasons[kind] = why
            self.succ[kind][a].add(b)

    def send_index(self, key: Key, offset: int | None, value: Any) -> int | None:
        if offset is not None and offset >= 0:
            found = self.index_of.get(key, {}).get(offset)
            if found is not None:
                return found
        where = self.value_index.get(value)
        return where[1] if where is not None and where[0] == key else None


def nodes_of(history: History) -> dict[int, Node]:
    nodes: dict[int, Node] = {}
    for invoke, done in history.pairs():
        status = done.type if done is not None else "open"
        node = Node(invoke.index, done.index if done else None, invoke.process, invoke.f, status)
        if invoke.f == "send":
            source = done if done is not None else invoke
            if source.topic is not None and source.partition is not None:
                offset = done.offset if done is not None and done.type == "ok" else None
                node.sends.append(((source.topic, source.partition), offset, invoke.value))
        elif invoke.f == "poll" and done is not None and done.type in ("ok", "info"):
            node.reads = [((t, p), o, v) for t, p, o, v in done.records or []]
        elif invoke.f == "txn" and done is not None:
            node.sends = [
                ((t, p), o if o is not None and o >= 0 else None, v) for t, p, o, v in done.records or []
            ]
            if done.type in ("ok", "info") and isinstance(done.value, dict):
                node.reads = [((t, int(p)), int(o), v) for t, p, o, v in done.value.get("read") or []]
        else:
            continue
        if node.sends or node.reads:
            nodes[node.id] = node
    return nodes


def build(history: History) -> Graph:
    nodes = nodes_of(history)
    at: dict[Key, dict[int, Any]] = defaultdict(dict)
    writer: dict[Any, int] = {}
    aborted: dict[Any, int] = {}
    for node in nodes.values():
        for key, offset, value in node.sends:
            if node.status == "fail":
                aborted.setdefault(value, node.id)
                continue
            writer.setdefault(value, node.id)
            if node.status == "ok" and offset is not None:
                at[key].setdefault(offset, value)
        for key, offset, value in node.reads:
            at[key].setdefault(offset, value)
    values: dict[Key, list[Any]] = {}
    offsets: dict[Key, list[int]] = {}
    index_of: dict[Key, dict[int, int]] = {}
    value_index: dict[Any, tuple[Key, int]] = {}
    for key, by_offset in at.items():
        ordered = sorted(by_offset)
        offsets[key] = ordered
        values[key] = [by_offset[o] for o in ordered]
        index_of[key] = {o: i for i, o in enumerate(ordered)}
        for i, value in enumerate(values[key]):
            value_index.setdefault(value, (key, i))
    g = Graph(nodes, values, offsets, index_of, value_index, writer, aborted)
    _edges(g)
    return g


def _edges(g: Graph) -> None:
    for key, vals in g.values.items():
        previous: tuple[int, Any, int] | None = None
        for i, value in enumerate(vals):
            w = g.writer.get(value)
            if w is None:
                continue
            if previous is not None and previous[0] != w:
                g.add(
                    "ww",
                    previous[0],
                    w,
                    f"ww on {_k(key)}: {previous[1]!r}@{g.offsets[key][previous[2]]} "
                    f"precedes {value!r}@{g.offsets[key][i]}",
                )
            previous = (w, value, i)
    for node in g.nodes.values():
        highest: dict[Key, int] = {}
        for key, offset, _value in node.reads:
            i = g.index_of[key][offset]
            if i > highest.get(key, -1):
                highest[key] = i
        for key, i in highest.items():
            vals = g.values[key]
            value = vals[i]
            w = g.writer.get(value)
            if w is not None:
                g.add(
                    "wr",
                    w,
                    node.id,
                    f"wr on {_k(key)}: op {node.id}'s highest read is {value!r}@{g.offsets[key][i]}",
                )
            for j in range(i + 1, min(len(vals), i + 1 + RW_LOOKAHEAD)):
                nxt = g.writer.get(vals[j])
                if nxt is None:
                    continue
                if nxt != node.id:
                    g.add(
                        "rw",
                        node.id,
                        nxt,
                        f"rw on {_k(key)}: op {node.id} read up to @{g.offsets[key][i]}, "
                        f"not {vals[j]!r}@{g.offsets[key][j]}",
                    )
                break


# --- cycles --------------------------------------------------------------------------------------


def sccs(vertices: Iterable[int], succ: Callable[[int], Iterable[int]]) -> list[list[int]]:
    """Strongly connected components with more than one vertex (iterative Tarjan)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in vertices:
        if root in index:
            continue
        work: list[tuple[int, Any]] = [(root, None)]
        while work:
            v, it = work[-1]
            if it is None:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
                it = iter(succ(v))
                work[-1] = (v, it)
            advanced = False
            for w in it:
                if w not in index:
                    work.append((w, None))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def _path(start: int, goal: int, succ: Callable[[int], Iterable[int]], inside: set[int]) -> list[int] | None:
    """Shortest path start -> goal within ``inside`` (BFS), as a vertex list."""
    parent: dict[int, int | None] = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if v == goal:
            path = [v]
            while (p := parent[path[-1]]) is not None:
                path.append(p)
            return path[::-1]
        for w in succ(v):
            if w in inside and w not in parent:
                parent[w] = v
                queue.append(w)
    return None


def _succ(g: Graph, kinds: tuple[str, ...]) -> Callable[[int], Iterable[int]]:
    """Successors over the given edge kinds, merged once into lists (the searches call it often)."""
    merged: dict[int, list[int]] = {}
    for kind in kinds:
        for v, targets in g.succ[kind].items():
            merged.setdefault(v, []).extend(targets)
    empty: list[int] = []
    return lambda v: merged.get(v, empty)


def _cycle_anomaly(g: Graph, name: str, cycle: list[int], first: str = "ww") -> Anomaly:
    """``cycle`` is [T1, T2, ..., T1]; ``first`` the kind of its first edge (the wr or rw edge the
    search closed the cycle from), the others drawn as ww, else wr, else rw."""
    steps = []
    kinds_used = []
    for n, (a, b) in enumerate(itertools.pairwise(cycle)):
        reasons = g.edges[(a, b)]
        kind = first if n == 0 and first in reasons else next(k for k in ("ww", "wr", "rw") if k in reasons)
        kinds_used.append(kind)
        steps.append(f"{g.nodes[a].label()} -{kind}-> {g.nodes[b].label()}: {reasons[kind]}")
    what = {
        "G0": "a write cycle: each transaction's write precedes the next one's in some partition",
        "G1c": "a cycle of write and read dependencies: each wrote before, or was read by, the next",
        "G-single": "a cycle with one anti-dependency: one missed a write by another that depends on it",
        "G2": "a cycle with several anti-dependencies",
    }[name]
    description = f"{name}, {what}, over {len(cycle) - 1} transactions: " + "; then ".join(steps)
    ops = sorted(set(cycle))
    return Anomaly(name, description, ops, {"cycle": cycle, "edges": kinds_used, "dot": dot(g, name, cycle)})


def cycles(g: Graph) -> dict[str, list[Anomaly]]:
    """One cycle per strongly connected component and class. The full graph's components are
    found first; the ww and ww+wr searches run only inside them (a valid history has none)."""
    out: dict[str, list[Anomaly]] = {"G0": [], "G1c": [], "G-single": [], "G2": []}
    ww = _succ(g, ("ww",))
    wwr = _succ(g, ("ww", "wr"))
    full = _succ(g, ("ww", "wr", "rw"))
    components = sccs(sorted(g.nodes), full)
    cyclic = sorted(v for component in components for v in component)
    for component in sccs(cyclic, ww):
        inside = set(component)
        start = min(component)
        nxt = next(w for w in sorted(g.succ["ww"].get(start, ())) if w in inside)
        back = _path(nxt, start, ww, inside)
        if back is not None and len(out["G0"]) < MAX_CYCLES:
            out["G0"].append(_cycle_anomaly(g, "G0", [start, *back]))
    for component in sccs(cyclic, wwr):
        inside = set(component)
        edge = _edge_inside(g, "wr", component, inside)
        if edge is None:
            continue  # a write cycle only: G0 above
        back = _path(edge[1], edge[0], wwr, inside)
        if back is not None and len(out["G1c"]) < MAX_CYCLES:
            out["G1c"].append(_cycle_anomaly(g, "G1c", [edge[0], *back], "wr"))
    for component in components:
        inside = set(component)
        rw_edges = _edges_inside(g, "rw", component, inside)
        if not rw_edges:
            continue
        for a, b in rw_edges[:RW_TRIES]:  # G-single: one rw edge closed by ww and wr edges
            back = _path(b, a, wwr, inside)
            if back is not None:
                if len(out["G-single"]) < MAX_CYCLES:
                    out["G-single"].append(_cycle_anomaly(g, "G-single", [a, *back], "rw"))
                break
        else:
            a, b = rw_edges[0]
            back = _path(b, a, full, inside)
            if back is not None and len(out["G2"]) < MAX_CYCLES:
                out["G2"].append(_cycle_anomaly(g, "G2", [a, *back], "rw"))
    return out


def _edges_inside(g: Graph, kind: str, component: list[int], inside: set[int]) -> list[tuple[int, int]]:
    return [(a, b) for a in sorted(component) for b in sorted(g.succ[kind].get(a, ())) if b in inside]


def _edge_inside(g: Graph, kind: str, component: list[int], inside: set[int]) -> tuple[int, int] | None:
    for a in sorted(component):
        for b in sorted(g.succ[kind].get(a, ())):
            if b in inside:
                return a, b
    return None


# --- the non-cycle anomalies ---------------------------------------------------------------------


def aborted_reads(g: Graph) -> list[Anomaly]:
    out = []
    for node in g.nodes.values():
        for key, offset, value in node.reads:
            w = g.aborted_writer.get(value)
            if w is None or value in g.writer:
                continue
            writer = g.nodes[w]
            out.append(
                Anomaly(
                    "G1a",
                    f"G1a (aborted read): {node.label()} read {value!r} at {_k(key)}@{offset}, "
                    f"written by {writer.label()}, which aborted",
                    sorted({w, node.id}),
                    {
                        "value": value,
                        "dot": dot(g, "G1a", [w, node.id], {(w, node.id): "aborted write read"}),
                    },
                )
            )
    return out


def intermediate_reads(g: Graph) -> list[Anomaly]:
    """G1b: a reader read across a committed writer's write to k that it did not read, having read
    another of that writer's writes to k."""
    written: dict[int, dict[Key, list[int]]] = {}

    def writes_of(w: int) -> dict[Key, list[int]]:
        """Indices of a committed transaction's writes per key (found when a gap asks for them)."""
        if w not in written:
            mine: dict[Key, list[int]] = defaultdict(list)
            node = g.nodes[w]
            for key, offset, value in node.sends if node.status == "ok" else ():
                i = g.send_index(key, offset, value)
                if i is not None:
                    mine[key].append(i)
            written[w] = mine
        return written[w]

    out = []
    for node in g.nodes.values():
        by_key: dict[Key, set[int]] = defaultdict(set)
        for key, offset, _value in node.reads:
            by_key[key].add(g.index_of[key][offset])
        for key, seen in by_key.items():
            low, high = min(seen), max(seen)
            if high - low + 1 == len(seen):
                continue  # read without a gap: nothing read across
            writers = {g.writer.get(g.values[key][i]) for i in seen} - {None, node.id}
            for w in sorted(x for x in writers if x is not None):
                missed = [i for i in writes_of(w).get(key, []) if low < i < high and i not in seen]
                if not missed:
                    continue
                got = sorted(i for i in seen if g.writer.get(g.values[key][i]) == w)
                out.append(
                    Anomaly(
                        "G1b",
                        f"G1b (intermediate read): {node.label()} read {g.nodes[w].label()}'s "
                        f"{', '.join(repr(g.values[key][i]) for i in got[:3])} on {_k(key)} and read across "
                        f"its {', '.join(f'{g.values[key][i]!r}@{g.offsets[key][i]}' for i in missed[:3])} "
                        f"without reading it: a committed transaction seen in part",
                        sorted({w, node.id}),
                        {"key": _k(key), "dot": dot(g, "G1b", [w, node.id], {(w, node.id): "read in part"})},
                    )
                )
    return out


def internal(g: Graph) -> dict[str, list[Anomaly]]:
    out: dict[str, list[Anomaly]] = {
        "int_poll_skip": [],
        "int_nonmonotonic_poll": [],
        "int_send_skip": [],
        "int_nonmonotonic_send": [],
        "precommitted_read": [],
    }
    for node in g.nodes.values():
        reads = [(key, g.index_of[key][offset], value) for key, offset, value in node.reads]
        _internal_order(g, node, reads, "poll", "read", out)
        if node.status != "fail":
            sends = [(key, g.send_index(key, at, value), value) for key, at, value in node.sends]
            _internal_order(g, node, sends, "send", "sent", out)
        own = {v for _k2, _o, v in node.sends}
        for key, offset, value in node.reads:
            if value in own:
                out["precommitted_read"].append(
                    Anomaly(
                        "precommitted_read",
                        f"precommitted read: {node.label()} read {value!r} at {_k(key)}@{offset}, which it "
                        "wrote itself before committing (read_committed never shows uncommitted records)",
                        [node.id],
                        {
                            "value": value,
                            "dot": dot(
                                g, "precommitted_read", [node.id], {(node.id, node.id): "reads own write"}
                            ),
                        },
                    )
                )
    return out


def _internal_order(
    g: Graph,
    node: Node,
    items: Sequence[tuple[Key, int | None, Any]],
    kind: str,
    verb: str,
    out: dict[str, list[Anomaly]],
) -> None:
    """Successive reads (or sends) of one key within one transaction must be adjacent in the
    version order, and go forwards: ``int_<kind>_skip``, ``int_nonmonotonic_<kind>``."""
    last: dict[Key, tuple[int, Any]] = {}
    for key, i, value in items:
        if i is None:
            continue
        if key in last:
            j, before = last[key]
            if i <= j:
                name = f"int_nonmonotonic_{kind}"
                out[name].append(_internal(g, node, name, key, (j, before), (i, value), verb))
            elif i > j + 1:
                name = f"int_{kind}_skip"
                out[name].append(_internal(g, node, name, key, (j, before), (i, value), verb, i - j - 1))
        last[key] = (i, value)


def _internal(
    g: Graph,
    node: Node,
    name: str,
    key: Key,
    first_at: tuple[int, Any],
    second_at: tuple[int, Any],
    verb: str,
    gap: int = 0,
) -> Anomaly:
    """``first_at``, ``second_at``: (index in the key's version order, value), in the order the
    transaction read or sent them; the offsets shown are those the indices stand for (for a send,
    the one its delivery report gave)."""
    (i1, first), (i2, second) = first_at, second_at
    o1, o2 = g.offsets[key][i1], g.offsets[key][i2]
    shape = f"skipping {gap} value(s) between them" if gap else "out of the log's order"
    return Anomaly(
        name,
        f"{name}: {node.label()} {verb} {first!r}@{o1} then {verb} {second!r}@{o2} on {_k(key)}, {shape}",
        [node.id],
        {"key": _k(key), "values": [first, second], "dot": dot(g, name, [node.id], {})},
    )


def check_graph(history: History) -> tuple[dict[str, list[Anomaly]], dict[str, int]]:
    """Every graph anomaly class, and the graph's size (stats)."""
    g = build(history)
    found: dict[str, list[Anomaly]] = {name: [] for name in NAMES}
    found.update(cycles(g))
    found["G1a"] = aborted_reads(g)
    found["G1b"] = intermediate_reads(g)
    found.update(internal(g))
    stats = {
        "graph_transactions": len(g.nodes),
        "graph_edges": len(g.edges),
        "graph_keys": len(g.values),
    }
    return found, stats


# --- drawing -------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, line breaks as DOT's ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot(g: Graph, name: str, vertices: list[int], extra: dict[tuple[int, int], str] | None = None) -> str:
    """A small Graphviz DOT drawing of an anomaly: its transactions and the edges between them."""
    unique = list(dict.fromkeys(vertices))
    lines = [f"digraph {_quote(name)} {{", "  rankdir=LR; node [shape=box, fontsize=10];"]
    for v in unique:
        node = g.nodes[v]
        lines.append(f"  T{v} [label={_quote(node.label() + chr(10) + node.summary())}];")
    pairs = set(itertools.pairwise(vertices)) if len(vertices) > 1 else set()
    for a, b in sorted(pairs):
        for kind, why in g.edges.get((a, b), {}).items():
            lines.append(f"  T{a} -> T{b} [label={_quote(kind)}, tooltip={_quote(why)}];")
    for (a, b), label in (extra or {}).items():
        lines.append(f"  T{a} -> T{b} [label={_quote(label)}, style=dashed, color=red];")
    lines.append("}")
    return "\n".join(lines)

"""``kafka-harness COMMAND ...``: a dispatcher that imports only the command it runs.

Each part of the project owns its commands: a command is a module with
``main(argv: list[str]) -> int`` that parses its own arguments (``prog`` set to
``kafka-harness COMMAND``). Importing PySpark or the broker to print ``--help``
would cost seconds, so the table below names modules and they load on use.

Two commands are the reference broker's own entry points (``broker`` runs
the broker process; ``mutants`` drives the core's partition state machines
in-process). They are the declared exception to "the harness never imports
the broker's core or shell": :func:`command_module` imports them by name, only
when they run, and the import-linter contracts in ``pyproject.toml`` list
exactly these two imports as allowed.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

COMMANDS: dict[str, tuple[str, str]] = {
    # command: (module with main(argv), one-line help)
    "run": ("kafka_harness.main_job", "the main job: every level of checks against a target, one report"),
    "broker": ("reference_impl.server.cli", "run one reference broker process"),
    "cluster": ("kafka_harness.cluster_cli", "start, stop, kill a reference cluster; add, remove a broker"),
    "conformance": ("kafka_harness.conformance_cli", "run the conformance and client suites on a target"),
    "matrix": ("kafka_harness.matrix_cli", "conformance and client matrix of several targets: one HTML page"),
    "diff": ("kafka_harness.diff_cli", "run the same protocol exchanges against two targets and diff them"),
    "report": ("reports.cli", "build the HTML report from reports/output/allure-results"),
    "toxiproxy": ("chaos.toxiproxy.cli", "run the project's Toxiproxy-compatible server"),
    "chaos": ("chaos.cli", "run a chaos campaign: workload + nemesis against a target"),
    "check": ("chaos.check_cli", "run the checkers on a recorded history"),
    "check-bench": ("chaos.check_bench", "the Spark checkers on a synthetic history of N ops: time, memory"),
    "fuzz": ("chaos.fuzz.cli", "structure-aware protocol fuzzing of a target: crashes, hangs, durability"),
    "load": ("spark_load.cli", "generate load with PySpark and verify what came back"),
    "spark": ("spark_load.standalone_cli", "start, stop, show a Spark standalone cluster on this machine"),
    "bench": ("kafka_harness.bench", "produce/fetch throughput and latency, reference vs Tansu"),
    "defects": (
        "kafka_harness.defects_cli",
        "switch each seeded defect on in a reference broker and show which check catches it",
    ),
    "mutants": (
        "reference_impl.acceptance.property.mutants_cli",
        "run the property suite once per seeded bug mode",
    ),
    "dump-log": ("reference_impl.tools.dump_log", "print and verify the batches of a log segment"),
    "find-record": ("reference_impl.tools.find_record", "search a reference broker's files for a value"),
    "api-table": ("reference_impl.tools.api_table", "ApiVersions: the reference vs Kafka, the gap ledger"),
    "certs": ("kafka_harness.certs_cli", "write a CA and broker and client certificates as PEM"),
    "topics": ("kafka_harness.admin.topics", "list, describe, create, delete, alter topics"),
    "groups": ("kafka_harness.admin.groups", "list, describe, reset offsets of, delete consumer groups"),
    "offsets": ("kafka_harness.admin.offsets", "earliest, latest and by-time offsets per partition"),
    "acls": ("kafka_harness.admin.acls", "list, add, remove ACLs (CreateAcls, DescribeAcls, DeleteAcls)"),
    "users": ("kafka_harness.admin.users", "list, add, delete SCRAM users (AlterUserScramCredentials)"),
    "telemetry": ("kafka_harness.admin.telemetry", "client telemetry (KIP-714): what clients pushed"),
}


EXTRAS = {"pyspark": "spark", "pyarrow": "spark", "pandas": "spark"}
"""Top-level module → the ``kafka-harness[EXTRA]`` that installs it (``[project.optional-dependencies]``)."""


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra to install when ``exc`` is one of its modules missing, else None."""
    return EXTRAS.get((exc.name or "").split(".")[0])


def _could_not_run(name: str, exc: ModuleNotFoundError, extra: str) -> int:
    """A command that needs a missing extra: one line saying what to install, a verdict, exit 2."""
    print(f"could not run: install kafka-harness[{extra}] (kafka-harness {name} needs {exc.name!r}: "
          f"pip install 'kafka-harness[{extra}]')", file=sys.stderr, flush=True)
    print("VERDICT: could not run missing_extra=1", flush=True)
    return 2


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: kafka-harness COMMAND [ARGS...]", "", "commands:"]
    for name, (_module, help_text) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {help_text}")
    lines.append("")
    lines.append("'kafka-harness COMMAND --help' describes a command.")
    return "\n".join(lines)


def command_module(name: str) -> ModuleType:
    """The module that runs command ``name``, imported now."""
    if name == "broker":  # declared exception: this process becomes a reference broker
        from reference_impl.server import cli as broker_cli

        return broker_cli
    if name == "mutants":  # declared exception: the property model runs the core's state machines here
        from reference_impl.acceptance.property import mutants_cli

        return mutants_cli
    return importlib.import_module(COMMANDS[name][0])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"kafka-harness: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name = COMMANDS[name][0]
    try:
        module = command_module(name)
    except ModuleNotFoundError as exc:
        extra = missing_extra(exc)
        if extra is not None:
            return _could_not_run(name, exc, extra)
        if exc.name and module_name.startswith(exc.name):
            print(f"kafka-harness: command {name!r} is not available in this build", file=sys.stderr)
            return 2
        raise
    try:
        result = module.main(rest)
    except ModuleNotFoundError as exc:  # an extra imported on use (PySpark when the load starts)
        extra = missing_extra(exc)
        if extra is None:
            raise
        return _could_not_run(name, exc, extra)
    return int(result or 0)

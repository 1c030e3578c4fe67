"""A Spark standalone cluster on this machine, started from the PySpark installation.

PySpark ships the whole of Spark (``pyspark/jars``, ``pyspark/bin/spark-class``), so a master and
workers need nothing else than a JDK: ``spark-class org.apache.spark.deploy.master.Master`` and
``spark-class org.apache.spark.deploy.worker.Worker`` (Spark's ``sbin/start-master.sh`` runs the
same classes; PySpark's wheel leaves ``sbin`` out). Every process binds to 127.0.0.1
(``SPARK_LOCAL_IP``, which the web UIs follow too) on ports found free; each worker offers a bounded
number of cores and memory; the start waits a bounded time for the master to elect itself and every
worker to register, and fails naming the process and the tail of its log otherwise. Logs go under
``reports/output/spark/<name>/``.

``kafka-harness spark up|down|status`` (:mod:`spark_load.standalone_cli`) keeps a state file there
so ``down`` stops exactly the processes ``up`` started (checked by pid and command line, never by
name). Tests use :func:`standalone_cluster` as a context manager.

Imports no PySpark (only finds where it is installed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fixtures.targets.processes import free_port, start_logged
from reports.paths import output

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
MAX_WORKERS = 8
MAX_CORES = 64
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0
MASTER_READY = "I have been elected leader"
WORKER_READY = "Successfully registered with master"
STATE_FILE = "standalone.json"
PROPERTIES = "spark.master.rest.enabled false\nspark.worker.cleanup.enabled true\n"
"""The master's REST submission server would listen on the fixed port 6066: off (jobs come from
drivers); a worker removes finished applications' folders."""


class StandaloneError(RuntimeError):
    """The cluster could not start or stop; the message says which process and why."""


@dataclass
class Proc:
    role: str
    pid: int
    log: str


@dataclass
class Cluster:
    name: str
    master_url: str
    directory: str
    workers: int
    cores: int
    memory: str
    processes: list[Proc] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @staticmethod
    def from_json(raw: dict[str, object]) -> Cluster:
        processes = raw.get("processes")
        if not isinstance(processes, list):
            raise ValueError("the state file lists no processes")
        return Cluster(
            str(raw["name"]),
            str(raw["master_url"]),
            str(raw["directory"]),
            int(str(raw["workers"])),
            int(str(raw["cores"])),
            str(raw["memory"]),
            [Proc(str(p["role"]), int(p["pid"]), str(p["log"])) for p in processes],
        )


def spark_home() -> Path:
    """The PySpark installation, which is a full Spark (jars and ``bin/spark-class``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StandaloneError("PySpark is not installed (pip install 'kafka-harness[spark]')")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").exists():
        raise StandaloneError(f"{home} has no bin/spark-class: not a full PySpark installation")
    return home


def _environment(home: Path, directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP=HOST,
        SPARK_LOG_DIR=str(directory),
        SPARK_WORKER_DIR=str(directory / "work"),
        SPARK_NO_DAEMONIZE="1",
        PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable),
    )
    return env


def _spawn(home: Path, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Its own session (process group), so it is stopped by its id with what it started. A fresh log:
    readiness is read from it, and a previous run's lines must not count."""
    log.unlink(missing_ok=True)
    return start_logged([str(home / "bin" / "spark-class"), *args], log, env=env)


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _wait_for(process: subprocess.Popen[bytes], log: Path, marker: str, role: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StandaloneError(
                f"the Spark {role} exited with status {process.returncode} before it was ready; "
                f"log {log}:\n{_tail(log)}"
            )
        try:
            if marker in log.read_text(encoding="utf-8", errors="replace"):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise StandaloneError(
        f"the Spark {role} did not log {marker!r} within the start bound; log {log}:\n{_tail(log)}"
    )


def start(
    name: str = "standalone",
    *,
    workers: int = 1,
    cores: int = 2,
    memory: str = "1g",
    timeout_s: float = START_TIMEOUT_S,
    directory: Path | None = None,
) -> Cluster:
    """Start a master and ``workers`` workers; returns once every worker has registered."""
    if not 1 <= workers <= MAX_WORKERS:
        raise StandaloneError(f"workers must be 1..{MAX_WORKERS}, not {workers}")
    if not 1 <= cores <= MAX_CORES:
        raise StandaloneError(f"cores per worker must be 1..{MAX_CORES}, not {cores}")
    if not memory[:-1].isdigit() or memory[-1].lower() not in "mg":
        raise StandaloneError(f"memory is a size such as 512m or 2g, not {memory!r}")
    home = spark_home()
    where = directory or output("spark") / name
    where.mkdir(parents=True, exist_ok=True)
    env = _environment(home, where)
    properties = where / "spark-defaults.conf"
    properties.write_text(PROPERTIES, encoding="utf-8")
    port = free_port()
    cluster = Cluster(name, f"spark://{HOST}:{port}", str(where), workers, cores, memory)
    deadline = time.monotonic() + timeout_s
    started: list[subprocess.Popen[bytes]] = []
    try:
        log = where / "master.log"
        master = _spawn(
            home,
            [
                MASTER_CLASS,
                "--properties-file",
                str(properties),
                "--host",
                HOST,
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            log,
            env,
        )
        started.append(master)
        cluster.processes.append(Proc("master", master.pid, str(log)))
        _wait_for(master, log, MASTER_READY, "master", deadline)
        pending = []
        for n in range(workers):
            log = where / f"worker-{n}.log"
            args = [
                WORKER_CLASS,
                "--properties-file",
                str(properties),
                "--host",
                HOST,
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
            ]
            args += ["--cores", str(cores), "--memory", memory, "--work-dir", str(where / f"work-{n}")]
            worker = _spawn(home, [*args, cluster.master_url], log, env)
            started.append(worker)
            cluster.processes.append(Proc(f"worker-{n}", worker.pid, str(log)))
            pending.append((worker, log, f"worker {n}"))
        for worker, log, role in pending:
            _wait_for(worker, log, WORKER_READY, role, deadline)
    except BaseException:
        for process in reversed(started):
            _stop_group(process.pid)
        raise
    return cluster


def _alive_as(pid: int, klass: str) -> bool:
    """Whether ``pid`` is still the Spark process we started (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return klass.encode() in cmdline


def _stop_group(pid: int) -> None:
    """SIGTERM the process group ``pid`` leads, then SIGKILL it after a bound."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            break
        _reap(pid)
        time.sleep(0.1)
    else:
        with suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(cluster: Cluster) -> list[str]:
    """Stop the workers, then the master; returns the roles that were still running."""
    stopped = []
    for proc in reversed(cluster.processes):
        klass = MASTER_CLASS if proc.role == "master" else WORKER_CLASS
        if _alive_as(proc.pid, klass):
            _stop_group(proc.pid)
            stopped.append(proc.role)
    return stopped


def status(cluster: Cluster) -> dict[str, bool]:
    return {
        proc.role: _alive_as(proc.pid, MASTER_CLASS if proc.role == "master" else WORKER_CLASS)
        for proc in cluster.processes
    }


def state_path(name: str = "standalone") -> Path:
    return output("spark") / name / STATE_FILE


def save(cluster: Cluster, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cluster.to_json(), indent=1), encoding="utf-8")


def load(path: Path) -> Cluster:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        return Cluster.from_json(raw)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StandaloneError(f"no usable cluster state at {path}: {exc}") from exc


@contextmanager
def standalone_cluster(
    name: str = "standalone", *, workers: int = 1, cores: int = 2, memory: str = "1g"
) -> Iterator[Cluster]:
    """A running cluster for the ``with`` block; every process it started is stopped after."""
    cluster = start(name, workers=workers, cores=cores, memory=memory)
    try:
        yield cluster
    finally:
        stop(cluster)

"""The one module that talks to Allure: labels, steps and attachments.

Everything else in the project calls these functions, so the report's
vocabulary (epics Conformance, Clients, Property, Chaos, Load; feature = API or
area; story = the rule checked) stays in one place, and code that runs outside
pytest (the CLI) works whether or not allure-pytest is active.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import allure

EPICS = ("Conformance", "Clients", "Property", "Chaos", "Load", "Broker", "Benchmarks")


def label(*, epic: str | None = None, feature: str | None = None, story: str | None = None,
          severity: str | None = None) -> None:
    """Label the running test (no-op outside an Allure-enabled pytest run)."""
    if epic:
        allure.dynamic.epic(epic)
    if feature:
        allure.dynamic.feature(feature)
    if story:
        allure.dynamic.story(story)
    if severity:
        allure.dynamic.severity(severity)


def custom_label(name: str, value: str) -> None:
    """A label of the project's own (``api``, ``api_version``): shown in the result, read by the matrix."""
    allure.dynamic.label(name, value)


def parameter(name: str, value: object) -> None:
    allure.dynamic.parameter(name, value)


@contextmanager
def step(title: str) -> Iterator[None]:
    with allure.step(title):
        yield


def attach_json(name: str, value: Any) -> None:
    allure.attach(json.dumps(value, indent=2, default=str, sort_keys=True), name=name,
                  attachment_type=allure.attachment_type.JSON)


def attach_text(name: str, text: str) -> None:
    allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)


def attach_file(name: str, path: str | Path) -> None:
    """Attach a file; PNG, JSON, HTML and JSONL get their proper types."""
    suffix = Path(path).suffix.lower()
    kinds = {
        ".png": allure.attachment_type.PNG,
        ".json": allure.attachment_type.JSON,
        ".html": allure.attachment_type.HTML,
        ".jsonl": allure.attachment_type.TEXT,
        ".txt": allure.attachment_type.TEXT,
        ".csv": allure.attachment_type.CSV,
    }
    allure.attach.file(str(path), name=name, attachment_type=kinds.get(suffix, allure.attachment_type.TEXT))


def write_result(
    results_dir: str | Path,
    *,
    name: str,
    full_name: str,
    epic: str,
    feature: str,
    story: str,
    passed: bool,
    message: str = "",
    parameters: dict[str, object] | None = None,
    attachments: Sequence[tuple[str, str | Path]] = (),
    start_ms: int | None = None,
    stop_ms: int | None = None,
    steps: Sequence[tuple[str, bool]] = (),
    status: str | None = None,
) -> None:
    """Write one test result for a check that ran outside pytest (a CLI run), with its files attached.

    The result lands in ``results_dir`` beside pytest's, so one Allure report shows both.
    ``steps`` are (title, passed) pairs shown as the result's steps (a chaos run's anomalies).
    ``status`` (``broken``, ``skipped``...) overrides what ``passed`` says.
    """
    import time
    import uuid

    from allure_commons.logger import AllureFileLogger
    from allure_commons.model2 import (
        Attachment,
        Label,
        Parameter,
        Status,
        StatusDetails,
        TestResult,
        TestStepResult,
    )

    logger = AllureFileLogger(str(results_dir))
    mime = {".png": "image/png", ".json": "application/json", ".txt": "text/plain", ".html": "text/html"}
    files: list[Attachment] = []
    for title, path in attachments:
        suffix = Path(path).suffix.lower()
        source = f"{uuid.uuid4()}-attachment{suffix}"
        logger.report_attached_file(str(path), source)
        files.append(Attachment(name=title, source=source, type=mime.get(suffix, "text/plain")))
    now_ms = int(time.time() * 1000)
    result = TestResult(
        uuid=str(uuid.uuid4()),
        name=name,
        fullName=full_name,
        historyId=full_name,
        status=status or (Status.PASSED if passed else Status.FAILED),
        statusDetails=StatusDetails(message=message) if message else None,
        start=start_ms or now_ms,
        stop=stop_ms or now_ms,
        labels=[Label(name="epic", value=epic), Label(name="feature", value=feature),
                Label(name="story", value=story)],
        parameters=[Parameter(name=k, value=str(v)) for k, v in (parameters or {}).items()],
        attachments=files,
        steps=[TestStepResult(name=title, status=Status.PASSED if ok else Status.FAILED,
                              start=start_ms or now_ms, stop=stop_ms or now_ms) for title, ok in steps],
    )
    logger.report_result(result)


def tag(*tags: str) -> None:
    allure.dynamic.tag(*tags)


def description(text: str) -> None:
    allure.dynamic.description(text)


def feature_from_module(stem: str) -> str:
    """``test_k01_fetch`` → ``Fetch``; ``test_admin_topics`` → ``Admin topics`` (the feature label)."""
    words = stem.removeprefix("test_").split("_")
    if words and words[0][:1] == "k" and words[0][1:].isdigit():
        words = words[1:]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def exchange_step(exchange: Any) -> None:
    """One protocol exchange as a step: request and response (or the failure) attached as JSON."""
    title = f"{exchange.api} v{exchange.version}"
    if exchange.error:
        title += f" failed: {exchange.error}"
    with allure.step(title):
        attach_json("request", exchange.request)
        if exchange.response is not None:
            attach_json("response", exchange.response)


CATEGORIES = [
    {"name": "Target unavailable", "matchedStatuses": ["skipped", "broken"],
     "messageRegex": r"(?s).*target unavailable.*"},
    {"name": "Not advertised by the target", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?s).*not advertised.*"},
    {"name": "Could not run (a missing extra or tool)", "matchedStatuses": ["skipped", "broken"],
     "messageRegex": r"(?s)^could not run.*"},
    {"name": "Known Kafka deviation (expected)", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?s).*XFAIL.*"},
    {"name": "Timeout", "matchedStatuses": ["broken", "failed"],
     "messageRegex": r"(?s).*(Timeout|timed out|no answer within).*"},
    {"name": "Kafka deviation", "matchedStatuses": ["failed"]},
    {"name": "Harness error", "matchedStatuses": ["broken"]},
]
"""Allure's categories, first match wins: a deviation is an assertion failing (``failed``);
an exception elsewhere (``broken``) is the harness's own error."""


def write_categories(results_dir: str | Path) -> None:
    path = Path(results_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))


def property_key(name: str) -> str:
    """A key ``environment.properties`` keeps whole: Java's properties format ends a key at the first
    space, ``=`` or ``:``, so ``Totals.(no epic)`` would show as key ``Totals.(no`` = ``epic)=...``."""
    return re.sub(r"[\s=:#!\\]+", "_", name.strip()) or "_"


def write_environment(results_dir: str | Path, properties: dict[str, str]) -> None:
    """Merge ``properties`` into ``environment.properties`` (runs against several targets share a
    results folder, so keys are kept from earlier runs unless this run sets them). Keys are made
    well-formed (:func:`property_key`); values are one line."""
    path = Path(results_dir) / "environment.properties"
    path.parent.mkdir(parents=True, exist_ok=True)
    merged: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                merged[property_key(key)] = value.strip()
    if "targets" in merged and "targets" in properties:
        names = sorted(set(merged["targets"].split(", ")) | set(properties["targets"].split(", ")))
        properties = {**properties, "targets": ", ".join(names)}
    merged.update({property_key(k): " ".join(str(v).split()) for k, v in properties.items()})
    path.write_text("".join(f"{k}={v}\n" for k, v in sorted(merged.items())))

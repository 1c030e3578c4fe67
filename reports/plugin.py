"""The report's pytest plugin: Allure labels for the suites' tests, and what a run ran against.

Registered on its own (``-p reports.plugin`` in the project's pytest
configuration), beside the harness plugin (``fixtures.plugin``), which it does
not import: what it needs to know about the target and the clients it asks
through the hooks in :mod:`reports.hookspecs`.

* Each test of ``suites/conformance``, ``suites/clients`` and the property suite is labelled: epic
  by folder, feature by module (``FEATURE`` or the module's name), story a
  short title (:func:`story_of`: the docstring's first sentence when it is
  short, else the test's name in words; never a line cut mid-sentence),
  the API a ``versions``/``requires`` marker names and the ``version`` it ran
  at as labels ``api`` and ``api_version`` (the matrix reads them), severity
  from ``@pytest.mark.severity``, the
  target as a parameter, and an ``expected deviation`` tag with the reason and
  evidence when the target's expectations list it (the ``expected_deviation``
  marker the harness plugin puts on such a test).
* With ``--alluredir``: ``categories.json`` and ``environment.properties`` at
  the end of the session (the Allure report shows both on its overview page).
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import allure, hookspecs

EPIC_BY_FOLDER = {"conformance": "Conformance", "clients": "Clients", "property": "Property"}
"""Folders whose tests the plugin labels (the property suite is the main job's Property stage)."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "severity(level): Allure severity (blocker, critical, normal, minor)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Label the test once its fixtures are set up, and also when its setup skips or fails (one whose
    API the target does not advertise is still under its epic and feature, not "No epic")."""
    try:
        result = yield
    finally:
        _label(item)
    return result


def _label(item: pytest.Item) -> None:
    folder = next((p for p in Path(str(item.path)).parts if p in EPIC_BY_FOLDER), None)
    if folder is None:
        return
    module = getattr(item, "module", None)
    feature = getattr(module, "FEATURE", None) or allure.feature_from_module(item.path.stem)
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip()
    severity = item.get_closest_marker("severity")
    allure.label(
        epic=EPIC_BY_FOLDER[folder],
        feature=feature,
        story=story_of(getattr(item, "originalname", None) or item.name, doc),
        severity=severity.args[0] if severity else "normal",
    )
    api_marker = item.get_closest_marker("versions") or item.get_closest_marker("requires")
    if api_marker is not None and api_marker.args:
        allure.custom_label("api", str(api_marker.args[0]))
    callspec = getattr(item, "callspec", None)
    version = callspec.params.get("version") if callspec is not None else None
    if isinstance(version, int):
        allure.custom_label("api_version", str(version))
    if doc:
        allure.description(doc)
    target = item.config.hook.pytest_report_target(config=item.config)
    if target is not None:
        allure.parameter("target", target)
    deviation = item.get_closest_marker("expected_deviation")
    if deviation is not None:
        allure.tag("expected deviation")
        allure.description(
            f"{doc}\n\nExpected deviation on this target: {deviation.kwargs['reason']}\n"
            f"Evidence: {deviation.kwargs['evidence']}"
        )


STORY_MAX = 120
"""A story longer than this is not a title; the test's name says it instead."""


def story_of(name: str, doc: str) -> str:
    """The story label: a whole sentence, short. The docstring's first sentence (its lines joined)
    when it ends within :data:`STORY_MAX` characters, else the test's name in words
    (``test_partitions_all_come_back`` → ``Partitions all come back``)."""
    text = " ".join(doc.split())
    ends = (i + 1 for i, ch in enumerate(text) if ch in ".!?" and (i + 1 == len(text) or text[i + 1] == " "))
    end = next(ends, None)
    if text and end is not None and end <= STORY_MAX:
        return text[:end].rstrip(".")
    if text and end is None and len(text) <= STORY_MAX:
        return text
    words = name.split("[", 1)[0].removeprefix("test_").replace("_", " ").strip()
    return (words[:1].upper() + words[1:]) or name


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With --alluredir: categories.json, and environment.properties from every plugin that knows."""
    results_dir = getattr(session.config.option, "allure_report_dir", None)
    if not results_dir:
        return
    allure.write_categories(results_dir)
    props: dict[str, Any] = {"python": platform.python_version()}
    for answer in session.config.hook.pytest_report_environment(config=session.config):
        props.update(answer)
    allure.write_environment(results_dir, props)

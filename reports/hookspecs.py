"""What the reports plugin asks the rest of the harness (pytest hooks it declares).

The report needs to know what a run ran against, but ``reports`` imports
nothing of the harness: the plugins that know (the target side and the client
side of ``fixtures``) answer these hooks.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_report_environment(config: pytest.Config) -> dict[str, str]:
    """Pairs for the report's ``environment.properties`` (shown on its overview): the target,
    its version, the clients' versions. Every answer is merged."""
    raise NotImplementedError


@pytest.hookspec(firstresult=True)
def pytest_report_target(config: pytest.Config) -> str | None:
    """The name of the target this run checks (a parameter of every suite test in the report)."""
    raise NotImplementedError

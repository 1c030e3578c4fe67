"""reports/findings/<target>.md agrees with suites/expectations/<target>.toml (issue 5, findings)."""

from __future__ import annotations

import pytest

from reports import findings


@pytest.mark.parametrize("target", ["tansu", "noida"])
def test_findings_page_matches_the_expectations(target: str) -> None:
    """The committed findings page is exactly what the expectations file renders to."""
    assert findings.path_of(target).read_text() == findings.render(target), (
        f"{findings.path_of(target)} is stale: run python -m reports.findings {target}"
    )


@pytest.mark.parametrize("target", ["tansu", "noida"])
def test_every_entry_has_a_reproducing_command(target: str) -> None:
    """Each expectation's evidence starts with the one-line command that runs its own test on the
    target, and the page shows that command under the deviation."""
    page = findings.render(target)
    for test_id, entry in findings.load(target).items():
        command = entry["evidence"].partition(": ")[0]
        if test_id.startswith("stage::"):  # a main-job stage: the job run with that stage alone
            runs_it = command.startswith("kafka-harness run") and f"--only {test_id[7:]}" in command
        elif test_id.startswith("security::"):  # no secured launch: the target's binary, tried so
            assert command.startswith(("tansu ", "noida-db ")), (test_id, command)
            assert f"reproduce: `{command}`" in page, test_id
            continue
        else:
            runs_it = command.startswith("pytest '" + test_id.split("[", 1)[0])
        assert runs_it, (test_id, command)
        assert f"--target {target}" in command, (test_id, command)
        assert f"reproduce: `{command}`" in page, test_id

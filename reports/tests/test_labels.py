"""Labels the report shows: story titles are whole sentences, environment keys survive Java's properties
format (the widget showed ``Totals.(no`` = ``epic)=1`` for a key with a space)."""

from __future__ import annotations

from pathlib import Path

from reports.allure import property_key, write_environment
from reports.plugin import STORY_MAX, story_of


def test_story_is_the_first_sentence_whole_or_the_tests_name() -> None:
    wrapped = """Protocol guide (Record Batch): what a client produces with a codec comes back
    byte for byte. Then more detail that is not the title."""
    assert story_of("test_round_trip", wrapped) == (
        "Protocol guide (Record Batch): what a client produces with a codec comes back byte for byte"
    )
    long_first = "A rule " + "that goes on " * 20 + "and on. Second sentence."
    assert story_of("test_partitions_all_come_back[v13]", long_first) == "Partitions all come back"
    assert story_of("test_x_y", "") == "X y"
    assert story_of("test_a", "No full stop at all") == "No full stop at all"
    assert story_of("test_v1", "Version 2.5 of the rule holds.") == "Version 2.5 of the rule holds"
    for doc in (wrapped, long_first):
        assert len(story_of("test_t", doc)) <= STORY_MAX


def test_environment_keys_are_well_formed(tmp_path: Path) -> None:
    assert property_key("Totals.(no epic)") == "Totals.(no_epic)"
    assert property_key("a=b:c d") == "a_b_c_d"
    write_environment(tmp_path, {"Totals.No epic": "1 tests: 1 passed", "client.kafka python": "2.0\n(x)"})
    write_environment(tmp_path, {"target": "t"})  # merged with what the file holds
    lines = (tmp_path / "environment.properties").read_text().splitlines()
    assert lines == ["Totals.No_epic=1 tests: 1 passed", "client.kafka_python=2.0 (x)", "target=t"]


SKIPPING_SUITE = '''
import pytest

@pytest.fixture
def needs_api():
    pytest.skip("not advertised: the target's ApiVersions does not list create_partitions (key 37)")

def test_grows(needs_api):
    """KIP-195: a topic grows."""
'''


def test_a_test_skipped_in_setup_keeps_its_epic_and_story(tmp_path: Path) -> None:
    """A setup skip (an API not advertised) still gets the epic, feature and story labels."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "conformance"
    folder.mkdir()
    (folder / "test_k37_partitions.py").write_text(SKIPPING_SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "reports.plugin",
            "-c",
            str(tmp_path / "pytest.ini"),
            "--rootdir",
            str(tmp_path),
            "--alluredir",
            str(tmp_path / "r"),
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    [result] = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("*-result.json")]
    labels = {lb["name"]: lb["value"] for lb in result["labels"]}
    assert result["status"] == "skipped"
    assert (labels.get("epic"), labels.get("feature"), labels.get("story")) == (
        "Conformance",
        "Partitions",
        "KIP-195: a topic grows",
    ), labels

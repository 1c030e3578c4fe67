"""The Java reader behind the config catalogue's generator (reference_impl/tools/java_source.py and
kafka_configs_gen.py), on small Java sources written here: it runs without a Kafka mirror."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference_impl.tools.java_source import Evaluator, Mirror, Unresolved, java_double, tokens
from reference_impl.tools.kafka_configs_gen import definitions, kafka_string

SOURCES = {
    "Units": """
        package org.example;
        public interface Units { int OVERHEAD = SIZE + 4; int SIZE = 8; }
    """,
    "DemoConfig": """
        package org.example;
        import java.util.concurrent.TimeUnit;
        import static org.example.Other.REMOTE;
        public class DemoConfig {
            public static final String PREFIX = "demo.";
            public static final String RETENTION_CONFIG = PREFIX + "retention.ms"; // a comment; with ;
            public static final long RETENTION_DEFAULT = 7 * 24 * 60 * 60 * 1000L;
            public static final int HOURS = (int) TimeUnit.MILLISECONDS.toHours(RETENTION_DEFAULT);
            public static final String TEXT = "a \\"quoted\\" ; value";
            public static final ConfigDef CONFIG_DEF = new ConfigDef()
                .define(RETENTION_CONFIG, LONG, RETENTION_DEFAULT, atLeast(-1), HIGH, "doc")
                .define(PREFIX + "hours", INT, HOURS, HIGH, "doc")
                .define("demo.list", LIST, List.of("a", "b"), ValidList.in("a", "b", "c"), LOW, "doc")
                .define("demo.ratio", DOUBLE, 0.5, between(0, 1), LOW, "doc")
                .define("demo.required", STRING, MEDIUM, "doc")
                .define("demo.overhead", INT, Units.OVERHEAD, new Custom(), LOW, "doc")
                .defineInternal(REMOTE, BOOLEAN, false, null, LOW, "doc");
        }
    """,
    "Other": """
        package org.example;
        public class Other { public static final String REMOTE = "demo.remote"; }
    """,
}


class SourceMirror(Mirror):
    def __init__(self) -> None:  # no git: the sources above
        self.root = Path(".")
        self.paths = {name: [f"src/main/java/org/example/{name}.java"] for name in SOURCES}
        self.classes = {}
        self.commit = "0" * 40

    def source(self, simple: str, fqn: str | None = None) -> str:
        if simple not in SOURCES:
            raise Unresolved(f"no source for class {simple}")
        return SOURCES[simple]


def test_constants_and_definitions_are_read_from_java() -> None:
    mirror = SourceMirror()
    ev = Evaluator(mirror, {})
    demo = mirror.java("DemoConfig")
    assert ev.constant(demo, "TEXT") == 'a "quoted" ; value'
    rows = {d.name: d for d in definitions(ev, demo, "CONFIG_DEF")}
    assert {n: (d.type, d.default, d.validator) for n, d in rows.items()} == {
        "demo.retention.ms": ("LONG", "604800000", ("at_least", -1)),
        "demo.hours": ("INT", "168", None),
        "demo.list": ("LIST", "a,b", ("list_in", ("a", "b", "c"))),
        "demo.ratio": ("DOUBLE", "0.5", ("between", 0, 1)),
        "demo.required": ("STRING", None, None),
        "demo.overhead": ("INT", "12", ("custom", "Custom")),
        "demo.remote": ("BOOLEAN", "false", None),
    }
    assert rows["demo.required"].required and rows["demo.remote"].internal


def test_what_cannot_be_evaluated_is_unresolved() -> None:
    mirror = SourceMirror()
    with pytest.raises(Unresolved):
        Evaluator(mirror, {}).eval(mirror.java("DemoConfig"), tokens("Missing.VALUE"))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (0.05, "0.05"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (1e-4, "1.0E-4"),
    ],
)
def test_doubles_print_as_javas_double_to_string(value: float, text: str) -> None:
    assert java_double(value) == text


def test_defaults_print_as_kafkas_convert_to_string() -> None:
    assert kafka_string("LIST", "a, b") == "a,b"
    assert kafka_string("BOOLEAN", True) == "true"
    assert kafka_string("PASSWORD", "secret") is None
    assert kafka_string("LONG", "  42 ") == "42"

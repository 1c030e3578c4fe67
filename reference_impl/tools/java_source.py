"""Reading Java source for facts: a tokenizer, the static final fields of a class, and an evaluator of
the constant expressions Kafka's config classes are written in (string and number literals, arithmetic,
``TimeUnit`` conversions, ``List.of`` and friends, ``X.class.getName()``, references to other constants).

Used by :mod:`.kafka_configs_gen` on a git mirror of apache/kafka; what it cannot evaluate raises
:class:`Unresolved`, and the generator supplies those values by hand (``KNOWN_VALUES``).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any


class Unresolved(Exception):
    """An expression the reader does not evaluate."""


# -- reading Java ------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'"""
    r"""|0[xX][0-9a-fA-F_]+[lL]?|\d[\d_]*\.?\d*(?:[eE][+-]?\d+)?[lLdDfF]?|\.\d+(?:[eE][+-]?\d+)?[dDfF]?"""
    r"""|[A-Za-z_$][\w$]*|::|->|&&|\|\||[<>=!]=|[-+*/%(){}\[\];,.?:<>=!&|^~@]""",
    re.DOTALL,
)


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if t.strip() and not t.startswith(("//", "/*"))]


def statement(toks: list[str], start: int) -> tuple[list[str], int]:
    """The tokens from ``start`` to the next ``;`` outside brackets, and the index after it."""
    depth, i = 0, start
    while i < len(toks):
        t = toks[i]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        elif t == ";" and depth == 0:
            return toks[start:i], i + 1
        i += 1
    return toks[start:], i


def split_args(toks: list[str]) -> list[list[str]]:
    """``toks`` (inside a call's parentheses) split at top-level commas."""
    out: list[list[str]] = [[]]
    depth = 0
    for t in toks:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == "," and depth == 0:
            out.append([])
        else:
            out[-1].append(t)
    return [a for a in out if a]


def closing(toks: list[str], open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(toks)):
        if toks[i] in "([{":
            depth += 1
        elif toks[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    raise Unresolved("unbalanced")


@dataclass
class JavaClass:
    name: str
    package: str
    toks: list[str]
    imports: dict[str, str]  # simple name -> fully qualified
    static_imports: dict[str, str]  # member -> class simple name
    fields: dict[str, list[str]]


class Mirror:
    def __init__(self, root: Path) -> None:
        self.root = root
        listing = self.git("ls-tree", "-r", "--name-only", "HEAD")
        self.paths: dict[str, list[str]] = {}
        for path in listing.splitlines():
            if path.endswith((".java", ".scala")) and "/src/main/" in path:
                self.paths.setdefault(Path(path).stem, []).append(path)
        self.classes: dict[str, JavaClass] = {}
        self.commit = self.git("rev-parse", "HEAD").strip()

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.root), *args], check=True, capture_output=True, text=True
        ).stdout

    def source(self, simple: str, fqn: str | None = None) -> str:
        candidates = self.paths.get(simple, [])
        if fqn is not None:
            wanted = fqn.replace(".", "/")
            candidates = [p for p in candidates if wanted in p] or candidates
        if not candidates:
            raise Unresolved(f"no source for class {simple}")
        return self.git("show", f"HEAD:{candidates[0]}")

    def java(self, simple: str, fqn: str | None = None) -> JavaClass:
        if simple in self.classes:
            return self.classes[simple]
        toks = tokens(self.source(simple, fqn))
        package = ""
        imports: dict[str, str] = {}
        statics: dict[str, str] = {}
        fields: dict[str, list[str]] = {}
        i, depth = 0, 0
        while i < len(toks):
            t = toks[i]
            if depth == 0 and t == "package":
                body, i = statement(toks, i + 1)
                package = "".join(body)
                continue
            if depth == 0 and t == "import":
                body, i = statement(toks, i + 1)
                if body and body[0] == "static":
                    dotted = "".join(body[1:])
                    owner, _, member = dotted.rpartition(".")
                    statics[member] = owner.rpartition(".")[2]
                else:
                    dotted = "".join(body)
                    imports[dotted.rpartition(".")[2]] = dotted
                continue
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
            elif (
                depth == 1
                and t == "="
                and re.fullmatch(r"[A-Za-z_$][\w$]*", toks[i - 1])
                and (re.fullmatch(r"[\w$]+", toks[i - 2]) or toks[i - 2] in (">", "]"))
            ):
                name = toks[i - 1]
                body, i = statement(toks, i + 1)
                fields.setdefault(name, body)
                continue
            i += 1
        cls = JavaClass(simple, package, toks, imports, statics, fields)
        self.classes[simple] = cls
        return cls


# -- evaluating Java constant expressions ------------------------------------------------------------


class Evaluator:
    def __init__(self, mirror: Mirror, known: dict[str, Any]) -> None:
        self.mirror = mirror
        self.known = known
        """Expressions the reader cannot work out (enum fields, JDK calls) → Kafka's value."""
        self.server_synonym: Callable[[str], str] | None = None
        """``ServerTopicConfigSynonyms.serverSynonym``, which the generator reads from its map."""
        self.cache: dict[tuple[str, str], Any] = {}
        self.synonyms: dict[str, str] | None = None

    def constant(self, cls: JavaClass, name: str) -> Any:
        key = (cls.name, name)
        if key not in self.cache:
            if name in cls.fields:
                self.cache[key] = self.eval(cls, cls.fields[name])
            elif name in cls.static_imports:
                self.cache[key] = self.constant(self.cls(cls, cls.static_imports[name]), name)
            else:
                raise Unresolved(f"{cls.name}.{name}")
        return self.cache[key]

    def cls(self, ctx: JavaClass, simple: str) -> JavaClass:
        return self.mirror.java(simple, ctx.imports.get(simple))

    def eval(self, cls: JavaClass, toks: list[str]) -> Any:
        text = "".join(toks)
        for known, value in self.known.items():
            if text == known or text.endswith("." + known):
                return value
        parser = _Parser(self, cls, toks)
        value = parser.expr()
        if parser.i != len(toks):
            raise Unresolved(text)
        return value


_PRIMITIVES = {"int": int, "long": int, "short": int, "byte": int, "double": float, "float": float}
_JAVA_CONSTANTS = {
    "Long.MAX_VALUE": 2**63 - 1,
    "Long.MIN_VALUE": -(2**63),
    "Integer.MAX_VALUE": 2**31 - 1,
    "Integer.MIN_VALUE": -(2**31),
    "Short.MAX_VALUE": 2**15 - 1,
    "Double.MAX_VALUE": 1.7976931348623157e308,
}
_TIME_UNITS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
_TO_UNIT = {"toMillis": 1, "toSeconds": 1000, "toMinutes": 60_000, "toHours": 3_600_000, "toDays": 86_400_000}


@dataclass(frozen=True)
class ClassRef:
    fqn: str


class _Parser:
    def __init__(self, ev: Evaluator, cls: JavaClass, toks: list[str]) -> None:
        self.ev, self.cls, self.toks, self.i = ev, cls, toks, 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self) -> str:
        t = self.peek()
        self.i += 1
        return t

    def expr(self) -> Any:
        value = self.additive()
        if self.peek() == "?":
            raise Unresolved("ternary")
        return value

    def additive(self) -> Any:
        left = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.term()
            if op == "+" and (isinstance(left, str) or isinstance(right, str)):
                left = java_str(left) + java_str(right)
            elif op == "+":
                left = left + right
            else:
                left = left - right
        return left

    def term(self) -> Any:
        left = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            right = self.unary()
            if op == "*":
                left = left * right
            elif isinstance(left, int) and isinstance(right, int):
                q = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)
                left = q if op == "/" else left - q * right
            else:
                left = left / right if op == "/" else left % right
        return left

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return -self.unary()
        if self.peek() == "(" and self.toks[self.i + 1 : self.i + 3][1:] == [")"]:
            kind = self.toks[self.i + 1]
            if kind in _PRIMITIVES:
                self.i += 3
                value = self.unary()
                return _PRIMITIVES[kind](value) if kind in ("double", "float") else int(value)
        return self.primary()

    def args(self) -> list[Any]:
        close = closing(self.toks, self.i)
        parts = split_args(self.toks[self.i + 1 : close])
        self.i = close + 1
        return [self.ev.eval(self.cls, p) for p in parts]

    def primary(self) -> Any:
        t = self.take()
        if t == "(":
            value = self.expr()
            if self.take() != ")":
                raise Unresolved("parenthesis")
            return value
        if t.startswith('"'):
            return bytes(t[1:-1], "utf-8").decode("unicode_escape")
        if t[0].isdigit() or t[0] == ".":
            return _number(t)
        if t in ("null", "true", "false"):
            return {"null": None, "true": True, "false": False}[t]
        if t == "new":
            raise Unresolved("new")
        chain = [t]
        while self.peek() == "." and self.i + 1 < len(self.toks):
            self.take()
            chain.append(self.take())
        dotted = ".".join(chain)
        if dotted in self.ev.known:
            return self.ev.known[dotted]
        if dotted in _JAVA_CONSTANTS:
            return _JAVA_CONSTANTS[dotted]
        if self.peek() == "(":
            return self.call(chain)
        if chain[-1] == "class" and len(chain) == 2:
            return ClassRef(self.cls.imports.get(chain[0], f"{self.cls.package}.{chain[0]}"))
        if len(chain) == 1:
            return self.ev.constant(self.cls, chain[0])
        owner = chain[-2]
        if owner[0].isupper():
            return self.ev.constant(self.ev.cls(self.cls, owner), chain[-1])
        raise Unresolved(dotted)

    def call(self, chain: list[str]) -> Any:
        name = chain[-1]
        dotted = ".".join(chain)
        close = closing(self.toks, self.i)
        called = dotted + "".join(self.toks[self.i : close + 1])
        if called in self.ev.known:
            self.i = close + 1
            return self.ev.known[called]
        args = self.args()
        if dotted.endswith("serverSynonym") and self.ev.server_synonym is not None:
            return self.ev.server_synonym(args[0])
        if dotted == "Collections.unmodifiableList":
            return args[0]
        if len(chain) == 3 and chain[0] == "TimeUnit" and name in _TO_UNIT:
            return int(args[0] * _TIME_UNITS[chain[1]] // _TO_UNIT[name])
        if dotted in ("List.of", "Arrays.asList", "asList", "Set.of", "Collections.singletonList"):
            return list(args)
        if dotted in ("Collections.emptyList", "Collections.emptySet", "List.of"):
            return []
        if dotted == "String.join":
            return str(args[0]).join(flatten(args[1:]))
        if dotted == "Utils.join":
            return str(args[1]).join(args[0])
        if name == "getName" and chain[-2] == "class":
            return self.ev.eval(self.cls, [chain[0], ".", "class"]).fqn
        raise Unresolved(dotted + "(...)")


def _number(t: str) -> int | float:
    t = t.replace("_", "")
    if t.lower().startswith("0x"):
        return int(t.rstrip("lL"), 16)
    if t[-1] in "dDfF" or "." in t or "e" in t.lower():
        return float(t.rstrip("dDfF"))
    return int(t.rstrip("lL"))


def flatten(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def java_double(value: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else computerized scientific notation, with
    the shortest digits that read back as the same double (Python's ``repr`` digits)."""
    if value == 0:
        return "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "." in text else text + ".0"
    number = Decimal(repr(float(value)))
    digits = "".join(str(d) for d in number.as_tuple().digits).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{number.adjusted()}"


def java_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if value is None:
        return "null"
    return str(value)

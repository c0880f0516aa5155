"""SQL92 message selectors (``MessageSelector.bySql``): parse once, evaluate against a message's
properties. Pure: no store, no I/O.

The language is Apache RocketMQ 4.x's (its ``SelectorParser``), and so are the results, including
its corners:

- literals: ``'text'`` (``''`` inside is a quote), integers (``10``, ``10L``), decimals (``1.5``,
  ``2e3``), ``TRUE``, ``FALSE``, ``NULL``; names ``[A-Za-z_$][A-Za-z0-9_$.]*`` are properties
  (``TAGS`` is the message's tag). Keywords are case-insensitive; ``-- …`` and ``/* … */`` are comments.
- ``AND``, ``OR``, ``NOT``, ``=``, ``<>``, ``>``, ``>=``, ``<``, ``<=``, ``[NOT] BETWEEN a AND b``,
  ``[NOT] IN ('a', 'b')`` (strings only), ``IS [NOT] NULL``, unary ``+``/``-``.
- Property values are strings; compared with a number they are read as one (``a > 5`` with
  ``a='10'`` holds); two properties compared by ``<``-style operators are both read as numbers.
  A value that does not read as the number needed makes the whole selector not match.
- Logic is three-valued: a missing property makes a comparison unknown (``NULL``), and only a
  definite TRUE matches. ``a > 'x'`` and ``a = NULL`` are refused when parsing, as Apache does.

Example::

    >>> selector = compile_selector("TAGS IN ('a', 'b') AND price BETWEEN 10 AND 20")
    >>> selector({"TAGS": "a", "price": "15"}), selector({"TAGS": "c", "price": "15"})
    (True, False)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Value = str | int | float | bool | None
Expr = Callable[[Mapping[str, str]], Value]
Selector = Callable[[Mapping[str, str]], bool]

MAX_EXPRESSION_LENGTH = 4096
"""Longer selectors are refused (a pull header carries them; a client cannot make the broker parse
megabytes)."""
_MAX_DEPTH = 100


class SqlParseError(ValueError):
    """The selector is not valid SQL92 as RocketMQ reads it; the message says where."""


class _EvalError(Exception):
    """A value could not be read as the number a comparison needs: the selector does not match."""


# -- tokens ---------------------------------------------------------------------------------------
_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|--[^\n\r]*|/\*.*?\*/)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+[lL]?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$.]*)
  | (?P<op><>|>=|<=|[=<>(),+-])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # float, int, str, id, op, kw, end
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SqlParseError(f"unexpected character {text[pos]!r} at column {pos + 1}")
        kind = m.lastgroup or ""
        if kind != "ws":
            word = m.group()
            if kind == "id" and word.upper() in _KEYWORDS:
                out.append(_Tok("kw", word.upper(), pos))
            else:
                out.append(_Tok(kind, word, pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


# -- values (Java's comparisons, with strings read as numbers) -------------------------------------
_LONG = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _to_long(s: str) -> int:
    if not _LONG.fullmatch(s):
        raise _EvalError(s)
    v = int(s)
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise _EvalError(s)
    return v


def _to_double(s: str) -> float:
    t = s.strip()
    if not _DOUBLE.fullmatch(t):
        raise _EvalError(s)
    t = t.rstrip("fFdD") if t[-1:] in "fFdD" and not t.endswith("Infinity") else t
    return float(t.replace("Infinity", "inf"))


def _to_bool(s: str) -> bool:
    return s.lower() == "true"


def _kind(v: Value) -> str:
    return (
        "bool"
        if isinstance(v, bool)
        else "int"
        if isinstance(v, int)
        else "float"
        if isinstance(v, float)
        else "str"
    )


def _cmp_same(a: Any, b: Any) -> int:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return int(math.isnan(a)) - int(math.isnan(b))  # Double.compareTo: NaN is the largest
    return int(a > b) - int(a < b)


def _compare(lv: Value, rv: Value) -> int:
    """Java ``ComparisonExpression.__compare`` with string conversion: -1 for values of kinds that
    do not compare (so ``<`` holds for them, as in Apache); _EvalError when a string is no number."""
    if _kind(lv) == _kind(rv):
        return _cmp_same(lv, rv)
    if isinstance(lv, bool):
        return _cmp_same(lv, _to_bool(rv)) if isinstance(rv, str) else -1
    if isinstance(rv, bool):
        return _cmp_same(_to_bool(lv), rv) if isinstance(lv, str) else -1
    if isinstance(lv, int):
        if isinstance(rv, float):
            return _cmp_same(float(lv), rv)
        return _cmp_same(lv, _to_long(rv)) if isinstance(rv, str) else -1
    if isinstance(lv, float):
        if isinstance(rv, int):
            return _cmp_same(lv, float(rv))
        return _cmp_same(lv, _to_double(rv)) if isinstance(rv, str) else -1
    if isinstance(lv, str):
        if isinstance(rv, int):
            return _cmp_same(_to_long(lv), rv)
        return _cmp_same(_to_double(lv), rv) if isinstance(rv, float) else -1
    return -1


# -- expressions: closures over the properties -------------------------------------------------------
def _constant(v: Value) -> Expr:
    return lambda props: v


def _property(name: str) -> Expr:
    return lambda props: props.get(name)


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda r: r > 0, ">=": lambda r: r >= 0, "<": lambda r: r < 0, "<=": lambda r: r <= 0,
}


def _ordering(op: str, left: Expr, right: Expr) -> Expr:
    test = _ORDER_TESTS[op]

    def ev(props: Mapping[str, str]) -> Value:
        lv = left(props)
        if lv is None:
            return None
        rv = right(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            return test(_cmp_same(_to_double(lv), _to_double(rv)))
        return test(_compare(lv, rv))

    return ev


def _same(lv: Value, rv: Value) -> bool:
    return _kind(lv) == _kind(rv) and lv == rv


def _equal(left: Expr, right: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        lv, rv = left(props), right(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or _same(lv, rv):
            return True
        return _compare(lv, rv) == 0

    return ev


def _not(inner: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        v = inner(props)
        return None if v is None else not v

    return ev


def _and(left: Expr, right: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        lv = left(props)
        if lv is False:
            return False
        rv = right(props)
        if rv is False:
            return False
        return None if lv is None or rv is None else True

    return ev


def _or(left: Expr, right: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        lv = left(props)
        if lv is True:
            return True
        rv = right(props)
        if rv is True:
            return True
        return None if lv is None or rv is None else False

    return ev


def _in(left: Expr, items: frozenset[str], negated: bool) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        v = left(props)
        if not isinstance(v, str) or isinstance(v, bool):
            return None
        return (v in items) != negated

    return ev


def _negate(inner: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        v = inner(props)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if isinstance(v, int) and v == _LONG_MIN:
            return v
        return -v

    return ev


def _boolean_cast(inner: Expr) -> Expr:
    def ev(props: Mapping[str, str]) -> Value:
        v = inner(props)
        return None if v is None else (v if isinstance(v, bool) else False)

    return ev


# -- the parser ----------------------------------------------------------------------------------------
@dataclass
class _Node:
    """An expression while parsing: its closure and what the parse-time checks need to know."""

    ev: Expr
    boolean: bool = False
    constant: bool = False
    value: Value = None
    text: str = ""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    # helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def _is(self, kind: str, text: str | None = None) -> bool:
        t = self.tok
        return t.kind == kind and (text is None or t.text == text)

    def _take(self, kind: str, text: str | None = None) -> bool:
        if self._is(kind, text):
            self.i += 1
            return True
        return False

    def _expect(self, kind: str, text: str) -> None:
        if not self._take(kind, text):
            self._fail(f"expected {text!r}")

    def _fail(self, what: str) -> None:
        t = self.tok
        found = "the end" if t.kind == "end" else repr(t.text)
        raise SqlParseError(f"{what} but found {found} at column {t.pos + 1}")

    # grammar (lowest precedence first)
    def parse(self) -> _Node:
        node = self.or_expr()
        if not self._is("end"):
            self._fail("expected the end of the selector")
        return node

    def or_expr(self) -> _Node:
        node = self.and_expr()
        while self._take("kw", "OR"):
            node = _Node(_or(node.ev, self.and_expr().ev), boolean=True)
        return node

    def and_expr(self) -> _Node:
        node = self.equality()
        while self._take("kw", "AND"):
            node = _Node(_and(node.ev, self.equality().ev), boolean=True)
        return node

    def equality(self) -> _Node:
        node = self.comparison()
        while True:
            if self._take("op", "="):
                node = self._equal(node, self.comparison())
            elif self._take("op", "<>"):
                node = _Node(_not(self._equal(node, self.comparison()).ev), boolean=True)
            elif self._take("kw", "IS"):
                negated = self._take("kw", "NOT")
                self._expect("kw", "NULL")
                is_null = _equal(node.ev, _constant(None))
                node = _Node(_not(is_null) if negated else is_null, boolean=True)
            else:
                return node

    def _equal(self, left: _Node, right: _Node) -> _Node:
        for side in (left, right):
            if side.constant and side.value is None:
                raise SqlParseError(f"'{side.text}' cannot be compared (use IS NULL)")
        if left.constant and right.constant and left.boolean != right.boolean:
            raise SqlParseError(f"'{left.text}' cannot be compared with '{right.text}'")
        return _Node(_equal(left.ev, right.ev), boolean=True)

    def comparison(self) -> _Node:
        node = self.unary()
        while True:
            if self.tok.kind == "op" and self.tok.text in _ORDER_TESTS:
                op = self.tok.text
                self.i += 1
                right = self.unary()
                self._orderable(node)
                self._orderable(right)
                node = _Node(_ordering(op, node.ev, right.ev), boolean=True)
                continue
            negated = self._is("kw", "NOT") and self.toks[self.i + 1].kind == "kw" and \
                self.toks[self.i + 1].text in ("BETWEEN", "IN")
            if negated:
                self.i += 1
            if self._take("kw", "BETWEEN"):
                low = self.unary()
                self._expect("kw", "AND")
                high = self.unary()
                for side in (node, low, high):
                    self._orderable(side)
                if negated:
                    ev = _or(_ordering("<", node.ev, low.ev), _ordering(">", node.ev, high.ev))
                else:
                    ev = _and(_ordering(">=", node.ev, low.ev), _ordering("<=", node.ev, high.ev))
                node = _Node(ev, boolean=True)
            elif self._take("kw", "IN"):
                self._expect("op", "(")
                items = [self._string()]
                while self._take("op", ","):
                    items.append(self._string())
                self._expect("op", ")")
                node = _Node(_in(node.ev, frozenset(items), negated), boolean=True)
            else:
                return node

    def _orderable(self, node: _Node) -> None:
        if node.boolean or (node.constant and not isinstance(node.value, (int, float))):
            raise SqlParseError(f"Value '{node.text}' cannot be compared.")

    def _string(self) -> str:
        t = self.tok
        if t.kind != "str":
            self._fail("expected a string literal")
        self.i += 1
        return t.text[1:-1].replace("''", "'")

    def unary(self) -> _Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise SqlParseError(f"the selector nests deeper than {_MAX_DEPTH}")
        try:
            if self._take("op", "+"):
                return self.unary()
            if self._take("op", "-"):
                inner = self.unary()
                if (
                    inner.constant
                    and isinstance(inner.value, (int, float))
                    and not isinstance(inner.value, bool)
                ):
                    value = -inner.value
                    return _Node(_constant(value), constant=True, value=value, text=f"-{inner.text}")
                return _Node(_negate(inner.ev))
            if self._take("kw", "NOT"):
                inner = self.unary()
                return _Node(_not(_boolean_cast(inner.ev) if not inner.boolean else inner.ev), boolean=True)
            return self.primary()
        finally:
            self.depth -= 1

    def primary(self) -> _Node:
        t = self.tok
        if t.kind == "op" and t.text == "(":
            self.i += 1
            node = self.or_expr()
            self._expect("op", ")")
            return node
        self.i += 1
        if t.kind == "str":
            value: Value = t.text[1:-1].replace("''", "'")
            return _Node(_constant(value), constant=True, value=value, text=t.text)
        if t.kind == "int":
            v = int(t.text.rstrip("lL"))
            if v > _LONG_MAX:
                self.i -= 1
                self._fail("an integer beyond the range of a long")
            return _Node(_constant(v), constant=True, value=v, text=t.text)
        if t.kind == "float":
            f = float(t.text)
            return _Node(_constant(f), constant=True, value=f, text=t.text)
        if t.kind == "kw" and t.text in ("TRUE", "FALSE"):
            b = t.text == "TRUE"
            return _Node(_constant(b), boolean=True, constant=True, value=b, text=t.text)
        if t.kind == "kw" and t.text == "NULL":
            return _Node(_constant(None), constant=True, value=None, text="NULL")
        if t.kind == "id":
            return _Node(_property(t.text), text=t.text)
        self.i -= 1
        self._fail("expected a value, a property name or '('")
        raise AssertionError  # unreachable: _fail raises


@lru_cache(maxsize=1024)
def compile_selector(expression: str) -> Selector:
    """The selector of ``expression`` (SqlParseError says why it is not one); cached by text."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SqlParseError(f"the selector is longer than {MAX_EXPRESSION_LENGTH} characters")
    if not expression.strip():
        raise SqlParseError("the selector is empty")
    node = _Parser(expression).parse()
    ev = node.ev if node.boolean else _boolean_cast(node.ev)

    def matches(props: Mapping[str, str]) -> bool:
        try:
            return ev(props) is True
        except (_EvalError, RecursionError):
            return False

    return matches

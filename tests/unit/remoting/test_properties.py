"""The one ``.properties`` reader (broker.conf, namesrv.conf, broker config over the wire), Java's rules."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.properties import format_properties, parse_properties, read_properties


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a=1\nb = 2\nc:3\nd 4\ne\t:\t5", {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}),
        ("# comment\n! comment\n\n   \nk=v", {"k": "v"}),
        ("alone\nempty=", {"alone": "", "empty": ""}),
        ("k=one=two:three", {"k": "one=two:three"}),  # only the first separator splits
        ("a\\=b=c\nx\\:y:z\nsp\\ ace=1", {"a=b": "c", "x:y": "z", "sp ace": "1"}),
        ("long=a,\\\n    b,\\\n    c", {"long": "a,b,c"}),
        ("path=C:\\\\dir\\\\x", {"path": "C:\\dir\\x"}),
        ("u=\\u00e9t\\u00E9\ntab=a\\tb", {"u": "été", "tab": "a\tb"}),
        ("k=1\nk=2", {"k": "2"}),  # later keys win
        ("crlf=1\r\nnext=2\r\n", {"crlf": "1", "next": "2"}),
        ("trailing=v   ", {"trailing": "v"}),
    ],
)
def test_java_rules(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_written_values_read_back_and_a_file_reads_as_its_text(tmp_path) -> None:
    values = {"a key": "x", "k=v": " lead", "nl": "a\nb", "path": "C:\\d"}
    assert parse_properties(format_properties(values).decode()) == {**values, "k=v": " lead"}
    conf = tmp_path / "broker.conf"
    conf.write_bytes(format_properties(values))
    assert read_properties(str(conf)) == parse_properties(conf.read_text())

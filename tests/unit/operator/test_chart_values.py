"""The chart's values: values.schema.json accepts values.yaml and describes every value in it, and
the chart README's table lists every value with its default and the schema's description (the
table is generated here: a failing test prints the table to paste)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "pyrocketmq"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
BEGIN, END = "<!-- values table: begin -->", "<!-- values table: end -->"


def leaves(node: Any, schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """``(dotted path, default, schema)`` of every value: objects the schema gives properties for
    are walked into, the rest (lists, free-form maps, scalars) are values."""
    props = schema.get("properties")
    if isinstance(node, dict) and props:
        for key, value in node.items():
            assert key in props, f"{path}{key} is in values.yaml but not in values.schema.json"
            yield from leaves(value, props[key], f"{path}{key}.")
    else:
        yield path.rstrip("."), node, schema


def table() -> str:
    rows = ["| Value | Default | Meaning |", "|---|---|---|"]
    for path, default, schema in leaves(VALUES, SCHEMA):
        shown = json.dumps(default, separators=(", ", ": ")).replace("|", "&#124;")
        rows.append(f"| `{path}` | `{shown}` | {schema.get('description', '')} |")
    return "\n".join(rows)


def test_values_yaml_is_valid_against_the_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    jsonschema.validate(VALUES, SCHEMA)


def test_every_value_has_a_description() -> None:
    missing = [p for p, _, s in leaves(VALUES, SCHEMA) if not s.get("description")]
    assert not missing, f"values without a description in values.schema.json: {missing}"


@pytest.mark.parametrize("path, bad", [("operator.resyncInterval", "soon"), ("cluster.broker.groups", "two"),
                                       ("rbac.scope", "everywhere"), ("monitoring.enabled", "sometimes"),
                                       ("cluster.broker.storage.size", "ten gigs")])
def test_a_wrong_value_is_refused_naming_it(path: str, bad: str) -> None:
    values = json.loads(json.dumps(VALUES))
    *parents, last = path.split(".")
    node = values
    for key in parents:
        node = node[key]
    node[last] = bad
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.validate(values, SCHEMA)
    assert list(err.value.absolute_path)[: len(path.split("."))] == path.split(".")


def test_a_misspelt_value_is_refused() -> None:
    with pytest.raises(jsonschema.ValidationError, match="scop"):
        jsonschema.validate({**VALUES, "rbac": {**VALUES["rbac"], "scop": "cluster"}}, SCHEMA)


def test_the_chart_readme_lists_every_value() -> None:
    text = (CHART / "README.md").read_text()
    assert BEGIN in text and END in text
    current = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    expected = table()
    assert current == expected, f"charts/pyrocketmq/README.md's table is stale; it should read:\n{expected}"

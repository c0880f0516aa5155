"""The chart's dashboards and rules as files: valid Grafana dashboard JSON (unique panel ids,
defined variables, Prometheus targets) and well-formed alert rules. Whether their queries return
data is checked against a real Prometheus in tests/observability."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "pyrocketmq"
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "datasource"}


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels") or ())


def test_there_are_the_three_dashboards():
    assert [p.name for p in DASHBOARDS] == [
        "cluster-overview.json",
        "consumer-group-lag.json",
        "topic-detail.json",
    ]
    uids = [json.loads(p.read_text())["uid"] for p in DASHBOARDS]
    assert len(set(uids)) == 3 and all(len(u) <= 40 for u in uids)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_valid_grafana_json(path: Path):
    doc = json.loads(path.read_text())
    assert doc["title"] and doc["schemaVersion"] >= 36 and "id" not in doc  # importable anywhere
    panels = list(all_panels(doc["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"duplicate panel ids in {path.name}"
    variables = {v["name"] for v in doc["templating"]["list"]}
    assert "datasource" in variables
    for p in panels:
        grid = p["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["type"] in {"timeseries", "stat", "table", "gauge", "bargauge"}
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        ref_ids = [t["refId"] for t in p["targets"]]
        assert p["targets"] and len(ref_ids) == len(set(ref_ids)), p["title"]
        for t in p["targets"]:
            used = set(re.findall(r"\$\{?([A-Za-z_]\w*)", t["expr"]))
            assert used <= variables | BUILTIN_VARS, f"{p['title']}: undefined variables {used - variables}"
            assert t["expr"].count("(") == t["expr"].count(")"), p["title"]


def test_panels_do_not_overlap():
    for path in DASHBOARDS:
        cells: set[tuple[int, int]] = set()
        for p in all_panels(json.loads(path.read_text())["panels"]):
            g = p["gridPos"]
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & mine, f"{path.name}: {p['title']} overlaps another panel"
            cells |= mine


def test_rules_are_well_formed_alerts():
    doc = yaml.safe_load((CHART / "files" / "rules.yaml").read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names)) == 5
    for r in rules:
        assert r["labels"]["severity"] in {"warning", "critical"}
        assert r["annotations"]["summary"] and r["annotations"]["description"]
        assert re.fullmatch(r"\d+[smh]", r.get("for", "0s"))
        assert "pyrocketmq_" in r["expr"] or 'job="pyrocketmq-' in r["expr"]

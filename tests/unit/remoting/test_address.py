"""``host:port`` checks for the addresses brokers announce (pure)."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.address import address_problem

GOOD = ["10.0.0.1:10911", "127.0.0.1:1", "localhost:65535", "broker-a-0.broker-a.ns.svc.cluster.local:10911",
        "fe80::1:10911", "[fe80::1]:10911", "::1:9876", "fe80::1%eth0:10911", "my_host:10911", "host.:1"]


@pytest.mark.parametrize("addr", GOOD)
def test_addresses_brokers_announce(addr):
    assert address_problem(addr) is None


@pytest.mark.parametrize(("addr", "words"), [
    ("", "empty"),
    (None, "empty"),
    ("10.0.0.1", "no port"),
    ("10.0.0.1:", "not a number"),
    (":10911", "host is empty"),
    ("10.0.0.1:0", "outside 1..65535"),
    ("10.0.0.1:65536", "outside 1..65535"),
    ("10.0.0.1:99999999999", "not a number"),
    ("10.0.0.1:-1", "not a number"),
    ("10.0.0.1:+80", "not a number"),
    ("10.0.0.1: 80", "not a number"),
    ("10.0.0.1:80\n", "not a number"),
    ("10.0.0.1:\u0661\u0662", "not a number"),
    ("256.1.1.1:80", "neither an IP address nor a DNS name"),
    ("10.0.0.1\n:80", "neither"),
    ("a b:80", "neither"),
    ("a/b:80", "neither"),
    ("-a:80", "neither"),
    ("a..b:80", "neither"),
    (("x" * 64) + ".com:80", "neither"),
    ("a" * 300 + ":80", "longer than"),
])
def test_what_is_no_address(addr, words):
    problem = address_problem(addr)
    assert problem is not None and words in problem, problem
    assert len(problem) < 200

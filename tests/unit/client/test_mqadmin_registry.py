"""The table of ``pyrocketmq admin`` verbs: the parser, ``--help`` and the dispatch all come from it."""

from __future__ import annotations

import argparse
import io
import typing

import pytest

from pyrocketmq.client import cli
from pyrocketmq.client.admin import Admin
from pyrocketmq.client.mqadmin import registry
from pyrocketmq.client.mqadmin.verb import OneOf, Opt, Verb

VERBS = sorted(registry.VERBS)


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdout=out, stderr=err, stdin=io.StringIO(""))
    return code, out.getvalue(), err.getvalue()


def required_args(verb: Verb) -> list[str]:
    """The least a verb takes: each required option (and the first of each one-of) given "1"."""
    argv = []
    for o in verb.options:
        chosen = o.opts[0] if isinstance(o, OneOf) else o
        if isinstance(o, OneOf) or chosen.required:
            argv += [chosen.flags[0], "1"]
    return argv


def test_the_verbs_are_those_the_cli_has_always_had() -> None:
    assert set(VERBS) == {
        "updateTopic", "deleteTopic", "topicList", "topicRoute", "topicStatus", "topicClusterList",
        "updateSubGroup", "deleteSubGroup", "consumerProgress", "consumerConnection", "resetOffsetByTime",
        "cloneGroupOffset", "getConsumerStatus", "producerConnection",
        "queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey", "queryMsgByOffset", "queryMsgTraceById",
        "printMsg",
        "clusterList", "clusterRT", "brokerStatus", "getBrokerConfig", "updateBrokerConfig", "statsAll",
        "getControllerMetaData", "getSyncStateSet", "electMaster",
        "createUser", "updateUser", "deleteUser", "getUser", "listUser",
        "createAcl", "updateAcl", "deleteAcl", "getAcl", "listAcl",
        "updateUserQuota", "getUserQuota", "deleteUserQuota", "listUserQuota",
    }  # fmt: skip


def test_help_lists_every_verb_under_its_section_with_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["admin", "--help"]) == 0
    text = capsys.readouterr().out
    assert "mqadmin" in text.split("\n\n")[1]
    flat = " ".join(text.split())
    for section in registry.SECTIONS:
        assert f"\n{section.title}:\n" in text
        for verb in section.verbs:
            assert f"  {verb.mqadmin}  " in text
            assert " ".join(verb.help.split()) in flat
    starts = [text.index(f"\n{s.title}:\n") for s in registry.SECTIONS]
    assert starts == sorted(starts)


@pytest.mark.parametrize("name", VERBS)
def test_each_verb_has_its_parser(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    verb = registry.VERBS[name]
    assert cli.main(["admin", name, "-h"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: pyrocketmq admin {name} ")
    assert "-n ADDR, --namesrvAddr ADDR" in text and "--tlsTrustCert" in text
    opts = [o for x in verb.options for o in (x.opts if isinstance(x, OneOf) else (x,))]
    for o in opts:
        if o.help != argparse.SUPPRESS:
            assert o.flags[0] in text and o.flags[-1] in text

    root, parsers = cli.build_parser()
    args = root.parse_args(["admin", name, "-n", "127.0.0.1:9876", *required_args(verb)])
    assert args.admin_command == name and args.namesrv == "127.0.0.1:9876"
    for o in opts:
        assert hasattr(args, o.dest or o.flags[-1].lstrip("-"))


@pytest.mark.parametrize("name", VERBS)
def test_each_verb_refuses_a_missing_name_server_with_its_usage(name: str) -> None:
    code, out, err = run(["admin", name, *required_args(registry.VERBS[name])])
    assert code == 2 and out == ""
    assert err.startswith(f"usage: pyrocketmq admin {name} ") and "-n/--namesrvAddr" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [["admin", "nope", "-n", "x:1"], ["admin", "topiclist", "-n", "x:1"], ["admin", "-n", "x:1"], ["admin"]],
)
def test_an_unknown_or_missing_verb_prints_the_admin_usage_and_exits_2(argv: list[str]) -> None:
    code, out, err = run(argv)
    assert code == 2 and out == ""
    assert err.startswith("usage: pyrocketmq admin [-h] <command> ...\n")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["queryMsgByKey", "-t", "T", "-k", "k", "-c", "0"], "argument -c/--maxNum: must be at least 1"),
        (
            ["queryMsgByKey", "-t", "T", "-k", "k", "-c", "many"],
            "argument -c/--maxNum: invalid int value: 'many'",
        ),
        (["printMsg", "-t", "T", "-c", "no-such-charset"], "not a charset"),
        (["clusterRT", "-a", "0"], "argument -a/--amount: must be 1..100000"),
        (["clusterRT", "-s", str(4 * 1024 * 1024 + 1)], "argument -s/--size: must be 1..4194304"),
        (["updateTopic", "-c", "C", "-t", "T", "-a", "+message.type=ODD"], "argument -a/--attributes"),
    ],
)
def test_values_out_of_range_are_usage_errors(argv: list[str], message: str) -> None:
    code, out, err = run(["admin", *argv, "-n", "x:1"])
    assert code == 2 and out == ""
    assert err.startswith(f"usage: pyrocketmq admin {argv[0]} ") and message in err


def test_the_verb_named_runs_with_an_open_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyrocketmq.client.admin as admin_mod

    seen: list[tuple[str, object, str]] = []

    class OpenAdmin:
        def __init__(self, namesrv_addr: str, client: object = None) -> None:
            self.namesrv_addr = namesrv_addr

        async def __aenter__(self) -> OpenAdmin:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

    async def handler(admin: Admin, args: argparse.Namespace, out: typing.TextIO) -> None:
        seen.append((args.admin_command, admin, args.topic))
        out.write("done\n")

    monkeypatch.setattr(admin_mod, "Admin", OpenAdmin)
    monkeypatch.setitem(
        registry.VERBS,
        "topicRoute",
        Verb("topicRoute", "stand-in", handler, registry.VERBS["topicRoute"].options),
    )
    code, out, err = run(["admin", "topicRoute", "-n", "10.0.0.1:9876", "-t", "Orders"])
    assert (code, out, err) == (0, "done\n", "")
    [(name, admin, topic)] = seen
    assert name == "topicRoute" and isinstance(admin, OpenAdmin) and admin.namesrv_addr == "10.0.0.1:9876"
    assert topic == "Orders"


@pytest.mark.parametrize("name", VERBS)
def test_every_handler_takes_the_admin_class_not_any(name: str) -> None:
    hints = typing.get_type_hints(
        registry.VERBS[name].run, localns={"Admin": Admin}
    )  # imported for type checks only
    assert hints["admin"] is Admin and hints["args"] is argparse.Namespace and hints["out"] is typing.TextIO


def test_a_name_declared_twice_is_refused() -> None:
    async def noop(admin: Admin, args: argparse.Namespace, out: typing.TextIO) -> None:
        return None

    twice = (
        registry.Section("a", (Verb("topicList", "x", noop),)),
        registry.Section("b", (Verb("topicList", "y", noop),)),
    )
    with pytest.raises(ValueError, match="topicList"):
        registry.index(twice)


def test_options_are_declared_as_argparse_takes_them() -> None:
    parser = argparse.ArgumentParser()
    Opt(("-t", "--topic"), "topic name", required=True).add_to(parser)
    Opt(("-a", "--all"), "every one", dest="every", switch=True).add_to(parser)
    args = parser.parse_args(["-t", "T", "-a"])
    assert (args.topic, args.every) == ("T", True)


def test_the_readme_names_every_verb() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert [name for name in VERBS if name not in readme] == []

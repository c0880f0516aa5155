"""The CLI's argument handling and failure output: usage + exit 2, one line + exit 1, no traceback."""

from __future__ import annotations

import argparse
import io

import pytest

from pyrocketmq.client import cli, cli_common
from pyrocketmq.client.errors import MQBrokerError, MQClientError, MQConnectionError


def run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        ([], "usage: pyrocketmq", "required"),
        (["nope"], "usage: pyrocketmq", "invalid choice"),
        (["admin"], "usage: pyrocketmq admin", "required: <command>"),
        (["admin", "fooBar", "-n", "x:1"], "usage: pyrocketmq admin", "invalid choice: 'fooBar'"),
        (["admin", "topicList"], "usage: pyrocketmq admin topicList", "-n/--namesrvAddr"),
        (
            ["admin", "updateTopic", "-n", "x:1", "-t", "T"],
            "usage: pyrocketmq admin updateTopic",
            "-c/--clusterName -b/--brokerAddr",
        ),
        (
            ["admin", "updateTopic", "-n", "x:1", "-c", "C", "-b", "b:1", "-t", "T"],
            "updateTopic",
            "not allowed with",
        ),
        (
            ["admin", "updateTopic", "-n", "x:1", "-c", "C", "-t", "T", "-r", "many"],
            "updateTopic",
            "invalid int value: 'many'",
        ),
        (
            ["admin", "updateTopic", "-n", "x:1", "-c", "C", "-t", "T", "-o", "maybe"],
            "updateTopic",
            "expected true or false",
        ),
        (["admin", "deleteTopic", "-n", "x:1", "-t", "T"], "deleteTopic", "-c/--clusterName"),
        (["admin", "updateSubGroup", "-n", "x:1", "-c", "C"], "updateSubGroup", "-g/--groupName"),
        (["admin", "consumerProgress", "-n", "x:1"], "consumerProgress", "-g/--groupName"),
        (["admin", "queryMsgById", "-n", "x:1"], "queryMsgById", "-i/--msgId"),
        (["produce", "-n", "x:1"], "usage: pyrocketmq produce", "-t/--topic"),
        (["produce", "-n", "x:1", "-t", "T", "-p", "novalue"], "usage: pyrocketmq produce", "expected K=V"),
        (
            ["produce", "-n", "x:1", "-t", "T", "-c", "0", "--body", "b"],
            "usage: pyrocketmq produce",
            "at least 1",
        ),
        (["consume", "-n", "x:1", "-t", "T"], "usage: pyrocketmq consume", "-g/--group"),
        (["consume", "-n", "x:1", "-t", "T", "-g", "g", "-c", "-1"], "usage: pyrocketmq consume", "negative"),
        (["bench", "produce", "-n", "x:1", "-s", "0"], "usage: pyrocketmq bench produce", "positive"),
        (["bench", "consume", "-n", "x:1", "-q", "-1"], "usage: pyrocketmq bench consume", "negative"),
    ],
)
def test_bad_arguments_print_usage_and_exit_2(argv: list[str], usage: str, message: str) -> None:
    code, out, err = run(argv)
    assert code == 2
    assert usage in err
    assert message in err
    assert "Traceback" not in err and out == ""


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["admin", "updateTopic", "-h"]) == 0
    assert "--readQueueNums" in capsys.readouterr().out


class FailingAdmin:
    """Stands in for Admin: fails the way the given error says, without sockets."""

    error: Exception

    def __init__(self, namesrv_addr: str, client=None) -> None:
        pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return None

    def __getattr__(self, name):
        async def fail(*a, **k):
            raise type(self).error

        return fail


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (MQConnectionError("cannot reach name server 127.0.0.1:9876: connection refused"),
         "cannot reach name server 127.0.0.1:9876: connection refused\n"),
        (MQBrokerError.for_code(17, "topic[T] not exist", "1.2.3.4:10911"),
         "error: TOPIC_NOT_EXIST (17) from 1.2.3.4:10911: topic[T] not exist"),
        (RuntimeError("boom"), "internal error: RuntimeError: boom"),
    ],
)
def test_failures_are_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, error: Exception, line: str
) -> None:
    import pyrocketmq.client.admin as admin_mod

    FailingAdmin.error = error
    monkeypatch.setattr(admin_mod, "Admin", FailingAdmin)
    code, out, err = run(["admin", "topicRoute", "-n", "127.0.0.1:9876", "-t", "T"])
    assert code == 1
    assert err.startswith(line)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_table_is_aligned_like_mqadmin() -> None:
    out = io.StringIO()
    cli_common.table(
        [
            ["#Broker Name", "#QID", "#Last"],
            ["broker-a", 0, "x"],
            ["a-much-longer-broker-name-than-32-chars", 12, "y"],
        ],
        [32, 4, 0],
        out,
    )
    lines = out.getvalue().splitlines()
    starts = {ln.index("#QID") if "#QID" in ln else None for ln in lines[:1]}
    assert starts == {lines[2].index("12")}
    assert lines[1].index("0") == lines[0].index("#QID")
    assert lines[0].startswith(
        "#Broker Name" + " " * (len("a-much-longer-broker-name-than-32-chars") - len("#Broker Name") + 2)
    )


def test_a_reader_that_goes_away_stops_the_cli_quietly(monkeypatch) -> None:
    """`pyrocketmq admin … | head -1`: the pipe closes under a write; no traceback, no 'internal error'."""
    import io

    from pyrocketmq.client import cli

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    async def writes(args, out):
        out.write("a line\n")
        return 0

    monkeypatch.setattr(cli, "run_admin", writes)
    err = io.StringIO()
    assert cli.main(["admin", "topicList", "-n", "127.0.0.1:9876"], stdout=ClosedPipe(), stderr=err) == 141
    assert err.getvalue() == ""


def _security(argv: list[str]):
    parser = argparse.ArgumentParser()
    cli_common._add_ns(parser)
    return cli_common.client_settings(parser.parse_args(["-n", "x:1", *argv]))


def test_credentials_from_the_environment_as_an_application_pod_mounts_them(monkeypatch):
    monkeypatch.setenv("PYROCKETMQ_ACCESS_KEY", "alice")
    monkeypatch.setenv("PYROCKETMQ_SECRET_KEY", "s3cret")
    assert (_security([]).access_key, _security([]).secret_key) == ("alice", "s3cret")
    assert _security(["--accessKey", "bob"]).access_key == "bob"  # the option wins
    monkeypatch.delenv("PYROCKETMQ_SECRET_KEY")
    with pytest.raises(MQClientError, match="needs a secret key"):
        _security([])


def test_a_client_certificate_turns_tls_on_and_needs_its_key():
    tls = _security(["--tlsTrustCert", "ca.crt", "--tlsCert", "tls.crt", "--tlsKey", "tls.key"]).tls
    assert (tls.enabled, tls.verify, tls.check_hostname) == (True, True, False)
    assert (tls.trust_cert_path, tls.cert_path, tls.key_path) == ("ca.crt", "tls.crt", "tls.key")
    with pytest.raises(MQClientError, match="--tlsCert and --tlsKey go together"):
        _security(["--tlsCert", "tls.crt"])

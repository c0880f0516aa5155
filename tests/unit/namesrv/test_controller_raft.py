"""Consensus among controller instances (pure Raft nodes, messages passed by hand)."""

from __future__ import annotations

from pyrocketmq.namesrv.controller.raft import CANDIDATE, FOLLOWER, LEADER, RaftNode


def _cluster(n: int = 3) -> dict[str, RaftNode]:
    ids = [f"n{i}" for i in range(n)]
    return {i: RaftNode(i, ids) for i in ids}


def _elect(nodes: dict[str, RaftNode], who: str, voters: list[str]) -> bool:
    req = nodes[who].start_election()
    won = False
    for v in voters:
        won = nodes[who].handle_vote_reply(v, nodes[v].handle_vote(req)) or won
    return won


def _replicate(nodes: dict[str, RaftNode], leader: str, to: list[str]):
    req = nodes[leader].append_request()
    committed = None
    for peer in to:
        committed = nodes[leader].handle_append_reply(peer, nodes[peer].handle_append(req)) or committed
    return committed


def test_a_single_member_leads_and_commits_at_once() -> None:
    n = RaftNode("n0", ["n0"])
    n.start_election()
    assert n.role == LEADER
    e = n.propose("s1")
    assert n.committed == e and (e.term, e.index) == (1, 1) and n.dirty


def test_a_majority_elects_and_commits() -> None:
    nodes = _cluster()
    assert _elect(nodes, "n0", ["n1"]) and nodes["n0"].role == LEADER
    e = nodes["n0"].propose("s1")
    assert nodes["n0"].committed is None  # only the leader holds it
    assert _replicate(nodes, "n0", ["n1"]) == e
    assert nodes["n1"].entry == e and nodes["n2"].entry.index == 0


def test_without_a_majority_nothing_is_elected_or_committed() -> None:
    nodes = _cluster()
    assert not _elect(nodes, "n0", []) and nodes["n0"].role == CANDIDATE
    _elect(nodes, "n1", ["n2"])
    nodes["n1"].propose("s1")
    assert _replicate(nodes, "n1", []) is None and nodes["n1"].committed is None


def test_one_vote_per_term_and_only_for_an_up_to_date_candidate() -> None:
    nodes = _cluster()
    _elect(nodes, "n0", ["n1"])
    nodes["n0"].propose("s1")
    _replicate(nodes, "n0", ["n1"])
    # n2 stands in term 1: everyone voted already
    req = nodes["n2"].start_election()
    assert not nodes["n1"].handle_vote(req)["granted"] and nodes["n0"].role == LEADER
    # term 2: a vote is free again, but n2 missed the entry, so n1 refuses it, and so does n0
    req = nodes["n2"].start_election()
    assert not nodes["n1"].handle_vote(req)["granted"]
    assert not nodes["n0"].handle_vote(req)["granted"]
    assert nodes["n0"].role == FOLLOWER  # a higher term seen
    # n1 (up to date) wins the next term; a second candidate of that term gets no vote from n2
    assert _elect(nodes, "n1", ["n2"])
    assert not nodes["n2"].handle_vote({"term": nodes["n1"].term, "candidate": "n0", "last": [9, 9]})[
        "granted"
    ]


def test_a_deposed_leaders_uncommitted_entry_is_overwritten() -> None:
    nodes = _cluster()
    _elect(nodes, "n0", ["n1"])
    nodes["n0"].propose("committed")
    _replicate(nodes, "n0", ["n1", "n2"])
    nodes["n0"].propose("lost")  # n0 is cut off before anyone gets it
    assert _elect(nodes, "n1", ["n2"])
    nodes["n1"].propose("new")
    assert _replicate(nodes, "n1", ["n2", "n0"]) is not None
    assert nodes["n0"].entry.state == "new" and nodes["n0"].role == FOLLOWER and nodes["n0"].leader == "n1"
    stale = {"term": 1, "leader": "n0", "entry": {"term": 1, "index": 9, "state": "old"}}
    assert not nodes["n2"].handle_append(stale)["ok"] and nodes["n2"].entry.state == "new"


def test_hard_state_round_trips() -> None:
    nodes = _cluster()
    _elect(nodes, "n0", ["n1"])
    nodes["n0"].propose("s")
    again = RaftNode("n0", list(nodes), nodes["n0"].hard)
    assert (again.term, again.voted_for, again.entry) == (nodes["n0"].term, "n0", nodes["n0"].entry)
    assert again.role == FOLLOWER


def test_a_returning_member_cannot_depose_a_leader_the_others_follow() -> None:
    nodes = _cluster()
    _elect(nodes, "n0", ["n1"])
    nodes["n0"].propose("s1")
    _replicate(nodes, "n0", ["n1"])  # n2 was away
    pre = nodes["n2"].pre_vote_request()
    replies = [
        nodes["n0"].handle_vote(pre, leader_heard=True),
        nodes["n1"].handle_vote(pre, leader_heard=True),
    ]
    assert not nodes["n2"].pre_vote_won(replies)
    assert (nodes["n2"].term, nodes["n2"].role) == (1, FOLLOWER)  # a pre-vote raises no term
    assert (nodes["n0"].term, nodes["n0"].role, nodes["n1"].voted_for) == (1, LEADER, "n0")
    # the leader gone silent: the others grant a pre-vote, but only to a member holding the entry
    assert not nodes["n1"].handle_vote(pre)["granted"]
    pre = nodes["n1"].pre_vote_request()
    assert nodes["n1"].pre_vote_won([nodes["n2"].handle_vote(pre)]) and nodes["n1"].term == 1
    assert _elect(nodes, "n1", ["n2"]) and nodes["n1"].term == 2


def test_a_pre_vote_reply_of_a_later_term_makes_the_candidate_follow_it() -> None:
    nodes = _cluster()
    _elect(nodes, "n0", ["n1"])
    _elect(nodes, "n1", ["n0"])  # term 2 without n2
    assert not nodes["n2"].pre_vote_won(
        [nodes["n1"].handle_vote(nodes["n2"].pre_vote_request(), leader_heard=True)]
    )
    assert (nodes["n2"].term, nodes["n2"].role) == (2, FOLLOWER)


def test_a_leader_answers_only_while_a_majority_acknowledged_it_within_the_election_timeout() -> None:
    import time

    from pyrocketmq.namesrv.controller import service

    ctl = service.Controller(None, self_id="n0", peers={"n0": "a:1", "n1": "b:1", "n2": "c:1"})
    ctl.raft.start_election()
    ctl.raft.handle_vote_reply("n1", {"term": 1, "granted": True})
    ctl.raft.propose("{}")
    ctl.raft.handle_append_reply("n1", {"term": 1, "ok": True, "have": [1, 1]})
    assert ctl.raft.committed is not None and not ctl.leading  # no lease yet
    ctl._lease_from = time.monotonic()
    assert ctl.leading
    ctl._lease_from = time.monotonic() - service.ELECTION_TIMEOUT_S[0]  # e.g. frozen since
    assert not ctl.leading
    alone = service.Controller(None, self_id="n0")
    alone.raft.start_election()
    alone.raft.propose("{}")
    assert alone.leading

"""Consensus among controller instances: Raft whose log is a single snapshot (pure: messages in,
messages out; the caller does the timers, the sockets and the fsync of :attr:`RaftNode.hard`).

The controller's state is small, so every change is replicated as the whole state: an entry is
``(term, index, state JSON)`` and a node keeps only its newest entry. Raft's rules carry over:

- a node votes once per term, and only for a candidate whose entry ``(term, index)`` is at least
  its own (so a winner holds every committed entry);
- a leader's entry is committed once a majority (itself included) holds it or a later one of its;
  a new leader first commits its state again in its own term (Raft's no-op), which commits what
  earlier leaders left;
- a follower takes a leader's entry only when it is later in ``(term, index)`` than its own (an
  older leader's uncommitted entry is overwritten, a reordered older message ignored);
- any message with a higher term turns the receiver into a follower of that term;
- **pre-vote** (Raft thesis 9.6): before raising its term a node asks whether it would win, and a
  node that heard a leader within the election timeout says no, so a member that was frozen or cut
  off and comes back cannot depose a leader the others still follow (raising the term would).

With one member the node is its own majority: it leads at once and commits on proposal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"


@dataclass(frozen=True, slots=True)
class Entry:
    term: int = 0
    index: int = 0
    state: str = ""

    @property
    def position(self) -> tuple[int, int]:
        return self.term, self.index

    def as_json(self) -> dict[str, Any]:
        return {"term": self.term, "index": self.index, "state": self.state}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Entry:
        return cls(int(d["term"]), int(d["index"]), str(d["state"]))


class RaftNode:
    """One member. Example (a single member leads and commits at once)::

        n = RaftNode("n0", [])
        n.start_election(); n.propose('{"groups": []}').index   # 1; n.committed is that entry
    """

    def __init__(self, node_id: str, peers: list[str], hard: dict[str, Any] | None = None) -> None:
        self.id = node_id
        self.peers = [p for p in peers if p != node_id]
        hard = hard or {}
        self.term = int(hard.get("term", 0))
        self.voted_for: str | None = hard.get("votedFor")
        self.entry = Entry.from_json(hard["entry"]) if hard.get("entry") else Entry()
        self.role = FOLLOWER
        self.leader: str | None = None
        self.votes: set[str] = set()
        self.have: dict[str, tuple[int, int]] = {}
        self.committed: Entry | None = None
        """Leader only: the newest entry a majority holds."""
        self.dirty = False
        """``hard`` changed: write it durably before sending anything."""

    @property
    def hard(self) -> dict[str, Any]:
        return {"term": self.term, "votedFor": self.voted_for, "entry": self.entry.as_json()}

    @property
    def majority(self) -> int:
        return (len(self.peers) + 1) // 2 + 1

    def _follow(self, term: int, leader: str | None) -> None:
        if term > self.term:
            self.term, self.voted_for, self.dirty = term, None, True
        self.role, self.leader, self.committed = FOLLOWER, leader, None

    # -- elections ------------------------------------------------------------------------------
    def start_election(self) -> dict[str, Any]:
        """Become a candidate of the next term; the vote request for every peer."""
        self.term += 1
        self.role, self.leader, self.voted_for, self.votes, self.dirty = (
            CANDIDATE,
            None,
            self.id,
            {self.id},
            True,
        )
        self._check_won()
        return {"term": self.term, "candidate": self.id, "last": list(self.entry.position)}

    def pre_vote_request(self) -> dict[str, Any]:
        """Would the peers elect this node at the next term? Changes nothing here or there."""
        return {"term": self.term + 1, "candidate": self.id, "last": list(self.entry.position), "pre": True}

    def pre_vote_won(self, replies: list[dict[str, Any]]) -> bool:
        """Whether the pre-vote replies (with this node's own) make a majority; a reply naming a later
        term makes this node a follower of it."""
        for rep in replies:
            if int(rep["term"]) > self.term:
                self._follow(int(rep["term"]), None)
        return 1 + sum(1 for rep in replies if rep.get("granted")) >= self.majority

    def handle_vote(self, req: dict[str, Any], leader_heard: bool = False) -> dict[str, Any]:
        """A vote, or with ``pre`` a pre-vote (refused while ``leader_heard``: the caller heard a
        leader within the election timeout, or is a leader holding its lease)."""
        term = int(req["term"])
        if req.get("pre"):
            last = tuple(int(x) for x in req["last"])
            return {"term": self.term, "pre": True,
                    "granted": not leader_heard and term > self.term and last >= self.entry.position}
        if term > self.term:
            self._follow(term, None)
        last = tuple(int(x) for x in req["last"])
        granted = (term == self.term and self.voted_for in (None, req["candidate"])
                   and last >= self.entry.position)
        if granted and self.voted_for is None:
            self.voted_for, self.dirty = str(req["candidate"]), True
        return {"term": self.term, "granted": granted}

    def handle_vote_reply(self, peer: str, rep: dict[str, Any]) -> bool:
        """True when this reply made the node leader."""
        term = int(rep["term"])
        if term > self.term:
            self._follow(term, None)
            return False
        if self.role != CANDIDATE or term != self.term or not rep.get("granted"):
            return False
        self.votes.add(peer)
        return self._check_won()

    def _check_won(self) -> bool:
        if self.role == CANDIDATE and len(self.votes) >= self.majority:
            self.role, self.leader, self.have, self.committed = LEADER, self.id, {}, None
            return True
        return False

    # -- replication ----------------------------------------------------------------------------
    def propose(self, state: str) -> Entry:
        """Leader only: the next entry, held by the leader; committed once :meth:`handle_append_reply`
        (or, alone, at once) says so."""
        if self.role != LEADER:
            raise RuntimeError("only the leader proposes")
        self.entry, self.dirty = Entry(self.term, self.entry.index + 1, state), True
        self._advance()
        return self.entry

    def append_request(self) -> dict[str, Any]:
        return {"term": self.term, "leader": self.id, "entry": self.entry.as_json()}

    def handle_append(self, req: dict[str, Any]) -> dict[str, Any]:
        term = int(req["term"])
        if term < self.term:
            return {"term": self.term, "ok": False, "have": list(self.entry.position)}
        self._follow(term, str(req["leader"]))
        entry = Entry.from_json(req["entry"])
        if entry.position > self.entry.position:
            self.entry, self.dirty = entry, True
        return {"term": self.term, "ok": True, "have": list(self.entry.position)}

    def handle_append_reply(self, peer: str, rep: dict[str, Any]) -> Entry | None:
        """The newly committed entry, if this reply committed one."""
        term = int(rep["term"])
        if term > self.term:
            self._follow(term, None)
            return None
        if self.role != LEADER or term != self.term or not rep.get("ok"):
            return None
        self.have[peer] = (int(rep["have"][0]), int(rep["have"][1]))
        return self._advance()

    def _advance(self) -> Entry | None:
        e = self.entry
        if e.term != self.term or (self.committed is not None and self.committed.index >= e.index):
            return None
        holders = 1 + sum(1 for pos in self.have.values() if pos >= e.position)
        if holders >= self.majority:
            self.committed = e
            return e
        return None

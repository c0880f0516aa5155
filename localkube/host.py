"""What the local cluster changes on the host, and how each change is undone.

Everything here is idempotent and safe to call on a host where the thing is already gone:
``k8s-down`` calls every undo step whatever state the last ``k8s-up`` left behind.

- daemons: started in their own session with a pid file; stopped by pid file (TERM, then KILL),
  checked against ``/proc/<pid>/exe`` so a reused pid is never signalled;
- the pod bridge and its address, the ``ip_forward``/``bridge-nf-call-iptables`` sysctls (the old
  values are saved and restored);
- the guard chain that keeps pod traffic on the machine (``PYRMQ-GUARD``, first in FORWARD:
  forwarded packets may leave the bridge only back into it), and every iptables chain the
  cluster's components create in the host's own namespace (``KUBE-*`` of the control plane's
  kube-proxy, ``CNI-*``) with the rules that jump to them (a node's chains go with its namespace;
  that kube-proxy's packet counters are ``nfacct``'s);
- mounts under the state directory, network namespaces the runtime created, pod cgroups;
- each node's network namespace, its veth link to the bridge and the routes to its pods, and its
  cgroup (every hierarchy; the freezer's stops the whole node at once).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

CHAIN_PREFIXES = ("KUBE-", "CNI-", "PYRMQ-")
GUARD_CHAIN = "PYRMQ-GUARD"


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 60, input: str | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, input=input
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


# -- daemons -----------------------------------------------------------------------------------


def start_daemon(
    name: str,
    argv: Sequence[str | Path],
    run_dir: Path,
    log_dir: Path,
    env=None,
    *,
    netns: str | None = None,
    cgroup: str | None = None,
) -> int:
    """Start ``argv`` detached (own session, stdin closed, output to ``<log_dir>/<name>.log``),
    in network namespace ``netns`` and cgroup ``cgroup`` (every hierarchy) when given; what it
    starts later (a runtime's shims) stays in that cgroup."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    exe = shutil.which(str(argv[0]))
    if exe is None:
        raise FileNotFoundError(f"{argv[0]}: not found")
    argv = [exe, *argv[1:]]
    if netns is not None:  # nsenter execs the daemon: the pid stays the daemon's
        argv = ["nsenter", f"--net={NETNS_DIR / netns}", "--", *argv]
    procs_files = [h / cgroup / "cgroup.procs" for h in cgroup_hierarchies()] if cgroup else []

    def join_cgroup() -> None:  # in the child, before exec
        for procs in procs_files:
            procs.write_text(str(os.getpid()))

    with open(log_dir / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            preexec_fn=join_cgroup if procs_files else None,
        )
    (run_dir / f"{name}.pid").write_text(f"{proc.pid}\n{Path(exe).resolve()}\n")
    return proc.pid


def log_tail(logs: Path, name: str, lines: int = 30) -> str:
    """The last ``lines`` of daemon ``name``'s log under ``logs``."""
    try:
        return "\n".join((logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_for(what: str, check: Callable[[], bool], timeout: float, *, daemon: str, run_dir: Path, logs: Path,
             error: Callable[[str], Exception], watch: bool = True) -> None:
    """Poll ``check`` until it holds; raise ``error(message)`` with the tail of ``daemon``'s log when
    ``timeout`` passes, or at once when the daemon (``watch``: one we started) has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if watch and daemon_pid(daemon, run_dir) is None:
            raise error(f"{daemon} exited while waiting for {what}:\n{log_tail(logs, daemon)}")
        time.sleep(0.25)
    raise error(f"{what} not reached within {timeout:.0f} s; {daemon} log:\n{log_tail(logs, daemon)}")


def daemon_pid(name: str, run_dir: Path) -> int | None:
    """The pid of daemon ``name`` if it is still the process we started, else None."""
    path = run_dir / f"{name}.pid"
    try:
        pid_text, exe = path.read_text().splitlines()[:2]
        pid = int(pid_text)
        if os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)") == exe:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            return None if state == "Z" else pid
    except (OSError, ValueError):
        pass
    return None


def stop_daemon(name: str, run_dir: Path, timeout: float = 20) -> None:
    pid = daemon_pid(name, run_dir)
    if pid is not None:
        _signal_and_wait(pid, timeout)
    (run_dir / f"{name}.pid").unlink(missing_ok=True)


def _signal_and_wait(pid: int, timeout: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            except ChildProcessError:
                pass
            if not _alive(pid):
                return
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def pids_matching(pattern: str) -> list[int]:
    """Processes (other than this one) whose command line contains ``pattern``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if pattern in cmdline:
            pids.append(int(entry.name))
    return pids


def kill_matching(pattern: str) -> None:
    """SIGKILL every process whose command line contains ``pattern`` (runtime shims left behind)."""
    for pid in pids_matching(pattern):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# -- sysctls -----------------------------------------------------------------------------------

SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
}


def set_sysctls(saved: Path) -> None:
    """Set ``SYSCTLS``, remembering the values found (first call only) in ``saved``."""
    old = {}
    for key, value in SYSCTLS.items():
        path = Path("/proc/sys") / key
        old[key] = path.read_text().strip()
        path.write_text(value)
    if not saved.exists():
        saved.write_text("".join(f"{k}={v}\n" for k, v in old.items()))


def restore_sysctls(saved: Path) -> None:
    if not saved.exists():
        return
    for line in saved.read_text().splitlines():
        key, _, value = line.partition("=")
        try:
            (Path("/proc/sys") / key).write_text(value)
        except OSError:
            pass
    saved.unlink()


# -- the bridge ----------------------------------------------------------------------------------


def ensure_bridge(name: str, address_cidr: str) -> None:
    if run(["ip", "link", "show", name], check=False) == "":
        run(["ip", "link", "add", name, "type", "bridge"])
    if address_cidr.split("/")[0] not in run(["ip", "-4", "addr", "show", "dev", name]):
        run(["ip", "addr", "add", address_cidr, "dev", name])
    run(["ip", "link", "set", name, "up"])


def keep_on_bridge(cidr: str, bridge: str) -> None:
    """Route ``cidr`` (the Services' addresses) into the bridge: a connection to a ClusterIP that no
    kube-proxy rule rewrites (a Service without endpoints being synced, a proxy restarting) fails
    here instead of following the default route off the machine. Gone with the bridge."""
    run(["ip", "route", "replace", cidr, "dev", bridge])


def delete_bridge(name: str) -> None:
    if run(["ip", "link", "show", name], check=False):
        # veths still attached (pods the runtime did not tear down) go with it
        for line in run(["ip", "-o", "link", "show", "master", name], check=False).splitlines():
            veth = line.split(":")[1].strip().split("@")[0]
            run(["ip", "link", "delete", veth], check=False)
        run(["ip", "link", "delete", name], check=False)


# -- iptables ------------------------------------------------------------------------------------


def ensure_guard(bridge: str) -> None:
    """Forwarded pod traffic may only go back into the bridge: nothing a pod sends leaves the machine."""
    ipt = ["iptables", "-w", "5"]
    if run([*ipt, "-n", "-L", GUARD_CHAIN], check=False) == "":
        run([*ipt, "-N", GUARD_CHAIN])
    run([*ipt, "-F", GUARD_CHAIN])
    run([*ipt, "-A", GUARD_CHAIN, "-i", bridge, "-o", bridge, "-j", "RETURN"])
    run([*ipt, "-A", GUARD_CHAIN, "-i", bridge, "-j", "DROP"])
    run([*ipt, "-A", GUARD_CHAIN, "-o", bridge, "-j", "RETURN"])
    guard_first()


def guard_first() -> None:
    """The jump to the guard is the first rule of FORWARD, before those of the host's kube-proxy
    (which accept marked and established traffic, and put their jumps first when they start)."""
    ipt = ["iptables", "-w", "5"]
    jump = ["FORWARD", "-j", GUARD_CHAIN]
    if run([*ipt, "-S", "FORWARD", "1"], check=False).strip() == f"-A {' '.join(jump)}":
        return
    while subprocess.run([*ipt, "-D", *jump], capture_output=True).returncode == 0:
        pass
    run([*ipt, "-I", *jump])


def _our_chain(name: str) -> bool:
    """A chain of the cluster's: ``KUBE-*`` (the control plane's kube-proxy), ``CNI-*``, ``PYRMQ-*``."""
    return name.startswith(CHAIN_PREFIXES)


def _our_chains(binary: str, table: str) -> tuple[list[str], list[str]]:
    """(our chains, every rule line) of one table, as ``-S`` prints them."""
    rules = run([binary, "-w", "5", "-t", table, "-S"], check=False).splitlines()
    return [ln.split()[1] for ln in rules if ln.startswith("-N ") and _our_chain(ln.split()[1])], rules


def _tables() -> Iterable[tuple[str, str]]:
    for binary in ("iptables", "ip6tables"):
        if shutil.which(binary) is not None:
            for table in ("filter", "nat", "mangle", "raw"):
                yield binary, table


def remove_chains() -> None:
    """Delete every rule that jumps to one of our chains, then flush and delete those chains."""
    for binary, table in _tables():
        chains, rules = _our_chains(binary, table)
        ipt = [binary, "-w", "5", "-t", table]
        for ln in rules:
            m = re.match(r"-A (\S+) (.*)$", ln)
            if m and not _our_chain(m.group(1)) and re.search(r"-j (KUBE-|CNI-|PYRMQ-)", m.group(2)):
                run([*ipt, "-D", m.group(1), *shlex.split(m.group(2))], check=False)
        for chain in chains:
            run([*ipt, "-F", chain], check=False)
        for chain in chains:
            run([*ipt, "-X", chain], check=False)


def leftover_chains() -> list[str]:
    return [
        f"{binary}/{table}/{chain}" for binary, table in _tables() for chain in _our_chains(binary, table)[0]
    ]


# -- mounts, netns, cgroups ---------------------------------------------------------------------


def mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == str(root):
            points.append(point)
    return points


def unmount_under(root: Path) -> None:
    for _ in range(3):
        points = mounts_under(root)
        if not points:
            return
        for point in sorted(set(points), key=lambda p: p.count("/"), reverse=True):
            if subprocess.run(["umount", point], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True)


NETNS_DIR = Path("/run/netns")


def runtime_netns() -> list[Path]:
    """Network namespaces the container runtime made for pods (``cni-<uuid>``)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p for p in NETNS_DIR.iterdir() if p.name.startswith("cni-"))


def remove_runtime_netns() -> None:
    for ns in runtime_netns():
        subprocess.run(["umount", str(ns)], capture_output=True)
        try:
            ns.unlink()
        except OSError:
            subprocess.run(["ip", "netns", "delete", ns.name], capture_output=True)


CGROUP_ROOT = Path("/sys/fs/cgroup")
NODE_CGROUP_PREFIX = "pyrmq-node-"


def cgroup_hierarchies() -> list[Path]:
    """The mounted cgroup v1 hierarchies (``cpu``, ``memory``, ``freezer``, ...), or the v2 root."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT]
    return sorted(
        h
        for h in CGROUP_ROOT.iterdir()
        if h.is_dir() and not h.is_symlink() and (h / "cgroup.procs").exists()
    )


def ensure_cgroup(name: str) -> None:
    """Create cgroup ``name`` in every hierarchy (cpuset's with its parent's CPUs and memory nodes)."""
    for hierarchy in cgroup_hierarchies():
        parent = hierarchy
        for part in Path(name).parts:
            path = parent / part
            path.mkdir(exist_ok=True)
            for key in ("cpuset.cpus", "cpuset.mems"):
                if (path / key).exists() and not (path / key).read_text().strip():
                    (path / key).write_text((parent / key).read_text())
            parent = path


def freeze_cgroup(name: str, frozen: bool) -> None:
    """Stop (or resume) every process in cgroup ``name`` and below it, as a hung machine stops."""
    v1 = CGROUP_ROOT / "freezer" / name / "freezer.state"
    if v1.exists():
        v1.write_text("FROZEN" if frozen else "THAWED")
        want = "FROZEN" if frozen else "THAWED"
        deadline = time.monotonic() + 10
        while v1.read_text().strip() != want and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        (CGROUP_ROOT / name / "cgroup.freeze").write_text("1" if frozen else "0")


@contextlib.contextmanager
def low_cpu_share(names: Iterable[str]) -> Iterator[None]:
    """While the block runs, cgroups ``names`` (everything in and below them) get the smallest CPU
    share, so work there yields to every other process; the default share after."""
    v1 = CGROUP_ROOT / "cpu"
    knobs = [
        (v1 / n / "cpu.shares", "2", "1024") if v1.is_dir() else (CGROUP_ROOT / n / "cpu.weight", "1", "100")
        for n in names
    ]
    knobs = [k for k in knobs if k[0].exists()]
    for path, low, _ in knobs:
        path.write_text(low)
    try:
        yield
    finally:
        for path, _, default in knobs:
            with contextlib.suppress(OSError):
                path.write_text(default)


def is_frozen(name: str) -> bool:
    v1 = CGROUP_ROOT / "freezer" / name / "freezer.state"
    try:
        if v1.exists():
            return v1.read_text().strip() != "THAWED"
        return (CGROUP_ROOT / name / "cgroup.freeze").read_text().strip() == "1"
    except OSError:
        return False


def pod_cgroups() -> list[Path]:
    """Every node's cgroup, in every hierarchy (the kubelets put their pods below them)."""
    if not CGROUP_ROOT.is_dir():
        return []
    return [
        candidate
        for hierarchy in cgroup_hierarchies()
        for candidate in sorted(hierarchy.glob(f"{NODE_CGROUP_PREFIX}*"))
        if candidate.is_dir()
    ]


def remove_pod_cgroups() -> None:
    """Remove the nodes' cgroups and everything below, leaves first (a cgroup dir goes with rmdir);
    a frozen node is thawed first so that what is left in it can be killed."""
    for top in pod_cgroups():
        if top.parent.name == "freezer" and is_frozen(top.name):
            freeze_cgroup(top.name, False)
    for top in pod_cgroups():
        for dirpath, _dirs, _files in sorted(os.walk(top), key=lambda t: t[0].count("/"), reverse=True):
            for _ in range(20):
                try:
                    os.rmdir(dirpath)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _kill_cgroup_tasks(Path(dirpath))
                    time.sleep(0.1)


def _kill_cgroup_tasks(path: Path) -> None:
    for name in ("cgroup.procs", "tasks"):
        try:
            for pid in (path / name).read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        except OSError:
            pass


# -- node links ----------------------------------------------------------------------------------


def netns_run(netns: str, argv: Sequence[str], *, check: bool = True) -> str:
    return run(["nsenter", f"--net={NETNS_DIR / netns}", "--", *argv], check=check)


def ensure_node_link(netns: str, veth: str, bridge: str, address_cidr: str, gateway: str) -> None:
    """Network namespace ``netns`` with loopback up and ``eth0`` (``address_cidr``), the peer of
    ``veth``, a port of ``bridge``; its default route goes to ``gateway`` (the host)."""
    if not (NETNS_DIR / netns).exists():
        run(["ip", "netns", "add", netns])
    if run(["ip", "link", "show", veth], check=False) == "":
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns])
    run(["ip", "link", "set", veth, "master", bridge, "up"])
    netns_run(netns, ["ip", "link", "set", "lo", "up"])
    if address_cidr.split("/")[0] not in netns_run(netns, ["ip", "-4", "addr", "show", "dev", "eth0"]):
        netns_run(netns, ["ip", "addr", "add", address_cidr, "dev", "eth0"])
    netns_run(netns, ["ip", "link", "set", "eth0", "up"])
    netns_run(netns, ["ip", "route", "replace", "default", "via", gateway, "dev", "eth0"])
    for key, value in SYSCTLS.items():
        netns_run(netns, ["sysctl", "-q", "-w", f"{key.replace('/', '.')}={value}"])


def route(cidr: str, via: str, netns: str | None = None) -> None:
    argv = ["ip", "route", "replace", cidr, "via", via]
    if netns is None:
        run(argv)
    else:
        netns_run(netns, argv)


def remove_node_link(netns: str, veth: str) -> None:
    """The namespace (its routes, iptables rules and pod bridge go with it) and the link."""
    run(["ip", "link", "delete", veth], check=False)
    if (NETNS_DIR / netns).exists():
        run(["ip", "netns", "delete", netns], check=False)


def node_netns() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(NODE_CGROUP_PREFIX))


ISOLATE_CHAIN = "PYRMQ-ISOLATE"


def set_isolated(veth: str, isolated: bool) -> None:
    """Drop (or let through again) everything the bridge would carry between port ``veth`` and its
    other ports: the node behind it is cut off from the other nodes and their pods, while the
    host (the control plane) still reaches it."""
    ipt = ["iptables", "-w", "5"]
    if run([*ipt, "-n", "-L", ISOLATE_CHAIN], check=False) == "":
        run([*ipt, "-N", ISOLATE_CHAIN])
    jump = ["FORWARD", "-j", ISOLATE_CHAIN]
    if subprocess.run([*ipt, "-C", *jump], capture_output=True).returncode != 0:
        run([*ipt, "-I", *jump])
    for direction in ("--physdev-in", "--physdev-out"):
        rule = [ISOLATE_CHAIN, "-m", "physdev", "--physdev-is-bridged", direction, veth, "-j", "DROP"]
        present = subprocess.run([*ipt, "-C", *rule], capture_output=True).returncode == 0
        if isolated and not present:
            run([*ipt, "-A", *rule])
        elif not isolated and present:
            run([*ipt, "-D", *rule])


def is_isolated(veth: str) -> bool:
    return f"--physdev-in {veth} " in run(["iptables", "-w", "5", "-S", ISOLATE_CHAIN], check=False)

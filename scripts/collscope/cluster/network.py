"""The emulated cluster's network: one network namespace per host, a bridge, shaped links.

    root namespace                         namespace hK
    cs-br 198.18.0.254 (bridge)
      +-- cs-hK  <==== veth pair ====>      eth0 198.18.0.{K+1}/24

Shaping (see cluster/README.md): every link between two hosts a and b has its own rate,
so each end of every veth pair has an HTB qdisc with one class per other host:

  - eth0 in hK (what hK sends): class "to hJ", chosen by destination address (u32 filter),
    rate = rate(K, J); with --delay, a netem qdisc under the class adds the one-way delay;
  - cs-hK on the bridge (what hK receives): class "from hJ", chosen by source address,
    rate = rate(J, K).

Traffic to or from the bridge's own address (mpirun, slurmctld in the root namespace)
matches no filter and is not shaped: it is the control plane, not a host-to-host link.
"""

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time

from .spec import BRIDGE_ADDRESS, SUBNET, host_address, host_name

BRIDGE = "cs-br"
HOST_DEVICE = "eth0"
TOOLS = ("ip", "tc", "nsenter", "unshare")
HTB_QUANTUM = 60000   # bytes per round among classes; set so the kernel does not warn (r2q)


class NetworkError(Exception):
    """A command that should have worked did not (exit 1)."""


class Unsupported(Exception):
    """This machine cannot host the cluster: a tool, a kernel feature or a permission is
    missing (exit 3)."""


def port_name(index):
    """The bridge's end of host index's veth pair, in the root namespace."""
    return f"cs-h{index}"


# ---- running commands ---------------------------------------------------------------------

def run(argv, stdin=None):
    """Runs a command; NetworkError with its first line of stderr when it fails."""
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr.strip() or result.stdout.strip() or "failed").splitlines()[0]
        raise NetworkError(f"{' '.join(argv[:6])}: {message}")
    return result.stdout


def tc_batch(commands, namespace=None):
    """Runs tc commands (one per line, without 'tc') in one process."""
    argv = ["tc"] + (["-n", namespace] if namespace else []) + ["-batch", "-"]
    run(argv, stdin="\n".join(commands) + "\n")


def namespaces():
    """The names of every network namespace `ip netns` knows."""
    out = run(["ip", "netns", "list"])
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def link_exists(name):
    return subprocess.run(["ip", "link", "show", "dev", name], capture_output=True).returncode == 0


def our_links():
    """The bridge and veth ends this module makes in the root namespace, where they exist."""
    out = run(["ip", "-o", "link", "show"])
    names = [m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)", out, re.M)]
    return [n for n in names if n == BRIDGE or re.fullmatch(r"cs-h\d+", n)]


# ---- can this machine do it? --------------------------------------------------------------

def check_tools():
    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    if missing:
        raise Unsupported(f"not installed: {' '.join(missing)} (apt-get install iproute2 util-linux)")


def probe_kernel(need_delay):
    """Makes a scratch namespace and tries what the cluster needs in it: the permission to
    create namespaces, veth pairs, HTB (and netem when a delay is asked for)."""
    name = f"cs-probe-{os.getpid()}"
    try:
        run(["ip", "netns", "add", name])
    except NetworkError as e:
        raise Unsupported(f"cannot create network namespaces ({e}); run as root "
                          "(CAP_SYS_ADMIN and CAP_NET_ADMIN)") from None
    try:
        try:
            run(["ip", "-n", name, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"])
            run(["tc", "-n", name, "qdisc", "add", "dev", "probe0", "root", "handle", "1:", "htb"])
        except NetworkError as e:
            raise Unsupported(f"the kernel cannot make veth pairs or HTB qdiscs ({e})") from None
        if need_delay:
            try:
                run(["tc", "-n", name, "qdisc", "add", "dev", "probe1", "root", "netem", "delay", "1ms"])
            except NetworkError:
                raise Unsupported("--delay needs the netem qdisc, which this kernel lacks "
                                  "(CONFIG_NET_SCH_NETEM); leave --delay out") from None
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def conflicts(spec):
    """Why the cluster cannot be made here, or None: a namespace or link of one of its names
    that is not ours (the caller has taken ours down), or an address of the subnet already
    in use in the root namespace."""
    owner = bridge_owner()
    elsewhere = f" (a cluster of {owner} is up)" if owner else ""
    taken = sorted(set(spec.names()) & set(namespaces()), key=lambda n: int(n[1:]))
    if taken:
        return f"network namespace(s) {' '.join(taken)} already exist{elsewhere}"
    if our_links():
        return f"link(s) {' '.join(our_links())} already exist{elsewhere}"
    out = run(["ip", "-o", "-4", "addr", "show"])
    for m in re.finditer(r"^\d+: (\S+)\s+inet (\S+)", out, re.M):
        if SUBNET.overlaps(ipaddress.ip_interface(m.group(2)).network):
            return f"{m.group(2)} on {m.group(1)} overlaps the cluster's subnet {SUBNET}"
    return None


def bridge_owner():
    """The cluster directory written on the bridge (its alias) when it was made."""
    if not link_exists(BRIDGE):
        return None
    m = re.search(r"^\s+alias (.*)$", run(["ip", "link", "show", "dev", BRIDGE]), re.M)
    return m.group(1).strip() if m else None


# ---- building -----------------------------------------------------------------------------

def build(spec, owner):
    """Makes the bridge, the hosts and the shaping. On an error the caller tears down."""
    make_bridge(owner)
    for k in range(spec.hosts):
        make_host(k)
    for k in range(spec.hosts):
        tc_batch(htb_commands(spec, k, HOST_DEVICE, "dst", with_delay=True), namespace=host_name(k))
        tc_batch(htb_commands(spec, k, port_name(k), "src", with_delay=False))


def make_bridge(owner):
    prefix = SUBNET.prefixlen
    run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "link", "set", BRIDGE, "alias", owner])
    run(["ip", "addr", "add", f"{BRIDGE_ADDRESS}/{prefix}", "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])


def make_host(k):
    name, port = host_name(k), port_name(k)
    run(["ip", "netns", "add", name])
    run(["ip", "link", "add", port, "type", "veth", "peer", "name", HOST_DEVICE, "netns", name])
    run(["ip", "link", "set", port, "master", BRIDGE, "up"])
    run(["ip", "-n", name, "addr", "add", f"{host_address(k)}/{SUBNET.prefixlen}", "dev", HOST_DEVICE])
    run(["ip", "-n", name, "link", "set", HOST_DEVICE, "up"])
    run(["ip", "-n", name, "link", "set", "lo", "up"])


def class_id(peer):
    return f"1:{peer + 1:x}"


def burst_bytes(bits):
    """What a class may send at once: 1 ms of its rate, at least 16 KiB. HTB's default
    (one timer tick) under-delivers at 1 Gbit/s with 64 KiB GSO packets (88% of the rate
    measured, against 93% with this)."""
    return max(bits // 8 // 1000, 16 * 1024)


def htb_commands(spec, k, device, match, with_delay):
    """tc commands for one end of host k's veth pair: an HTB class per other host, chosen
    by that host's address as `match` (dst: what k sends, src: what k receives)."""
    commands = [f"qdisc add dev {device} root handle 1: htb"]   # unclassified: not shaped
    for peer in range(spec.hosts):
        if peer == k:
            continue
        bits = spec.rate_between(k, peer)
        burst = burst_bytes(bits)
        commands.append(f"class add dev {device} parent 1: classid {class_id(peer)} htb "
                        f"rate {bits}bit ceil {bits}bit burst {burst} cburst {burst} "
                        f"quantum {HTB_QUANTUM}")
        commands.append(f"filter add dev {device} parent 1: protocol ip prio 1 u32 "
                        f"match ip {match} {host_address(peer)}/32 flowid {class_id(peer)}")
        if with_delay and spec.delay_us:
            commands.append(f"qdisc add dev {device} parent {class_id(peer)} handle {peer + 2:x}: "
                            f"netem delay {spec.delay_us}us limit 100000")
    return commands


# ---- tearing down -------------------------------------------------------------------------

def processes_in(namespace):
    """Pids of the processes in a network namespace (empty when it does not exist)."""
    result = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(p) for p in result.stdout.split() if p.isdigit()] if result.returncode == 0 else []


def stop_processes(names, grace=5.0):
    """TERM, then after `grace` seconds KILL, every process left in the namespaces: all of
    them were started on the cluster's hosts. Returns the pids still alive at the end."""
    pids = [p for name in names for p in processes_in(name) if p != os.getpid()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(alive(p) for p in pids):
            time.sleep(0.1)
        pids = [p for p in pids if alive(p)]
        if not pids:
            break
    return pids


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"   # a zombie is gone but not reaped
    except OSError:
        return False


def teardown(names):
    """Removes the hosts `names` (their processes, veth pairs, namespaces), then the bridge
    and any veth end of ours left in the root namespace. Idempotent."""
    stop_processes([n for n in names if n in namespaces()])
    for name in names:
        k = int(name[1:])
        if link_exists(port_name(k)):
            run(["ip", "link", "del", port_name(k)])   # takes the peer in the namespace too
        if name in namespaces():
            run(["ip", "netns", "del", name])
    for link in our_links():
        if link != BRIDGE:
            run(["ip", "link", "del", link])
    if link_exists(BRIDGE):
        run(["ip", "link", "del", BRIDGE])


def leftovers(names):
    """What of the cluster still exists: namespaces, links, processes (for `down` and tests)."""
    left = [f"namespace {n}" for n in names if n in namespaces()]
    left += [f"link {link}" for link in our_links()]
    left += [f"process {p} in {n}" for n in names for p in processes_in(n)]
    return left


# ---- describing ---------------------------------------------------------------------------

def class_stats(device, namespace=None):
    """{class id: (rate text, bytes sent)} of the HTB classes on a device."""
    argv = ["tc"] + (["-n", namespace] if namespace else []) + ["-s", "class", "show", "dev", device]
    result = subprocess.run(argv, capture_output=True, text=True)
    stats = {}
    pattern = r"class htb (\S+) .*? rate (\S+) .*?\n\s*Sent (\d+) bytes"
    for m in re.finditer(pattern, result.stdout, re.S):
        stats[m.group(1)] = (m.group(2), int(m.group(3)))
    return stats


def delays(device, namespace):
    """{parent class id: delay text} of the netem qdiscs on a device."""
    result = subprocess.run(["tc", "-n", namespace, "qdisc", "show", "dev", device],
                            capture_output=True, text=True)
    return {m.group(1): m.group(2)
            for m in re.finditer(r"qdisc netem \S+ parent (\S+) .*?delay (\S+)", result.stdout)}


def host_address_now(name):
    """The IPv4 address on eth0 in namespace `name`, or None."""
    result = subprocess.run(["ip", "-n", name, "-o", "-4", "addr", "show", "dev", HOST_DEVICE],
                            capture_output=True, text=True)
    m = re.search(r"inet (\S+)", result.stdout)
    return m.group(1) if m else None

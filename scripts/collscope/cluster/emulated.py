"""An emulated multi-host cluster on this machine: hosts h0 .. h{H-1} are network
namespaces joined by shaped links to a bridge, with a Slurm node on each (cluster/README.md).

    scripts/emulated-cluster up --hosts H [--rate RATE] [--delay DELAY]
                                [--link hA-hB:RATE]... [--host hA:RATE]...
                                [--slots N] [--no-slurm]
    scripts/emulated-cluster down      stop everything on the hosts, remove them
    scripts/emulated-cluster status    hosts, links with their shaping, daemons
    scripts/emulated-cluster env       the export lines again

`up` prints `export` lines on stdout, so that after

    eval "$(scripts/emulated-cluster up --hosts 4)"

`mpirun -np 8 --hostfile $COLLSCOPE_HOSTFILE PROGRAM` starts 2 ranks on each host (Open MPI
reaches the hosts through cluster/rsh-agent, over TCP on the cluster's subnet) and Slurm's
commands (sbatch, srun, scripts/sweep) use the cluster's 4 nodes. `down` prints `unset`
lines for the same variables (`eval "$(scripts/emulated-cluster down)"`).

RATE: 100mbit, 400mbit, 1gbit (line rate; TCP payload gets about 95.7% of it); DELAY:
0.2ms, 50us (one way, needs the kernel's netem qdisc). --rate is every link's rate (200mbit);
--host hA:RATE every link of hA; --link hA-hB:RATE the one link between hA and hB (wins);
--slots N the slots per host in the hostfile (2); --no-slurm: no Slurm daemons.

`up` when the cluster is already up with the same settings prints the export lines again
(exit 0); with other settings it refuses (exit 1): run `down` first. A half-built cluster
left by a killed `up` is taken down before building. Any failure while building takes down
everything built so far: there is never a half-built cluster.

Everything of the cluster but the namespaces and links lives in
${COLLSCOPE_CLUSTER_DIR:-/tmp/collscope-cluster} (cluster.json, hostfile, the Slurm
cluster in slurm/, its logs). COLLSCOPE_SLURM_CPUS: CPUs each Slurm node claims (8).

Exit status: 0 done (status: the cluster is up and whole); 1 failed (a conflict such as an
existing namespace h0 or address in 198.18.0.0/24, a command that failed, leftovers after
`down`; status: not up or not whole); 2 usage (bad flag, host, rate or delay);
3 this machine cannot: ip, tc, nsenter or unshare missing, Slurm or munge missing (without
--no-slurm), no permission to create network namespaces, no netem for --delay.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

from collscope.cluster import network
from collscope.cluster.spec import (BRIDGE_ADDRESS, DEFAULT_RATE, SUBNET, Spec, SpecError, format_rate,
                                    host_address, make_spec)
from collscope.paths import ROOT

DIR = os.path.realpath(os.environ.get("COLLSCOPE_CLUSTER_DIR") or "/tmp/collscope-cluster")
STATE = os.path.join(DIR, "cluster.json")
HOSTFILE = os.path.join(DIR, "hostfile")
SLURM_DIR = os.path.join(DIR, "slurm")
LOCAL_CLUSTER = os.path.join(ROOT, "slurm", "local-cluster")
HOST_EXEC = os.path.join(ROOT, "cluster", "host-exec")
RSH_AGENT = os.path.join(ROOT, "cluster", "rsh-agent")
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "scontrol")

OK, FAILED, USAGE, UNSUPPORTED = 0, 1, 2, 3


class UsageError(Exception):
    pass


class Failed(Exception):
    pass


def say(text):
    print(f"emulated-cluster: {text}", file=sys.stderr, flush=True)


# ---- the command line ---------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, exit 2 (argparse would print the usage too)
        raise UsageError(message)


def parse_args(argv):
    parser = Parser(prog="scripts/emulated-cluster", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    up = commands.add_parser("up", help="make the hosts, links and Slurm nodes")
    up.add_argument("--hosts", type=int, required=True, help="number of hosts, h0 .. h{H-1}")
    up.add_argument("--rate", default=DEFAULT_RATE, help=f"every link's rate ({DEFAULT_RATE})")
    up.add_argument("--delay", help="every link's one-way delay (none)")
    up.add_argument("--link", action="append", default=[], metavar="hA-hB:RATE",
                    help="the rate of the one link between hA and hB")
    up.add_argument("--host", action="append", default=[], metavar="hA:RATE",
                    help="the rate of every link of hA")
    up.add_argument("--slots", type=int, default=2, help="slots per host in the hostfile (2)")
    up.add_argument("--no-slurm", action="store_true", help="no Slurm daemons")
    for name, text in (("down", "remove everything"), ("status", "print the cluster"),
                       ("env", "print the export lines")):
        commands.add_parser(name, help=text)
    return parser.parse_args(argv)


# ---- state --------------------------------------------------------------------------------

def read_state():
    try:
        with open(STATE) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise Failed(f"cannot read {STATE}: {e}") from None


def write_state(state):
    os.makedirs(DIR, exist_ok=True)
    os.chmod(DIR, 0o755)   # munged wants the path to its socket searchable by all
    with open(STATE + ".tmp", "w") as f:
        json.dump(state, f, indent=1)
    os.replace(STATE + ".tmp", STATE)


def host_names(state):
    """The hosts of the state file and of the bridge's ports (a lost state file must not
    leave hosts behind)."""
    names = Spec.from_json(state["spec"]).names() if state else []
    for link in network.our_links():
        if link.startswith("cs-h"):
            names.append("h" + link[len("cs-h"):])
    return sorted(set(names), key=lambda n: int(n[1:]))


def exports(state):
    """The environment that points mpirun and Slurm at the cluster, as (name, value)."""
    subnet = str(SUBNET)
    pairs = [("COLLSCOPE_CLUSTER_DIR", DIR), ("COLLSCOPE_HOSTFILE", HOSTFILE),
             ("OMPI_MCA_plm_rsh_agent", RSH_AGENT),
             ("OMPI_MCA_pml", "ob1"),                   # not UCX's pml: see cluster/README.md
             ("OMPI_MCA_btl", "self,vader,tcp"),        # vader only within a host
             ("OMPI_MCA_btl_tcp_if_include", subnet),
             ("OMPI_MCA_oob_tcp_if_include", subnet),
             # Every host's ranks share this machine's cores: unbound, and yielding while
             # they wait, or a busy-polling rank holds the core its peer needs (cluster/README.md)
             ("OMPI_MCA_hwloc_base_binding_policy", "none"),
             ("OMPI_MCA_mpi_yield_when_idle", "1"),
             ("UCX_TLS", "tcp,self"),                   # UCX's shared memory would cross hosts
             ("UCX_NET_DEVICES", network.HOST_DEVICE)]
    if state.get("slurm"):
        pairs.append(("SLURM_CONF", os.path.join(SLURM_DIR, "etc", "slurm.conf")))
        # slurm/launch: mpirun inside the allocation, not srun --mpi=pmix (cluster/README.md)
        pairs.append(("COLLSCOPE_LAUNCHER", "mpirun"))
    return pairs


def print_exports(state):
    for name, value in exports(state):
        print(f"export {name}={shlex.quote(value)}")


def write_hostfile(spec, slots):
    with open(HOSTFILE, "w") as f:
        f.write(f"# scripts/emulated-cluster: {spec.hosts} hosts, {slots} slots each\n")
        for name in spec.names():
            f.write(f"{name} slots={slots}\n")


# ---- Slurm --------------------------------------------------------------------------------

def local_cluster(*args, show_output=False):
    """slurm/local-cluster on the cluster's Slurm directory; its stderr passes through, its
    stdout (the SLURM_CONF line, or status) only with show_output."""
    env = dict(os.environ, COLLSCOPE_SLURM_DIR=SLURM_DIR)
    return subprocess.run([LOCAL_CLUSTER, *args], env=env, text=True,
                          stdout=None if show_output else subprocess.DEVNULL)


def slurm_up(spec):
    nodes = [a for k in range(spec.hosts) for a in ("--node", f"h{k}={host_address(k)}")]
    # --exclusive: a job has its hosts to itself (see cluster/README.md, "Slurm")
    result = local_cluster("up", *nodes, "--controller", BRIDGE_ADDRESS, "--node-exec", HOST_EXEC,
                           "--exclusive")
    if result.returncode != 0:
        raise Failed(f"the Slurm cluster did not come up (slurm/local-cluster: exit {result.returncode})")


def slurm_down():
    """Also without the Slurm directory: local-cluster finds daemons by their environment."""
    if local_cluster("down").returncode != 0:
        raise Failed("slurm/local-cluster down failed")


# ---- commands -----------------------------------------------------------------------------

def settings(args, spec):
    return {"spec": spec.to_json(), "slots": args.slots, "slurm": not args.no_slurm}


def is_up(state):
    return (state is not None and state.get("status") == "up"
            and all(n in network.namespaces() for n in Spec.from_json(state["spec"]).names()))


def cmd_up(args):
    try:
        spec = make_spec(args.hosts, args.rate, args.delay, args.link, args.host)
    except SpecError as e:
        raise UsageError(str(e)) from None
    if args.slots < 1:
        raise UsageError(f"--slots must be at least 1, got {args.slots}")
    network.check_tools()
    missing = [t for t in SLURM_TOOLS if not shutil.which(t)] if not args.no_slurm else []
    if missing:
        raise network.Unsupported(f"not installed: {' '.join(missing)} (apt-get install slurmctld "
                                  "slurmd slurm-client munge, or up --no-slurm)")
    wanted, state = settings(args, spec), read_state()
    if is_up(state):
        if {k: state[k] for k in wanted} != wanted:
            raise Failed(f"already up in {DIR} with other settings ({describe(state)}); "
                         "run `scripts/emulated-cluster down` first")
        say(f"already up in {DIR} ({describe(state)})")
        print_exports(state)
        return OK
    if state is not None or network.bridge_owner() == DIR:
        say("taking down what a killed or failed `up` left")
        take_down(state)
    network.probe_kernel(need_delay=spec.delay_us > 0)
    conflict = network.conflicts(spec)
    if conflict:
        raise Failed(conflict)
    return build(wanted, spec)


def build(state, spec):
    """Writes the intent first, so that `down` (or the rollback here) knows every name,
    then builds; any failure or signal takes everything down again."""
    start = time.time()
    state["status"] = "building"
    write_state(state)
    try:
        say(f"making {spec.hosts} hosts in {SUBNET} ({describe(state)})")
        network.build(spec, DIR)
        write_hostfile(spec, state["slots"])
        if state["slurm"]:
            slurm_up(spec)
        state["status"] = "up"
        write_state(state)
    except BaseException as e:   # Ctrl-C and SIGTERM (KeyboardInterrupt) included: roll back
        reason = str(e) or type(e).__name__
        say(f"up failed ({reason}); taking down what was built")
        take_down(state)
        if isinstance(e, (network.NetworkError, Failed)):
            raise Failed(reason) from None
        raise
    say(f"up: {spec.hosts} hosts in {time.time() - start:.1f}s; status: scripts/emulated-cluster status")
    print_exports(state)
    return OK


def take_down(state):
    """Stops Slurm, the hosts' processes, removes namespaces, links and the state. Raises
    Failed when something is left."""
    names = host_names(state)
    slurm_down()
    network.teardown(names)
    left = network.leftovers(names)
    if left:
        raise Failed(f"still there after down: {', '.join(left)}")
    for path in (STATE, HOSTFILE):
        if os.path.exists(path):
            os.unlink(path)


def cmd_down(_args):
    start, state = time.time(), read_state()
    if state is None and network.bridge_owner() != DIR:
        say(f"nothing to take down in {DIR}")
    else:
        take_down(state)
        say(f"down in {time.time() - start:.1f}s: no namespace, link, qdisc or process of the "
            "cluster is left")
    names = [name for name, _ in exports({"slurm": True})]
    print(f"unset {' '.join(names)}")
    return OK


def describe(state):
    spec = Spec.from_json(state["spec"])
    parts = [f"{spec.hosts} hosts", f"rate {format_rate(spec.rate_bits)}"]
    if spec.delay_us:
        parts.append(f"delay {spec.delay_us}us")
    parts += [f"link h{a}-h{b}:{format_rate(bits)}" for (a, b), bits in sorted(spec.link_bits.items())]
    parts += [f"host h{h}:{format_rate(bits)}" for h, bits in sorted(spec.host_bits.items())]
    parts.append(f"{state['slots']} slots" + ("" if state["slurm"] else ", no Slurm"))
    return ", ".join(parts)


def cmd_status(_args):
    state = read_state()
    if not is_up(state):
        print(f"not up ({DIR}: {'no cluster' if state is None else state.get('status')})")
        return FAILED
    spec = Spec.from_json(state["spec"])
    print(f"directory: {DIR}\ncluster:   {describe(state)}\nbridge:    {network.BRIDGE} {BRIDGE_ADDRESS}")
    whole = print_hosts(spec) and print_links(spec)
    if state["slurm"]:
        print("slurm:")
        sys.stdout.flush()
        whole = local_cluster("status", show_output=True).returncode == 0 and whole
    return OK if whole else FAILED


def print_hosts(spec):
    whole = True
    print("hosts (address on eth0, processes running there):")
    for k, name in enumerate(spec.names()):
        address = network.host_address_now(name)
        whole = whole and address == f"{host_address(k)}/{SUBNET.prefixlen}"
        print(f"  {name:<4} {address or 'NO ADDRESS':<16} {len(network.processes_in(name))}")
    return whole


def print_links(spec):
    """Each link: its rate in the description, the rate of the HTB class at the sending
    and at the receiving end of each direction (send|receive), bytes sent each way."""
    sent = {k: network.class_stats(network.HOST_DEVICE, f"h{k}") for k in range(spec.hosts)}
    received = {k: network.class_stats(network.port_name(k)) for k in range(spec.hosts)}
    delay = {k: network.delays(network.HOST_DEVICE, f"h{k}") for k in range(spec.hosts)}
    print("links (rate; the HTB class's rate at the sending|receiving end of each direction; "
          "bytes sent):")
    print(f"  {'link':<9} {'rate':>8} {'a>b send|recv':>17} {'b>a send|recv':>17} "
          f"{'bytes a>b':>12} {'bytes b>a':>12}{'  delay a>b b>a' if spec.delay_us else ''}")
    whole = True
    for a, b in spec.pairs():
        ends = [sent[a].get(network.class_id(b)), received[b].get(network.class_id(a)),
                sent[b].get(network.class_id(a)), received[a].get(network.class_id(b))]
        whole = whole and None not in ends
        rates = [end[0] if end else "MISSING" for end in ends]
        line = (f"  h{a}-h{b:<6} {format_rate(spec.rate_between(a, b)):>8} "
                f"{rates[0] + '|' + rates[1]:>17} {rates[2] + '|' + rates[3]:>17} "
                f"{ends[0][1] if ends[0] else 0:>12} {ends[2][1] if ends[2] else 0:>12}")
        if spec.delay_us:
            line += (f"  {delay[a].get(network.class_id(b), 'MISSING')} "
                     f"{delay[b].get(network.class_id(a), 'MISSING')}")
        print(line)
    return whole


def cmd_env(_args):
    state = read_state()
    if not is_up(state):
        say(f"not up in {DIR}")
        return FAILED
    print_exports(state)
    return OK


def interrupted(_number, _frame):
    raise KeyboardInterrupt   # handled as Ctrl-C: `up` takes down what it built


def main(argv):
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        args = parse_args(argv)
        return {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env}[args.command](args)
    except UsageError as e:
        say(f"error: {e} (scripts/emulated-cluster --help)")
        return USAGE
    except network.Unsupported as e:
        say(f"error: {e}")
        return UNSUPPORTED
    except (Failed, network.NetworkError) as e:
        say(f"error: {e}")
        return FAILED
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except BrokenPipeError:   # `status | head`: stop quietly (the Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED

"""What an emulated cluster is: its hosts, their addresses and the rate of every link.

Pure data and parsing, no side effects: scripts/emulated-cluster builds the cluster from a
Spec (network.py), keeps it in <dir>/cluster.json and reads it back for `status`
and `down`.

Hosts h0 .. h{H-1}; host hK has address 198.18.0.{K+1}/24 (198.18.0.0/15 is reserved
for network benchmarking, RFC 2544) and the bridge, in the root network namespace, has
198.18.0.254. Every pair of hosts is one link with its own rate:

    --link hA-hB:RATE    that one link (wins over everything else)
    --host hA:RATE       every link of hA (a link between two such hosts: the lower rate)
    --rate RATE          every other link (DEFAULT_RATE)

and every link has the same one-way delay (--delay, none by default).
"""

import ipaddress
import re
from dataclasses import dataclass, field

SUBNET = ipaddress.ip_network("198.18.0.0/24")
BRIDGE_ADDRESS = "198.18.0.254"
MAX_HOSTS = 64
DEFAULT_RATE = "200mbit"
MIN_RATE_BITS = 1_000_000          # below 1 Mbit/s a test would wait minutes for a few MiB
MAX_RATE_BITS = 10_000_000_000     # above this the shaping no longer decides anything
MAX_DELAY_US = 1_000_000

RATE_UNITS = {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
DELAY_UNITS = {"us": 1, "ms": 1000, "s": 1_000_000}


class SpecError(ValueError):
    """A description that cannot be a cluster (usage error: exit 2)."""


def parse_rate(text):
    """'100mbit', '1.5gbit', '400kbit' -> bits per second (int). Bits only: tc reads
    'mbps' as megabytes, a trap not worth offering."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)", text.strip().lower())
    if not m:
        raise SpecError(f"bad rate '{text}' (expected e.g. 100mbit, 400mbit, 1gbit)")
    bits = round(float(m.group(1)) * RATE_UNITS[m.group(2)])
    if not MIN_RATE_BITS <= bits <= MAX_RATE_BITS:
        raise SpecError(f"rate '{text}' out of range (1mbit .. 10gbit)")
    return bits


def parse_delay(text):
    """'0.2ms', '50us', '1ms' -> microseconds (int, > 0)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s)", text.strip().lower())
    if not m:
        raise SpecError(f"bad delay '{text}' (expected e.g. 0.2ms, 50us)")
    us = round(float(m.group(1)) * DELAY_UNITS[m.group(2)])
    if not 1 <= us <= MAX_DELAY_US:
        raise SpecError(f"delay '{text}' out of range (1us .. 1s)")
    return us


def format_rate(bits):
    """Bits per second in the largest unit that keeps it whole: 200mbit, 1gbit, 1500kbit."""
    for unit, scale in sorted(RATE_UNITS.items(), key=lambda item: -item[1]):
        if bits % scale == 0:
            return f"{bits // scale}{unit}"
    return f"{bits}bit"


def host_name(index):
    return f"h{index}"


def host_address(index):
    return str(SUBNET.network_address + index + 1)


@dataclass
class Spec:
    hosts: int
    rate_bits: int = parse_rate(DEFAULT_RATE)
    delay_us: int = 0
    link_bits: dict = field(default_factory=dict)   # (a, b) with a < b -> bits/s
    host_bits: dict = field(default_factory=dict)   # host index -> bits/s

    def names(self):
        return [host_name(k) for k in range(self.hosts)]

    def pairs(self):
        return [(a, b) for a in range(self.hosts) for b in range(a + 1, self.hosts)]

    def rate_between(self, a, b):
        """The rate of the link between hosts a and b, in bits per second."""
        pair = (min(a, b), max(a, b))
        if pair in self.link_bits:
            return self.link_bits[pair]
        limits = [self.host_bits[h] for h in pair if h in self.host_bits]
        return min(limits) if limits else self.rate_bits

    def to_json(self):
        return {
            "hosts": self.hosts, "rate_bits": self.rate_bits, "delay_us": self.delay_us,
            "links": [[a, b, bits] for (a, b), bits in sorted(self.link_bits.items())],
            "host_rates": [[h, bits] for h, bits in sorted(self.host_bits.items())],
        }

    @staticmethod
    def from_json(data):
        return Spec(hosts=data["hosts"], rate_bits=data["rate_bits"], delay_us=data["delay_us"],
                    link_bits={(a, b): bits for a, b, bits in data["links"]},
                    host_bits={h: bits for h, bits in data["host_rates"]})


def parse_host(text, hosts, what):
    """'h3' -> 3, when the cluster has that host."""
    m = re.fullmatch(r"h(\d+)", text.strip())
    if not m:
        raise SpecError(f"bad host '{text}' in {what} (expected h0 .. h{hosts - 1})")
    index = int(m.group(1))
    if index >= hosts:
        raise SpecError(f"unknown host '{text}' in {what}: the cluster has h0 .. h{hosts - 1}")
    return index


def parse_link(text, hosts):
    """'h1-h2:50mbit' -> ((1, 2), bits)."""
    ends, colon, rate = text.partition(":")
    a, dash, b = ends.partition("-")
    if not colon or not dash:
        raise SpecError(f"bad --link '{text}' (expected hA-hB:RATE, e.g. h1-h2:50mbit)")
    a, b = parse_host(a, hosts, f"--link {text}"), parse_host(b, hosts, f"--link {text}")
    if a == b:
        raise SpecError(f"--link {text} joins a host to itself")
    return (min(a, b), max(a, b)), parse_rate(rate)


def parse_host_rate(text, hosts):
    """'h3:100mbit' -> (3, bits)."""
    host, colon, rate = text.partition(":")
    if not colon:
        raise SpecError(f"bad --host '{text}' (expected hA:RATE, e.g. h3:100mbit)")
    return parse_host(host, hosts, f"--host {text}"), parse_rate(rate)


def make_spec(hosts, rate=DEFAULT_RATE, delay=None, links=(), host_rates=()):
    """A Spec from the command line's texts; SpecError names the first bad one."""
    if not 1 <= hosts <= MAX_HOSTS:
        raise SpecError(f"--hosts must be 1 .. {MAX_HOSTS}, got {hosts}")
    spec = Spec(hosts=hosts, rate_bits=parse_rate(rate),
                delay_us=parse_delay(delay) if delay else 0)
    for text in links:
        pair, bits = parse_link(text, hosts)
        if pair in spec.link_bits:
            raise SpecError(f"--link h{pair[0]}-h{pair[1]} given twice")
        spec.link_bits[pair] = bits
    for text in host_rates:
        host, bits = parse_host_rate(text, hosts)
        if host in spec.host_bits:
            raise SpecError(f"--host h{host} given twice")
        spec.host_bits[host] = bits
    return spec

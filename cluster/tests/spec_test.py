#!/usr/bin/python3
"""collscope/cluster/spec.py without a cluster (ctest cluster_spec): rates, delays, hosts, addresses and
which rate each link gets. Runs everywhere (no namespaces needed)."""

import unittest

from collscope.cluster.spec import (Spec, SpecError, format_rate, host_address, make_spec, parse_delay,
                                    parse_rate)


class Rates(unittest.TestCase):
    def test_units(self):
        self.assertEqual(parse_rate("100mbit"), 100_000_000)
        self.assertEqual(parse_rate("1gbit"), 1_000_000_000)
        self.assertEqual(parse_rate("1.5Gbit"), 1_500_000_000)
        self.assertEqual(parse_rate("2500kbit"), 2_500_000)

    def test_refused(self):
        for text in ("100", "100mbps", "100MB", "fast", "-1mbit", "1e3mbit", "", "0.5mbit", "20gbit"):
            with self.assertRaises(SpecError, msg=text):
                parse_rate(text)

    def test_format(self):
        self.assertEqual(format_rate(200_000_000), "200mbit")
        self.assertEqual(format_rate(1_000_000_000), "1gbit")
        self.assertEqual(format_rate(1_500_000_000), "1500mbit")
        self.assertEqual(format_rate(2_500_000), "2500kbit")


class Delays(unittest.TestCase):
    def test_units(self):
        self.assertEqual(parse_delay("0.2ms"), 200)
        self.assertEqual(parse_delay("50us"), 50)
        self.assertEqual(parse_delay("1s"), 1_000_000)

    def test_refused(self):
        for text in ("2", "1ks", "ms", "0us", "2s", "-1ms"):
            with self.assertRaises(SpecError, msg=text):
                parse_delay(text)


class Links(unittest.TestCase):
    def test_addresses(self):
        self.assertEqual([host_address(k) for k in (0, 1, 63)], ["198.18.0.1", "198.18.0.2", "198.18.0.64"])

    def test_default_rate_everywhere(self):
        spec = make_spec(4, "400mbit")
        self.assertEqual({spec.rate_between(a, b) for a, b in spec.pairs()}, {400_000_000})
        self.assertEqual(len(spec.pairs()), 6)

    def test_link_host_and_default(self):
        spec = make_spec(5, "200mbit", links=["h2-h1:50mbit"], host_rates=["h3:100mbit", "h4:300mbit"])
        rates = {(a, b): spec.rate_between(a, b) // 1_000_000 for a, b in spec.pairs()}
        self.assertEqual(rates, {(0, 1): 200, (0, 2): 200, (0, 3): 100, (0, 4): 300, (1, 2): 50,
                                 (1, 3): 100, (1, 4): 300, (2, 3): 100, (2, 4): 300, (3, 4): 100})
        self.assertEqual(spec.rate_between(2, 1), spec.rate_between(1, 2))

    def test_link_wins_over_host(self):
        spec = make_spec(4, links=["h0-h3:1gbit"], host_rates=["h3:100mbit"])
        self.assertEqual(spec.rate_between(3, 0), 1_000_000_000)
        self.assertEqual(spec.rate_between(3, 1), 100_000_000)

    def test_refused(self):
        bad = [dict(hosts=0), dict(hosts=65), dict(hosts=4, links=["h1-h4:1mbit"]),
               dict(hosts=4, links=["h1-h1:1mbit"]), dict(hosts=4, links=["h1h2:1mbit"]),
               dict(hosts=4, links=["h1-h2:1mbit", "h2-h1:2mbit"]), dict(hosts=4, host_rates=["h9:1mbit"]),
               dict(hosts=4, host_rates=["h1:1mbit", "h1:2mbit"]), dict(hosts=4, delay="3")]
        for kwargs in bad:
            with self.assertRaises(SpecError, msg=str(kwargs)):
                make_spec(**kwargs)

    def test_json_round_trip(self):
        spec = make_spec(4, "300mbit", "0.2ms", ["h0-h1:10mbit"], ["h2:20mbit"])
        self.assertEqual(Spec.from_json(spec.to_json()), spec)


if __name__ == "__main__":
    unittest.main()

"""scripts/collscope/sizes.py against the shared table of cases
(collectives/core/size_grammar.tsv) that the C++ grammar's test reads too."""

import os
import unittest

from collscope.sizes import SizeRefused, parse_size

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "collectives", "core",
                     "size_grammar.tsv")


def read_cases():
    cases = []
    with open(TABLE, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            close = line.index('"', 1)
            cases.append((n, line[1:close], line[close + 1:].strip()))
    return cases


def outcome(text):
    try:
        return str(parse_size(text))
    except SizeRefused as e:
        return e.kind


class SizeGrammar(unittest.TestCase):
    def test_every_case_of_the_shared_table(self):
        cases = read_cases()
        self.assertGreaterEqual(len(cases), 30)
        for n, text, want in cases:
            with self.subTest(line=n, text=text):
                self.assertEqual(outcome(text), want)

    def test_non_ascii_digits_are_refused(self):
        self.assertEqual(outcome("\u0661\u0662"), "malformed")  # Arabic-Indic 12


if __name__ == "__main__":
    unittest.main()

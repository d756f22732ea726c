"""The one size grammar of collscope's command lines, as the C++ binaries read it
(collectives/include/collscope/size_text.hpp): decimal digits, then an optional unit in any
case (b; k, kb, kib; m, mb, mib; g, gb, gib; t, tb, tib), every unit a binary multiple.
No sign, space or fraction. collectives/core/size_grammar.tsv holds the cases both sides'
tests read."""

import re

_SIZE = re.compile(r"([0-9]+)(?:([kmgt])(?:i?b)?|b)?", re.IGNORECASE)
_SHIFT = {None: 0, "k": 10, "m": 20, "g": 30, "t": 40}
_MAX = (1 << 64) - 1


class SizeRefused(ValueError):
    """`kind` is "malformed", "signed" or "too_large", as the C++ SizeRefusal."""

    def __init__(self, text, kind):
        super().__init__(f"not a size: '{text}' ({kind})")
        self.text, self.kind = text, kind


def parse_size(text):
    """The bytes `text` names; raises SizeRefused."""
    if text[:1] in ("-", "+"):
        raise SizeRefused(text, "signed")
    m = _SIZE.fullmatch(text)
    # Python's \\d and int() take other scripts' digits; the grammar is ASCII only.
    if not m or not text.isascii():
        raise SizeRefused(text, "malformed")
    value = int(m.group(1)) << _SHIFT[m.group(2) and m.group(2).lower()]
    if value > _MAX:
        raise SizeRefused(text, "too_large")
    return value

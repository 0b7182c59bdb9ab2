"""What makes a value of each counter kind unique, and how an ID is read back.

Every acknowledged value is reduced to an order key (what the kind promises
to increase) and a unique key (what the kind promises never repeats,
docs/counter-kinds.md):

- cyclic: the (timestamp micros, value) pair;
- periodic: the (period, value) pair;
- autoinc, segment, snowflake: the value.

Formatted IDs are read back into the same keys, so that an ID handed out by
`next` and a raw value handed out by `seq` of one counter are compared.
"""

import calendar
import re

# The check-digit policy (guest/check-digit) that the soak swaps in live:
# PREFIX + yyyyMMddTHHmmss.ffffffZ-SSS-C.
CHECK_DIGIT = re.compile(r"^(\d{8})T(\d{6})\.(\d{6})Z-(\d{3})-(\d)$")

# The counters the soak makes, one per kind of counter and a striped one (an
# autoinc counter over 3 lanes, issue 34), named by what the checker calls
# their kind.
KINDS = ("cyclic", "autoinc", "segment", "snowflake", "periodic", "striped")

# One more, apart from KINDS (its takers name two deployments): a striped
# autoinc counter whose lanes span the soak's two database servers,
# deployments eu and us.
SPANNING = "spanning"

# How each is created (`idmint counter create NAME ...`).
CREATE = {
    "cyclic": ["--kind", "cyclic"],
    "autoinc": ["--kind", "autoinc"],
    "segment": ["--kind", "segment", "--step", "100"],
    "snowflake": ["--kind", "snowflake"],
    "periodic": ["--kind", "periodic", "--policy", "builtin:decimal"],
    "striped": ["--kind", "autoinc", "--stripes", "3"],
    SPANNING: ["--kind", "autoinc", "--stripes", "eu:2,us:2"],
}

# Values unique and in no order at all: a striped counter's lanes interleave
# (docs/counter-kinds.md), even within one process, and across deployments.
UNORDERED = ("striped", SPANNING)

# The built-in policy each kind's IDs are formatted with in the soak.
POLICY = {
    "cyclic": "builtin:default",
    "autoinc": "builtin:decimal",
    "segment": "builtin:decimal",
    "snowflake": "builtin:base32",
    "periodic": "builtin:decimal",
    "striped": "builtin:decimal",
    SPANNING: "builtin:decimal",
}

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class UnreadableId(ValueError):
    """An ID that does not read back as the kind's policy writes it."""


def parse_id(kind, prefix, text):
    """The raw key of a formatted ID: an int, or a [first, value] pair."""
    if not text.startswith(prefix):
        raise UnreadableId(f"{text!r} does not start with {prefix!r}")
    rest = text[len(prefix):]
    if kind == "cyclic":
        swapped = CHECK_DIGIT.match(rest)
        if swapped:
            date, clock, micros, sequence, _ = swapped.groups()
            rest = date + clock + micros + sequence[1:] if sequence[0] == "0" else ""
        # yyyyMMddHHmmss, 6 digits of microseconds, 2 of sequence (UTC).
        if len(rest) != 22 or not rest.isdigit():
            raise UnreadableId(f"{text!r}: not 22 digits after the prefix")
        seconds = calendar.timegm((int(rest[0:4]), int(rest[4:6]), int(rest[6:8]),
                                   int(rest[8:10]), int(rest[10:12]), int(rest[12:14])))
        return [seconds * 1_000_000 + int(rest[14:20]), int(rest[20:22])]
    if kind == "periodic":
        period, _, digits = rest.rpartition("-")
        if not period or not digits.isdigit():
            raise UnreadableId(f"{text!r}: not PERIOD-DIGITS after the prefix")
        return [period, int(digits)]
    if kind == "snowflake":
        value = 0
        for char in rest:
            digit = CROCKFORD.find(char)
            if digit < 0:
                raise UnreadableId(f"{text!r}: {char!r} is not base32")
            value = value * 32 + digit
        return value
    if not rest.isdigit():
        raise UnreadableId(f"{text!r}: not digits after the prefix")
    return int(rest)


def parse_seq_line(kind, line):
    """The raw key of one line of `idmint seq` (cyclic prints no timestamp:
    its bare values are not unique, so it is not used)."""
    if kind == "periodic":
        period, value = line.split()
        return [period, int(value)]
    return int(line)


def unique_key(kind, counter, raw):
    """A hashable key, equal for two handouts of the same value."""
    if isinstance(raw, list):
        return (counter, raw[0], raw[1])
    return (counter, raw)


def order_key(raw):
    """What the kind promises to increase, comparable within one counter."""
    return tuple(raw) if isinstance(raw, list) else (raw,)

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
import json
import re

# The check-digit policy (guest/check-digit) that the soak swaps in live:
# PREFIX + yyyyMMddTHHmmss.ffffffZ-SSS-C.
CHECK_DIGIT = re.compile(r"^(\d{8})T(\d{6})\.(\d{6})Z-(\d{3})-(\d)$")

# The counters the soak makes, one per kind of counter and a striped one (an
# autoinc counter over 3 lanes, issue 34), named by what the checker calls
# their kind.
KINDS = ("cyclic", "autoinc", "segment", "snowflake", "periodic", "striped")

# Two more, apart from KINDS (their takers name two deployments): a striped
# autoinc counter whose lanes span the soak's two database servers,
# deployments eu and us, and a striped cyclic one across the same two.
SPANNING = "spanning"
SPANNING_CYCLIC = "spanning-cyclic"
SPANNING_KINDS = (SPANNING, SPANNING_CYCLIC)

# The kinds whose values are a cyclic counter's: each with a timestamp, the
# (timestamp, value) pair unique, the value within 0..=maxval.
CYCLIC_KINDS = ("cyclic", SPANNING_CYCLIC)
# Their maxval (the soak's cyclic counters are all created with --max 99).
MAXVAL = {"cyclic": 99, SPANNING_CYCLIC: 99}

# Kinds whose formatted IDs are recorded as printed, beside the keys read
# back from them, so that the checker also holds the IDs' text distinct.
IDS_RECORDED = (SPANNING_CYCLIC,)

# How each is created (`idmint counter create NAME ...`).
CREATE = {
    "cyclic": ["--kind", "cyclic", "--max", str(MAXVAL["cyclic"])],
    "autoinc": ["--kind", "autoinc"],
    "segment": ["--kind", "segment", "--step", "100"],
    "snowflake": ["--kind", "snowflake"],
    "periodic": ["--kind", "periodic", "--policy", "builtin:decimal"],
    "striped": ["--kind", "autoinc", "--stripes", "3"],
    SPANNING: ["--kind", "autoinc", "--stripes", "eu:2,us:2"],
    SPANNING_CYCLIC: ["--kind", "cyclic", "--max", str(MAXVAL[SPANNING_CYCLIC]),
                      "--stripes", "eu:2,us:2"],
}

# Values unique and in no order at all: a striped counter's lanes interleave
# (docs/counter-kinds.md), even within one process, and across deployments
# (a striped cyclic counter's pairs too: each lane's timestamps its own).
UNORDERED = ("striped", SPANNING, SPANNING_CYCLIC)

# The built-in policy each kind's IDs are formatted with in the soak.
POLICY = {
    "cyclic": "builtin:default",
    "autoinc": "builtin:decimal",
    "segment": "builtin:decimal",
    "snowflake": "builtin:base32",
    "periodic": "builtin:decimal",
    "striped": "builtin:decimal",
    SPANNING: "builtin:decimal",
    SPANNING_CYCLIC: "builtin:default",
}

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class UnreadableId(ValueError):
    """An ID that does not read back as the kind's policy writes it."""


def parse_id(kind, prefix, text):
    """The raw key of a formatted ID: an int, or a [first, value] pair."""
    if not text.startswith(prefix):
        raise UnreadableId(f"{text!r} does not start with {prefix!r}")
    rest = text[len(prefix):]
    if kind in CYCLIC_KINDS:
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
    """The raw key of one line of `idmint seq` (`--json` for the striped
    cyclic counter: {"counter", "value", "timestamp_micros"}, the pair; the
    unstriped cyclic counter's `cli-seq` path is left out)."""
    if kind == SPANNING_CYCLIC:
        item = json.loads(line)
        if not isinstance(item, dict):
            raise ValueError(f"{line!r} is not a JSON object")
        return [int(item["timestamp_micros"]), int(item["value"])]
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

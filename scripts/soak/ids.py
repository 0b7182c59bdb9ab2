"""What makes a value of each counter kind unique, and how an ID is read back.

Every acknowledged value is reduced to an order key (what the kind promises
to increase) and a unique key (what the kind promises never repeats,
docs/counter-kinds.md):

- cyclic: the (timestamp micros, value) pair;
- periodic: the (period, value) pair;
- autoinc, segment, snowflake: the value.

The counters striped across two deployments are checked as their base kind
(BASE_KIND): a striped periodic counter's keys are (period, value) pairs, a
striped snowflake counter's its values.

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

# Four more, apart from KINDS (their takers name two deployments): a striped
# autoinc counter whose lanes span the soak's two database servers,
# deployments eu and us, and a striped cyclic, snowflake and periodic one
# across the same two.
SPANNING = "spanning"
SPANNING_CYCLIC = "spanning-cyclic"
SPANNING_SNOWFLAKE = "spanning-snowflake"
SPANNING_PERIODIC = "spanning-periodic"
SPANNING_KINDS = (SPANNING, SPANNING_CYCLIC, SPANNING_SNOWFLAKE, SPANNING_PERIODIC)

# The counter kind of each spanning one (what `counter create --kind` says,
# and how its values are read and keyed).
BASE_KIND = {SPANNING: "autoinc", SPANNING_CYCLIC: "cyclic", SPANNING_SNOWFLAKE: "snowflake",
             SPANNING_PERIODIC: "periodic"}


def base_kind(kind):
    """The counter kind a kind of the soak's names: itself, or a spanning
    counter's (BASE_KIND); the striped counter's is autoinc."""
    return BASE_KIND.get(kind, "autoinc" if kind == "striped" else kind)


# The worker lease's time to live (s) that the spanning snowflake counter's
# takers and serve-3 are given (`--lease-ttl`): short, so that a taker killed
# or cut off frees its worker id soon, a lease is renewed every second, and a
# change of stripes starts its new generation little ahead of the clock. The
# unstriped snowflake counter's takers keep the default, 10.
SPANNING_LEASE_TTL = "3"

# The kinds whose values are a cyclic counter's: each with a timestamp, the
# (timestamp, value) pair unique, the value within 0..=maxval.
CYCLIC_KINDS = ("cyclic", SPANNING_CYCLIC)
# Their maxval (the soak's cyclic counters are all created with --max 99).
MAXVAL = {"cyclic": 99, SPANNING_CYCLIC: 99}

# Kinds whose formatted IDs are recorded as printed, beside the keys read
# back from them, so that the checker also holds the IDs' text distinct.
IDS_RECORDED = (SPANNING_CYCLIC, SPANNING_SNOWFLAKE, SPANNING_PERIODIC)

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
    # Four lanes, each leasing the worker ids of its residue (w % 4).
    SPANNING_SNOWFLAKE: ["--kind", "snowflake", "--stripes", "eu:2,us:2"],
    # Yearly periods in UTC (the defaults), values from 1 in each period.
    SPANNING_PERIODIC: ["--kind", "periodic", "--policy", "builtin:decimal",
                        "--stripes", "eu:2,us:2"],
}

# Values unique and in no order at all: a striped counter's lanes interleave
# (docs/counter-kinds.md), even within one process, and across deployments
# (a striped cyclic counter's pairs too: each lane's timestamps its own; a
# striped periodic counter's values within a period; a striped snowflake
# counter's IDs, whose process may move to another lane's worker id).
UNORDERED = ("striped",) + SPANNING_KINDS

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
    SPANNING_SNOWFLAKE: "builtin:base32",
    SPANNING_PERIODIC: "builtin:decimal",
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
    if base_kind(kind) == "periodic":
        period, _, digits = rest.rpartition("-")
        if not period or not digits.isdigit():
            raise UnreadableId(f"{text!r}: not PERIOD-DIGITS after the prefix")
        return [period, int(digits)]
    if base_kind(kind) == "snowflake":
        if len(rest) != 13:
            raise UnreadableId(f"{text!r}: not 13 base32 characters after the prefix")
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
    unstriped cyclic counter's `cli-seq` path is left out; `PERIOD VALUE`
    for a periodic counter, striped or not)."""
    if kind == SPANNING_CYCLIC:
        item = json.loads(line)
        if not isinstance(item, dict):
            raise ValueError(f"{line!r} is not a JSON object")
        return [int(item["timestamp_micros"]), int(item["value"])]
    if base_kind(kind) == "periodic":
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

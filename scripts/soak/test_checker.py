"""The checker against logs with planted violations: each must make the run
invalid and be named as the first example. Run by `scripts/soak.sh
--self-test`."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import check  # noqa: E402
from ids import (CROCKFORD, SPANNING, SPANNING_CYCLIC, SPANNING_PERIODIC,  # noqa: E402
                 SPANNING_SNOWFLAKE, UnreadableId, parse_id, parse_seq_line)
from report import table  # noqa: E402
from schedule import FAULTS, make_schedule  # noqa: E402
from workload import _scope  # noqa: E402

START = 1000.0


def attempt(path, kind, counter, t, raw, status="ok", n=None, scope=None):
    return {"path": path, "kind": kind, "counter": counter, "t0": t - 0.1, "t1": t,
            "status": status, "n": len(raw) if n is None else n, "raw": raw, "scope": scope}


def clean_attempts():
    return [
        attempt("cli-seq", "autoinc", "ai", START + 1, [1, 2, 3], scope="cli"),
        attempt("http-values", "autoinc", "ai", START + 2, [4, 5], scope="http"),
        attempt("cli-seq", "autoinc", "ai", START + 3, [6], scope="cli"),
        attempt("stream", "cyclic", "cy", START + 1, [[5000, 98], [5000, 99]], scope="s"),
        attempt("stream", "cyclic", "cy", START + 2, [[5001, 0]], scope="s"),
        attempt("http-values", "periodic", "pd", START + 2, [["2026", 1], ["2026", 2]]),
        attempt("cli-seq", "segment", "sg", START + 4, [7, 8], scope="one"),
        attempt("cli-seq", "segment", "sg", START + 5, [1, 2], scope="another"),
    ]


def clean_locks():
    return [
        {"lock": "a", "token": 1, "event": "start", "t": START + 1, "accepted": True},
        {"lock": "a", "token": 1, "event": "end", "t": START + 2, "accepted": True},
        {"lock": "a", "token": 2, "event": "start", "t": START + 2.5, "accepted": True},
        {"lock": "a", "token": 2, "event": "end", "t": START + 3, "accepted": True},
    ]


FAULT = {"fault": "kill-db", "target": "db", "start": START + 3, "end": START + 4}


def snowflake(unit, worker, sequence):
    """A snowflake value of the default layout (41,10,12)."""
    return (unit << 22) | (worker << 12) | sequence


def base32(prefix, value):
    """The built-in base32 policy's ID of a snowflake value: 13 Crockford
    characters."""
    return prefix + "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(13)))


def series_run(register=None, rc=0):
    """A gap-free series' takes (two answered, one lost to a cut), its
    register and its audit."""
    records = [
        {"t0": START, "t1": START + 1, "reference": "a-1", "status": "ok", "number": 1},
        {"t0": START, "t1": START + 2, "reference": "b-1", "status": "unknown"},
        {"t0": START, "t1": START + 3, "reference": "a-2", "status": "ok", "number": 3},
    ]
    if register is None:
        register = [{"number": "1", "state": "confirmed", "reference": "a-1"},
                    {"number": "2", "state": "confirmed", "reference": "b-1"},
                    {"number": "3", "state": "confirmed", "reference": "a-2"}]
    return records, register, {"rc": rc, "stderr": ""}


class CheckerTest(unittest.TestCase):
    def test_a_whole_series_is_valid(self):
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       series=series_run())
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual((result["series"]["answered"], result["series"]["confirmed"]), (2, 3))

    def test_a_series_the_audit_finds_not_whole_is_invalid(self):
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       series=series_run(rc=1))
        self.assertFalse(result["valid"])
        self.assertEqual(result["first_violation"]["violation"], "series-not-whole")

    def test_a_number_answered_twice_or_confirmed_otherwise_is_invalid(self):
        records, register, audit = series_run()
        records.append({"t0": START, "t1": START + 4, "reference": "b-2", "status": "ok",
                        "number": 3})
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       series=(records, register, audit))
        self.assertEqual(result["first_violation"]["violation"], "series-twice")
        register = [dict(row) for row in register]
        register[0]["reference"] = "someone else"
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       series=(series_run()[0], register, audit))
        self.assertEqual(result["first_violation"]["violation"], "series-lost")

    def test_a_clean_run_is_valid(self):
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["totals"]["acknowledged_values"], 15)
        self.assertEqual(result["rows"]["cli-seq/autoinc"]["attempted"], 2)

    def test_a_stalled_call_is_counted_and_leaves_the_run_valid(self):
        stalled = attempt("mongosh", "cyclic", "cy", START + 5, [], status="unknown", n=1)
        stalled["stalled"] = True
        result = check(clean_attempts() + [stalled], clean_locks(), [FAULT], START, START + 10)
        self.assertTrue(result["valid"])
        self.assertEqual((result["stalled_calls"], result["stalled"]), (1, ["mongosh"]))

    def test_a_planted_duplicate_across_paths_is_invalid(self):
        attempts = clean_attempts() + [attempt("mongosh", "autoinc", "ai", START + 5, [5])]
        result = check(attempts, clean_locks(), [FAULT], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["duplicated"], 1)
        first = result["first_violation"]
        self.assertEqual(first["violation"], "duplicate")
        self.assertEqual(first["example"]["first"]["path"], "http-values")
        self.assertEqual(first["example"]["second"]["path"], "mongosh")
        self.assertTrue(any("kill-db" in fault for fault in first["faults_around"]))

    def test_a_formatted_id_and_a_raw_value_of_one_handout_are_one_key(self):
        cyclic = parse_id("cyclic", "CY-", "CY-2026112620455741971316")
        attempts = [attempt("http-values", "cyclic", "cy", START + 1, [[1795725957419713, 16]]),
                    attempt("cli-next", "cyclic", "cy", START + 2, [cyclic])]
        self.assertEqual(check(attempts, [], [], START, START + 5)["duplicated"], 1)
        periodic = parse_id("periodic", "PD-", "PD-2026-000000002")
        attempts = clean_attempts() + [attempt("cli-next", "periodic", "pd", START + 3, [periodic])]
        self.assertEqual(check(attempts, [], [], START, START + 5)["duplicated"], 1)
        snowflake = parse_id("snowflake", "SF-", "SF-06ZMWGY0R0000")
        self.assertEqual(snowflake, 251810734986493952)

    def test_an_id_of_the_swapped_in_policy_reads_back_as_the_default_ones(self):
        self.assertEqual(parse_id("cyclic", "CY-", "CY-20261126T204557.419713Z-016-3"),
                         parse_id("cyclic", "CY-", "CY-2026112620455741971316"))

    def test_a_malformed_id_is_invalid(self):
        bad = dict(attempt("stream", "cyclic", "cy", START + 3, []), status="fail",
                   unreadable=True, err="not 22 digits")
        result = check(clean_attempts() + [bad], [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["malformed"], 1)

    def test_a_cyclic_value_repeated_at_another_time_is_no_duplicate(self):
        attempts = [attempt("stream", "cyclic", "cy", START + 1, [[5000, 7]]),
                    attempt("cli-next", "cyclic", "cy", START + 2, [[5001, 7]])]
        self.assertTrue(check(attempts, [], [], START, START + 5)["valid"])

    def test_a_planted_order_violation_is_invalid(self):
        attempts = clean_attempts() + [attempt("cli-seq", "autoinc", "ai", START + 4, [0],
                                               scope="cli")]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["order_violations"], 1)
        self.assertEqual(result["first_violation"]["violation"], "order")

    def spanning_attempts(self):
        """Takes from a counter with two lanes in eu (1, 5, 9 and 2, 6, ...)
        and two in us (3, 7, ... and 4, 8, ...), as its takers record them:
        no order scope, each client's values going down and up."""
        scope = _scope(SPANNING, "cli-seq-spanning", 1)
        return [attempt("cli-seq", SPANNING, "sp", START + 1, [4, 8], scope=scope),
                attempt("cli-seq", SPANNING, "sp", START + 2, [1, 5], scope=scope),
                attempt("http-ids", SPANNING, "sp", START + 3, [2, 6], scope=scope),
                attempt("cli-next", SPANNING, "sp", START + 4, [3], scope=scope)]

    def test_the_spanning_counters_values_in_no_order_are_valid(self):
        self.assertIsNone(_scope(SPANNING, "cli-seq-spanning", 1))
        result = check(clean_attempts() + self.spanning_attempts(), [], [], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertNotIn("sp", result["gaps"])
        self.assertEqual(result["spanning"]["sp"]["values"], 7)

    def test_a_planted_duplicate_of_the_spanning_counter_is_invalid(self):
        # The same value from a lane of eu and, again, after a failover.
        attempts = clean_attempts() + self.spanning_attempts() + [
            attempt("stream", SPANNING, "sp", START + 5, [5])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["duplicated"], 1)
        first = result["first_violation"]
        self.assertEqual((first["violation"], first["example"]["key"]), ("duplicate", ["sp", 5]))
        self.assertEqual(first["example"]["second"]["path"], "stream")

    def test_values_taken_while_us_was_down_are_counted(self):
        down = {"fault": "partition-us", "target": "proxy-us", "start": START + 1.8,
                "end": START + 3.5}
        failed = attempt("cli-next", SPANNING, "sp", START + 3.4, [], status="fail", n=2)
        restripes = [{"fault": "restripe", "target": "sp", "start": START + 2, "end": START + 3,
                      "rc": 3},
                     {"fault": "restripe", "target": "sp", "start": START + 6, "end": START + 7,
                      "rc": 0}]
        result = check(self.spanning_attempts() + [failed], [], [down] + restripes, START,
                       START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sp"], {
            "kind": SPANNING, "values": 7, "values_while_us_down": 4, "attempts_while_us_down": 3,
            "failed_while_us_down": 1, "restripes": 2, "restripes_failed": 1, "restripes_half_way": 0})

    def test_availability_outside_faults_leaves_out_their_seconds_and_names_them(self):
        attempts = [attempt("stream", "cyclic", "cy", START + t, [t]) for t in (0.5, 1.5, 6.5)]
        faults = [{"fault": "kill-db", "target": "db", "start": START + 2, "end": START + 3},
                  {"fault": "restripe", "target": "sp", "start": START + 7, "end": START + 8,
                   "rc": 0}]
        result = check(attempts, [], faults, START, START + 10)
        outside = result["path_availability_outside_faults"]["stream"]
        # Seconds 2..=6 are the fault's and its grace; of the other five
        # (0, 1, 7, 8, 9), two have a value; the restripe is no fault.
        self.assertEqual(outside["seconds"], 5)
        self.assertEqual(outside["availability"], 0.4)
        self.assertEqual(outside["down_during"], {"kill-db": 4, "none": 3})
        # Of its three silent seconds outside the faults (7, 8, 9), none was
        # spent in a call (each call took 0.1 s).
        self.assertEqual(outside["silent_outside"], {"in_a_call": 0, "between_calls": 3})

    def test_a_silent_second_spent_waiting_for_an_answer_is_told_from_one_between_calls(self):
        slow = attempt("mongosh", "cyclic", "cy", START + 3.5, [[5000, 1]])
        slow["t0"] = START + 0.5  # three seconds waiting for its answer
        attempts = [slow, attempt("mongosh", "cyclic", "cy", START + 6.5, [[5000, 2]])]
        result = check(attempts, [], [], START, START + 8)
        outside = result["path_availability_outside_faults"]["mongosh"]
        # Silent: 0, 1, 2 (1 and 2 inside the slow call), 4, 5, 7.
        self.assertEqual(outside["silent_outside"], {"in_a_call": 2, "between_calls": 4})
        self.assertEqual(outside["call_s"]["max"], 3.0)

    def test_a_change_that_stopped_half_way_is_told_from_one_refused_at_its_start(self):
        restripes = [
            {"fault": "restripe", "target": "sp", "start": START + 2, "end": START + 3, "rc": 3,
             "detail": "idmint: error: counter 'sp': deployment \"us\" did not answer (...): "
                       "... nothing was changed: run it again once the deployment is back"},
            {"fault": "restripe", "target": "sp", "start": START + 4, "end": START + 5, "rc": 3,
             "detail": "idmint: error: counter 'sp': the change of stripes to eu:2,us:2 "
                       "stopped half way: deployment \"us\" did not answer"},
            {"fault": "restripe", "target": "sp", "start": START + 6, "end": START + 7, "rc": 0}]
        result = check(self.spanning_attempts(), [], restripes, START, START + 10)
        span = result["spanning"]["sp"]
        self.assertEqual((span["restripes"], span["restripes_failed"], span["restripes_half_way"]),
                         (3, 2, 1))

    def test_a_change_not_finished_after_the_faults_is_reported(self):
        settled = {"sp": {"settled_after_s": 4.5}}
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       changes_at_end=settled)
        self.assertEqual(result["changes_left_half_way"], [])
        left = dict(settled, sc={"settled_after_s": None, "last": '{"striped":{"live":false}}'})
        result = check(clean_attempts(), clean_locks(), [FAULT], START, START + 10,
                       changes_at_end=left)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual([c["counter"] for c in result["changes_left_half_way"]], ["sc"])

    def spanning_cyclic_attempts(self):
        """Takes from a cyclic counter (maxval 99) with four lanes (residues
        0..3 of 4) in eu and us, as its takers record them: one lane's pairs
        share a timestamp until it wraps, two lanes may share one, a value
        comes again with a later timestamp (after a wrap, or in the next
        generation of lanes), and the `next` and `/ids` takers' IDs."""
        scope = _scope(SPANNING_CYCLIC, "cli-seq-spanning-cyclic", 1)
        ids = ["SC-2026112620455741971301", "SC-2026112620455741971305"]
        return [attempt("cli-seq", SPANNING_CYCLIC, "sc", START + 1,
                        [[5000, 1], [5000, 5], [5000, 9]], scope=scope),
                attempt("cli-seq", SPANNING_CYCLIC, "sc", START + 1.5, [[5000, 2], [5000, 6]],
                        scope=scope),
                # Lane 3 wraps: 99, then 3 with the next timestamp.
                attempt("stream", SPANNING_CYCLIC, "sc", START + 2, [[5000, 99]], scope=scope),
                attempt("stream", SPANNING_CYCLIC, "sc", START + 2.1, [[5001, 3]], scope=scope),
                # A new generation, its timestamps after every one before.
                attempt("http-values", SPANNING_CYCLIC, "sc", START + 3, [[5002, 1], [5002, 5]],
                        scope=scope),
                dict(attempt("cli-next", SPANNING_CYCLIC, "sc", START + 4,
                             [parse_id(SPANNING_CYCLIC, "SC-", text) for text in ids],
                             scope=scope), ids=ids)]

    def test_the_spanning_cyclic_counters_pairs_are_valid(self):
        self.assertIsNone(_scope(SPANNING_CYCLIC, "cli-seq-spanning-cyclic", 1))
        attempts = clean_attempts() + self.spanning_attempts() + self.spanning_cyclic_attempts()
        result = check(attempts, [], [], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sc"]["kind"], SPANNING_CYCLIC)
        self.assertEqual(result["spanning"]["sc"]["values"], 11)
        self.assertEqual((result["out_of_range"], result["duplicated_ids"]), (0, 0))
        self.assertNotIn("sc", result["gaps"])

    def test_seq_json_of_a_striped_cyclic_counter_reads_as_its_pair(self):
        line = '{"counter":"sc","value":17,"timestamp_micros":1795791428744768}'
        self.assertEqual(parse_seq_line(SPANNING_CYCLIC, line), [1795791428744768, 17])

    def test_a_planted_repeated_pair_of_the_spanning_cyclic_counter_is_invalid(self):
        # The pair a `seq` had, handed out again by serve-3 (as a new
        # generation that started its lanes' timestamps too low would).
        attempts = clean_attempts() + self.spanning_cyclic_attempts() + [
            attempt("http-values", SPANNING_CYCLIC, "sc", START + 5, [[5002, 9], [5000, 5]])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["duplicated"], 1)
        first = result["first_violation"]
        self.assertEqual((first["violation"], first["example"]["key"]),
                         ("duplicate", ["sc", 5000, 5]))
        self.assertEqual(first["example"]["first"]["path"], "cli-seq")
        self.assertEqual(first["example"]["second"]["path"], "http-values")

    def test_a_repeated_pair_read_back_from_an_id_is_invalid(self):
        # The same pair as an ID of a `next` and as a raw pair of `seq`.
        text = "SC-2026112620455741971342"
        pair = parse_id(SPANNING_CYCLIC, "SC-", text)
        attempts = [attempt("cli-seq", SPANNING_CYCLIC, "sc", START + 1, [pair]),
                    dict(attempt("stream", SPANNING_CYCLIC, "sc", START + 2, [pair]), ids=[text])]
        result = check(attempts, [], [], START, START + 5)
        self.assertFalse(result["valid"])
        self.assertEqual(result["duplicated"], 1)

    def test_an_id_written_twice_is_invalid(self):
        text = "SC-2026112620455741971342"
        pair = parse_id(SPANNING_CYCLIC, "SC-", text)
        attempts = [dict(attempt("cli-next", SPANNING_CYCLIC, "sc", START + 1, [pair]),
                         ids=[text]),
                    dict(attempt("http-ids", SPANNING_CYCLIC, "sc", START + 2, [pair]),
                         ids=[text])]
        result = check(attempts, [], [], START, START + 5)
        self.assertFalse(result["valid"])
        self.assertEqual((result["duplicated"], result["duplicated_ids"]), (1, 1))
        self.assertEqual(result["examples"]["duplicate_ids"][0]["id"], ["sc", text])

    def test_a_cyclic_value_beyond_maxval_is_invalid(self):
        for kind, counter in ((SPANNING_CYCLIC, "sc"), ("cyclic", "cy")):
            attempts = [attempt("cli-seq", kind, counter, START + 1, [[5000, 98], [5000, 100]])]
            result = check(attempts, [], [], START, START + 5)
            self.assertFalse(result["valid"], kind)
            self.assertEqual(result["out_of_range"], 1)
            self.assertEqual(result["first_violation"]["violation"], "out-of-range")
            self.assertEqual(result["first_violation"]["example"]["key"], [counter, 5000, 100])
        attempts = [attempt("cli-seq", SPANNING_CYCLIC, "sc", START + 1, [[5000, -1]])]
        self.assertEqual(check(attempts, [], [], START, START + 5)["out_of_range"], 1)

    def test_the_spanning_cyclic_counters_figures_while_us_was_down(self):
        down = {"fault": "kill-db-us", "target": "db-us", "start": START + 1.8,
                "end": START + 3.5}
        failed = attempt("cli-next", SPANNING_CYCLIC, "sc", START + 2.5, [], status="unknown",
                         n=4)
        restripes = [{"fault": "restripe", "target": "sc", "start": START + 2, "end": START + 3,
                      "rc": 3},
                     {"fault": "restripe", "target": "sp", "start": START + 6, "end": START + 7,
                      "rc": 0}]
        result = check(self.spanning_attempts() + self.spanning_cyclic_attempts() + [failed], [],
                       [down] + restripes, START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sc"], {
            "kind": SPANNING_CYCLIC, "values": 11, "values_while_us_down": 4,
            "attempts_while_us_down": 4, "failed_while_us_down": 1, "restripes": 1,
            "restripes_failed": 1, "restripes_half_way": 0})
        self.assertEqual(result["spanning"]["sp"]["restripes"], 1)

    def spanning_snowflake_attempts(self):
        """Takes from a snowflake counter with four lanes in eu and us (lane
        r leasing the worker ids w % 4 == r), as its takers record them:
        each process's IDs of its own worker id, in no order across them (a
        stream's IDs behind a `seq`'s, a taker on a clock stepped back
        borrowing time), a worker id again in the next generation, after
        every time its last holder reserved; the `next` and `/ids` takers'
        IDs as written (base32)."""
        scope = _scope(SPANNING_SNOWFLAKE, "cli-seq-spanning-snowflake", 1)
        ids = [base32("SN-", snowflake(1000, 1, 0)), base32("SN-", snowflake(1000, 1, 1))]
        streamed = base32("SN-", snowflake(990, 3, 0))
        return [attempt("cli-seq", SPANNING_SNOWFLAKE, "sn", START + 1,
                        [snowflake(1000, 0, 0), snowflake(1000, 0, 1)], scope=scope),
                dict(attempt("cli-next", SPANNING_SNOWFLAKE, "sn", START + 1.5,
                             [parse_id(SPANNING_SNOWFLAKE, "SN-", text) for text in ids],
                             scope=scope), ids=ids),
                dict(attempt("stream", SPANNING_SNOWFLAKE, "sn", START + 2,
                             [parse_id(SPANNING_SNOWFLAKE, "SN-", streamed)], scope=scope),
                     ids=[streamed]),
                attempt("http-values", SPANNING_SNOWFLAKE, "sn", START + 2.5,
                        [snowflake(1001, 2, 0), snowflake(1001, 2, 1)], scope=scope),
                # The next generation: worker id 0 again, after its reservation.
                attempt("cli-seq", SPANNING_SNOWFLAKE, "sn", START + 3,
                        [snowflake(1020, 0, 0)], scope=scope)]

    def test_the_spanning_snowflake_counters_ids_in_no_order_are_valid(self):
        self.assertIsNone(_scope(SPANNING_SNOWFLAKE, "cli-seq-spanning-snowflake", 1))
        attempts = clean_attempts() + self.spanning_snowflake_attempts()
        result = check(attempts, [], [], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sn"]["kind"], SPANNING_SNOWFLAKE)
        self.assertEqual(result["spanning"]["sn"]["values"], 8)
        self.assertEqual((result["duplicated_ids"], result["order_violations"]), (0, 0))
        self.assertNotIn("sn", result["gaps"])

    def test_a_base32_id_reads_back_as_its_snowflake_value(self):
        # docs/counter-kinds.md's example, as `validate` reads it.
        self.assertEqual(parse_id(SPANNING_SNOWFLAKE, "SN-", "SN-06YGFTZ8G0000"),
                         250530148871307264)
        self.assertEqual(base32("SN-", 250530148871307264), "SN-06YGFTZ8G0000")
        for text in ("SN-06YGFTZ8G000", "SN-06YGFTZ8G0000U", "SC-06YGFTZ8G0000"):
            with self.assertRaises(UnreadableId, msg=text):
                parse_id(SPANNING_SNOWFLAKE, "SN-", text)

    def test_a_planted_id_twice_of_the_spanning_snowflake_counter_is_invalid(self):
        # The ID a `seq` had, handed out again as an ID by serve-3 (as a
        # worker id leased in two lanes, or a new generation issuing below
        # its gate, would).
        again = base32("SN-", snowflake(1000, 0, 1))
        attempts = clean_attempts() + self.spanning_snowflake_attempts() + [
            dict(attempt("http-ids", SPANNING_SNOWFLAKE, "sn", START + 5,
                         [parse_id(SPANNING_SNOWFLAKE, "SN-", again)]), ids=[again])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual((result["duplicated"], result["duplicated_ids"]), (1, 0))
        first = result["first_violation"]
        self.assertEqual((first["violation"], first["example"]["key"]),
                         ("duplicate", ["sn", snowflake(1000, 0, 1)]))
        self.assertEqual(first["example"]["first"]["path"], "cli-seq")
        self.assertEqual(first["example"]["second"]["path"], "http-ids")
        # The same ID written twice, by two `next` processes.
        text = base32("SN-", snowflake(1000, 1, 1))
        attempts = clean_attempts() + self.spanning_snowflake_attempts() + [
            dict(attempt("stream", SPANNING_SNOWFLAKE, "sn", START + 6,
                         [parse_id(SPANNING_SNOWFLAKE, "SN-", text)]), ids=[text])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual((result["duplicated"], result["duplicated_ids"]), (1, 1))
        self.assertEqual(result["examples"]["duplicate_ids"][0]["id"], ["sn", text])

    def spanning_periodic_attempts(self):
        """Takes from a periodic counter (yearly) with four lanes (values r + 1
        modulo 4 in each period) in eu and us, as its takers record them:
        `seq` lines, `next` IDs (decimal) and serve-3's values, in no order
        within a period, and the values again from 1 in the next period."""
        scope = _scope(SPANNING_PERIODIC, "cli-seq-spanning-periodic", 1)
        ids = ["SY-2026-000000002", "SY-2026-000000006"]
        streamed = "SY-2026-000000004"
        return [attempt("cli-seq", SPANNING_PERIODIC, "sy", START + 1,
                        [parse_seq_line(SPANNING_PERIODIC, line) for line in ("2026 1", "2026 5")],
                        scope=scope),
                dict(attempt("cli-next", SPANNING_PERIODIC, "sy", START + 1.5,
                             [parse_id(SPANNING_PERIODIC, "SY-", text) for text in ids],
                             scope=scope), ids=ids),
                dict(attempt("stream", SPANNING_PERIODIC, "sy", START + 2,
                             [parse_id(SPANNING_PERIODIC, "SY-", streamed)], scope=scope),
                     ids=[streamed]),
                attempt("http-values", SPANNING_PERIODIC, "sy", START + 2.5,
                        [["2026", 3], ["2026", 7]], scope=scope),
                # The next period: each lane's values from its first again.
                attempt("cli-seq", SPANNING_PERIODIC, "sy", START + 3, [["2027", 1], ["2027", 2]],
                        scope=scope)]

    def test_the_spanning_periodic_counters_pairs_are_valid(self):
        self.assertIsNone(_scope(SPANNING_PERIODIC, "cli-seq-spanning-periodic", 1))
        self.assertEqual(parse_seq_line(SPANNING_PERIODIC, "2026 17"), ["2026", 17])
        self.assertEqual(parse_id(SPANNING_PERIODIC, "SY-", "SY-2026-000000017"), ["2026", 17])
        attempts = clean_attempts() + self.spanning_periodic_attempts()
        result = check(attempts, [], [], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sy"]["kind"], SPANNING_PERIODIC)
        self.assertEqual(result["spanning"]["sy"]["values"], 9)
        self.assertEqual((result["duplicated_ids"], result["order_violations"]), (0, 0))
        self.assertNotIn("sy", result["gaps"])

    def test_a_planted_pair_twice_of_the_spanning_periodic_counter_is_invalid(self):
        # The pair a `seq` had, handed out again as a `next` ID (as a new
        # generation that started at or below a sealed lane's last would).
        again = "SY-2026-000000005"
        attempts = clean_attempts() + self.spanning_periodic_attempts() + [
            dict(attempt("cli-next", SPANNING_PERIODIC, "sy", START + 5,
                         [parse_id(SPANNING_PERIODIC, "SY-", again)]), ids=[again])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual((result["duplicated"], result["duplicated_ids"]), (1, 0))
        first = result["first_violation"]
        self.assertEqual((first["violation"], first["example"]["key"]),
                         ("duplicate", ["sy", "2026", 5]))
        self.assertEqual(first["example"]["first"]["path"], "cli-seq")
        self.assertEqual(first["example"]["second"]["path"], "cli-next")
        # A pair twice between serve-3's values and a `seq`, in a later period.
        attempts = clean_attempts() + self.spanning_periodic_attempts() + [
            attempt("http-values", SPANNING_PERIODIC, "sy", START + 6, [["2027", 3], ["2027", 2]])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["first_violation"]["example"]["key"], ["sy", "2027", 2])

    def test_the_new_spanning_counters_figures_and_report(self):
        down = {"fault": "partition-us", "target": "proxy-us", "start": START + 1.8,
                "end": START + 2.6}
        failed = attempt("cli-next", SPANNING_SNOWFLAKE, "sn", START + 2.2, [], status="fail",
                         n=3)
        restripes = [{"fault": "restripe", "target": "sn", "start": START + 2, "end": START + 3,
                      "rc": 3},
                     {"fault": "restripe", "target": "sn", "start": START + 5, "end": START + 6,
                      "rc": 0},
                     {"fault": "restripe", "target": "sy", "start": START + 4, "end": START + 5,
                      "rc": 0}]
        attempts = (self.spanning_attempts() + self.spanning_snowflake_attempts()
                    + self.spanning_periodic_attempts() + [failed])
        result = check(attempts, [], [down] + restripes, START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["spanning"]["sn"], {
            "kind": SPANNING_SNOWFLAKE, "values": 8, "values_while_us_down": 3,
            "attempts_while_us_down": 3, "failed_while_us_down": 1, "restripes": 2,
            "restripes_failed": 1, "restripes_half_way": 0})
        self.assertEqual(result["spanning"]["sy"], {
            "kind": SPANNING_PERIODIC, "values": 9, "values_while_us_down": 3,
            "attempts_while_us_down": 2, "failed_while_us_down": 0, "restripes": 1,
            "restripes_failed": 0, "restripes_half_way": 0})
        result["lock_runs"] = {}
        text = table(result)
        self.assertIn("sn (snowflake, lanes in deployments eu and us): 8 IDs, 3 of them while "
                      "us was down (3 attempts answered then, 1 without values); stripes changed "
                      "1 times, 1 tries failed", text)
        self.assertIn("sy (periodic, lanes in deployments eu and us): 9 values ((period, value) "
                      "pairs), 3 of them while us was down", text)
        self.assertIn("sp (autoinc, lanes in deployments eu and us): 7 values, ", text)

    def test_a_gap_beyond_the_unanswered_attempts_is_a_loss(self):
        attempts = clean_attempts() + [attempt("cli-seq", "autoinc", "ai", START + 6, [10])]
        result = check(attempts, [], [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["lost"], 3)
        # The same gap, explained by requests that got no answer, is not.
        attempts.append(attempt("cli-seq", "autoinc", "ai", START + 5, [], status="unknown", n=3))
        self.assertTrue(check(attempts, [], [], START, START + 10)["valid"])

    def test_a_planted_lock_overlap_is_invalid(self):
        locks = clean_locks() + [
            {"lock": "a", "token": 3, "event": "start", "t": START + 3.5, "accepted": True},
            {"lock": "a", "token": 2, "event": "beat", "t": START + 3.6, "accepted": False},
        ]
        result = check(clean_attempts(), locks, [FAULT], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["lock_overlaps"], 1)
        self.assertEqual(result["fencing_violations"], 0)
        self.assertEqual(result["locks"]["fenced_off"], 1)
        self.assertEqual(result["first_violation"]["violation"], "overlap")

    def test_shared_holders_side_by_side_are_valid_up_to_the_permits(self):
        def held(lock, token, start, end, mode="shared", permits=2):
            return [{"lock": lock, "token": token, "event": event, "t": START + t,
                     "accepted": True, "mode": mode, "permits": permits}
                    for event, t in (("start", start), ("end", end))]
        readers = held("rw", 1, 1, 3, permits=0) + held("rw", 2, 1.5, 3.5, permits=0)
        two = held("sem", 1, 1, 3) + held("sem", 2, 2, 4)
        result = check(clean_attempts(), clean_locks() + readers + two, [FAULT],
                       START, START + 10)
        self.assertTrue(result["valid"], result)
        # A third permit holder beside two.
        third = held("sem", 3, 2.5, 2.8)
        result = check(clean_attempts(), clean_locks() + two + third, [FAULT],
                       START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["first_violation"]["violation"], "overlap")
        # A writer beside a reader.
        writer = held("rw", 3, 3.2, 3.4, mode="exclusive", permits=0)
        result = check(clean_attempts(), clean_locks() + readers + writer, [FAULT],
                       START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["lock_overlaps"], 1)

    def test_a_frozen_holders_stale_writes_refused_by_the_fence_are_no_violation(self):
        freeze = {"fault": "freeze-holder", "target": "h", "lock": "a", "start": START + 2.2,
                  "end": START + 3.4}
        stale = [{"lock": "a", "token": 1, "event": "beat", "t": START + 3.5, "accepted": False}]
        locks = clean_locks()[:1] + clean_locks()[2:] + stale
        result = check(clean_attempts(), locks, [freeze], START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["locks"]["fenced_overlaps"], 1)
        # Without the freeze it is an overlap: lock run let COMMAND outlive its lease.
        self.assertEqual(check(clean_attempts(), locks, [], START, START + 10)["lock_overlaps"], 1)
        # And a stale write the store accepted is a violation, frozen or not.
        accepted = [dict(stale[0], accepted=True)]
        result = check(clean_attempts(), clean_locks()[:1] + clean_locks()[2:] + accepted,
                       [freeze], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["fencing_violations"], 1)

    def test_a_permit_holder_frozen_whole_counts_until_it_froze_if_stopped_at_the_thaw(self):
        def held(token, times):
            return [{"lock": "sem", "token": token, "event": "beat", "t": START + t,
                     "accepted": True, "mode": "shared", "permits": 2} for t in times]
        freeze = {"fault": "freeze-holder", "target": "h", "lock": "sem", "start": START + 2.0,
                  "end": START + 6.0}
        others = held(2, (3.0, 4.0)) + held(3, (3.5, 4.5))
        # Frozen at 2 s; two others hold meanwhile; it writes at the thaw.
        stopped = held(1, (1.0, 1.9, 6.2))
        result = check(clean_attempts(), clean_locks() + stopped + others, [freeze],
                       START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        self.assertEqual(result["locks"]["fenced_overlaps"], 1)
        # Writing on long after the thaw: three holders, a violation.
        went_on = held(1, (1.0, 1.9, 6.2, 8.0))
        result = check(clean_attempts(), clean_locks() + went_on + others, [freeze],
                       START, START + 10)
        self.assertFalse(result["valid"])
        # And without the freeze, the same writes are three holders at once.
        result = check(clean_attempts(), clean_locks() + stopped + others, [],
                       START, START + 10)
        self.assertFalse(result["valid"])

    def test_a_permit_holder_killed_after_its_first_write_holds_no_longer(self):
        # Seed 1's kill-lock once killed a semaphore holder 38 ms before its
        # COMMAND's one write ("start"): a span of one instant, which the
        # count took for a holder to the end of the run (its end sorted
        # before its start), and every later pair of holders for three.
        def held(token, times):
            return [{"lock": "sem", "token": token, "event": "beat", "t": START + t,
                     "accepted": True, "mode": "shared", "permits": 2} for t in times]
        killed = held(1, (1.0,))
        later = held(2, (2.0, 4.0)) + held(3, (3.0, 5.0))
        result = check(clean_attempts(), clean_locks() + killed + later, [FAULT],
                       START, START + 10)
        self.assertTrue(result["valid"], result["first_violation"])
        # It held at that instant: two others beside it then are three.
        beside = held(2, (0.5, 4.0)) + held(3, (0.8, 5.0))
        result = check(clean_attempts(), clean_locks() + killed + beside, [FAULT],
                       START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["first_violation"]["example"]["tokens"], [1, 2, 3])

    def test_a_planted_fencing_violation_is_invalid(self):
        locks = clean_locks() + [
            {"lock": "a", "token": 1, "event": "beat", "t": START + 5, "accepted": True},
        ]
        result = check(clean_attempts(), locks, [], START, START + 10)
        self.assertFalse(result["valid"])
        self.assertEqual(result["fencing_violations"], 1)
        self.assertEqual(result["examples"]["fencing"][0]["token"], 1)
        self.assertEqual(result["examples"]["fencing"][0]["after_token"], 2)
        # A stale write is also, by its own timestamps, an overlap.
        self.assertEqual(result["lock_overlaps"], 1)

    def test_recovery_is_measured_from_the_end_of_a_fault(self):
        attempts = [attempt("stream", "autoinc", "ai", START + t, [i + 1], scope="s")
                    for i, t in enumerate([1, 2, 2.9, 6.5, 7])]
        result = check(attempts, [], [FAULT], START, START + 10)
        self.assertEqual(result["recoveries"][0]["recovery_s"], 2.5)


class ScheduleTest(unittest.TestCase):
    def test_the_same_seed_gives_the_same_schedule(self):
        targets = (["t1", "t2"], ["s0", "s1"], ["h0"])
        self.assertEqual(make_schedule(7, 300, *targets), make_schedule(7, 300, *targets))
        self.assertNotEqual(make_schedule(7, 300, *targets), make_schedule(8, 300, *targets))

    def test_two_minutes_inject_every_fault_kind_once(self):
        schedule = make_schedule(1, 120, ["t"], ["s"], ["h"])
        self.assertEqual(sorted(e["fault"] for e in schedule), sorted(FAULTS))

    def test_the_second_servers_faults_target_it(self):
        schedule = make_schedule(1, 120, ["t"], ["s"], ["h"])
        targets = {e["fault"]: e["target"] for e in schedule}
        self.assertEqual((targets["kill-db-us"], targets["partition-us"]), ("db-us", "proxy-us"))

    def test_five_minutes_inject_every_fault_kind_twice(self):
        schedule = make_schedule(1, 300, ["t"], ["s"], ["h"])
        for fault in FAULTS:
            self.assertGreaterEqual(sum(1 for e in schedule if e["fault"] == fault), 2, fault)
        ends = [e["at"] + e["duration"] for e in schedule]
        self.assertTrue(all(end < e["at"] for end, e in zip(ends, schedule[1:])))


if __name__ == "__main__":
    unittest.main()

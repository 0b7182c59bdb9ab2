"""The human side of a result: a text table, and an SVG timeline of the
acknowledged values per path per second with the faults marked."""

import math
from collections import defaultdict
from html import escape

from ids import base_kind

# What a spanning counter's figures count, by its kind: each a unique key.
SPANNING_UNITS = {"cyclic": "values ((timestamp, value) pairs)",
                  "periodic": "values ((period, value) pairs)", "snowflake": "IDs"}


def table(result, schedule_seed=None):
    lines = []
    w = max([24] + [len(row) + 1 for row in result["rows"]])  # the first column's width
    head = f"{'path/kind':<{w}}{'attempted':>10}{'ok':>8}{'fail':>7}{'unknown':>8}{'values':>9}{'avail':>7}"
    lines.append(head)
    lines.append("-" * len(head))
    for row, r in result["rows"].items():
        lines.append(f"{row:<{w}}{r['attempted']:>10}{r['ok']:>8}{r['fail']:>7}{r['unknown']:>8}"
                     f"{r['values']:>9}{r['availability']:>7.2f}")
    t = result["totals"]
    lines.append("-" * len(head))
    lines.append(f"{'total':<{w}}{t['attempted']:>10}{t['ok']:>8}{t['fail']:>7}{t['unknown']:>8}"
                 f"{t['acknowledged_values']:>9}")
    lines.append("")
    lines.append("availability per path (share of seconds with a value acknowledged): "
                 + ", ".join(f"{path} {share:.2f}"
                             for path, share in result["path_availability"].items()))
    outside = result.get("path_availability_outside_faults", {})
    if outside:
        lines.append("outside the faults (and 3 s after each): "
                     + ", ".join(f"{path} {share['availability']:.2f}"
                                 for path, share in outside.items()))
        for path, share in outside.items():
            if share["availability"] < 0.9:
                lines.append(f"  {path}: seconds without a value, by the faults they overlapped: "
                             + ", ".join(f"{fault} {n}"
                                         for fault, n in share["down_during"].items()))
                silent, call = share.get("silent_outside"), share.get("call_s")
                if silent and call:
                    lines.append(f"  {path}: outside the faults, {silent['in_a_call']} s waiting "
                                 f"for a call's answer, {silent['between_calls']} s between "
                                 f"calls; a call took {call['median']:.2f} s (median), "
                                 f"{call['p90']:.2f} s (90%), {call['max']:.1f} s (max)")
    lines.append("")
    lines.append(f"{'fault':<14}{'injected':>9}{'recovery median':>17}{'max':>8}{'not recovered':>15}")
    for fault, f in result["faults"].items():
        med = "-" if f["recovery_median_s"] is None else f"{f['recovery_median_s']:.1f} s"
        top = "-" if f["recovery_max_s"] is None else f"{f['recovery_max_s']:.1f} s"
        lines.append(f"{fault:<14}{f['injected']:>9}{med:>17}{top:>8}{f['not_recovered']:>15}")
    lines.append("")
    locks = result["locks"]
    runs = result.get("lock_runs", {})
    lines.append(f"locks: {locks['holds']} holds written to the fenced store, "
                 f"{locks['fenced_off']} stale writes refused by it, "
                 f"{locks.get('fenced_overlaps', 0)} overlaps of a frozen holder fenced off; "
                 f"lock run exits: "
                 + ", ".join(f"{code}: {count}" for code, count in sorted(runs.items())))
    gaps = ", ".join(f"{name} {g['missing']} missing (bound {g['unanswered_bound']})"
                     for name, g in result["gaps"].items())
    lines.append(f"gaps: {gaps or 'none checked'}")
    series = result.get("series") or {}
    if series.get("checked"):
        lines.append(f"gap-free series: {series['numbers']} numbers, {series['confirmed']} "
                     f"confirmed, audit exit {series['audit_exit']}; takes "
                     + ", ".join(f"{status} {count}" for status, count
                                 in series["attempts"].items())
                     + f", {series['answered']} answered, each confirmed with its reference")
    if result["shutdown_s"]:
        lines.append("shutdown: " + ", ".join(f"{name} {s if s is not None else 'killed'} s"
                                             for name, s in sorted(result["shutdown_s"].items())))
    settled = result.get("changes_at_end", {})
    if settled:
        lines.append("changes of stripes at the end, once the faults stopped: " + ", ".join(
            f"{name} " + (f"settled in {state['settled_after_s']:.1f} s"
                          if state.get("settled_after_s") is not None else "STILL HALF WAY")
            for name, state in sorted(settled.items())))
    exits = result["faults"].get("db-exited", {}).get("injected", 0)
    if exits:
        lines.append(f"a database server exited by itself {exits} time(s), and was restarted: "
                     f"not a fault of the schedule; see db.log, db-us.log")
    for name, span in sorted(result.get("spanning", {}).items()):
        kind = base_kind(span.get("kind"))
        lines.append(f"{name} ({kind}, lanes in deployments eu and us): {span['values']} "
                     f"{SPANNING_UNITS.get(kind, 'values')}, "
                     f"{span['values_while_us_down']} of them while us was down "
                     f"({span['attempts_while_us_down']} attempts answered then, "
                     f"{span['failed_while_us_down']} without values); stripes changed "
                     f"{span['restripes'] - span['restripes_failed']} times, "
                     f"{span['restripes_failed']} tries failed "
                     f"({span.get('restripes_half_way', 0)} of them half way, finished by takes)")
    if result.get("stalled_calls"):
        lines.append(f"stalled calls (no answer in 60 s, the client killed and restarted): "
                     f"{result['stalled_calls']} on {', '.join(result['stalled'])}")
    if result["silent_rows"]:
        lines.append("paths that acknowledged nothing: " + ", ".join(result["silent_rows"]))
    lines.append("")
    lines.append(f"duplicated: {result['duplicated']}   lost: {result['lost']}   "
                 f"order violations: {result['order_violations']}   "
                 f"malformed: {result.get('malformed', 0)}   "
                 f"out of range: {result.get('out_of_range', 0)}   "
                 f"IDs twice: {result.get('duplicated_ids', 0)}   "
                 f"lock overlaps: {result['lock_overlaps']}   "
                 f"fencing violations: {result['fencing_violations']}")
    lines.append(f"valid: {str(result['valid']).lower()}")
    return "\n".join(lines)


COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
FAULT_COLORS = {"kill": "#d62728", "stop": "#ff7f0e", "partition": "#9467bd", "cut": "#8c564b",
                "slow": "#bcbd22", "clock": "#17becf", "tstp": "#e377c2"}


def svg(attempts, faults, start, end, title):
    """One lane per client path: a bar per second, as tall as the values it
    acknowledged that second (to the lane's own peak); an empty second is a
    gap in the lane. Faults are bands across every lane, named below."""
    seconds = max(1, math.ceil(end - start))
    per = defaultdict(lambda: [0] * seconds)
    for record in attempts:
        second = math.floor(record["t1"] - start)
        if record.get("raw") and 0 <= second < seconds:
            per[record["path"]][second] += len(record["raw"])
    paths = sorted(per)
    left, top, lane, width = 90, 30, 44, 1200
    plot_h = lane * max(1, len(paths))
    height = top + plot_h + 110
    scale_x = (width - left - 20) / seconds
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">{escape(title)}: values acknowledged per '
           f'second, per path (each lane to its own peak); faults as bands</text>']
    for fault in faults:
        x0 = left + (fault["start"] - start) * scale_x
        x1 = max(x0 + 2, left + (fault["end"] - start) * scale_x)
        color = FAULT_COLORS.get(fault["fault"].split("-")[0], "#999")
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{plot_h}" '
                   f'fill="{color}" opacity="0.3"><title>{escape(fault["fault"])} '
                   f'{escape(str(fault.get("target")))}</title></rect>')
        out.append(f'<text x="{x0:.1f}" y="{top + plot_h + 30}" font-size="9" '
                   f'transform="rotate(60 {x0:.1f} {top + plot_h + 30})">'
                   f'{escape(fault["fault"])} {escape(str(fault.get("target") or ""))}</text>')
    for i, path in enumerate(paths):
        color = COLORS[i % len(COLORS)]
        base = top + (i + 1) * lane
        peak = max(per[path]) or 1
        out.append(f'<text x="{left - 6}" y="{base - lane / 2 + 4:.1f}" text-anchor="end">'
                   f'{escape(path)}</text>')
        out.append(f'<line x1="{left}" y1="{base}" x2="{width - 20}" y2="{base}" '
                   f'stroke="#ccc"/>')
        for second, value in enumerate(per[path]):
            if value:
                h = max(1.0, (lane - 6) * value / peak)
                out.append(f'<rect x="{left + second * scale_x:.1f}" y="{base - h:.1f}" '
                           f'width="{max(0.8, scale_x - 0.4):.1f}" height="{h:.1f}" '
                           f'fill="{color}"/>')
    step = 10 if seconds <= 200 else 30
    for s in range(0, seconds + 1, step):
        out.append(f'<text x="{left + s * scale_x:.1f}" y="{top + plot_h + 14}" '
                   f'text-anchor="middle">{s}s</text>')
    out.append("</svg>")
    return "\n".join(out)

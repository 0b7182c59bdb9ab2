"""The human side of a result: a text table, and an SVG timeline of the
acknowledged values per path per second with the faults marked."""

import math
from collections import defaultdict
from html import escape


def table(result, schedule_seed=None):
    lines = []
    head = f"{'path/kind':<24}{'attempted':>10}{'ok':>8}{'fail':>7}{'unknown':>8}{'values':>9}{'avail':>7}"
    lines.append(head)
    lines.append("-" * len(head))
    for row, r in result["rows"].items():
        lines.append(f"{row:<24}{r['attempted']:>10}{r['ok']:>8}{r['fail']:>7}{r['unknown']:>8}"
                     f"{r['values']:>9}{r['availability']:>7.2f}")
    t = result["totals"]
    lines.append("-" * len(head))
    lines.append(f"{'total':<24}{t['attempted']:>10}{t['ok']:>8}{t['fail']:>7}{t['unknown']:>8}"
                 f"{t['acknowledged_values']:>9}")
    lines.append("")
    lines.append("availability per path (share of seconds with a value acknowledged): "
                 + ", ".join(f"{path} {share:.2f}"
                             for path, share in result["path_availability"].items()))
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
                 f"{locks['fenced_off']} stale writes refused by it; lock run exits: "
                 + ", ".join(f"{code}: {count}" for code, count in sorted(runs.items())))
    gaps = ", ".join(f"{name} {g['missing']} missing (bound {g['unanswered_bound']})"
                     for name, g in result["gaps"].items())
    lines.append(f"gaps: {gaps or 'none checked'}")
    if result["shutdown_s"]:
        lines.append("shutdown: " + ", ".join(f"{name} {s if s is not None else 'killed'} s"
                                             for name, s in sorted(result["shutdown_s"].items())))
    if result["silent_rows"]:
        lines.append("paths that acknowledged nothing: " + ", ".join(result["silent_rows"]))
    lines.append("")
    lines.append(f"duplicated: {result['duplicated']}   lost: {result['lost']}   "
                 f"order violations: {result['order_violations']}   "
                 f"lock overlaps: {result['lock_overlaps']}   "
                 f"fencing violations: {result['fencing_violations']}")
    lines.append(f"valid: {str(result['valid']).lower()}")
    return "\n".join(lines)


COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
FAULT_COLORS = {"kill": "#d62728", "stop": "#ff7f0e", "partition": "#9467bd", "cut": "#8c564b",
                "slow": "#bcbd22", "clock": "#17becf", "tstp": "#e377c2"}


def svg(attempts, faults, start, end, title):
    """Values acknowledged per second, one line per path, faults as bands."""
    seconds = max(1, math.ceil(end - start))
    per = defaultdict(lambda: [0] * seconds)
    for record in attempts:
        second = math.floor(record["t1"] - start)
        if record.get("raw") and 0 <= second < seconds:
            per[record["path"]][second] += len(record["raw"])
    paths = sorted(per)
    width, height, left, top, plot_h = 1100, 180 + 22 * len(paths), 60, 30, 300
    height = top + plot_h + 60 + 18 * len(paths)
    scale_x = (width - left - 20) / seconds
    peak = max([max(v) for v in per.values()] + [1])
    log_peak = math.log10(peak + 1)

    def y(value):
        return top + plot_h - (math.log10(value + 1) / log_peak) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">{escape(title)}</text>']
    for fault in faults:
        x0 = left + (fault["start"] - start) * scale_x
        x1 = max(x0 + 2, left + (fault["end"] - start) * scale_x)
        color = FAULT_COLORS.get(fault["fault"].split("-")[0], "#999")
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{plot_h}" '
                   f'fill="{color}" opacity="0.25"><title>{escape(fault["fault"])} '
                   f'{escape(str(fault.get("target")))}</title></rect>')
        out.append(f'<text x="{x0:.1f}" y="{top + plot_h + 12}" font-size="8" '
                   f'transform="rotate(45 {x0:.1f} {top + plot_h + 12})">'
                   f'{escape(fault["fault"])}</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 20}" y2="{top + plot_h}" '
               f'stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    for tick in [1, 10, 100, 1000, 10000, 100000]:
        if tick <= peak * 1.01:
            out.append(f'<text x="{left - 5}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for s in range(0, seconds + 1, max(10, seconds // 10 // 10 * 10 or 10)):
        out.append(f'<text x="{left + s * scale_x:.1f}" y="{top + plot_h + 40}" '
                   f'text-anchor="middle">{s}s</text>')
    for i, path in enumerate(paths):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{left + (s + 0.5) * scale_x:.1f},{y(v):.1f}"
                          for s, v in enumerate(per[path]))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{points}"/>')
        ly = top + plot_h + 58 + 16 * i
        out.append(f'<rect x="{left}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{left + 15}" y="{ly}">{escape(path)}: values acknowledged per '
                   f'second (log scale)</text>')
    out.append("</svg>")
    return "\n".join(out)

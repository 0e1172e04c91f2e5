#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""contend_chart.py: SVG charts from redlock_contend's CSV (bench/README.md).

    bench/contend_chart.py --csv FILE [--out DIR] [--prefix NAME] [--note TEXT] [--workers 16,100]

Writes NAME-handover.svg (hand-over p50 bars, p99 whiskers, log scale),
NAME-commands.svg (top-level commands per acquisition, with the goal line),
NAME-spread.svg (max/min acquisitions per worker) and NAME-throughput.svg
(acquisitions per second, where stalls show). Standard library only, so the
charts can be redrawn without installing a plotting package.
"""
import argparse
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

MODES = [("off", "before: polling (NO_WAKE)", "#9e9e9e"),
         ("wake", "after: woken (default)", "#1f77b4"),
         ("fair", "fair (OPT_FAIR)", "#2ca02c")]
W, H = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 48, 62


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return None if v < 0 or math.isnan(v) else v


def load(path):
    rows = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rows[(r["mode"], int(r["workers"]))] = r
    return rows


class Chart:
    def __init__(self, title, ylabel, note):
        self.out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                    'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">' % (W, H, W, H),
                    '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
                    'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="white" '
                    'stroke-width="2" stroke-opacity="0.5"/></pattern></defs>',
                    '<rect width="100%" height="100%" fill="white"/>',
                    self.text(W / 2, 18, title, size=13, anchor="middle", weight="bold")]
        if note:
            self.out.append(self.text(W / 2, 34, note, size=10, anchor="middle", fill="#555"))
        self.out.append(self.text(16, TOP + (H - TOP - BOTTOM) / 2, ylabel, anchor="middle",
                                  extra=' transform="rotate(-90 16 %.1f)"' % (TOP + (H - TOP - BOTTOM) / 2)))

    @staticmethod
    def text(x, y, s, size=11, anchor="start", weight="normal", fill="#222", extra=""):
        return ('<text x="%.1f" y="%.1f" font-size="%s" text-anchor="%s" font-weight="%s" fill="%s"%s>%s</text>'
                % (x, y, size, anchor, weight, fill, extra, escape(s)))

    def line(self, x1, y1, x2, y2, stroke="#ccc", width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s/>'
                        % (x1, y1, x2, y2, stroke, width, d))

    def rect(self, x, y, w, h, fill):
        self.out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (x, y, w, max(h, 0), fill))

    def save(self, path):
        self.out.append("</svg>")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(self.out) + "\n")


def grouped(path, title, ylabel, note, groups, series, value, log=False, whisker=None, goal=None, fmt="%.1f",
            inf_label="inf"):
    """groups: worker counts; series: (mode, label, colour); value(mode, workers) -> float or None."""
    vals = [v for g in groups for m, _, _ in series for v in (value(m, g), whisker(m, g) if whisker else None)
            if v is not None and 0 < v < math.inf]
    if goal is not None:
        vals.append(goal)
    if not vals:
        return False
    y0, y1 = TOP, H - BOTTOM
    if log:
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        if hi <= lo:
            hi = lo * 10

        def ypos(v):
            v = max(v, lo)
            return y1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (y1 - y0)
        ticks, t = [], lo
        while t <= hi * 1.0001:
            ticks.append(t)
            t *= 10
    else:
        top = max(vals) * 1.15
        step = 10 ** math.floor(math.log10(top))
        if top / step < 3:
            step /= 2
        hi = math.ceil(top / step) * step

        def ypos(v):
            return y1 - v / hi * (y1 - y0)
        ticks = [i * step for i in range(int(round(hi / step)) + 1)]
    c = Chart(title, ylabel, note)
    for t in ticks:
        c.line(LEFT, ypos(t), W - RIGHT, ypos(t), stroke="#e5e5e5")
        c.out.append(c.text(LEFT - 6, ypos(t) + 4, ("%g" % t), anchor="end", fill="#555"))
    c.line(LEFT, y0, LEFT, y1, stroke="#888")
    c.line(LEFT, y1, W - RIGHT, y1, stroke="#888")
    gw = (W - LEFT - RIGHT) / len(groups)
    bw = gw * 0.7 / len(series)
    for gi, g in enumerate(groups):
        gx = LEFT + gi * gw + gw * 0.15
        label = "%d workers (%d waiter%s)" % (g, g - 1, "" if g == 2 else "s")
        c.out.append(c.text(LEFT + gi * gw + gw / 2, y1 + 16, label, anchor="middle"))
        for si, (m, _, colour) in enumerate(series):
            v = value(m, g)
            x = gx + si * bw
            if v is None:
                c.out.append(c.text(x + bw / 2, y1 - 4, "n/a", size=9, anchor="middle", fill="#999"))
                continue
            if v == math.inf:   # e.g. max/min when a worker got nothing: a bar to the top, hatched
                c.rect(x + 2, y0, bw - 4, y1 - y0, colour)
                c.out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#hatch)"/>'
                             % (x + 2, y0, bw - 4, y1 - y0))
                c.out.append(c.text(x + bw / 2, y0 + 14, inf_label, size=9, anchor="middle", fill="white",
                                    weight="bold"))
                continue
            c.rect(x + 2, ypos(v), bw - 4, y1 - ypos(v), colour)
            w = whisker(m, g) if whisker else None
            if w is not None:
                c.line(x + bw / 2, ypos(v), x + bw / 2, ypos(w), stroke="#333", width=1.5)
                c.line(x + bw / 2 - 6, ypos(w), x + bw / 2 + 6, ypos(w), stroke="#333", width=1.5)
                c.out.append(c.text(x + bw / 2 + 8, ypos(w) + 4, fmt % w, size=9, fill="#333"))
            if w is not None and y1 - ypos(v) > 16:   # inside the bar, clear of the whisker
                c.out.append(c.text(x + bw / 2, ypos(v) + 12, fmt % v, size=9, anchor="middle", fill="white"))
            else:
                c.out.append(c.text(x + bw / 2, ypos(v) - 4, fmt % v, size=9, anchor="middle"))
    if goal is not None:
        c.line(LEFT, ypos(goal), W - RIGHT, ypos(goal), stroke="#d62728", width=1.5, dash="6,4")
    lx = LEFT - 50
    for m, label, colour in series:
        c.rect(lx, H - 22, 12, 12, colour)
        c.out.append(c.text(lx + 16, H - 12, label, size=10))
        lx += 16 + 6 * len(label) + 14
    if goal is not None:
        c.line(lx, H - 16, lx + 22, H - 16, stroke="#d62728", width=1.5, dash="6,4")
        c.out.append(c.text(lx + 26, H - 12, "goal %g" % goal, size=10, fill="#d62728"))
    c.save(path)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "docs", "img"))
    ap.add_argument("--prefix", default="contend")
    ap.add_argument("--note", default="")
    ap.add_argument("--workers", default="16,100", help="worker counts to draw, in this order")
    a = ap.parse_args()
    rows = load(a.csv)
    groups = [int(x) for x in a.workers.split(",") if x]
    series = [s for s in MODES if any((s[0], g) in rows for g in groups)]
    if not series:
        print("contend_chart: no rows for workers %s in %s" % (a.workers, a.csv), file=sys.stderr)
        return 1

    def col(name):
        return lambda m, g: num(rows[(m, g)][name]) if (m, g) in rows else None
    os.makedirs(a.out, exist_ok=True)
    made = []
    p = os.path.join(a.out, a.prefix + "-handover.svg")
    if grouped(p, "Hand-over: release to the next holder's acquire (bar p50, whisker p99)", "ms (log scale)",
               a.note, groups, series, col("handover_p50_ms"), log=True, whisker=col("handover_p99_ms"),
               goal=2.0, fmt="%.3g"):
        made.append(p)
    p = os.path.join(a.out, a.prefix + "-commands.svg")
    if grouped(p, "Top-level commands per acquisition, all 5 nodes", "commands", a.note, groups, series,
               col("cmds_per_acq"), goal=15.0, fmt="%.1f"):
        made.append(p)
    def spread(m, g):
        r = rows.get((m, g))
        if r is None:
            return None
        return math.inf if num(r["min_per_worker"]) == 0 else num(r["max_over_min"])
    p = os.path.join(a.out, a.prefix + "-spread.svg")
    if grouped(p, "Spread: max / min acquisitions per worker (hatched: a worker got none)",
               "max / min (log scale)", a.note, groups,
               series, spread, log=True, goal=1.5, fmt="%.2f", inf_label="min 0"):
        made.append(p)
    p = os.path.join(a.out, a.prefix + "-throughput.svg")
    if grouped(p, "Acquisitions per second (all workers together)", "acquisitions / s", a.note, groups, series,
               col("acq_per_s"), fmt="%.0f"):
        made.append(p)
    for p in made:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

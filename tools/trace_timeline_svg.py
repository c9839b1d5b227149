#!/usr/bin/env python3
"""Draws a hetflow dump (JSON, from --dump or HETFLOW_DUMP) as an SVG timeline: one row per lane,
one bar per request, coloured by kind. Standard library only.
    python3 tools/trace_timeline_svg.py DUMP.json OUT.svg [title]"""
import html
import json
import sys

COLOURS = {"H2D": "#4e79a7", "D2H": "#59a14f", "kernel": "#f28e2b", "host": "#b07aa1", "wait": "#bab0ac", "free": "#bab0ac"}


def fail(message):
    print(f"trace_timeline_svg: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    try:
        with open(sys.argv[1]) as f:
            dump = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{sys.argv[1]}: {e}")
    # A trace (HETFLOW_TRACE, --trace) has the same times but no requests list: it opens as it is in
    # Perfetto or chrome://tracing, and `hetflow report` summarises it.
    if not isinstance(dump, dict) or "nodes" not in dump:
        fail(f"{sys.argv[1]} is not a hetflow dump (no \"nodes\"): give the JSON of --dump or HETFLOW_DUMP; "
             "a trace (--trace, HETFLOW_TRACE) opens as it is in Perfetto or chrome://tracing")
    title = sys.argv[3] if len(sys.argv) > 3 else f"{dump.get('device', '')} ({dump.get('policy', '')})"
    nodes = [n for n in dump["nodes"] if n["start_ns"] >= 0 and n["end_ns"] >= n["start_ns"] and n["kind"] != "wait"]
    if not nodes:
        fail(f"{sys.argv[1]} has no timed request to draw (was the controller recording? see docs/dump-schema.md)")
    t0 = min(n["start_ns"] for n in nodes)
    t1 = max(n["end_ns"] for n in nodes)
    order = {"H2D": 0, "kernel": 1, "D2H": 2}
    lanes = sorted({n["lane"] for n in nodes}, key=lambda l: (order.get(l.rstrip("0123456789"), 3), l))
    left, width, row, top = 110, 1000, 26, 40
    scale = width / max(t1 - t0, 1)
    h = top + row * len(lanes) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{h}" font-family="Helvetica" font-size="11">',
           f'<text x="10" y="20" font-size="14">{html.escape(title)}</text>']
    for i, lane in enumerate(lanes):
        y = top + i * row
        out.append(f'<text x="10" y="{y + 16}">{html.escape(lane)}</text>')
        out.append(f'<line x1="{left}" y1="{y + row - 2}" x2="{left + width}" y2="{y + row - 2}" stroke="#ddd"/>')
    for n in nodes:
        y = top + lanes.index(n["lane"]) * row
        x = left + (n["start_ns"] - t0) * scale
        w = max((n["end_ns"] - n["start_ns"]) * scale, 1)
        colour = COLOURS.get(n["kind"], "#999")
        ms = (n["end_ns"] - n["start_ns"]) / 1e6
        out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" fill="{colour}" stroke="white">'
                   f'<title>#{n["id"]} {html.escape(n["name"])}: {ms:.3f} ms</title></rect>')
        if w > 60:
            out.append(f'<text x="{x + 3:.1f}" y="{y + 16}" fill="white">{html.escape(n["name"][:int(w / 6)])}</text>')
    for k in range(0, 11):
        x = left + k * width / 10
        out.append(f'<text x="{x:.0f}" y="{h - 12}" text-anchor="middle">{(t1 - t0) * k / 10 / 1e6:.1f} ms</text>')
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The timeline panel as a tmux capture shows it, for tests/e2e/timeline.sh.

  timeline_check.py rows < SCREEN
      the panel's rows under its title, cut to its columns
  timeline_check.py live LABEL PHASE < SCREEN
      exit 0 when a row labelled LABEL (a prefix: "HANG", "paused", "dev0") reaches now: its last
      cell is PHASE's letter (or a level glyph), and it has been for a while (its last 3 cells)
  timeline_check.py shares RECORDING STEP SPAN_S ROW
      the compact row ROW (its cells) against the phase times RECORDING (JSON lines) has for the
      SPAN_S seconds up to the end of the training window that holds step STEP: every phase above
      10% of the time within 10 points of its share of the row's cells; prints both, exit 1 when
      one is off

The letters come from the phase table in backend/core/ev.h, as the dashboard's do."""
import json
import os
import re
import sys

CELLS = 12  # columns of row labels, then the cells
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def phase_table():
    """{name: (letter, label)} from the EV_PHASES X-macro."""
    with open(os.path.join(SRC, "backend", "core", "ev.h"), encoding="utf-8") as f:
        text = f.read()
    rows = re.findall(r'X\(\w+, "([^"]+)", "(.)", "([^"]+)"\)', text)
    if not rows:
        sys.exit("timeline_check: no phase table in backend/core/ev.h")
    return {name: (letter, label) for name, letter, label in rows}


def panel(screen):
    """The panel's width (from its title to the right edge: it is the rightmost panel) and its
    rows under the title, cut to its columns and padded to its width (tmux trims trailing
    blanks)."""
    lines = screen.split("\n")
    for y, line in enumerate(lines):
        m = re.search(r"[─-] timeline [─-]", line)
        if not m:
            continue
        col = m.start()
        width = len(line.rstrip()) - col
        rows = []
        for below in lines[y + 1:]:
            part = below[col:col + width]
            if re.match(r"[─-] \S", part):  # the next panel's title
                break
            rows.append(part.ljust(width))
        return width, rows
    return 0, []


def live(screen, label, phase):
    letter = phase_table()[phase][0]
    width, rows = panel(screen)
    for row in rows:
        if not row[1:].startswith(label):
            continue
        # the last 3 cells (the last one is at width - 2): the phase's letter, or a level glyph
        tail = row[width - 4:width - 1]
        if all(c == letter or "\u2581" <= c <= "\u2588" for c in tail):
            return 0
    return 1


def recorded(path, step, span_ns):
    """Each phase's time (ns, summed windows spread over their spans) in the span_ns up to the
    end of the training window holding step, the host's waits left out."""
    phases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if e.get("type") == "phase" and e.get("dev", 0) == 0 and e["phase"] != "sync":
                phases.append(e)
    ends = [p["end_ns"] for p in phases if p.get("step", -1) >= step and p.get("count", 1) > 0]
    if not ends:
        sys.exit("timeline_check: the recording has no window with step %d" % step)
    t1 = min(ends)
    t0 = t1 - span_ns
    time = {}
    for p in phases:
        a, b = max(p["start_ns"], t0), min(p["end_ns"], t1)
        if b <= a:
            continue
        span = p["end_ns"] - p["start_ns"]
        busy = p.get("busy_ns", span) if p.get("count", 1) > 1 else span
        time[p["phase"]] = time.get(p["phase"], 0) + (b - a) * busy / span
    return time


def shares(path, step, span_s, row):
    table = phase_table()
    by_letter = {v[0]: k for k, v in table.items()}
    time = recorded(path, step, int(float(span_s) * 1e9))
    counts = {}
    for c in row:
        if c in by_letter:
            counts[by_letter[c]] = counts.get(by_letter[c], 0) + 1
    n, total = sum(counts.values()), sum(time.values())
    if not n or not total:
        print("no cells (%d) or no time (%d ns)" % (n, total))
        return 1
    bad = 0
    for ph in sorted(set(time) | set(counts), key=lambda k: -time.get(k, 0)):
        t_pct, c_pct = 100.0 * time.get(ph, 0) / total, 100.0 * counts.get(ph, 0) / n
        off = t_pct > 10 and abs(t_pct - c_pct) > 10
        bad += off
        print("%-10s %5.1f%% of the time  %5.1f%% of the cells%s" %
              (ph, t_pct, c_pct, "  <- off by more than 10 points" if off else ""))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "rows":
        print("\n".join(r.rstrip() for r in panel(sys.stdin.read())[1]))
        return 0
    if len(argv) == 4 and argv[1] == "live":
        return live(sys.stdin.read(), argv[2], argv[3])
    if len(argv) == 6 and argv[1] == "shares":
        return shares(argv[2], int(argv[3]), argv[4], argv[5])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""`grpo-launch report RUN1 RUN2` in headless Chromium: a second run is made from the sample run
(rewards halved, losses doubled, throughput halved and every time stretched 2x, as a slower layout
would look), both are
overlaid, and in the DOM Chromium built every chart has two series with data, and in the screenshot
each chart's band shows both runs' colours (run 1 the palette's first, run 2 its second; the layout
contract of launcher/report/include/grpo/report/report.h).

usage: compare_browser_test.py GRPO_LAUNCH SAMPLE_RUN_DIR WORK_DIR
"""
import json, os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_browser_test import CHART, HEADER, PALETTE, WIDTH, chromium, count_color, decode_png  # noqa: E402


def main():
    grpo, sample, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run_a, run_b = os.path.join(work, "run-a"), os.path.join(work, "run-b")
    shutil.copytree(sample, run_a)
    os.makedirs(run_b)
    with open(os.path.join(sample, "events.jsonl")) as src, open(os.path.join(run_b, "events.jsonl"), "w") as dst:
        t0 = None
        for line in src:
            e = json.loads(line)
            if "time" in e:
                t0 = e["time"] if t0 is None else t0
                e["time"] = t0 + 2 * (e["time"] - t0)
            if "reward_mean" in e:
                e["reward_mean"] /= 2
            if "loss" in e:
                e["loss"] *= 2
            if "tokens_per_s" in e:
                e["tokens_per_s"] /= 2
            dst.write(json.dumps(e) + "\n")
    html = os.path.join(work, "compare.html")
    r = subprocess.run([grpo, "report", run_a, run_b, "-o", html], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    failures = []

    dom = chromium(["--dump-dom", "file://" + os.path.abspath(html)], work).stdout
    charts = re.findall(r'<figure class="chart" id="([^"]+)" data-points="(\d+)">(.*?)</figure>', dom, re.S)
    ids = [c[0] for c in charts]
    if ids != ["chart-reward", "chart-loss", "chart-throughput", "chart-goodput"]:
        failures.append(f"charts {ids}")
    for cid, _, body in charts:
        series = re.findall(r'<g class="series" data-name="(run \d)" data-points="(\d+)">', body)
        if [s[0] for s in series] != ["run 1", "run 2"] or any(int(n) == 0 for _, n in series):
            failures.append(f"{cid}: series {series}")

    height = HEADER + CHART * len(charts) + 40
    shot = os.path.join(work, "compare.png")
    s = chromium([f"--window-size={WIDTH},{height}", "--screenshot=" + shot, "file://" + os.path.abspath(html)], work)
    assert os.path.exists(shot), "no screenshot: " + s.stderr[-500:]
    w, h, bpp, rows = decode_png(shot)
    assert w == WIDTH and h >= height - 40, f"screenshot is {w}x{h}"
    for i, (cid, _, _) in enumerate(charts):
        y0, y1 = HEADER + i * CHART + 40, HEADER + (i + 1) * CHART
        first, second = count_color(rows, bpp, y0, y1, PALETTE[0]), count_color(rows, bpp, y0, y1, PALETTE[1])
        print(f"{cid}: run 1 {first} px, run 2 {second} px")
        if first < 150 or second < 150:
            failures.append(f"{cid}: the screenshot lacks a run (run 1 {first} px, run 2 {second} px)")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"all {len(charts)} charts show both runs")


if __name__ == "__main__":
    main()

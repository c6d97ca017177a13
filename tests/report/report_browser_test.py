#!/usr/bin/env python3
"""Opens a grpo-launch run report in headless Chromium, takes a screenshot, and checks that every
chart rendered with data points: the DOM (after Chromium loaded it) has each chart with its data
elements, and the screenshot shows each chart's series colours inside that chart's band of the
page (the layout contract of launcher/report/include/grpo/report/report.h).

usage: report_browser_test.py GRPO_LAUNCH RUN_DIR_WITH_EVENTS WORK_DIR [SCREENSHOT_COPY]
"""
import os, re, shutil, struct, subprocess, sys, zlib

HEADER, CHART, WIDTH = 160, 320, 1000
PALETTE = [(0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e), (0x2c, 0xa0, 0x2c), (0x94, 0x67, 0xbd)]
FAILURE, RESTART = (0xd6, 0x27, 0x28), (0x94, 0x67, 0xbd)


def chromium(args, work):
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--user-data-dir=" + os.path.join(work, "chromium-profile")]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=120)


def decode_png(path):
    """RGB(A) 8-bit non-interlaced PNG -> (width, height, rows of (r,g,b) tuples)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unsupported PNG {depth} {ctype} {interlace}"
        elif kind == b"IDAT":
            idat += body
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def count_color(rows, bpp, y0, y1, color, tol=8):
    n = 0
    for y in range(y0, min(y1, len(rows))):
        line = rows[y]
        for x in range(0, len(line), bpp):
            if abs(line[x] - color[0]) <= tol and abs(line[x + 1] - color[1]) <= tol and abs(line[x + 2] - color[2]) <= tol:
                n += 1
    return n


def main():
    grpo, run, work = sys.argv[1], sys.argv[2], sys.argv[3]
    copy = sys.argv[4] if len(sys.argv) > 4 else None
    os.makedirs(work, exist_ok=True)
    html = os.path.join(work, "report.html")
    r = subprocess.run([grpo, "report", run, "-o", html], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    failures = []

    # 1. The DOM as Chromium built it: every chart present, each with data elements.
    dom = chromium(["--dump-dom", "file://" + os.path.abspath(html)], work).stdout
    charts = re.findall(r'<figure class="chart" id="([^"]+)" data-points="(\d+)">(.*?)</figure>', dom, re.S)
    ids = [c[0] for c in charts]
    need = ["chart-reward", "chart-loss", "chart-kl", "chart-throughput", "chart-step-time", "chart-memory",
            "chart-timeline"]
    for n in need:
        if n not in ids:
            failures.append(f"chart {n} missing from the page")
    if not any(i.startswith("chart-expert-load-layer-") for i in ids):
        failures.append("no expert-load heat map")
    for cid, points, body in charts:
        marks = len(re.findall(r"<circle|<rect class=\"cell\"|<rect class=\"attempt\"|<path class=\"decision\"", body))
        if int(points) == 0 or marks == 0:
            failures.append(f"{cid}: no data points rendered (data-points={points}, marks={marks})")

    # 2. The screenshot: each chart's band shows its data colours.
    height = HEADER + CHART * len(charts) + 40
    shot = os.path.join(work, "report.png")
    s = chromium([f"--window-size={WIDTH},{height}", "--screenshot=" + shot, "file://" + os.path.abspath(html)], work)
    assert os.path.exists(shot), "no screenshot: " + s.stderr[-500:]
    w, h, bpp, rows = decode_png(shot)
    assert w == WIDTH and h >= height - 40, f"screenshot is {w}x{h}"
    for i, (cid, _, _) in enumerate(charts):
        y0, y1 = HEADER + i * CHART, HEADER + (i + 1) * CHART
        if cid.startswith("chart-expert-load"):
            # heat-map cells are shades of blue: count strongly blue pixels
            blue = sum(1 for y in range(y0, y1) for x in range(0, w * bpp, bpp)
                       if rows[y][x + 2] > 200 and rows[y][x] < 150 and rows[y][x + 1] < 150)
            ok, what = blue > 500, f"{blue} blue heat-map pixels"
        elif cid == "chart-timeline":
            red = count_color(rows, bpp, y0, y1, FAILURE)
            purple = count_color(rows, bpp, y0, y1, RESTART)
            bars = count_color(rows, bpp, y0, y1, PALETTE[2]) + count_color(rows, bpp, y0, y1, PALETTE[1])
            ok, what = red > 20 and purple > 20 and bars > 1000, f"failures {red} px, restarts {purple} px, attempts {bars} px"
        else:
            px = count_color(rows, bpp, y0 + 40, y1, PALETTE[0])
            ok, what = px > 150, f"{px} px of the first series colour"
        print(f"{cid}: {what}")
        if not ok:
            failures.append(f"{cid}: the screenshot shows no data ({what})")
    if copy:
        shutil.copyfile(shot, copy)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"all {len(charts)} charts rendered with data")


if __name__ == "__main__":
    main()

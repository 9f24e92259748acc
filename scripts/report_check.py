"""Render a run's report.html in headless Chromium and write full-page PNG screenshots.

Usage: ``python scripts/report_check.py runs/NAME`` (``make report-check RUN=runs/NAME``).

Chromium (Debian's ``chromium`` package) renders the page at 1280 px width; the page height is
measured first (a one-off ``--dump-dom`` run with a script that writes the document height into the
title), then the whole page is captured in slices of at most 2,000 px (readable one by one), saved as
``RUN/screenshots/report-NN.png``. Also checks the page for the report's contract: a title that is
not "Notebook", no "NaN", "by -", "Unnamed: 0" or "No description has been provided"; no script or
stylesheet from another host (``<script src>``, ``<link href>``), no script at all; the summary
section (``<section id="summary">``) present and first; the main body (everything above the collapsed
appendix) at most :data:`MAX_SCREENS` screens of :data:`SCREEN` px at 1280 px width.
``--text-only`` runs the text checks without Chromium.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
WIDTH = 1280
SLICE = 2000
SCREEN = 800
"""Height in px of one screen of a 1280 x 800 display."""
MAX_SCREENS = 8
FORBIDDEN = ("NaN", "by -", "Unnamed: 0", "No description has been provided")
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I
)


def chromium() -> str:
    """Path of the Chromium binary (Debian's ``chromium``)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit(
        "chromium not found: install Debian's package with 'apt-get install -y chromium'"
    )


def run_chromium(args: list[str]) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="report-check-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=180,
        )


def page_height(page: Path) -> tuple[int, int]:
    """Heights in pixels of the rendered page and of its main body (above the appendix) at
    :data:`WIDTH`."""
    probe = page.with_name(".report-height.html")
    script = (
        "<script>window.addEventListener('load',()=>{const a=document.getElementById('appendix');"
        "document.title='HEIGHT='+Math.ceil(document.documentElement.scrollHeight)+' MAIN='+"
        "Math.ceil(a?a.getBoundingClientRect().top+window.scrollY:document.documentElement.scrollHeight);"
        "});</script>"
    )
    # the report's Content-Security-Policy forbids scripts: the probe copy drops it
    text = re.sub(
        r"<meta http-equiv=\"Content-Security-Policy\"[^>]*>", "", page.read_text(encoding="utf-8")
    )
    probe.write_text(text.replace("</body>", script + "</body>", 1), encoding="utf-8")
    try:
        done = run_chromium(
            [
                f"--window-size={WIDTH},1000",
                "--virtual-time-budget=5000",
                "--dump-dom",
                probe.as_uri(),
            ]
        )
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r"HEIGHT=(\d+) MAIN=(\d+)", done.stdout)
    if not found:
        raise SystemExit("could not measure the page height: " + done.stderr[-500:])
    return int(found.group(1)), int(found.group(2))


def check_text(page: Path) -> list[str]:
    """Problems of the report's text (title, forbidden strings)."""
    # embedded images are base64: their letters may spell anything
    text = re.sub(r'data:[^"\s)]+', "data:", page.read_text(encoding="utf-8"))
    problems = []
    title = re.search(r"<title>(.*?)</title>", text, re.S)
    if not title or title.group(1).strip() in ("", "Notebook"):
        problems.append(f"page title is {title.group(1).strip() if title else None!r}")
    for word in FORBIDDEN:
        if word in text:
            problems.append(f"the page contains {word!r}")
    for found in EXTERNAL.finditer(text):
        problems.append(f"the page loads from another host: {found.group(0)[:80]!r}")
    if re.search(r"<script\b", text, re.I):
        problems.append("the page carries a script")
    summary = text.find('<section class="report-section" id="summary"')
    if summary < 0:
        summary = text.find('id="summary"')
    if summary < 0:
        problems.append('the summary section (<section id="summary">) is missing')
    elif 0 <= text.find('class="report-section"') < summary:
        problems.append("the summary is not the first section")
    return problems


def check_height(main_height: int) -> list[str]:
    """Problems of the main body's height (more than :data:`MAX_SCREENS` screens)."""
    screens = main_height / SCREEN
    if screens > MAX_SCREENS:
        return [
            f"the main body is {main_height} px ({screens:.1f} screens of {SCREEN} px), more than {MAX_SCREENS}"
        ]
    return []


def main(argv: list[str]) -> int:
    text_only = "--text-only" in argv
    argv = [a for a in argv if a != "--text-only"]
    if len(argv) != 1:
        print(__doc__)
        return 2
    run = Path(argv[0]).resolve()
    page = run / "report.html"
    if not page.exists():
        print(f"{page} not found: run 'ecc-lab run --out {run}' first")
        return 2
    if text_only:
        problems = check_text(page)
        for problem in problems:
            print("problem:", problem)
        return 1 if problems else 0
    out = run / "screenshots"
    out.mkdir(exist_ok=True)
    for old in [*out.glob("report-*.png"), *out.glob("appendix-*.png")]:
        old.unlink()
    height, main_height = page_height(page)
    # the appendix opened, to look at its figures too
    opened = page.with_name(".report-open.html")
    opened.write_text(
        page.read_text(encoding="utf-8").replace(
            '<details class="appendix"', '<details open class="appendix"', 1
        ),
        encoding="utf-8",
    )
    try:
        open_height, _ = page_height(opened)
        open_shot = out / "appendix-full.png"
        run_chromium(
            [
                f"--window-size={WIDTH},{open_height}",
                "--virtual-time-budget=5000",
                f"--screenshot={open_shot}",
                opened.as_uri(),
            ]
        )
    finally:
        opened.unlink(missing_ok=True)
    # one full-page shot, cut into slices a viewer can open
    shot = out / "report-full.png"
    done = run_chromium(
        [
            f"--window-size={WIDTH},{height}",
            "--virtual-time-budget=5000",
            f"--screenshot={shot}",
            page.as_uri(),
        ]
    )
    if not shot.exists():
        print(done.stderr[-2000:])
        return 1
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None
    with Image.open(shot) as full:
        n = 0
        for top in range(0, full.height, SLICE):
            n += 1
            full.crop((0, top, full.width, min(full.height, top + SLICE))).save(
                out / f"report-{n:02d}.png"
            )
    shot.unlink()
    if open_shot.exists():
        with Image.open(open_shot) as full:
            for k, top in enumerate(range(main_height, full.height, SLICE), start=1):
                full.crop((0, top, full.width, min(full.height, top + SLICE))).save(
                    out / f"appendix-{k:02d}.png"
                )
        open_shot.unlink()
    print(
        f"page height {height} px, main body {main_height} px "
        f"({main_height / SCREEN:.1f} screens of {SCREEN} px); {n} screenshot(s) under {out}"
    )
    problems = check_text(page) + check_height(main_height)
    for problem in problems:
        print("problem:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Render a run's report.html in headless Chromium and write full-page PNG screenshots.

Usage: ``python scripts/report_check.py runs/NAME`` (``make report-check RUN=runs/NAME``).

Chromium (Debian's ``chromium`` package) renders the page at 1280 px width; the page height is
measured first (a one-off ``--dump-dom`` run with a script that writes the document height into the
title), then the whole page is captured in slices of at most 2,000 px (readable one by one), saved as
``RUN/screenshots/report-NN.png``. Also checks the page for the report's contract: a title that is
not "Notebook", and no "NaN", "Unnamed: 0" or "No description has been provided".
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
FORBIDDEN = ("NaN", "Unnamed: 0", "No description has been provided")


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


def page_height(page: Path) -> int:
    """Height in pixels of the rendered page at :data:`WIDTH`."""
    probe = page.with_name(".report-height.html")
    script = (
        "<script>window.addEventListener('load',()=>{document.title='HEIGHT='+"
        "Math.ceil(document.documentElement.scrollHeight);});</script>"
    )
    text = page.read_text(encoding="utf-8")
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
    found = re.search(r"HEIGHT=(\d+)", done.stdout)
    return int(found.group(1)) if found else 4000


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
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    run = Path(argv[0]).resolve()
    page = run / "report.html"
    if not page.exists():
        print(f"{page} not found: run 'ecc-lab run --out {run}' first")
        return 2
    out = run / "screenshots"
    out.mkdir(exist_ok=True)
    for old in out.glob("report-*.png"):
        old.unlink()
    height = page_height(page)
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
    print(f"page height {height} px; {n} screenshot(s) under {out}")
    problems = check_text(page)
    for problem in problems:
        print("problem:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

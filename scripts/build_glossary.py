"""Write the guide's glossary page ``docs/guide/glossary.md`` from ``ecc_lib/report/glossary.py``.

``tests/test_issue35_glossary.py`` fails while the committed page differs from what this writes.

Usage: python scripts/build_glossary.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "glossary.md"


def main() -> int:
    """Write the page."""
    sys.path.insert(0, str(ROOT))
    from ecc_lib.report.glossary import glossary_markdown

    PAGE.write_text(glossary_markdown(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

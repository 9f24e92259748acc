"""Issue 36 item 12: CJK and emoji model names are never drawn as empty boxes: a font that has the
glyphs is used when one is installed, otherwise the character is drawn as its escape."""

from __future__ import annotations

import io
import warnings

import pandas as pd
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from ecc_lib.plotting import style  # noqa: E402
from ecc_lib.plotting.data import plot_scores_by_category  # noqa: E402

NAMES = ["模型-甲", "robot 🤖", "plain-model"]


def _missing_glyph_warnings(fig) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    texts = [t.get_text() for t in fig.findobj(Text)]
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels()]
    return texts


def test_cjk_and_emoji_model_names_draw_without_missing_glyphs():
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "category": ["数学", "art"]})
    outcomes = pd.DataFrame(
        {
            "query_id": ["q1", "q2"] * 3,
            "model": [n for n in NAMES for _ in range(2)],
            "score": [1.0, 0.0, 0.5, 1.0, 0.0, 1.0],
        }
    )
    fig = plot_scores_by_category(queries, outcomes, title="scores of 模型-甲 🤖")
    assert _missing_glyph_warnings(fig) == []
    drawn = " ".join(_texts(fig))
    covered = style._font_chain()[1]
    for ch in "模型甲数学🤖":
        # drawn as itself where an installed font has it, else as its escape: never a box
        assert (ch in drawn) if ord(ch) in covered else (ch not in drawn)
    assert "plain-model" in drawn


def test_drawable_text_escapes_only_what_no_font_has():
    covered = style._font_chain()[1]
    assert style.drawable_text("gpt-4o (café)") == "gpt-4o (café)"  # DejaVu has these
    text = style.drawable_text("模型 🤖")
    for ch, escape in (("模", "\\u6a21"), ("🤖", "\\U0001f916")):
        assert (ch in text) if ord(ch) in covered else (escape in text)

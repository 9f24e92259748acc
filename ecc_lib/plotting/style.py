"""Shared look of every figure: sizes, fonts, colours, the axes and heatmap helpers, model names.

The figure modules of :mod:`ecc_lib.plotting` draw through these helpers, so that all figures share
the page width, the font sizes and the way long model names are shortened.
"""

from __future__ import annotations

import functools
from collections import ChainMap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_hex

from ecc_lib.labels import short_model_names, shorten_name
from ecc_lib.method_registry import spec_view

FONT_SIZE = 9
TITLE_SIZE = 10
PAGE_WIDTH = 7.0
"""Width in inches of every figure: the text width of a two-column paper (a column is 3.5)."""
SCORE_LABEL = "mean score (0-1)"
"""Axis label of scores: binary (fraction correct) or graded, the same words fit both."""
OTHERS_GREY = "#c8c8c8"
"""Colour of the points of clusters that are not named in a figure."""
_TAB10 = [to_hex(colour) for colour in plt.get_cmap("tab10").colors]
CLUSTER_COLORS = (*_TAB10[:7], *_TAB10[8:], "#393b79")
"""Colours of named clusters: tab10 with its grey replaced, so none looks like the others' grey."""
_ROUTING_COLOURS = {
    "probe_winner": "tab:brown",
    "oracle": "#4d4d4d",
    "random": "#a0a0a0",
    "best fixed model": "#6f6f6f",
    "knn": "tab:blue",
    "mlp": "tab:cyan",
    "embedllm-mf": "tab:olive",
    "mirt": "tab:pink",
    "avengers-pro": "#393b79",
    "softmax-ranking": "#637939",
    "graphrouter": "#8c6d31",
}
METHOD_COLOURS = ChainMap(spec_view("colour"), _ROUTING_COLOURS)
"""One colour per method in every figure: the clusterings' from their
:class:`~ecc_lib.method_registry.MethodSpec`, then the routers' and the references'; the ECC router
is ECC's red. Keys are lower case; see :func:`method_colour`."""
_SPARE = ("#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#9edae5", "#c49c94", "#dbdb8d", "#f7b6d2")


def method_colour(name: str) -> str:
    """The colour of a method in every figure (:data:`METHOD_COLOURS`).

    ``"kNN (DARS)"`` is kNN's colour; an unknown method gets a spare colour fixed by its name.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    key = str(name).split(" (")[0].strip().lower()
    if key in METHOD_COLOURS:
        return METHOD_COLOURS[key]
    import zlib

    return _SPARE[zlib.crc32(key.encode()) % len(_SPARE)]


_BASE_FONT = "DejaVu Sans"
FALLBACK_FONTS: tuple[str, ...] = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "Noto Sans",
    "Noto Emoji",
    "Symbola",
)
"""Fonts tried after DejaVu Sans for characters it lacks (CJK, emoji), when installed (issue 36:
such names were drawn as empty boxes); a character none of them has is drawn as its ``\\u``
escape instead (:func:`drawable_text`)."""


@functools.lru_cache(maxsize=1)
def _font_chain() -> tuple[tuple[str, ...], frozenset[int]]:
    """The installed fonts of the figure font chain and the code points they cover."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    names = [_BASE_FONT, *(f for f in FALLBACK_FONTS if f in installed)]
    chain, covered = [], set()
    for name in names:
        try:
            path = font_manager.findfont(
                font_manager.FontProperties(family=name), fallback_to_default=False
            )
            covered.update(FT2Font(path).get_charmap())
        except Exception:  # noqa: BLE001 - a font matplotlib cannot read is not used
            continue
        chain.append(name)
    return tuple(chain) or (_BASE_FONT,), frozenset(covered)


def drawable_text(text) -> str:
    """``text`` with every character no font of the figure font chain has (:data:`FALLBACK_FONTS`)
    written as its escape (``\\u6a21``, ``\\U0001f600``), so a figure never shows empty boxes;
    the tables and ``metrics.json`` keep the exact names.

    Parameters
    ----------
    text : object

    Returns
    -------
    str
    """
    text = str(text)
    if text.isascii():
        return text
    covered = _font_chain()[1]
    return "".join(
        ch
        if ord(ch) in covered or ch in "\n\t"
        else (f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        for ch in text
    )


_RC = {
    "font.size": FONT_SIZE,
    "font.family": _BASE_FONT,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "axes.titlesize": TITLE_SIZE,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE - 1,
    "ytick.labelsize": FONT_SIZE - 1,
    "legend.fontsize": FONT_SIZE - 1,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def literal_text(text) -> str:
    """``text`` escaped so that matplotlib draws it as written, never as math text.

    matplotlib reads a string with two unescaped ``$`` as math (``cost $5 vs $10`` would lose its
    dollars and ``m$\\frac$`` would fail to draw); each ``$`` becomes ``\\$``, which is drawn as
    ``$``.

    Parameters
    ----------
    text : object

    Returns
    -------
    str
    """
    return str(text).replace("$", r"\$")


_LITERAL = "_ecc_lib_literal"


def draw_literally(fig) -> None:
    """Make every text of ``fig`` literal (:func:`literal_text`): titles, labels, legends,
    annotations and text tick labels, which hold model, category and dataset names.

    Idempotent: a text or formatter already made literal is left alone.

    Parameters
    ----------
    fig : matplotlib Figure or None
    """
    from matplotlib.axis import Axis
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    if fig is None:
        return
    for text in fig.findobj(Text):
        if not getattr(text, _LITERAL, False):
            text.set_text(literal_text(drawable_text(text.get_text())))
            setattr(text, _LITERAL, True)
    for axis in fig.findobj(Axis):
        for getter, setter in (
            (axis.get_major_formatter, axis.set_major_formatter),
            (axis.get_minor_formatter, axis.set_minor_formatter),
        ):
            formatter = getter()
            # text labels: set_ticklabels makes a FuncFormatter (a FixedFormatter before
            # matplotlib 3.9), a categorical axis a StrCategoryFormatter
            if isinstance(formatter, FuncFormatter) and getattr(formatter.func, _LITERAL, False):
                continue
            if isinstance(formatter, (FixedFormatter, FuncFormatter, StrCategoryFormatter)):
                setter(FuncFormatter(_literal_labels(formatter)))


def _literal_labels(formatter):
    """``(x, pos) -> literal label`` of a text tick formatter."""

    def label(x, pos=None):
        return literal_text(drawable_text(formatter(x, pos)))

    setattr(label, _LITERAL, True)
    return label


def styled(function):
    """Run a figure function under the package style (readable font sizes, no top/right spines);
    the figure's texts are drawn literally (:func:`draw_literally`).

    Parameters
    ----------
    function : callable
        A figure function returning its figure.

    Returns
    -------
    callable
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with plt.rc_context({**_RC, "font.family": list(_font_chain()[0])}):
            fig = function(*args, **kwargs)
            draw_literally(fig if hasattr(fig, "findobj") else None)
            return fig

    return wrapper


def figure_axes(ax, figsize: tuple[float, float]):
    """``(fig, ax)``: the given axes' figure, or a new figure.

    Parameters
    ----------
    ax : matplotlib Axes or None
    figsize : (float, float)
        Size of a new figure, in inches.

    Returns
    -------
    fig, ax
    """
    if ax is not None:
        return ax.figure, ax
    return plt.subplots(figsize=figsize, layout="constrained")


def model_labels(names: Sequence[str]) -> list[str]:
    """The display name of each model, in order (:func:`ecc_lib.labels.short_model_names`).

    Parameters
    ----------
    names : sequence of str

    Returns
    -------
    list of str
    """
    mapping = short_model_names(names)
    return [mapping[str(n)] for n in names]


def heatmap(
    ax,
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cmap: str,
    colorbar_label: str,
    *,
    vmin: float | None = None,
    vmax: float | None = None,
    annotate: bool = True,
    fmt: str = "{:.2f}",
    center: float | None = None,
    row_width: int = 28,
):
    """A heatmap of ``matrix`` on ``ax`` with its labels, colour bar and (up to 400 cells) values.

    Parameters
    ----------
    ax : matplotlib Axes
    matrix : ndarray
        Rows x columns.
    row_labels, col_labels : sequence of str
    cmap : str
    colorbar_label : str
    vmin, vmax : float, optional
        Colour limits; with ``center``, symmetric around it.
    annotate : bool, default True
        Write each cell's value (at most 400 cells).
    fmt : str, default "{:.2f}"
    center : float, optional
    row_width : int, default 28
        Longest row label (:func:`ecc_lib.labels.shorten_name`).

    Returns
    -------
    matplotlib.image.AxesImage
    """
    matrix = np.asarray(matrix, dtype=float)
    if center is not None:
        span = np.nanmax(np.abs(matrix - center)) if np.isfinite(matrix).any() else 1.0
        span = span or 1.0
        vmin, vmax = center - span, center + span
    image = ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(
        np.arange(len(col_labels)), [shorten_name(c) for c in col_labels], rotation=45, ha="right"
    )
    ax.set_yticks(
        np.arange(len(row_labels)), [shorten_name(r, width=row_width) for r in row_labels]
    )
    ax.spines[:].set_visible(False)
    # a colour bar as tall as the axes of a tall figure (its aspect ratio is length / width)
    aspect = 20 * max(1.0, ax.figure.get_figheight() / 3.5)
    bar = ax.figure.colorbar(image, ax=ax, fraction=0.04, pad=0.02, aspect=aspect)
    bar.set_label(colorbar_label)
    n_cells = matrix.size
    if annotate and n_cells <= 400:
        colours = image.cmap(image.norm(matrix))
        for (i, j), value in np.ndenumerate(matrix):
            if not np.isfinite(value):
                continue
            text = fmt.format(value)
            if text.lstrip("+-").strip("0.") == "":
                text = text.lstrip("+-")  # "-0.0" and "+0.00" read as 0
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=max(5.5, FONT_SIZE - 2 - n_cells // 120),
                color=text_colour(colours[i, j]),
            )
    return image


def clean_errors(err: np.ndarray) -> np.ndarray:
    """Error-bar lengths as matplotlib draws them: negative ones clipped to 0, non-finite ones 0.

    Parameters
    ----------
    err : ndarray

    Returns
    -------
    ndarray
    """
    return np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)


def error_bars(estimate, low, high) -> np.ndarray:
    """Lengths ``(2, n)`` below and above each estimate of its interval ``[low, high]``.

    Parameters
    ----------
    estimate, low, high : array-like

    Returns
    -------
    ndarray
        Shape ``(2, n)``, as matplotlib's ``xerr``/``yerr``.
    """
    estimate = np.asarray(estimate, dtype=float)
    below = estimate - np.asarray(low, dtype=float)
    return clean_errors(np.vstack([below, np.asarray(high, dtype=float) - estimate]))


def relative_luminance(rgba) -> float:
    """WCAG relative luminance (0 black to 1 white) of an RGB(A) colour with channels in 0-1.

    Parameters
    ----------
    rgba : sequence of float

    Returns
    -------
    float
    """
    rgb = np.asarray(rgba, dtype=float)[:3]
    linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def text_colour(rgba) -> str:
    """Black or white, whichever contrasts more with the background colour ``rgba``.

    Parameters
    ----------
    rgba : sequence of float

    Returns
    -------
    str
        ``"black"`` or ``"white"``.
    """
    lum = relative_luminance(rgba)
    # contrast ratios (L1 + 0.05) / (L2 + 0.05) against white (1) and black (0)
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


__all__: list[str] = []

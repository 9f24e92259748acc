"""Sphinx configuration of the ecc_lib user guide and API reference (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

project = "ecc_lib"
author = "ecc_lib contributors"
copyright = "2026, ecc_lib contributors"  # noqa: A001 - Sphinx's name

extensions = [
    "myst_nb",  # Markdown pages and the executed tour (never executed at build time)
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "ecc_docs",  # parameter and figure tables generated from the notebooks
]
nb_execution_mode = "off"
myst_heading_anchors = 3
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
exclude_patterns = ["_build", "_ext", "CONTRIBUTING.md", "**/.ipynb_checkpoints"]
html_theme = "alabaster"
html_static_path: list[str] = []
html_theme_options = {"page_width": "1100px"}
napoleon_use_param = False  # types as text: "shape (n_queries, n_models)" is no cross-reference


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Hide scikit-learn's generated ``set_<method>_request`` methods."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    """Register the member filter."""
    app.connect("autodoc-skip-member", _skip_metadata_requests)


# Attribute types such as "ndarray, shape (n_queries, n_models)" are split into words that Sphinx
# tries to cross-reference; "n_queries" names properties of several classes, which is no error.
suppress_warnings = ["ref.python", "mystnb.unknown_mime_type"]

"""The report's terms, defined once: the glossary page of the guide and the report's glossary.

:data:`GLOSSARY` holds every term the report and its figures use, by topic;
:func:`glossary_markdown` writes the guide's page ``docs/guide/glossary.md`` (a test fails while
the committed page differs), :func:`glossary_html` the glossary at the end of the report's
appendix, and :func:`terms_html` the line under a report section that links the terms it uses.
Imports nothing of ``ecc_lib``.
"""

from __future__ import annotations

import html
import re

GLOSSARY: dict[str, dict[str, str]] = {
    "Data": {
        "observation": (
            "One recorded score of a model on a query (one answer). With rewrites of the query "
            "and repeated decodes a (query, model) pair has several observations; with one "
            "observation per pair there are no repeats."
        ),
        "rewrites and decodes": (
            "Repeats of a (query, model) pair: a rewrite is a paraphrase of the query, a decode "
            "is another sampled answer to the same text. DARS needs them; ECC does not."
        ),
        "mean score": (
            "The mean of a pair's observations, in 0-1 (1 = correct). A model's mean score is "
            "the mean over queries."
        ),
        "normalised price": (
            "A model's price per query rescaled to 0 (the cheapest model) to 1 (the most "
            "expensive), the cost mu_c of the routing utility."
        ),
        "checks before numbers": (
            "Tests of the outcome table run before any number is computed (ecc-lab check): item "
            "alignment, near-identical or constant models, all-tie queries, the score type and "
            "its tie tolerance, empty or duplicate texts, text length, embedding collapse."
        ),
        "tie tolerance": (
            "Two mean scores of a query closer than this (default 1e-4) tie: the pair is no "
            "comparison. Set it with --tie-tolerance (ecc-lab check, ecc-lab ecc) or "
            "Protocol(tie_tolerance=...)."
        ),
    },
    "Clustering (ECC)": {
        "BT (Bradley-Terry) model": (
            "A ranking model: each model m has a strength theta_m, and m wins against m' with "
            "probability sigmoid(theta_m - theta_m'). A BT profile is one such vector of "
            "strengths."
        ),
        "global BT": (
            "One BT model fitted on all training comparisons, the same ranking for every query: "
            "the reference every clustering method is compared with."
        ),
        "ECC": (
            "Evidence-calibrated query clustering (Wu, Silwal, Zhang 2026): queries are "
            "clustered by the capability they demand, with text embeddings calibrated by the "
            "evidence of a few pairwise model comparisons, and one BT profile per cluster."
        ),
        "embedding-only clusters": (
            "Clusters of the query embeddings alone (no comparisons), one BT profile per "
            "cluster: a baseline of ECC."
        ),
        "comparison-only clusters": (
            "Clusters fitted on the comparisons alone (no embeddings): a baseline of ECC."
        ),
        "human labels": (
            "The dataset's own categories used as clusters, one BT profile per category."
        ),
        "label-informed ECC": (
            "ECC whose cluster prior also reads the human labels of the training queries."
        ),
        "ECC-CV": (
            "ECC with its settings (K, T, lam, label prior) chosen by cross-validation on "
            "leak-free pairs of the training queries, one global BT and human labels among the "
            "choices."
        ),
        "K, lam, T": (
            "ECC's number of clusters K, weight lam of the cosine similarity of embeddings and "
            "softmax temperature T of the cluster responsibilities."
        ),
        "probe": (
            "The comparison of a test query revealed to the method before scoring (one per "
            "query by default), which places the query in a cluster."
        ),
        "scored pairs": (
            "The test query's other sampled comparisons, on which the held-out NLL is computed."
        ),
        "the probe's leak": (
            "With binary scores a probe 'A beat B' decides every scored pair that contains A or "
            "B, so part of a gain on all scored pairs measures the probe, not the clustering."
        ),
        "pairs disjoint from the probe": (
            "Scored pairs that share no model with the query's probe: the probe decides none of "
            "them, so the gain on them is the reading to quote. 'Touching' pairs share a model "
            "with the probe; 'all scored pairs' is the paper's reading."
        ),
        "held-out NLL": (
            "Negative log-likelihood of the scored test comparisons under a method's BT "
            "profiles, in nats per comparison; lower is better."
        ),
        "ranking quality gain": (
            "How much lower a method's held-out NLL is than the global BT's, in % of the global "
            "BT's NLL: 100 (NLL_global - NLL_method) / NLL_global. Positive: better than one "
            "global ranking; negative: worse."
        ),
        "pp (percentage points)": (
            "The unit of a difference of two gains, each in % of the global BT's NLL."
        ),
        "pairwise accuracy": (
            "Share of scored test comparisons whose winner the method's profiles predict."
        ),
        "within-cluster Kendall tau": (
            "How much a cluster's queries agree on the model ranking: each cluster's queries are "
            "split into 5 folds of its training queries, one BT profile is fitted per fold, and Kendall's tau-b between "
            "the folds' rankings is averaged (size-weighted over clusters). 1: every fold ranks "
            "the models alike; 0: no agreement."
        ),
        "adjusted Rand index (ARI)": (
            "Agreement of a clustering with the planted clusters of the synthetic tour: 1 = "
            "exact, 0 = chance."
        ),
    },
    "Label instability (DARS)": {
        "DARS": (
            "Distribution-aware supervision of routers (Lai, Hu, Chen, Li, Ye 2026, 'From "
            "Sampled Outcomes to Capability Distributions'): routers learn from the distribution "
            "of each model's score over rewrites and decodes (mean mu_q, spread sigma_q, cost "
            "mu_c) rather than from one sampled answer."
        ),
        "single-shot label": (
            "A label from one randomly drawn observation per (query, model) pair, as when each "
            "query is answered once."
        ),
        "DARS targets": (
            "A router's training targets from all observations of a pair: mean score mu_q, "
            "score spread sigma_q and cost mu_c. With one observation per pair they are the "
            "observed outcomes, and there is no single-shot arm to compare with."
        ),
        "winner flip rate": (
            "How often two single-shot draws of the same query name different best models "
            "(pairwise); 'strict' counts only draws whose sets of top models are disjoint; the "
            "change rate asks whether the winner differs among R draws. 'Chance' is the same "
            "rate for identical, always tied models."
        ),
        "tied top share": "Share of single-shot draws whose top score is tied between models.",
        "score spread sigma_q": (
            "The standard deviation of a (query, model) pair's observations; 0 with one "
            "observation."
        ),
    },
    "Routing": {
        "utility U": (
            "U = mu_q - lambda mu_c - beta sigma_q: a model's mean score minus lambda times its "
            "normalised price minus beta times its score spread (defaults lambda = 0.05, beta = "
            "0.2). Without cost and repeats it equals the score. A router sends each query to "
            "the model of highest predicted U."
        ),
        "router families": (
            "kNN: the 16 nearest training queries by embedding, inverse-distance weighted. MLP: "
            "a multi-output neural network regressor. EmbedLLM-MF: matrix factorisation of "
            "query and model embeddings (EmbedLLM style). MIRT: multidimensional item response "
            "theory. Avengers-Pro: k-means profiles (32 clusters), averaging the 3 nearest. ECC "
            "(router): ECC's capability clusters from the embedding alone. Softmax-ranking: "
            "listwise cross-entropy on the soft labels softmax(U / tau). GraphRouter: message "
            "passing on the query-model graph. All are this project's implementations."
        ),
        "best fixed model": (
            "The one model with the highest mean utility on the training queries, sent every "
            "query: the baseline a router must beat."
        ),
        "oracle": (
            "The best model of each test query, known only from its held-out outcomes: the "
            "ceiling of routing."
        ),
        "random model": "A model drawn at random for each query: the floor of routing.",
        "gap closed": (
            "Where a router's held-out utility lies between the best fixed model (0) and the "
            "oracle (1)."
        ),
        "probe winner": (
            "Routing each test query to the model that won its probe comparison, nothing "
            "else: the baseline beside which a with-probe routing number is read."
        ),
        "routing settings": (
            "No probe: routing from the embedding (or label) alone. With the probe: the probe's "
            "outcome also places the query. Models outside the probe pair: only models that "
            "were not in the probe are eligible, so its outcome cannot decide the choice."
        ),
        "cost-quality curve": (
            "A router's mean held-out score against the mean normalised price of its choices as "
            "the cost weight lambda is swept."
        ),
        "area under the Pareto front": (
            "The Pareto front is the set of curve points that no other point betters on both "
            "price and score. Its area is the integral of the best score within a price budget "
            "over budgets 0 to 1, in score x normalised price (the mean best score over "
            "budgets, 0-1; higher is better). One split; 95% bootstrap interval over test queries."
        ),
    },
    "Intervals and verdicts": {
        "95% interval": (
            "The range that covers the quantity in 95% of repetitions; the report's header says "
            "what is resampled (test queries, protocol seeds). [low, high] follows each "
            "estimate."
        ),
        "seed": (
            "One repetition of the protocol: it redraws the pairs, the train/test split and the "
            "EM start. 'mean +- sd' is over seeds."
        ),
        "verdict": (
            "'better than' / 'worse than' when the 95% interval of a difference lies above / "
            "below 0; 'not distinguishable from' when it contains 0. No interval, no verdict."
        ),
    },
}
"""Every term of the report, by topic: ``{topic: {term: definition}}``."""

GUIDE_PAGE = "docs/guide/glossary.md"
"""Where the guide's glossary page lives in the repository."""


def term_anchor(term: str) -> str:
    """The HTML id of ``term`` in the report's glossary (``term-within-cluster-kendall-tau``).

    Parameters
    ----------
    term : str

    Returns
    -------
    str
    """
    return "term-" + re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def glossary_terms() -> dict[str, str]:
    """Every term with its definition, topics flattened.

    Returns
    -------
    dict
    """
    return {term: text for terms in GLOSSARY.values() for term, text in terms.items()}


def glossary_markdown() -> str:
    """The guide's page ``docs/guide/glossary.md`` (MyST).

    Returns
    -------
    str
    """
    lines = [
        "# Glossary",
        "",
        "Every term the report (`report.html`) and its figures use. The report carries the same "
        "definitions at the end of its appendix, and links a section's terms under it. "
        "Generated from `ecc_lib/report/glossary.py` "
        "(`python scripts/build_glossary.py`).",
    ]
    for topic, terms in GLOSSARY.items():
        lines += ["", f"## {topic}"]
        for term, text in terms.items():
            lines += ["", f"### {term}", "", text]
    return "\n".join(lines) + "\n"


def glossary_html() -> str:
    """The report's glossary: ``<section id="glossary">``, one anchored entry per term.

    Returns
    -------
    str
    """
    parts = [
        '<section class="report-section" id="glossary">',
        "<h2>Glossary</h2>",
        f"<p>The terms of this report ({html.escape(GUIDE_PAGE)} in the guide).</p>",
    ]
    for topic, terms in GLOSSARY.items():
        parts.append(f"<h3>{html.escape(topic)}</h3>\n<dl>")
        for term, text in terms.items():
            parts.append(
                f'<dt id="{term_anchor(term)}"><strong>{html.escape(term)}</strong></dt>'
                f"<dd>{html.escape(text)}</dd>"
            )
        parts.append("</dl>")
    parts.append("</section>")
    return "\n".join(parts)


_FORMS: dict[str, tuple[str, ...]] = {
    "BT (Bradley-Terry) model": ("global BT", "BT profile", "Bradley-Terry"),
    "K, lam, T": (),
    "pp (percentage points)": (" pp ",),
    "adjusted Rand index (ARI)": ("ARI",),
    "pairs disjoint from the probe": ("disjoint from the probe", "disjoint pairs"),
    "router families": ("kNN", "EmbedLLM-MF", "MIRT", "Avengers-Pro", "GraphRouter"),
    "utility U": ("utility",),
    "area under the Pareto front": ("Pareto front",),
    "the probe's leak": ("probe's leak", "leak"),
    "rewrites and decodes": ("rewrites", "decodes"),
    "score spread sigma_q": ("sigma_q", "spread"),
    "single-shot label": ("single-shot",),
    "95% interval": ("95%",),
    "verdict": ("better than", "worse than", "not distinguishable"),
    "probe winner": ("probe's winner", "probe winner"),
    "routing settings": ("no probe", "outside the probe pair"),
    "cost-quality curve": ("cost-quality",),
    "tie tolerance": ("tie tolerance",),
    "normalised price": ("normalised price", "normalised cost"),
    "seed": ("seeds",),
    "winner flip rate": ("flip rate", "strict flip", "flip readings", "change rate"),
    "tied top share": ("tied top", "tie-breaks"),
    "held-out NLL": ("NLL",),
    "ranking quality gain": ("gain", "gains"),
    "gap closed": ("gap closed",),
    "oracle": ("oracle", "Oracle"),
    "best fixed model": ("best fixed model", "Best fixed model"),
}
"""The words by which a section's text uses a term (default: the term itself)."""


def used_terms(text: str) -> list[str]:
    """The glossary terms that ``text`` uses, in glossary order (matched case-sensitively on
    word boundaries, by :data:`_FORMS` or the term itself).

    Parameters
    ----------
    text : str
        Plain text or HTML of a report section.

    Returns
    -------
    list of str
    """
    plain = html.unescape(re.sub(r"<[^>]+>", " ", text))
    found = []
    for term in glossary_terms():
        forms = _FORMS.get(term, (term,))
        if any(re.search(rf"(?<!\w){re.escape(f.strip())}(?!\w)", plain) for f in forms):
            found.append(term)
    return found


def terms_html(text: str) -> str:
    """The line under a report section linking each glossary term its ``text`` uses.

    Parameters
    ----------
    text : str
        The section's HTML.

    Returns
    -------
    str
        ``<p class="terms">Terms: ...</p>``, empty when the section uses none.
    """
    terms = used_terms(text)
    if not terms:
        return ""
    links = ", ".join(f'<a href="#{term_anchor(t)}">{html.escape(t)}</a>' for t in terms)
    return f'<p class="terms">Terms (glossary): {links}.</p>'


__all__ = [
    "glossary_markdown",
]

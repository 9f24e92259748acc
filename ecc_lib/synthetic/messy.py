"""Real-shaped messy inputs for tests and demonstrations (issue 9).

- :func:`few_shot_texts`: RouterBench-style 5-shot prompts, about 1.5k characters each, that share
  one long prefix of worked examples and end with distinct questions. Embedded whole by a model with
  a 256 word-piece limit they collapse onto a handful of vectors.
- :func:`write_foreign_dataset`: a folder such as a new user brings: ``queries.csv`` (string ids
  that CSV readers like to turn into numbers: ``"001"``, ``"1e1"``), ``outcomes.jsonl`` (long, one
  observation per (query, model): no repeats, with costs), a few queries missing one model and a few
  seen for a single model only; the prompts are few-shot prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

_NAMES = (
    "Ava",
    "Ben",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Victor",
)
_ITEMS = (
    "apples",
    "marbles",
    "stamps",
    "pencils",
    "books",
    "shells",
    "coins",
    "cards",
    "tickets",
    "cookies",
    "bricks",
    "flowers",
    "candles",
    "buttons",
    "ribbons",
    "kites",
    "shirts",
    "bottles",
)
_PLACES = (
    "market",
    "library",
    "school fair",
    "harbour",
    "bakery",
    "museum shop",
    "garden centre",
    "train station",
    "bookshop",
    "flea market",
    "toy store",
    "post office",
)
_VERBS = ("buys", "finds", "receives", "sells", "gives away", "loses", "collects", "trades")

_PREFIX_EXAMPLES = (
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "Natalia sold 48 / 2 = 24 clips in May. Natalia sold 48 + 24 = 72 clips altogether in "
        "April and May. The answer is 72.",
    ),
    (
        "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of "
        "babysitting. How much did she earn?",
        "Weng earns 12 / 60 = $0.2 per minute. Working 50 minutes, she earned 0.2 x 50 = $10. "
        "The answer is 10.",
    ),
    (
        "Betty is saving money for a new wallet which costs $100. Betty has only half of the money "
        "she needs. Her parents decided to give her $15 for that purpose, and her grandparents "
        "twice as much as her parents. How much more money does Betty need to buy the wallet?",
        "Betty has 100 / 2 = $50. Her grandparents give 15 x 2 = $30. She needs "
        "100 - 50 - 30 - 15 = $5 more. The answer is 5.",
    ),
    (
        "Julie is reading a 120-page book. Yesterday, she was able to read 12 pages and today, she "
        "read twice as many pages as yesterday. If she wants to read half of the remaining pages "
        "tomorrow, how many pages should she read?",
        "Today she read 12 x 2 = 24 pages, so 12 + 24 = 36 pages so far and 120 - 36 = 84 remain. "
        "Half of them is 84 / 2 = 42. The answer is 42.",
    ),
    (
        "James writes a 3-page letter to 2 different friends twice a week. How many pages does he "
        "write a year?",
        "He writes 3 x 2 = 6 pages to his friends each time, 6 x 2 = 12 pages a week, and "
        "12 x 52 = 624 pages a year. The answer is 624.",
    ),
)


def few_shot_prefix() -> str:
    """The shared 5-shot prefix (instructions and five worked examples), about 1.4k characters.

    Returns
    -------
    str
        The prefix.
    """
    parts = ["Answer the following grade-school math questions. Think step by step.\n"]
    for question, answer in _PREFIX_EXAMPLES:
        parts.append(f"Question: {question}\nAnswer: {answer}\n")
    return "\n".join(parts)


def few_shot_texts(
    n: int, *, random_state: int | np.random.Generator | None = 0, prefix: str | None = None
) -> list[str]:
    """``n`` distinct 5-shot prompts: one shared prefix, then a distinct final question.

    Parameters
    ----------
    n : int
        Number of prompts.
    random_state : int or Generator, optional
        Seed of the question draw.
    prefix : str, optional
        Shared prefix (default :func:`few_shot_prefix`).

    Returns
    -------
    list of str
    """
    rng = np.random.default_rng(random_state)
    prefix = few_shot_prefix() if prefix is None else prefix
    seen: set[str] = set()
    texts: list[str] = []
    while len(texts) < n:
        name, other = rng.choice(_NAMES, size=2, replace=False)
        item, item2 = rng.choice(_ITEMS, size=2, replace=False)
        place = rng.choice(_PLACES)
        verb = rng.choice(_VERBS)
        a, b, c = (int(x) for x in rng.integers(2, 99, size=3))
        question = (
            f"{name} has {a} {item} and {verb} {b} {item2} at the {place}. {other} has {c} "
            f"{item} more than {name}. How many {item} and {item2} do they have together?"
        )
        if question in seen:
            continue
        seen.add(question)
        texts.append(f"{prefix}\nQuestion: {question}\nAnswer:")
    return texts


@dataclass(frozen=True)
class ForeignDataset:
    """What :func:`write_foreign_dataset` wrote and what it planted.

    Attributes
    ----------
    folder : Path
    queries, outcomes : DataFrame
        The tables as written (ids as strings).
    embeddings : ndarray (n_queries, dim)
        Planted unit features of the queries (for filling an embedding cache in tests).
    missing_one_model, single_model : list of str
        Query ids lacking one model, and query ids seen for one model only.
    """

    folder: Path
    queries: pd.DataFrame
    outcomes: pd.DataFrame
    embeddings: np.ndarray
    missing_one_model: list[str]
    single_model: list[str]


def write_foreign_dataset(
    folder: str | Path,
    *,
    n_queries: int = 150,
    n_models: int = 4,
    n_missing_one_model: int = 5,
    n_single_model: int = 3,
    embedding_dim: int = 384,
    random_state: int = 7,
) -> ForeignDataset:
    """Write a foreign dataset folder: ``queries.csv`` and ``outcomes.jsonl``.

    Query ids are zero-padded strings (``"001"``) plus one ``"1e1"``; texts are few-shot prompts;
    each (query, model) has one observation with a cost (per-model price times a per-query length
    factor); ``n_missing_one_model`` queries lack one model and ``n_single_model`` queries are seen
    for one model only. Scores follow :func:`ecc_lib.synthetic.make_repeated_outcomes` (clusters
    favour different models), so ECC and routers have something to find.

    Parameters
    ----------
    folder : str or Path
        Where to write (created if missing).
    n_queries : int, default 150
        Number of queries.
    n_models : int, default 4
        Number of models.
    n_missing_one_model : int, default 5
        Queries lacking one model.
    n_single_model : int, default 3
        Queries seen for one model only.
    embedding_dim : int, default 384
        Dimension of the planted embeddings.
    random_state : int, default 7
        Seed.

    Returns
    -------
    ForeignDataset
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(random_state)
    data = make_repeated_outcomes(
        n_queries=n_queries,
        n_models=n_models,
        n_rewrites=1,
        n_decodes=1,
        n_clusters=4,
        embedding_dim=embedding_dim,
        random_state=random_state,
    )
    ids = [f"{i:03d}" for i in range(n_queries)]
    ids[min(10, n_queries - 1)] = "1e1"
    mapping = dict(zip(data.queries["query_id"], ids, strict=True))
    queries = pd.DataFrame(
        {
            "query_id": ids,
            "text": few_shot_texts(n_queries, random_state=rng),
            "category": data.queries["category"].str.replace("cluster_", "task_"),
        }
    )
    outcomes = data.outcomes[["query_id", "model", "score", "cost"]].copy()
    outcomes["query_id"] = outcomes["query_id"].map(mapping)
    chosen = rng.choice(n_queries, size=n_missing_one_model + n_single_model, replace=False)
    missing = [ids[i] for i in chosen[:n_missing_one_model]]
    single = [ids[i] for i in chosen[n_missing_one_model:]]
    models = sorted(outcomes["model"].unique())
    lacking = [(query, models[position % len(models)]) for position, query in enumerate(missing)]
    pairs = pd.MultiIndex.from_frame(outcomes[["query_id", "model"]])
    alone = outcomes["query_id"].isin(single) & (outcomes["model"] != models[0])
    drop = pairs.isin(lacking) | alone.to_numpy()
    outcomes = outcomes.loc[~drop].reset_index(drop=True)
    queries.to_csv(folder / "queries.csv", index=False)
    outcomes.to_json(folder / "outcomes.jsonl", orient="records", lines=True)
    return ForeignDataset(folder, queries, outcomes, data.embeddings, missing, single)


__all__: list[str] = []

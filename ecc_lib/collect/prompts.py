"""Prompts: the rewriting request and the answering request, and parsing of rewrites.

Rewrites change only the question stem. Options and passages are shown to the rewriter for context
and kept out of its output; they are added back verbatim when the candidate models are asked.
:data:`PROMPT_VERSION` is stored with every record so that later prompt changes are visible.
"""

from __future__ import annotations

import json
import re

PROMPT_VERSION = "1"

REWRITE_SYSTEM_PROMPT = (
    "You rewrite questions. Produce semantically equivalent variants of a question: each variant "
    "must have exactly the same correct answer, must add no hints, explanations or information, "
    "and must remove none. Change only the wording of the question stem; keep every number, name, "
    "formula, unit and constraint. Never answer or solve the question. Answer options and passages "
    "are shown for context only: do not include, rewrite or reorder them. If the question text "
    "itself contains answer options or a passage, copy them verbatim into every variant."
)

ANSWER_SYSTEM_PROMPT = (
    "Answer the question. You may reason step by step. End your response with one last line of "
    "the form\nFinal answer: <answer>\n{format}"
)

ANSWER_FORMATS: dict[str, str] = {
    "multiple_choice": "where <answer> is the letter of the correct option, e.g. 'Final answer: B'.",
    "numeric": "where <answer> is a single number without units, e.g. 'Final answer: 42'.",
    "exact_match": "where <answer> is the short answer only, with no explanation.",
    "token_f1": "where <answer> is the short answer only, with no explanation.",
}
DEFAULT_ANSWER_FORMAT = "where <answer> is your answer only, with no explanation."

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def format_options(choices: list[str]) -> str:
    """``A. first`` / ``B. second`` ... lines.

    Parameters
    ----------
    choices : list of str
        Answer options.

    Returns
    -------
    str
        One lettered line per option.
    """
    return "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices))


def rewrite_messages(
    text: str,
    n: int,
    *,
    choices: list[str] | None = None,
    passage: str | None = None,
    avoid: list[str] | None = None,
) -> list[dict[str, str]]:
    """Chat messages asking for ``n`` rewrites of a question stem, returned as JSON.

    Parameters
    ----------
    text : str
        The question stem.
    n : int
        Number of rewrites asked for.
    choices : list of str, optional
        Answer options (multiple choice).
    passage : str, optional
        A context passage shown before the question.
    avoid : list of str, optional
        Rewrites already held, which new ones must differ from.

    Returns
    -------
    list of dict
        ``{"role", "content"}`` chat messages.
    """
    parts = [
        f"Write exactly {n} different rewrite(s) of the question below.",
        'Return only a JSON object of the form {"rewrites": ["...", "..."]}.',
    ]
    if passage:
        parts.append(f"Passage (context only; do not include it in the rewrites):\n{passage}")
    parts.append(f"Question:\n{text}")
    if choices:
        parts.append(
            "Options (context only; do not include them in the rewrites):\n"
            + format_options(choices)
        )
    if avoid:
        listed = "\n".join(f"- {item}" for item in avoid)
        parts.append(f"Make each rewrite different from these existing ones:\n{listed}")
    return [
        {"role": "system", "content": REWRITE_SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def answer_messages(
    text: str,
    *,
    choices: list[str] | None = None,
    passage: str | None = None,
    scorer_name: str | None = None,
) -> list[dict[str, str]]:
    """Chat messages asking a candidate model to answer, ending with a ``Final answer:`` line.

    Parameters
    ----------
    text : str
        The question stem.
    choices : list of str, optional
        Answer options (multiple choice).
    passage : str, optional
        A context passage shown before the question.
    scorer_name : str, optional
        The scorer, which decides the answer format asked for.

    Returns
    -------
    list of dict
        ``{"role", "content"}`` chat messages.
    """
    answer_format = ANSWER_FORMATS.get(scorer_name or "", DEFAULT_ANSWER_FORMAT)
    parts = []
    if passage:
        parts.append(f"Passage:\n{passage}")
    parts.append(text)
    if choices:
        parts.append("Options:\n" + format_options(choices))
    return [
        {"role": "system", "content": ANSWER_SYSTEM_PROMPT.format(format=answer_format)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_ITEM_RE = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s+(.+?)\s*$", re.MULTILINE)


def _strings(items: object) -> list[str]:
    if not isinstance(items, list):
        return []
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def parse_rewrites(content: str | None) -> list[str]:
    """Rewrites in a rewriter's response: a JSON object ``{"rewrites": [...]}``, a JSON list, or a
    numbered / bulleted list. Empty when nothing can be read.

    Parameters
    ----------
    content : str or None
        The rewriter's message content.

    Returns
    -------
    list of str
        Non-empty rewrites in order.
    """
    if not content:
        return []
    fenced = _FENCE_RE.search(content)
    text = fenced.group(1) if fenced else content
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if start < 0 or end <= start:
            continue
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            for key in ("rewrites", "variants", "questions", "paraphrases"):
                if key in data:
                    return _strings(data[key])
            values = [v for v in data.values() if isinstance(v, list)]
            return _strings(values[0]) if values else []
        return _strings(data)
    return [item.strip().strip('"') for item in _ITEM_RE.findall(text) if item.strip().strip('"')]

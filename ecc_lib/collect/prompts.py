"""Prompts: the rewriting request and the answering request, and parsing of rewrites.

Rewrites change only the question stem. Options and passages are shown to the rewriter for context
and kept out of its output; they are added back verbatim when the candidate models are asked.
:data:`PROMPT_VERSION` is stored with every record so that later prompt changes are visible.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

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


REWRITES_SCHEMA: dict = {
    "type": "object",
    "properties": {"rewrites": {"type": "array", "items": {"type": "string"}}},
    "required": ["rewrites"],
    "additionalProperties": False,
}
"""JSON schema of a rewriting response, sent as ``response_format`` where the server supports it
(kept to what OpenAI's strict mode and llama.cpp's grammar converter both accept)."""

RESPONSE_FORMATS: tuple[str, ...] = ("json_schema", "json_object", "none")
"""Ways to ask for structured rewrites, tried in this order by ``rewrite_format="auto"``."""

REWRITE_FORMATS: tuple[str, ...] = ("auto", *RESPONSE_FORMATS, "single")
"""Values of ``rewrite_format``: the list formats above (``"auto"`` steps down through them), or
``"single"``, one paraphrase per call after worked examples (:func:`single_rewrite_messages`),
for small models that do not manage a list of rewrites."""

SINGLE_REWRITE_SYSTEM_PROMPT = (
    "You paraphrase questions. Reply with the paraphrased question only, as one question ending "
    "with a question mark: keep every number, name and unit, and do not answer it."
)
SINGLE_REWRITE_EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Where would you keep milk so that it stays cold?",
        "To keep milk cold, where would you store it?",
    ),
    (
        "The boy stayed up reading all night, so how did he feel the next morning?",
        "How did the boy feel the next morning after reading all night long?",
    ),
    (
        "Tom has 3 apples and buys 5 more. How many apples does he have?",
        "After buying 5 more apples, how many apples does Tom have if he started with 3?",
    ),
)
"""The worked examples (question, paraphrase) shown before the question in ``"single"`` calls.

Measured with SmolLM2-135M on the 20 demo questions (5 calls each, temperature 0.7): the former
prompt (one numeric example) gave 16 of 100 replies that pass the refusal rules; this one 62."""


def single_rewrite_messages(text: str, *, passage: str | None = None) -> list[dict[str, str]]:
    """Chat messages asking for one paraphrase of a question, after worked examples.

    Small models (SmolLM2-135M, measured) answer a request for a JSON list of rewrites mostly
    with answers or fragments; asked for one paraphrase after examples, they often write one.
    Answer options are not shown: with them in the prompt (and three similar examples)
    SmolLM2-135M worked an option into 35 of 100 replies on the demo questions, refused as a hint,
    against 5-7 of 100 without.

    Parameters
    ----------
    text : str
        The question stem.
    passage : str, optional
        A context passage (shown for context).

    Returns
    -------
    list of dict
        ``{"role", "content"}`` chat messages.
    """
    messages = [{"role": "system", "content": SINGLE_REWRITE_SYSTEM_PROMPT}]
    for question, paraphrase in SINGLE_REWRITE_EXAMPLES:
        messages.append({"role": "user", "content": f"Paraphrase: {question}"})
        messages.append({"role": "assistant", "content": paraphrase})
    ask = f"Paraphrase: {text}"
    if passage:
        ask = f"Passage (context only):\n{passage}\n\n{ask}"
    messages.append({"role": "user", "content": ask})
    return messages


def rewrite_response_format(kind: str) -> dict | None:
    """The ``response_format`` request field of a rewriting call (``None`` for ``"none"``).

    ``"json_schema"`` is OpenAI's structured output (also vLLM, llama.cpp's server, recent
    llama-cpp-python); ``"json_object"`` is JSON mode with the schema attached (llama-cpp-python
    turns it into a grammar; other servers ignore the schema).

    Parameters
    ----------
    kind : str
        ``"json_schema"``, ``"json_object"`` or ``"none"``.

    Returns
    -------
    dict or None
        The field's value.

    Raises
    ------
    ValueError
        Another ``kind``.
    """
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "rewrites", "schema": REWRITES_SCHEMA, "strict": True},
        }
    if kind == "json_object":
        return {"type": "json_object", "schema": REWRITES_SCHEMA}
    if kind == "none":
        return None
    raise ValueError(f"response format must be one of {RESPONSE_FORMATS}, got {kind!r}")


@dataclass(frozen=True)
class ParsedRewrites:
    """What a rewriting response held.

    Attributes
    ----------
    rewrites : list of str
    method : str
        ``"json"`` (a JSON object or list), ``"truncated_json"`` (the complete strings of a JSON
        answer cut short), ``"numbered_list"``, ``"lines"`` (one rewrite per line), ``"single"``
        (the one paraphrase of :func:`read_single_rewrite`) or ``"none"``.
    problem : str or None
        Why nothing was read (``method == "none"``).
    """

    rewrites: list[str]
    method: str
    problem: str | None = None

    @property
    def fallback(self) -> bool:
        """The rewrites were read by the tolerant parser, not as complete JSON."""
        return self.method in ("truncated_json", "numbered_list", "lines")


_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)(?:```|\Z)", re.DOTALL)
_ITEM_RE = re.compile(
    r"^\s*(?:\*\*)?(?:\(?\d+\s*[.):\]]|[-*\u2022]|(?:rewrite|variant|version|question)\s*\d*\s*[:.)-])"
    r"(?:\*\*)?\s+(.+?)\s*$",
    re.MULTILINE | re.IGNORECASE,
)
_STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_PREAMBLE_RE = re.compile(
    r"^(?:here (?:are|is)|sure|certainly|okay|ok\b|rewrites?\b|variants?\b|the (?:rewrites|"
    r"variants)|i (?:have|will|can)|note\b|original)",
    re.IGNORECASE,
)
_KEYS = ("rewrites", "variants", "questions", "paraphrases", "rewritten_questions")


def _strings(items: object) -> list[str]:
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return []
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def _clean(item: str) -> str:
    item = item.strip().strip("*").strip()
    if len(item) >= 2 and item[0] == item[-1] and item[0] in "\"'":
        item = item[1:-1].strip()
    return item


def _from_json(text: str) -> list[str] | None:
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if start < 0 or end <= start:
            continue
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):  # a known key, else the first list
            found = [data[key] for key in _KEYS if key in data]
            found += [v for v in data.values() if isinstance(v, list)]
            return _strings(found[0] if found else [])
        return _strings(data)
    return None


def _from_truncated_json(text: str) -> list[str]:
    """The complete strings of a JSON list cut short (``{"rewrites": ["a", "b", "c``)."""
    start = text.find("[")
    if start < 0 or '"' not in text[start:]:
        return []
    items = []
    for match in _STRING_RE.finditer(text[start:]):
        try:
            items.append(json.loads(f'"{match.group(1)}"'))
        except json.JSONDecodeError:
            continue
    return _strings(items)


def _from_lines(text: str, questions_only: bool) -> list[str]:
    lines = []
    for line in text.splitlines():
        item = _clean(line)
        if not item or item.endswith(":") or _PREAMBLE_RE.match(item):
            continue
        if not item.endswith("?") and (questions_only or len(item.split()) < 6):
            continue  # prose, not a question
        if item[0] not in "{}[]":
            lines.append(item)
    return lines


def _empty_reply(content: str | None, finish_reason: str | None) -> ParsedRewrites:
    """Nothing read from a null or blank reply, with the reason."""
    shown = "null" if content is None else "empty"
    return ParsedRewrites(
        [], "none", f"empty reply (content {shown}, finish_reason {finish_reason!r})"
    )


_LABEL_RE = re.compile(r"^(?:paraphrased?(?: question)?|rewrite|question)\s*:\s*", re.IGNORECASE)


def read_single_rewrite(content: str | None, finish_reason: str | None = None) -> ParsedRewrites:
    """The paraphrase in the reply to :func:`single_rewrite_messages`: its first non-empty line,
    without a leading label (``Paraphrase:``) or surrounding quotes.

    Parameters
    ----------
    content : str or None
    finish_reason : str, optional
        Named in the problem of an empty reply.

    Returns
    -------
    ParsedRewrites
        Method ``"single"``, or ``"none"`` with the problem.
    """
    if content is None or not content.strip():
        return _empty_reply(content, finish_reason)
    line = next(line for line in content.splitlines() if line.strip())
    line = _LABEL_RE.sub("", line.strip()).strip().strip('"\u201c\u201d').strip()
    if not line:
        return ParsedRewrites([], "none", "nothing readable as a rewrite")
    return ParsedRewrites([line], "single")


def read_rewrites(
    content: str | None, finish_reason: str | None = None, question: str | None = None
) -> ParsedRewrites:
    """Rewrites in a rewriter's response, read as strictly as the response allows.

    Tried in order: a JSON object ``{"rewrites": [...]}`` or a JSON list (possibly in a code fence);
    the complete strings of a JSON answer cut short; a numbered or bulleted list (``1.``, ``2)``,
    ``-``, ``Rewrite 1:``); one rewrite per line (lines that end with "?", or, when the original
    question does not end with "?", lines of at least six words; preamble lines such as "Here are 3
    rewrites:" skipped).

    Parameters
    ----------
    content : str or None
    finish_reason : str, optional
        Named in the problem of an empty reply.
    question : str, optional
        The original question: when it ends with "?", so must a rewrite read line by line.

    Returns
    -------
    ParsedRewrites
    """
    if content is None or not content.strip():
        return _empty_reply(content, finish_reason)
    fenced = _FENCE_RE.search(content)
    text = fenced.group(1) if fenced else content
    parsed = _from_json(text)
    if parsed:
        return ParsedRewrites(parsed, "json")
    if parsed is None:
        partial = _from_truncated_json(text)
        if partial:
            return ParsedRewrites(partial, "truncated_json")
    items = [_clean(item) for item in _ITEM_RE.findall(text)]
    items = [item for item in items if item]
    if items:
        return ParsedRewrites(items, "numbered_list")
    lines = _from_lines(text, questions_only=bool(question and question.rstrip().endswith("?")))
    if lines:
        return ParsedRewrites(lines, "lines")
    return ParsedRewrites([], "none", "nothing readable as rewrites")


_NUMBER_RE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
MIN_REWRITE_WORD_SHARE = 0.5
"""A rewrite of a question of six words or more needs at least this share of its words."""


_SOLVING_RE = re.compile(
    r"\s=\s|\banswer (?:is|would be)\b|\bwe (?:need|have) to\b|"
    r"^\s*(?:(?:to (?:find|solve|calculate|determine|figure out)|let's)\b|first,)",
    re.IGNORECASE,
)


def _numbers(text: str) -> set[str]:
    return {match.replace(",", "").rstrip(".") for match in _NUMBER_RE.findall(text)}


def rewrite_refusal(candidate: str, question: str) -> str | None:
    """Why a parsed rewrite cannot stand for the question, or ``None`` when it can.

    A rewrite must keep the question's content (the system prompt asks to keep every number and
    constraint and never to answer): small models often return an answer, a fragment, one sentence
    of the question or the start of a solution instead, which would make the input-side flip rate
    measure noise rather than wording. Refused are a rewrite that drops a number of the question
    (``"21"``, ``"3.5"``, ``"1,000"`` must all appear, in any format of thousands separators),
    one that adds a number the question does not have (a result or a made-up value), one that
    works on the answer (``" = "``, "the answer is", "we need to", or opening with "To find",
    "To solve", "Let's", "First,") unless the question itself does, one with fewer than
    :data:`MIN_REWRITE_WORD_SHARE` of the words of a question of six words or more, and one that
    is not a question when the original is (it ends with "?" and the rewrite does not: small
    models turn "Where would you find X?" into a statement that answers it).

    Parameters
    ----------
    candidate : str
        A rewrite read from the rewriter's response.
    question : str
        The original question stem.

    Returns
    -------
    str or None
        ``"drops a number of the question"``, ``"adds a number the question does not have"``,
        ``"works on the answer"``, ``"too short to be the whole question"``, ``"not a question"``
        or ``None``.
    """
    in_question, in_candidate = _numbers(question), _numbers(candidate)
    if not in_question <= in_candidate:
        return "drops a number of the question"
    if not in_candidate <= in_question:
        return "adds a number the question does not have"
    if _SOLVING_RE.search(candidate) and not _SOLVING_RE.search(question):
        return "works on the answer"
    n_words = len(question.split())
    if n_words >= 6 and len(candidate.split()) < MIN_REWRITE_WORD_SHARE * n_words:
        return "too short to be the whole question"
    if question.rstrip().endswith("?") and not candidate.rstrip().endswith("?"):
        return "not a question"
    return None


def parse_rewrites(content: str | None) -> list[str]:
    """Rewrites in a rewriter's response (see :func:`read_rewrites`); empty when nothing can be
    read.

    Parameters
    ----------
    content : str or None
        The rewriter's message content.

    Returns
    -------
    list of str
        Non-empty rewrites in order.
    """
    return read_rewrites(content).rewrites


__all__: list[str] = []

"""Scorers: turn a model's response and a reference answer into a score in [0, 1].

Every scorer has the signature ``scorer(response, answer, choices=None) -> float | ScoringFailure``
and is a pure function.

What counts as a failure
    A :class:`ScoringFailure` means *we* could not score: the reference answer is missing or
    unusable (a numeric scorer given a non-number, a letter outside the options), or the scorer
    raised. It is stored as ``score = None`` with the reason, and left out of exported outcomes
    (with a logged count), never turned into 0. A response that gives no usable answer (empty, no
    final-answer line and nothing to fall back on, a letter outside the options) is the *model's*
    failure and scores 0.

Where the answer is read from
    The prompt asks for a last line ``Final answer: ...``. Scorers read the last such line (a
    ``\\boxed{...}`` inside it wins); without one, the last ``\\boxed{...}`` of the response; without
    one either, a scorer-specific fallback (the last number for numeric answers, "the answer is X"
    for letters, the last non-empty line for text).

Choosing a scorer
    :func:`choose_scorer`: an explicit user choice wins (one name or callable for all queries, or a
    mapping from category to scorer); then a per-query ``scorer`` column; then multiple choice when
    the query has options; then the query's ``category`` matched against :data:`CATEGORY_KEYWORDS`;
    else exact match.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ecc_lib.collect.queries import is_missing


@dataclass(frozen=True)
class ScoringFailure:
    """The response could not be scored; ``reason`` says why. Stored as ``score = None``.

    Parameters
    ----------
    reason : str
        Why the response could not be scored.
    """

    reason: str


Scorer = Callable[..., Any]

SCORER_SECTIONS = """Parameters
----------
response : str or None
    The model's response.
answer : object
    The reference answer(s).
choices : list of str, optional
    Answer options (multiple choice).

Returns
-------
float or ScoringFailure
    The score in [0, 1], or why the response cannot be scored."""
"""The numpydoc sections of every built-in scorer (they share one signature)."""


def _scorer(function: Scorer) -> Scorer:
    """Give a built-in scorer the shared :data:`SCORER_SECTIONS` after its own description."""
    function.__doc__ = inspect.cleandoc(function.__doc__ or "") + "\n\n" + SCORER_SECTIONS
    return function


LETTERS = string.ascii_uppercase

# ---------------------------------------------------------------------------------------------
# answer extraction


_FINAL_RE = re.compile(
    r"final\s+answer(?:\s+is\b\s*[:：]?|\s*[*_]*\s*[:：])[ \t]*(?P<rest>[^\n]*)", re.IGNORECASE
)
_MARKUP_EDGES = " \t*_`\"'$.。"


def _strip_markup(text: str) -> str:
    text = text.strip()
    previous = None
    while previous != text:
        previous = text
        text = text.strip(_MARKUP_EDGES)
        for left, right in (("\\(", "\\)"), ("\\[", "\\]")):
            if text.startswith(left) and text.endswith(right):
                text = text[len(left) : -len(right)].strip()
    return text


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces matched.

    Parameters
    ----------
    text : str
        A response.

    Returns
    -------
    str or None
    """
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    position = text.index("{", start) + 1
    depth = 1
    for index in range(position, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[position:index].strip()
    return None


def extract_final_answer(response: str | None) -> str | None:
    """The answer a response commits to, or None.

    The last ``Final answer: ...`` line (its ``\\boxed{}`` content when it has one; the next
    non-empty line when the rest of the line is empty), else the last ``\\boxed{...}``.

    Parameters
    ----------
    response : str or None
        The model's response.

    Returns
    -------
    str or None
    """
    if not response:
        return None
    matches = list(_FINAL_RE.finditer(response))
    if matches:
        match = matches[-1]
        rest = match.group("rest")
        if not _strip_markup(rest):
            following = [line for line in response[match.end() :].splitlines() if line.strip()]
            rest = following[0] if following else ""
        boxed = last_boxed(rest)
        answer = _strip_markup(boxed if boxed is not None else rest)
        if answer:
            return answer
    boxed = last_boxed(response)
    return _strip_markup(boxed) if boxed else None


def _last_line(response: str) -> str | None:
    lines = [line for line in response.splitlines() if _strip_markup(line)]
    return _strip_markup(lines[-1]) if lines else None


def references(answer: Any) -> list[str] | ScoringFailure:
    """The acceptable reference answers: a list, a JSON list string, or a single value.

    Parameters
    ----------
    answer : object
        The reference answer(s).

    Returns
    -------
    list of str or ScoringFailure
        Non-empty references, or why there is none.
    """
    if is_missing(answer):
        return ScoringFailure("no reference answer")
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if isinstance(answer, str) and answer.strip().startswith("["):
        try:
            parsed = json.loads(answer)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            answer = parsed
    if isinstance(answer, (list, tuple)):
        values = [str(a) for a in answer if not is_missing(a) and str(a).strip()]
        return values or ScoringFailure("empty list of reference answers")
    text = str(answer).strip()
    return [text] if text else ScoringFailure("empty reference answer")


# ---------------------------------------------------------------------------------------------
# multiple choice


def normalise_answer(text: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, no articles, single spaces.

    Parameters
    ----------
    text : str
        An answer.

    Returns
    -------
    str
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _letter_from_text(text: str, n_choices: int | None, choices: list[str] | None) -> str | None:
    text = _strip_markup(text)
    valid = LETTERS[: n_choices or 26]
    match = re.match(r"^[\[(]?([A-Za-z])[\])]?(?=$|[\s.):,])", text)
    if match and match.group(1).upper() in valid:
        letter = match.group(1)
        # a lone lower-case word such as "a dog" is not a letter answer
        if letter.isupper() or len(text) <= 3:
            return letter.upper()
    if choices:
        wanted = normalise_answer(text)
        for index, choice in enumerate(choices):
            if wanted and wanted == normalise_answer(choice):
                return LETTERS[index]
    match = re.search(r"\b(?:option|choice|answer)\s*(?:is\s*)?[:\s]\s*[\[(]?([A-Z])[\])]?\b", text)
    if match and match.group(1) in valid:
        return match.group(1)
    return None


def reference_letter(answer: Any, choices: list[str] | None = None) -> str | ScoringFailure:
    """The correct option's letter from a reference given as a letter, an option text or an index.

    Integers (and digit strings) are 0-based option indices, as in Hugging Face datasets (``1``
    means ``B``).

    Parameters
    ----------
    answer : object
        Reference as a letter, option text or 0-based index.
    choices : list of str, optional
        Answer options.

    Returns
    -------
    str or ScoringFailure
        The letter (``A``, ``B`` ...), or why it cannot be found.
    """
    if isinstance(answer, (bool, np.bool_)):
        return ScoringFailure(f"reference answer {answer!r} is not an option")
    n_choices = len(choices) if choices else None
    if isinstance(answer, (int, np.integer)) or (
        isinstance(answer, str) and answer.strip().isdigit()
    ):
        index = int(answer)
        if 0 <= index < (n_choices or 26):
            return LETTERS[index]
        return ScoringFailure(f"reference index {answer!r} is outside the {n_choices} options")
    refs = references(answer)
    if isinstance(refs, ScoringFailure):
        return refs
    letter = _letter_from_text(refs[0], n_choices, choices)
    if letter is None:
        return ScoringFailure(f"reference answer {refs[0]!r} is not an option letter or text")
    return letter


@_scorer
def multiple_choice_letter(
    response: str | None, answer: Any, choices: list[str] | None = None
) -> float | ScoringFailure:
    """1 when the response's option letter (or option text) is the reference's, else 0."""
    correct = reference_letter(answer, choices)
    if isinstance(correct, ScoringFailure):
        return correct
    if not response:
        return 0.0
    n_choices = len(choices) if choices else None
    final = extract_final_answer(response)
    letter = _letter_from_text(final, n_choices, choices) if final else None
    if letter is None and final is None:
        matches = re.findall(
            r"answer\s*(?:is|:)\s*[*_]*\s*[\[(]?([A-Z])[\])]?(?![A-Za-z])", response, re.I
        )
        candidates = [m.upper() for m in matches if m.upper() in LETTERS[: n_choices or 26]]
        letter = candidates[-1] if candidates else None
    return float(letter == correct)


# ---------------------------------------------------------------------------------------------
# numbers

_PLAIN = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+"
_NUMBER_RE = re.compile(
    rf"(?P<sign>-)?\\[dt]?frac\{{(?P<fn>[^{{}}]+)\}}\{{(?P<fd>[^{{}}]+)\}}"
    rf"|(?P<n>{_PLAIN})\s*/\s*(?P<d>{_PLAIN})"
    rf"|(?P<x>{_PLAIN})"
)


def _clean_math(text: str) -> str:
    text = text.replace("\u2212", "-").replace("{,}", ",").replace("\\!", "").replace("\\,", "")
    text = text.replace("\\$", "").replace("$", "").replace("\\%", "%")
    text = re.sub(r"\\(?:text|mathrm|textbf|mbox)\{([^{}]*)\}", r" \1 ", text)
    text = text.replace("\\left", "").replace("\\right", "")
    return text


def _fraction(token: str) -> Fraction | None:
    try:
        return Fraction(token.replace(",", "").strip())
    except (ValueError, ZeroDivisionError):
        return None


def _value(match: re.Match) -> Fraction | None:
    for top, bottom in (("fn", "fd"), ("n", "d")):  # \frac{a}{b} (its sign apart), then a/b
        if match.group(top) is not None:
            numerator, denominator = _fraction(match.group(top)), _fraction(match.group(bottom))
            if numerator is None or denominator is None or denominator == 0:
                return None
            value = numerator / denominator
            return -value if match.group("sign") else value
    return _fraction(match.group("x"))


def parse_number(text: str | None) -> Fraction | None:
    """The last number written in ``text`` as an exact fraction, or None.

    Understands thousands separators (``1,000``), decimals and exponents, signs, ``a/b``,
    ``\\frac{a}{b}`` (and ``\\dfrac``, ``\\tfrac``), ``\\boxed{...}``, ``$`` and ``%`` signs (a percent
    sign is dropped: ``50%`` reads as 50), and GSM8K's ``#### 72`` reference format.

    Parameters
    ----------
    text : str or None
        Text holding a number.

    Returns
    -------
    Fraction or None
    """
    if text is None:
        return None
    text = str(text)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    boxed = last_boxed(text)
    if boxed is not None:
        text = boxed
    values = [_value(m) for m in _NUMBER_RE.finditer(_clean_math(text))]
    values = [v for v in values if v is not None]
    return values[-1] if values else None


def numbers_equal(
    a: Fraction, b: Fraction, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9
) -> bool:
    """Exact equality of fractions, or float closeness within the tolerances.

    Parameters
    ----------
    a, b : Fraction
        The numbers.
    rel_tol, abs_tol : float
        Tolerances of the float comparison.

    Returns
    -------
    bool
    """
    return a == b or math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=abs_tol)


@_scorer
def numeric_equivalence(
    response: str | None, answer: Any, choices: list[str] | None = None
) -> float | ScoringFailure:
    """1 when the response's final number equals the reference number (``1,000`` = ``1000``,
    ``3.0`` = ``3``, ``\\frac{1}{2}`` = ``0.5``, relative tolerance 1e-6), else 0.

    Without a final-answer line or ``\\boxed{}``, the last number of the response is used.
    """
    refs = references(answer)
    if isinstance(refs, ScoringFailure):
        return refs
    targets = [parse_number(ref) for ref in refs]
    targets = [t for t in targets if t is not None]
    if not targets:
        return ScoringFailure(f"reference answer {refs[0]!r} is not a number")
    if not response:
        return 0.0
    value = parse_number(extract_final_answer(response))
    if value is None:
        value = parse_number(response)
    if value is None:
        return 0.0
    return float(any(numbers_equal(value, target) for target in targets))


# ---------------------------------------------------------------------------------------------
# text


def _score_final_text(
    response: str | None, answer: Any, compare: Callable[[str, list[str]], float]
) -> float | ScoringFailure:
    """The guard every text scorer shares: a missing reference is a failure, a response without a
    final answer (nor a last line to fall back on) scores 0, else ``compare(predicted, refs)``."""
    refs = references(answer)
    if isinstance(refs, ScoringFailure):
        return refs
    if not response:
        return 0.0
    final = extract_final_answer(response)
    predicted = final if final is not None else _last_line(response)
    if predicted is None:
        return 0.0
    return compare(predicted, refs)


@_scorer
def exact_match(
    response: str | None, answer: Any, choices: list[str] | None = None
) -> float | ScoringFailure:
    """1 when the normalised final answer equals a normalised reference, else 0."""
    return _score_final_text(
        response,
        answer,
        lambda predicted, refs: float(
            any(normalise_answer(predicted) == normalise_answer(ref) for ref in refs)
        ),
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _drop_token(token: str) -> str:
    token = token if _is_number(token) else normalise_answer(token)  # a number keeps its signs
    return str(float(token)) if _is_number(token) else token


def drop_bag(text: str) -> set[str]:
    """DROP's normalised bag of tokens (split on spaces and hyphens; numbers as floats).

    Parameters
    ----------
    text : str
        An answer.

    Returns
    -------
    set of str
    """
    tokens = [_drop_token(t) for t in re.split(r"[ \t\n\r-]", text)]
    return {t for t in tokens if t.strip()}


def _drop_f1(predicted: set[str], gold: set[str]) -> float:
    intersection = len(gold & predicted)
    precision = intersection / len(predicted) if predicted else 1.0
    recall = intersection / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    f1 = 2 * precision * recall / (precision + recall)
    gold_numbers = {t for t in gold if _is_number(t)}
    predicted_numbers = {t for t in predicted if _is_number(t)}
    if gold_numbers and not gold_numbers & predicted_numbers:
        return 0.0  # DROP: a numeric answer must get a number right
    return f1


@_scorer
def token_f1(
    response: str | None, answer: Any, choices: list[str] | None = None
) -> float | ScoringFailure:
    """DROP-style token F1 between the final answer and the best-matching reference.

    Single-span DROP F1 (bags of normalised tokens; when the reference holds numbers, F1 is 0 unless
    one of them is predicted); several references are alternatives and the best one counts.
    """
    return _score_final_text(
        response,
        answer,
        lambda predicted, refs: max(_drop_f1(drop_bag(predicted), drop_bag(ref)) for ref in refs),
    )


# ---------------------------------------------------------------------------------------------
# registry

SCORERS: dict[str, Scorer] = {
    "multiple_choice": multiple_choice_letter,
    "numeric": numeric_equivalence,
    "exact_match": exact_match,
    "token_f1": token_f1,
}
"""Built-in scorers by name."""

CATEGORY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "multiple_choice": (
        "multiple_choice",
        "mcq",
        "mc",
        "mmlu",
        "gpqa",
        "arc",
        "hellaswag",
        "commonsenseqa",
        "medqa",
        "openbookqa",
        "truthfulqa",
    ),
    "numeric": ("math", "numeric", "gsm8k", "gsm", "arithmetic", "aime", "svamp", "asdiv"),
    "token_f1": ("drop", "squad", "hotpotqa", "token_f1", "reading_comprehension"),
    "exact_match": ("exact_match", "triviaqa", "naturalquestions", "nq"),
}
"""Category words (whole tokens of the lower-cased category, or the whole category) per scorer,
tried in this order."""

DEFAULT_SCORER = "exact_match"


def get_scorer(scorer: str | Scorer) -> tuple[str, Scorer]:
    """``(name, function)`` of a scorer given by name or as a callable.

    Parameters
    ----------
    scorer : str or callable
        A scorer name (see ``SCORERS``) or a scorer function.

    Returns
    -------
    name : str
        Scorer name.
    scorer : callable
        The scorer.
    """
    if callable(scorer):
        return getattr(scorer, "__name__", "custom"), scorer
    name = str(scorer).strip().lower().replace("-", "_")
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; choose one of {sorted(SCORERS)}")
    return name, SCORERS[name]


def scorer_for_category(category: str | None) -> str | None:
    """Name of the scorer a category implies, or None.

    Parameters
    ----------
    category : str or None
        A query category.

    Returns
    -------
    str or None
    """
    if is_missing(category) or not str(category).strip():
        return None
    lowered = str(category).strip().lower()
    tokens = set(re.split(r"[^a-z0-9]+", lowered)) | {lowered.replace("-", "_")}
    for name, words in CATEGORY_KEYWORDS.items():
        if tokens & set(words):
            return name
    return None


def choose_scorer(
    category: str | None = None,
    *,
    has_choices: bool = False,
    override: str | Scorer | Mapping[str, str | Scorer] | None = None,
    query_scorer: str | None = None,
) -> tuple[str, Scorer]:
    """The scorer of one query (see the module docstring for the order of rules).

    Parameters
    ----------
    category : str, optional
        The query's category.
    has_choices : bool, default False
        Whether the query has answer options.
    override : str, callable or mapping, optional
        A scorer for every query, or one per category.
    query_scorer : str, optional
        A scorer named by the query itself.

    Returns
    -------
    name : str
        Scorer name.
    scorer : callable
        The scorer.
    """
    if override is not None and not isinstance(override, Mapping):
        return get_scorer(override)
    if isinstance(override, Mapping) and not is_missing(category) and str(category) in override:
        return get_scorer(override[str(category)])
    if not is_missing(query_scorer) and str(query_scorer).strip():
        return get_scorer(str(query_scorer))
    if has_choices:
        return get_scorer("multiple_choice")
    return get_scorer(scorer_for_category(category) or DEFAULT_SCORER)


def _accepts_choices(function: Scorer) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return True
    return "choices" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def apply_scorer(
    scorer: Scorer, response: str | None, answer: Any, choices: list[str] | None = None
) -> tuple[float | None, str | None]:
    """Run a scorer safely: ``(score, None)`` or ``(None, reason)``; never raises.

    Parameters
    ----------
    scorer : callable
        A scorer ``(response, answer, choices) -> float | ScoringFailure``.
    response, answer, choices
        Handed to the scorer (see :data:`SCORER_SECTIONS`).

    Returns
    -------
    score : float or None
        The score, None on failure.
    reason : str or None
        Why scoring failed, None on success.
    """
    try:
        options = {"choices": choices} if _accepts_choices(scorer) else {}
        result = scorer(response, answer, **options)
    except Exception as error:  # a user's scorer may fail in any way
        return None, f"scorer raised {type(error).__name__}: {error}"
    if isinstance(result, ScoringFailure):
        return None, result.reason
    try:
        value = float(result)
    except (TypeError, ValueError):
        return None, f"scorer returned {result!r}, not a number"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None, f"scorer returned {value!r}, outside [0, 1]"
    return value, None


__all__: list[str] = []

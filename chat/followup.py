"""Turn a follow-up question into a standalone retrieval query (pure, no model).

Used by the offline answerer, which has no language model to resolve "it" or
"what about …"; remote models see the history and write their own queries.
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if
    in into is it its me my no not of on or our so than that the their them then there these
    they this those to was we were what when where which who whom why will with would you your
    about after before should must may might shall any all each more most much many some such
    only own same other also just very up down out over under again""".split()
)
ANAPHORA = re.compile(
    r"\b(it|its|it's|that|this|those|these|they|them|their|he|she|his|her|there|then|"
    r"the same|what about|how about|and|also|else|more)\b",
    re.IGNORECASE,
)
WORD = re.compile(r"[A-Za-z0-9][\w.@'-]*")


def content_words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w.lower() not in STOP_WORDS]


def standalone_query(previous_questions: list[str], question: str) -> str:
    """`question`, completed with the topic of the previous question when it leans on it."""
    topic = borrowed_topic(previous_questions, question)
    return f"{question} ({topic})" if topic else question


def borrowed_topic(previous_questions: list[str], question: str) -> str:
    """The previous question's words a follow-up leans on ("tidewatch 2.0 launch" for "and
    its budget?"), or ''."""
    if not previous_questions:
        return ""
    own = content_words(question)
    # Only a question that points back ("its budget", "what about …") borrows.
    if not ANAPHORA.search(question) or len(own) > 6:
        return ""
    seen = {w.lower() for w in own}
    return " ".join(w for w in content_words(previous_questions[-1]) if w.lower() not in seen)

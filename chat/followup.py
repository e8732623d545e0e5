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
# A pronoun standing for something said before. "it" as a dummy subject ("Is it allowed to
# …", "it is required that …") and "there" of "is there …" stand for nothing.
POINTING = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|he|him|his|she|her|hers|there|the same)\b",
    re.IGNORECASE,
)
DUMMY = re.compile(
    r"\b(?:(?:is|was|will|would)\s+it\s+\w+|it\s+(?:is|was)\s+\w+)\s+(?:to|that)\b"
    r"|\b(?:is|are|was|were|will)\s+there\b|\bthere\s+(?:is|are|was|were)\b",
    re.IGNORECASE,
)
# A question opening on the one before: "And its budget?", "What about Tokyo?", "Why?"
LEANING = re.compile(
    r"^\W*(and|also|but|so|then|what about|how about|what else|anything else|tell me more|more)\b",
    re.IGNORECASE,
)
# "this"/"that" alone points back ("Why is that?"); before a word it names its own topic
# ("this policy"), and "that" before a verb joins a clause ("the team that owns billing").
DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those)\b(?:\s+([A-Za-z0-9][\w.-]*))?",
                           re.IGNORECASE)
WORD = re.compile(r"[A-Za-z0-9][\w.@'-]*")
# A question with more words of its own than this states its own topic.
MAX_OWN_WORDS = 6


def content_words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w.lower() not in STOP_WORDS]


def standalone_query(previous_questions: list[str], question: str) -> str:
    """`question`, completed with the topic of the conversation when it leans on it."""
    topic = borrowed_topic(previous_questions, question)
    return f"{question} ({topic})" if topic else question


def borrowed_topic(previous_questions: list[str], question: str) -> str:
    """The conversation's words a follow-up leans on ("tidewatch 2.0 launch" for "and its
    budget?"), or ''. A chain of follow-ups keeps the topic of the question it started
    from: "Who owns it?" after "And its budget?" after "When is the tidewatch 2.0 launch?"
    borrows "budget tidewatch 2.0 launch"."""
    if not previous_questions or not leans_back(question):
        return ""
    seen = {w.lower() for w in content_words(question)}
    return " ".join(w for w in _topic(previous_questions) if w.lower() not in seen)


def leans_back(question: str) -> bool:
    """Whether a question needs the one before it to be understood."""
    own = content_words(question)
    if not own:
        return True  # "Why?", "How so?"
    if len(own) > MAX_OWN_WORDS:
        return False
    if LEANING.search(question) or POINTING.search(DUMMY.sub(" ", question)):
        return True
    return any(not m.group(1) or m.group(1).lower() in STOP_WORDS or len(own) <= 2
               for m in DEMONSTRATIVE.finditer(question))


def _topic(previous_questions: list[str]) -> list[str]:
    """The words the conversation is about after these questions: the last question's own,
    then those of the last question that stood on its own (the chain's anchor)."""
    anchor: list[str] = []
    last: list[str] = []
    for question in previous_questions:
        own = content_words(question)
        if anchor and leans_back(question):
            last = own
        else:
            anchor, last = own, []
    words: list[str] = []
    seen: set[str] = set()
    for word in [*last, *anchor]:
        if word.lower() not in seen:
            seen.add(word.lower())
            words.append(word)
    return words

"""Thumbs up or down on an answer, with an optional comment: given, changed and withdrawn
by the conversation's owner."""

from __future__ import annotations

from chat.models import AnswerFeedback, Message, Thread


class NoSuchAnswer(LookupError):
    """The conversation has no such answer (or only one an edit replaced)."""


class NotRateable(ValueError):
    """An answer still being written, or one the user stopped before any of it was
    written: there is nothing to rate."""


def _answer(thread: Thread, message_id: int) -> Message:
    answer = thread.messages.current().filter(
        pk=message_id, role=Message.Role.ASSISTANT
    ).first()
    if answer is None:
        raise NoSuchAnswer(f"No answer {message_id} in this conversation")
    return answer


def feedback_on(*, thread: Thread, message_id: int) -> AnswerFeedback | None:
    """The owner's feedback on an answer of `thread`; NoSuchAnswer if there is no answer."""
    answer = _answer(thread, message_id)
    return AnswerFeedback.objects.filter(message=answer, user_id=thread.user_id).first()


def rate_answer(
    *, thread: Thread, message_id: int, rating: str, comment: str = ""
) -> AnswerFeedback:
    """The owner's rating of an answer, given or changed (one per user and answer).

    A failed answer is rated too: "it failed" on this question is what curators most
    need to hear (a model that times out on long documents, a source that breaks a
    turn), and the rating keeps the question and the error together. Not one the user
    stopped before it said anything: that says nothing of the answer.
    """
    answer = _answer(thread, message_id)
    if answer.status == Message.Status.PENDING:
        raise NotRateable("This answer is still being written.")
    if answer.status == Message.Status.ERROR and answer.metadata.get("stopped"):
        raise NotRateable("You stopped this answer before any of it was written.")
    # Two clicks racing: update_or_create retries the read when the other one's insert
    # wins the unique constraint.
    feedback, _ = AnswerFeedback.objects.update_or_create(
        message=answer, user_id=thread.user_id, defaults={"rating": rating, "comment": comment},
    )
    return feedback


def withdraw_feedback(*, thread: Thread, message_id: int) -> bool:
    """Remove the owner's rating of an answer; False when there was none."""
    answer = _answer(thread, message_id)
    deleted, _ = AnswerFeedback.objects.filter(message=answer, user_id=thread.user_id).delete()
    return bool(deleted)

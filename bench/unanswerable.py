"""Does the offline answerer say it found nothing when the corpus does not hold the answer?

    .venv/bin/python bench/unanswerable.py [--sample 400] [--seed 0] [--examples 5]

Corpus: half of SQuAD v1.1 dev (../shared/eval/squad/dev.json), the articles of even index,
ingested as bench/squad_citations.py ingests all of them (one Markdown document per
article) into the workspace "squad-half". Questions, a fixed random sample of each:

- answerable: questions about those articles. Answered well = not "could not find" and
  some cited sentence holds a gold answer; refused = "could not find".
- unanswerable: questions about the other articles, which the workspace does not hold
  (SQuAD's articles are about different subjects: "Which NFL team represented the AFC at
  Super Bowl 50?" asked of a corpus about the Rhine and Oxygen). Answered = a confident
  answer quoting passages that do not hold the answer: what a user must not get.

Each question is asked in a fresh thread through chat.services.post_message with the
configured LLM_PROVIDER, which must be "extractive"; the threads are deleted at the end.
"""

from __future__ import annotations

import argparse
import random
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from squad_citations import Article, Question, ingest, load_squad, squash

from chat import services
from chat.extractive import NOTHING_FOUND
from chat.models import Message, Thread
from knowledge.models import Workspace

WORKSPACE_SLUG = "squad-half"


def ask(question: Question, workspace: Workspace, owner, thread_ids: list[int]) -> Message:
    thread = services.create_thread(workspace=workspace, user=owner)
    thread_ids.append(thread.pk)
    return services.post_message(thread=thread, text=question.text)


def answered(message: Message) -> bool:
    return message.status == Message.Status.COMPLETE and (
        message.resolved_content.strip() != NOTHING_FOUND
    )


def holds_answer(message: Message, question: Question) -> bool:
    return any(squash(g) in squash(message.resolved_content) for _, g in question.answers)


def share(count: int, total: int) -> str:
    return f"{100 * count / total:5.1f}%  ({count}/{total})" if total else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=400, help="questions of each kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=5, help="mistakes of each kind")
    args = parser.parse_args()
    if settings.LLM_PROVIDER != "extractive":
        raise SystemExit(f"LLM_PROVIDER is {settings.LLM_PROVIDER!r}, not 'extractive'")

    articles, questions = load_squad()
    held: list[Article] = [a for i, a in enumerate(articles) if i % 2 == 0]
    owner = get_user_model().objects.get_or_create(username="bench")[0]
    workspace, _ = Workspace.objects.get_or_create(
        slug=WORKSPACE_SLUG, defaults={"name": "SQuAD dev, even articles", "owner": owner}
    )
    ingest(held, workspace)
    rng = random.Random(args.seed)
    answerable = rng.sample([q for q in questions if q.article % 2 == 0], args.sample)
    unanswerable = rng.sample([q for q in questions if q.article % 2 == 1], args.sample)

    thread_ids: list[int] = []
    refused, wrong, well = [], [], 0
    confident: list[tuple[Question, Message]] = []
    started = time.perf_counter()
    try:
        for question in answerable:
            message = ask(question, workspace, owner, thread_ids)
            if not answered(message):
                refused.append(question)
            elif holds_answer(message, question):
                well += 1
            else:
                wrong.append(question)
        for question in unanswerable:
            message = ask(question, workspace, owner, thread_ids)
            if answered(message):
                confident.append((question, message))
    finally:
        Thread.objects.filter(pk__in=thread_ids).delete()
    elapsed = time.perf_counter() - started

    n = args.sample
    print(f"\n{2 * n} questions (seed {args.seed}) over {len(held)} articles, {elapsed:.0f}s")
    print(f"{'answerable: answered, a cited sentence holds the answer':58s} {share(well, n)}")
    print(f"{'answerable: answered without the answer':58s} {share(len(wrong), n)}")
    print(f"{'answerable: refused (could not find)':58s} {share(len(refused), n)}")
    print(f"{'unanswerable: answered anyway (should refuse)':58s} {share(len(confident), n)}")
    print(f"{'unanswerable: refused':58s} {share(n - len(confident), n)}")
    for question in refused[: args.examples]:
        print(f"  refused, answerable: {question.text}  (gold {question.answers[0][1]!r})")
    for question, message in confident[: args.examples]:
        print(f"  answered, unanswerable: {question.text}\n    A: {message.resolved_content[:160]}")


if __name__ == "__main__":
    main()

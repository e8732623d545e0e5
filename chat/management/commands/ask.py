"""`manage.py ask "question" --workspace SLUG [--document DOC] [--folder FOLDER] [--json]`.

DOC is a document's id, title, file name or path; FOLDER a folder's id, path or name.

Runs the very same turn as the chat API and prints the answer with footers.
"""

from __future__ import annotations

import json
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from chat import services
from chat.models import Message, Thread
from citations.normalizer import plain_markers
from knowledge.management import references
from knowledge.models import Workspace


class Command(BaseCommand):
    help = "Ask the knowledge base a question; prints a cited answer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--workspace", default="demo", help="workspace slug (default: demo)")
        parser.add_argument("--user", help="username (default: the workspace owner)")
        parser.add_argument("--document", action="append", default=[], metavar="DOC",
                            help="restrict to this document: its id, title, file name or "
                            "path (repeatable)")
        parser.add_argument("--folder", action="append", default=[], metavar="FOLDER",
                            help="restrict to this folder: its id, path or name (repeatable)")
        parser.add_argument("--thread", type=int, help="continue this conversation")
        parser.add_argument("--json", action="store_true", help="print the message as JSON")
        parser.add_argument("--verbose", action="store_true", help="show progress events")
        parser.add_argument("--debug", action="store_true",
                            help="one full provenance line per cited source")

    def handle(self, *args, **options) -> None:
        if not options["question"].strip():
            # Searching for nothing finds arbitrary passages and "answers" from them.
            raise CommandError('The question is empty: ask something, e.g. manage.py ask "…"')
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace '{options['workspace']}'")
        user = (
            get_user_model().objects.filter(username=options["user"]).first()
            if options["user"]
            else workspace.owner
        )
        if user is None:
            raise CommandError(f"No user '{options['user']}'")
        # Before the conversation is made: a name that means nothing leaves none behind.
        mentions = [
            {"kind": "document", "id": i}
            for i in references.document_ids(workspace=workspace, names=options["document"])
        ]
        mentions += [
            {"kind": "folder", "id": i}
            for i in references.folder_ids(workspace=workspace, names=options["folder"])
        ]
        thread = (
            Thread.objects.filter(pk=options["thread"], workspace=workspace, user=user).first()
            if options["thread"]
            else services.create_thread(workspace=workspace, user=user, origin=Thread.Origin.CLI)
        )
        if thread is None:
            raise CommandError(f"No conversation {options['thread']} for {user}")
        if thread.origin == Thread.Origin.MCP:  # as the API's 409: see MessageListView.post
            raise CommandError(f"Conversation {thread.pk} belongs to an agent (MCP); "
                               "ask without --thread to start one of your own")

        def emit(event: str, data) -> None:
            if options["verbose"] and event == "progress":
                sys.stderr.write(f"… {data['label']}\n")

        try:
            message = services.post_message(
                thread=thread, text=options["question"], mentions=mentions, emit=emit
            )
        except services.MentionError as exc:
            if not options["thread"]:
                thread.delete()  # made for this question, which was refused: nothing stays
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(message), indent=2, ensure_ascii=False))
            return
        # The footer lists the sources by number: the wire token [citation:n] is for
        # programs (--json keeps it), [n] for people.
        self.stdout.write(plain_markers(message.resolved_content))
        self.stdout.write("")
        for line in footer(message, debug=options["debug"]):
            self.stdout.write(line)
        if message.status == Message.Status.ERROR:
            raise CommandError("The answer could not be completed")


def _as_json(message: Message) -> dict:
    return {
        "thread": message.thread_id,
        "status": message.status,
        "answer": message.resolved_content,
        "citations": message.citations,
        "grounding": message.grounding,
        "metadata": message.metadata,
    }


def _counted(count: int, noun: str) -> str:
    """'1 tool call', '2 tool calls'."""
    return f"{count} {noun}{pluralize(count)}"


def grounding_line(grounding: dict) -> str:
    """'grounding> 4 sentences · 3 supported · 1 partial · 0 uncited' (claim sentences only;
    those past the check's budget are counted as '· n unchecked')."""
    claims = [s["verdict"] for s in grounding["sentences"] if s["verdict"] != "not_a_claim"]
    counts = {v: claims.count(v)
              for v in ("supported", "partial", "unsupported", "uncited", "unchecked")}
    parts = [_counted(len(claims), "sentence"), f"{counts['supported']} supported",
             f"{counts['partial']} partial"]
    if counts["unsupported"]:
        parts.append(f"{counts['unsupported']} unsupported")
    parts.append(f"{counts['uncited']} uncited")
    if counts["unchecked"]:
        parts.append(f"{counts['unchecked']} unchecked")
    return "grounding> " + " · ".join(parts)


def footer(message: Message, *, debug: bool = False) -> list[str]:
    searches = [c for c in message.tool_calls if c["name"] == "search_knowledge_base"]
    queries = []
    for call in searches:
        args = call["arguments"]
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except json.JSONDecodeError:
            args = {}
        queries.append(args.get("query", "?"))
    passages = sum(c["result"].count("\n[") for c in message.tool_calls)
    lines = [
        f"retrieval> {_counted(len(message.tool_calls), 'tool call')}"
        + (f"; searched: {', '.join(repr(q) for q in queries)}" if queries else ""),
        f"matches> {_counted(passages, 'passage')} shown, {len(message.citations)} cited, "
        f"{_counted(len(message.metadata.get('dropped_citations', [])), 'invented number')} "
        "dropped",
    ]
    if message.grounding is not None:
        lines.append(grounding_line(message.grounding))
    for citation in message.citations:
        doc = citation["document"]
        where = f" · {citation['label']}" if citation["label"] else ""
        lines.append(f"sources> [{citation['n']}] {doc['title']}{where}")
        if debug:
            lines.append(
                f"    {citation['source_type']} document={doc['id']} uri={doc['uri']} "
                f"path={doc.get('path', '')} "
                f"locator={json.dumps(citation['locator'])} status={citation['status']}"
            )
        support = citation.get("support")
        if support and support["verdict"] != "supported":
            lines.append(f"    {support['verdict']}: {support['reason']}")
    return lines

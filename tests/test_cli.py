"""The command line speaks to people: `ask`, `chat` and `ingest` through call_command."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document, Folder

pytestmark = pytest.mark.django_db

QUESTION = "When do on-call shifts hand over?"


def test_ask_prints_bare_numbers_and_json_keeps_the_wire_tokens(corpus, workspace, settings):
    settings.LLM_PROVIDER = "extractive"
    out = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, stdout=out)
    answer, _, footer = out.getvalue().partition("\nretrieval> ")
    assert "Tuesdays at 10:00 UTC" in answer
    assert "[citation:" not in out.getvalue()
    numbers = re.findall(r"\[(\d+)\]", answer)
    assert numbers, answer
    # Every number in the answer is a source listed in the footer.
    listed = re.findall(r"^sources> \[(\d+)\] ", footer, re.MULTILINE)
    assert set(numbers) <= set(listed)

    out = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, json=True, stdout=out)
    message = json.loads(out.getvalue())
    assert "[citation:" in message["answer"]
    assert {f"[citation:{n}]" for n in numbers} <= set(
        re.findall(r"\[citation:\d+\]", message["answer"])
    )


def test_chat_prints_bare_numbers(corpus, workspace, settings, monkeypatch):
    settings.LLM_PROVIDER = "extractive"
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{QUESTION}\n\n"))
    out = io.StringIO()
    call_command("chat", workspace=workspace.slug, stdout=out, stderr=io.StringIO())
    [answer] = [line for line in out.getvalue().splitlines() if line.startswith("verity> ")]
    assert "Tuesdays at 10:00 UTC" in answer
    assert re.search(r"\[\d+\]", answer) and "[citation:" not in answer


# Without --inline the tasks are sent on commit and run eagerly in tests
# (CELERY_TASK_ALWAYS_EAGER): the command then follows its waiting loop.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("inline", [True, False], ids=["inline", "workers"])
def test_ingest_reports_each_failure_as_it_happens_and_in_the_summary(
    workspace, tmp_path, inline
):
    (tmp_path / "a-good.md").write_text("# Good\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b-binary.txt").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "c-empty.md").write_text("")
    (tmp_path / "d-good.md").write_text("# Also good\n\nThe slipway closes at 18:00.\n")
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 of 4 documents failed"):  # exit status 1
        call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=inline,
                     stdout=out, stderr=io.StringIO())
    lines = out.getvalue().splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("Done in "))
    assert "2 indexed, 2 failed" in lines[summary]
    live = [line for line in lines[:summary] if "FAILED" in line]
    listed = [line.strip() for line in lines[summary + 1:] if "FAILED" in line]
    assert len(live) == 2 and len(listed) == 2
    assert [line.strip() for line in live] == listed
    assert "b-binary.txt" in live[0] and "binary" in live[0].lower()
    assert "c-empty.md" in live[1]


def test_ingest_refuses_a_folder_path_that_climbs(workspace, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    with pytest.raises(CommandError, match=r"cannot contain '\.' or '\.\.'"):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, folder="../../etc",
                     inline=True, stdout=io.StringIO())
    assert not Folder.objects.filter(workspace=workspace).exists()
    assert not Document.objects.filter(workspace=workspace).exists()


def test_ask_refuses_to_continue_an_agents_conversation(workspace, settings):
    from chat.models import Message, Thread

    settings.LLM_PROVIDER = "extractive"
    user = workspace.members.first()
    agents = Thread.objects.create(workspace=workspace, user=user, origin=Thread.Origin.MCP)
    with pytest.raises(CommandError, match="belongs to an agent"):
        call_command("ask", QUESTION, workspace=workspace.slug, user=user.username,
                     thread=agents.pk, stdout=io.StringIO())
    assert not Message.objects.filter(thread=agents).exists()


@pytest.mark.parametrize("prune", [False, True])
def test_ingest_refuses_a_symlink_loop_by_name(workspace, tmp_path, prune):
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    loop = tmp_path / "loop1"
    with pytest.raises(CommandError, match=f"^{re.escape(str(loop))} is a symlink loop$"):
        call_command("ingest", str(loop), workspace=workspace.slug, inline=True, prune=prune,
                     stdout=io.StringIO())
    assert not Document.objects.filter(workspace=workspace).exists()


def test_ingest_refuses_a_nul_character_by_name(workspace):
    with pytest.raises(CommandError, match="contains a NUL character"):
        call_command("ingest", "/x/\0y", workspace=workspace.slug, inline=True,
                     stdout=io.StringIO())


@pytest.mark.parametrize("seconds", ["-5", "0", "soon"])
def test_ingest_refuses_a_worker_timeout_that_is_not_a_positive_number(
    workspace, tmp_path, seconds
):
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    with pytest.raises(CommandError, match=r"argument --worker-timeout: (must be a positive"
                                           r" number of seconds|not a number of seconds)"):
        call_command("ingest", str(tmp_path), "--worker-timeout", seconds,
                     workspace=workspace.slug, stdout=io.StringIO())
    assert not Document.objects.filter(workspace=workspace).exists()


@pytest.mark.django_db(transaction=True)
def test_ingest_again_queues_no_task_for_unchanged_files(workspace, tmp_path):
    from celery.signals import task_prerun

    (tmp_path / "a.md").write_text("# A\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 18:00.\n")
    (tmp_path / "c.md").write_text("# C\n\nThe ferry leaves at noon.\n")
    call_command("ingest", str(tmp_path), workspace=workspace.slug, stdout=io.StringIO(),
                 stderr=io.StringIO())
    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 19:00.\n")
    ran: list[int] = []

    def record(sender=None, args=(), **kwargs) -> None:
        if sender.name == "indexing.tasks.index_document_task":
            ran.append(args[0])

    task_prerun.connect(record, weak=False)
    try:
        out = io.StringIO()
        call_command("ingest", str(tmp_path), workspace=workspace.slug, stdout=out,
                     stderr=io.StringIO())
    finally:
        task_prerun.disconnect(record)
    changed = Document.objects.get(uri=(tmp_path / "b.md").resolve().as_uri())
    assert ran == [changed.pk], "a task only for the file that changed"
    assert "2 unchanged, 1 indexed, 0 failed" in out.getvalue()
    assert changed.chunks_embedded == 1  # its changed chunk only
    assert Document.objects.filter(status=Document.Status.INDEXED).count() == 3
    # --force queues them all again.
    ran.clear()
    task_prerun.connect(record, weak=False)
    try:
        call_command("ingest", str(tmp_path), workspace=workspace.slug, force=True,
                     stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        task_prerun.disconnect(record)
    assert len(ran) == 3


def test_ingest_reports_registration_progress_on_stderr_and_not_with_v0(workspace, tmp_path):
    for name in "abc":
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\nThe ferry leaves at noon.\n")
    err = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 progress_every=1e-9, stdout=io.StringIO(), stderr=err)
    lines = err.getvalue().splitlines()
    assert f"Registered 3 of 3 files in {tmp_path.resolve()}" in lines
    assert "Checked 3 of 3 files for changes" in lines

    err = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 progress_every=1e-9, verbosity=0, stdout=io.StringIO(), stderr=err)
    assert "Registered" not in err.getvalue()

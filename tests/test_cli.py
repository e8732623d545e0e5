"""The command line speaks to people: `ask`, `chat` and `ingest` through call_command."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time

import pytest
from django.core.management import CommandError, call_command

from chat.models import Thread
from indexing import sources
from knowledge import selectors
from knowledge.models import Document, Folder
from tests.conftest import SAMPLE_CORPUS

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
def test_ingest_reports_each_failure_once_as_it_happens_and_counts_them_in_the_summary(
    workspace, tmp_path, inline
):
    (tmp_path / "a-good.md").write_text("# Good\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b-binary.txt").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "c-empty.md").write_text("")
    (tmp_path / "d-good.md").write_text("# Also good\n\nThe slipway closes at 18:00.\n")
    out = io.StringIO()
    # exit status 1
    with pytest.raises(CommandError, match="2 of 4 documents failed, new in this run"):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=inline,
                     stdout=out, stderr=io.StringIO())
    lines = out.getvalue().splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("Done in "))
    assert "2 indexed, 2 failed" in lines[summary]
    live = [line for line in lines[:summary] if "FAILED" in line]
    # Listed once: the summary counts them (each was listed twice before).
    assert not [line for line in lines[summary + 1:] if "FAILED" in line]
    assert len(live) == 2
    assert "b-binary.txt" in live[0] and "binary" in live[0].lower()
    assert "c-empty.md" in live[1]
    assert "Failed: 2 new, 0 as before" in lines[summary + 1]


def _ingest(*args, **options) -> str:
    out = io.StringIO()
    call_command("ingest", *args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def test_ingest_again_exits_0_when_its_only_failures_are_old_ones_unchanged(
    workspace, tmp_path
):
    """A nightly `ingest /srv/docs || alert` alerted every night for one file that failed
    months ago: a failure found again, the same error on the same file, is counted apart
    and exits 0 (--strict still fails); a new one, or one on a file changed since, does not."""
    (tmp_path / "a-good.md").write_text("# Good\n\nThe breakwater was rebuilt in 1998.\n")
    empty = tmp_path / "b-empty.md"
    empty.write_text("")
    with pytest.raises(CommandError, match="1 of 2 documents failed, new in this run"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True)

    again = _ingest(str(tmp_path), workspace=workspace.slug, inline=True)  # no error
    failed = [line for line in again.splitlines() if "FAILED" in line]
    assert len(failed) == 1 and failed[0].startswith("FAILED (as before) ")
    assert "b-empty.md" in failed[0] and "File is empty" in failed[0]
    assert "1 unchanged, 0 indexed, 1 failed" in again
    assert "Failed: 0 new, 1 as before" in again

    with pytest.raises(CommandError, match=r"1 of 2 documents failed \(listed above; --strict\)"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True, strict=True)

    # Written since it failed, though it fails the same way: worth a look, so new.
    later = time.time() + 5
    os.utime(empty, (later, later))
    with pytest.raises(CommandError, match="1 of 2 documents failed, new in this run"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True)

    # Another error on the same file is new too.
    empty.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(CommandError, match="new in this run"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True)


def test_ingest_into_another_folder_says_which_documents_it_moved(workspace, tmp_path):
    """A file is one document of its workspace: ingested again with another --folder, it
    moves there, which nothing said ("30 unchanged" and the folder `many` left empty)."""
    (tmp_path / "a.md").write_text("# A\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 18:00.\n")
    first = _ingest(str(tmp_path), workspace=workspace.slug, inline=True, folder="many")
    assert "Moved" not in first
    again = _ingest(str(tmp_path), workspace=workspace.slug, inline=True, folder="other")
    assert "Moved 2 documents from 'many' to 'other'" in again
    assert "2 unchanged" in again
    assert set(Document.objects.values_list("folder__name", flat=True)) == {"other"}
    # Without --folder they stay where they are; into a subfolder, its path is named.
    assert "Moved" not in _ingest(str(tmp_path), workspace=workspace.slug, inline=True)
    moved = _ingest(str(tmp_path / "a.md"), workspace=workspace.slug, inline=True,
                    folder="other/2026")
    assert "Job " in moved and ": 1 document in " in moved
    assert "Moved 1 document from 'other' to 'other/2026'" in moved


def test_ingest_into_a_folder_typed_in_another_case_uses_the_one_there(workspace, tmp_path):
    """`--folder Docs/A` then `--folder docs/a` made two trees, as the admin's form did not."""
    (tmp_path / "a.md").write_text("# A\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 18:00.\n")
    _ingest(str(tmp_path / "a.md"), workspace=workspace.slug, inline=True, folder="Docs/A")
    _ingest(str(tmp_path / "b.md"), workspace=workspace.slug, inline=True, folder="docs/a/x")
    assert sorted(selectors.folder_paths(workspace_id=workspace.pk).values()) == [
        "Docs", "Docs/A", "Docs/A/x"]
    assert sources.folder_for_path(workspace=workspace, path="Docs/a").name == "A"
    # Names the database keeps apart (its constraint lowercases) that fold to one ("ss",
    # "ß"): an exact match wins; with none, which one is meant is asked.
    exact = Folder.objects.create(workspace=workspace, name="Strasse")
    Folder.objects.create(workspace=workspace, name="Straße")
    assert sources.folder_for_path(workspace=workspace, path="Strasse") == exact
    with pytest.raises(
        CommandError, match="'Strasse' and 'Straße' differ from 'STRASSE' only in case"
    ):
        _ingest(str(tmp_path / "a.md"), workspace=workspace.slug, inline=True, folder="STRASSE")
    assert Folder.objects.filter(workspace=workspace).count() == 5


def test_ingest_refuses_a_folder_path_that_climbs(workspace, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    with pytest.raises(CommandError, match=r"cannot contain '\.' or '\.\.'"):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, folder="../../etc",
                     inline=True, stdout=io.StringIO())
    assert not Folder.objects.filter(workspace=workspace).exists()
    assert not Document.objects.filter(workspace=workspace).exists()


def test_ask_refuses_to_continue_an_agents_conversation(workspace, settings):
    from chat.models import Message

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


def test_ingest_says_which_files_of_a_folder_it_skipped_for_their_type(workspace, tmp_path):
    """A plain folder's unsupported files were left out without a word, even at -v 2."""
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    (tmp_path / "x.xyz").write_bytes(bytes(range(256)))
    for n in range(6):
        (tmp_path / "photos").mkdir(exist_ok=True)
        (tmp_path / "photos" / f"p{n}.png").write_bytes(b"\x89PNG\r\n")
    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 stdout=out, stderr=io.StringIO())
    assert (f"{tmp_path}: skipped 7 files of a type not read (photos/p0.png, photos/p1.png, "
            "photos/p2.png, photos/p3.png, photos/p4.png and 2 more (-v 2 lists them))"
            ) in out.getvalue()
    assert "1 document in" in out.getvalue()

    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 verbosity=2, stdout=out, stderr=io.StringIO())
    assert "  skipped x.xyz: unsupported file type" in out.getvalue().splitlines()
    assert "  skipped photos/p5.png: unsupported file type" in out.getvalue().splitlines()

    out = io.StringIO()
    with pytest.raises(CommandError, match="No supported files"):
        call_command("ingest", str(tmp_path / "photos"), workspace=workspace.slug,
                     inline=True, stdout=out, stderr=io.StringIO())
    assert "skipped 6 files" in out.getvalue()


@pytest.mark.django_db(transaction=True)  # the workers' tasks are sent on commit
@pytest.mark.parametrize("inline", [True, False], ids=["inline", "workers"])
def test_ingest_says_how_many_chunks_reused_their_vectors_and_draws_no_bar_off_a_tty(
    workspace, tmp_path, inline, capsys
):
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=inline,
                 stdout=io.StringIO(), stderr=io.StringIO())
    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=inline, force=True,
                 stdout=out, stderr=io.StringIO())
    # The same text again: its vector is reused, which is no failure.
    assert "1 indexed, 0 failed, 0 of 1 chunks embedded, 1 reused" in out.getvalue()
    # Neither stream is a terminal here: no carriage-return bar in a log.
    captured = capsys.readouterr()
    assert "Indexing" not in captured.err + captured.out


@pytest.mark.parametrize("minutes", ["-1", "nan", "inf"])
def test_requeue_refuses_a_negative_or_endless_wait(minutes):
    """-1 was taken and re-queued nothing ("Re-queued 0 documents")."""
    with pytest.raises(CommandError, match="--minutes must be 0 or more"):
        call_command("requeue", "--minutes", minutes, stdout=io.StringIO())


@pytest.mark.django_db(transaction=True)
def test_requeue_and_stale_count_one_document_in_the_singular(workspace, tmp_path):
    """"Re-queued 1 documents", "Queued 1 documents for re-indexing and 1 new ones"."""
    Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md")
    out = io.StringIO()
    call_command("requeue", "--minutes", "0", stdout=out)
    assert out.getvalue().splitlines()[0] == "Re-queued 1 document"

    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 18:00.\n")
    _ingest(str(tmp_path), workspace=workspace.slug, inline=True)
    (tmp_path / "b.md").write_text("# B\n\nThe slipway closes at 19:00.\n")
    out = io.StringIO()
    call_command("stale", workspace=workspace.slug, reindex=True, stdout=out)
    assert "Queued 1 document for re-indexing" in out.getvalue()


@pytest.mark.django_db(transaction=True)  # the re-queued task is sent on commit
def test_stale_retries_a_failed_file_changed_since_it_failed_and_no_other(workspace, tmp_path):
    """A fixed file stayed FAILED: `stale` never looked at FAILED documents ("1 stale …
    24 unchanged"), and only another `ingest` of its folder picked it up."""
    (tmp_path / "a-good.md").write_text("# Good\n\nThe breakwater was rebuilt in 1998.\n")
    (tmp_path / "b-empty.md").write_text("")
    (tmp_path / "c-empty.md").write_text("")
    with pytest.raises(CommandError, match="2 of 3 documents failed"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True)

    # Unchanged since it failed: the same error again, not worth a retry.
    out = io.StringIO()
    call_command("stale", workspace=workspace.slug, reindex=True, stdout=out)
    assert "CHANGED" not in out.getvalue()
    assert "0 FAILED changed since; 2 FAILED unchanged since (not retried)" in out.getvalue()

    fixed = tmp_path / "b-empty.md"
    fixed.write_text("# Fixed\n\nThe slipway closes at 18:00.\n")
    later = time.time() + 5  # past the failure, whatever the file system's clock grain
    os.utime(fixed, (later, later))
    with pytest.raises(SystemExit) as raised:
        call_command("stale", workspace=workspace.slug, check=True, stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert raised.value.code == 2
    out = io.StringIO()
    call_command("stale", workspace=workspace.slug, reindex=True, stdout=out)
    assert f"CHANGED     {fixed.as_uri()} (was FAILED: File is empty" in out.getvalue()
    assert "1 FAILED changed since; 1 FAILED unchanged since" in out.getvalue()
    assert "Queued 1 document for re-indexing" in out.getvalue()
    document = Document.objects.get(uri=fixed.as_uri())
    assert document.status == Document.Status.INDEXED, document.last_error
    assert Document.objects.get(uri=(tmp_path / "c-empty.md").as_uri()).status == (
        Document.Status.FAILED
    )


def test_ingest_counts_one_file_in_the_singular(workspace, tmp_path):
    """"1 documents' files are gone", "1 of 1 documents failed", "Registered 1 of 1 files"."""
    (tmp_path / "empty.md").write_text("")
    with pytest.raises(CommandError, match=r"^1 of 1 document failed, new in this run"):
        _ingest(str(tmp_path), workspace=workspace.slug, inline=True)
    (tmp_path / "empty.md").unlink()
    out = _ingest(str(tmp_path), workspace=workspace.slug, inline=True)
    assert "1 document's file is gone: --prune deletes them" in out


def test_ask_and_search_take_a_documents_title_file_name_or_path(corpus, workspace, settings):
    """--document took only an id, which no command prints ("invalid int value")."""
    settings.LLM_PROVIDER = "extractive"
    handbook = corpus["handbook.md"]
    for name in ("handbook.md", handbook.title.upper(), str(handbook.pk),
                 str(SAMPLE_CORPUS / "handbook.md")):
        out = io.StringIO()
        call_command("search", "shift", workspace=workspace.slug, document=[name],
                     json=True, stdout=out)
        hits = json.loads(out.getvalue())["hits"]
        assert hits and {h["document_id"] for h in hits} == {handbook.pk}, name
    out = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, document=["handbook.md"],
                 json=True, stdout=out)
    cited = {c["document"]["id"] for c in json.loads(out.getvalue())["citations"]}
    assert cited == {handbook.pk}
    threads = Thread.objects.count()
    with pytest.raises(CommandError, match="No document 'nothing.md' in workspace 'acme'"):
        call_command("ask", QUESTION, workspace=workspace.slug, document=["nothing.md"],
                     stdout=io.StringIO())
    assert Thread.objects.count() == threads, "a refused question leaves no conversation"


def test_ask_and_search_take_a_folders_path_or_its_name_when_it_is_one(
    corpus, workspace, settings
):
    from indexing import sources

    settings.LLM_PROVIDER = "extractive"
    ours = sources.folder_for_path(workspace=workspace, path="ops/2026")
    sources.folder_for_path(workspace=workspace, path="sales/2026")
    sources.update_document(document=corpus["handbook.md"], folder=ours)
    out = io.StringIO()
    call_command("search", "shift", workspace=workspace.slug, folder=["/ops/2026/"],
                 json=True, stdout=out)
    assert {h["document_id"] for h in json.loads(out.getvalue())["hits"]} == {
        corpus["handbook.md"].pk
    }
    call_command("search", "shift", workspace=workspace.slug, folder=["ops"],
                 stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"'2026' names 2 folders in workspace 'acme': "
                                           rf"{ours.pk}: ops/2026; \d+: sales/2026\. Give"):
        call_command("ask", QUESTION, workspace=workspace.slug, folder=["2026"],
                     stdout=io.StringIO())
    with pytest.raises(CommandError, match="No folder 'hr'"):
        call_command("search", "shift", workspace=workspace.slug, folder=["hr"],
                     stdout=io.StringIO())


def test_search_takes_the_default_workspace_as_ask_does(user, counting_embedder):
    """`search` required --workspace; `ask` has the default `demo`."""
    from indexing import pipeline, sources
    from knowledge.models import Workspace

    demo = Workspace.objects.create(name="Demo", slug="demo", owner=user)
    document = sources.add_path(workspace=demo, path=SAMPLE_CORPUS / "handbook.md")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    out = io.StringIO()
    call_command("search", "on-call", json=True, stdout=out)
    assert json.loads(out.getvalue())["hits"]


def test_quickstart_records_the_sample_corpus_root_for_every_process_of_the_instance(
    workspace, settings, tmp_path, monkeypatch
):
    """`make run` set INGEST_SERVER_ROOTS for `serve` alone: the MCP server, `stale` and
    `ask` started beside it refused to re-read the sample corpus ("none are configured")."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    monkeypatch.delenv("INGEST_SERVER_ROOTS", raising=False)
    settings.INGEST_SERVER_ROOTS = []
    settings.INSTANCE_ENV_FILE = tmp_path / "settings.env"
    for _run in range(2):  # once, however often it runs
        call_command("quickstart", workspace=workspace.slug, stdout=io.StringIO())
    lines = settings.INSTANCE_ENV_FILE.read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        f"INGEST_SERVER_ROOTS={SAMPLE_CORPUS.resolve()}"
    ]
    # Another process of the instance (same VERITY_HOME, nothing else set) reads it.
    env = {k: v for k, v in os.environ.items() if k != "INGEST_SERVER_ROOTS"}
    env.update(VERITY_HOME=str(tmp_path), DATABASE_URL="postgres://nobody@127.0.0.1:9/none",
               DJANGO_SETTINGS_MODULE="config.settings")
    read = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; "
         "print(settings.INGEST_SERVER_ROOTS)"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    assert read.stdout.strip() == repr([str(SAMPLE_CORPUS.resolve())])
    # An operator's own INGEST_SERVER_ROOTS wins over the file.
    env["INGEST_SERVER_ROOTS"] = "/srv/docs"
    read = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; "
         "print(settings.INGEST_SERVER_ROOTS)"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    assert read.stdout.strip() == "['/srv/docs']"


@pytest.mark.django_db
def test_a_failed_document_s_log_line_names_its_source_and_workspace(workspace, tmp_path, caplog):
    """Walkthrough 6: the worker's log said "Document 25 FAILED: HTML page has no readable
    text", and an operator reading it had to query the database to learn which file."""
    from indexing import pipeline

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    document = sources.add_path(workspace=workspace, path=empty)
    with caplog.at_level(logging.WARNING, logger="indexing.pipeline"):
        pipeline.index_document(document_id=document.pk)
    assert (
        f"Document {document.pk} ({empty.as_uri()}, workspace acme) FAILED: File is empty"
        in caplog.text
    )


@pytest.mark.django_db
def test_ingest_create_says_which_owner_is_missing(tmp_path):
    """Walkthrough 6: `--create` on an instance with no superuser said to pass --owner,
    and `--owner` with a misspelt username said the same, as if it had not been given."""
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe ferry leaves at nine.\n")
    with pytest.raises(CommandError, match=r"No user 'opz' \(--owner\)"):
        call_command("ingest", str(note), "--workspace", "new", "--create", "--owner", "opz",
                     "--inline", stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"no superuser owns it by default"):
        call_command("ingest", str(note), "--workspace", "new", "--create", "--inline",
                     stdout=io.StringIO())


def test_ingest_says_which_of_a_folders_files_it_left_out_as_a_sites_assets(
    workspace, tmp_path
):
    """A plain folder's stylesheets and minified or bundled scripts were left out without a
    word (the summary counted the pages alone), though --include-assets would read them."""
    (tmp_path / "a.md").write_text("# A\n\nThe slipway closes at 18:00.\n")
    (tmp_path / "style.css").write_text("body { color: navy; }\n")
    (tmp_path / "app.min.js").write_text("var a=1;\n")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "search.js").write_text("function s(q) {\n  return q;\n}\n")
    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 stdout=out, stderr=io.StringIO())
    assert (f"{tmp_path}: skipped 3 files as a site's assets, --include-assets reads them "
            "(_static/search.js, app.min.js, style.css)") in out.getvalue().splitlines()
    assert "1 document in" in out.getvalue()

    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 verbosity=2, stdout=out, stderr=io.StringIO())
    assert ("  skipped style.css: a site's asset (a stylesheet, a minified or bundled "
            "script, a script in a folder such as _static)") in out.getvalue().splitlines()

    out = io.StringIO()
    call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True,
                 include_assets=True, stdout=out, stderr=io.StringIO())
    assert "site's assets" not in out.getvalue()
    assert "4 documents in" in out.getvalue()

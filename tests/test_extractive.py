"""The offline answerer's sentence choice (chat.extractive) with the real embedder.

Each case is built so that the words alone choose differently from the full answerer
(words, meaning, key terms and the grounding check), so each test fails without the
piece it names.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

import pytest

from chat.answer_shapes import CAUSE, COUNT, MONEY, TOLERANCE, WHEN
from chat.extractive import (
    NOTHING_FOUND,
    Tuning,
    compose_answer,
    parse_evidence,
    parse_titles,
    rank_sentences,
    unnamed_subjects,
)
from chat.grounding import grounder
from citations.renderer import EvidenceDocument, Passage, render_evidence
from citations.sentences import split_answer


@pytest.fixture
def checker():
    return grounder()


def test_meaning_breaks_a_tie_between_sentences_sharing_the_same_words(checker):
    question = "When did the harbour flood?"
    passages = [
        (1, "The harbour museum opened its doors in 1990."),
        (2, "Sea water covered the harbour streets in 1953 after a storm surge."),
    ]
    assert compose_answer(question, passages).startswith("The harbour museum")
    assert compose_answer(question, passages, grounder=checker).startswith(
        "Sea water covered the harbour streets in 1953 after a storm surge. [2]"
    )


def test_a_question_about_an_identifier_is_not_answered_with_another_ones_value(checker):
    question = "What is the default value of max_connections?"
    # Without the key-term rule this answers "The default value is 10 connections. [1]".
    neighbours = [
        (1, "max_wal_senders (integer): Specifies the maximum number of concurrent "
            "connections from standby servers. The default value is 10 connections."),
        (2, "listen_addresses (string): The default value is localhost, which allows only "
            "local TCP/IP connections."),
    ]
    assert compose_answer(question, neighbours, grounder=checker) == NOTHING_FOUND
    with_answer = [*neighbours, (3, "max_connections (integer): The default is typically 100 "
                                    "connections, but might be less.")]
    answer = compose_answer(question, with_answer, grounder=checker)
    assert answer.startswith("max_connections (integer): The default is typically 100")
    assert "[3]" in answer and "[1]" not in answer and "[2]" not in answer


def test_a_sentence_cut_by_a_chunk_edge_is_quoted_whole(checker):
    # Chunks overlap: passage 2 starts inside the sentence passage 1 holds whole.
    question = "Why was the launch moved to March 10?"
    passages = [
        (1, "The launch was moved to March 10 because the comparison suite needs four days."),
        (2, "because the comparison suite needs four days. The budget is EUR 18,500."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("The launch was moved to March 10 because")
    assert "[2]" not in answer


def test_a_sentence_pointing_back_follows_the_one_it_follows_in_its_passage():
    """The quick start's own question (a product walkthrough's M1): "That is a Monday" was
    quoted after "… Monday 24 February.", ranked between them, so it read as said of that
    date, not of March 10, which it follows in the notes."""
    from chat.extractive import Candidate, _after_what_they_follow, quote

    moved = Candidate(3.0, 6, "After some discussion we agreed to push the launch to "
                      "March 10.", lead="")
    planned = Candidate(2.0, 2, "The plan of record was to launch on Monday 24 February.")
    monday = Candidate(1.0, 6, "That is a Monday, which suits the blog post.",
                       lead="After some discussion we agreed to push the launch\nto March 10.")
    elsewhere = Candidate(0.5, 2, "It is in the notes.", lead="Another sentence.")
    answer = quote(_after_what_they_follow([moved, planned, monday, elsewhere]), "[{}]")
    assert answer == ("After some discussion we agreed to push the launch to March 10. [6] "
                      "That is a Monday, which suits the blog post. [6] The plan of record "
                      "was to launch on Monday 24 February. [2] It is in the notes. [2]")


def test_headings_are_never_quoted(checker):
    question = "What is the launch date?"
    passages = [(1, "## Launch date\n\nWe agreed to push the launch to March 10.")]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer == "We agreed to push the launch to March 10. [1]"


def test_a_line_without_closing_punctuation_ends_its_paragraph_in_the_answer(checker):
    # A title line and the sentence after it are two claims, as the grounding engine reads
    # the answer; run together they would be checked as one.
    question = "When is the tidewatch launch planning meeting?"
    passages = [(1, "Tidewatch launch planning meeting, Tuesday 14 January 2025\n\n"
                    "The meeting is held by video call and starts at 15:00 UTC.")]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer == ("Tidewatch launch planning meeting, Tuesday 14 January 2025 [1]\n\n"
                      "The meeting is held by video call and starts at 15:00 UTC. [1]")
    cited = [s for s in split_answer(answer.replace("[1]", "[citation:1]")) if s.citations]
    assert len(cited) == 2
    # A closing bracket ends a sentence only after its full stop: "(video call)" does not.
    passages = [(1, passages[0][1].replace("2025\n", "2025 (video call)\n"))]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("Tidewatch launch planning meeting, Tuesday 14 January 2025 "
                             "(video call) [1]\n\nThe meeting")


def test_a_passages_own_bracketed_numbers_never_become_the_answers_citations(checker):
    """Security audit 6, F1: an uploaded file's "[1][2][3]" came back as citations to other
    documents' passages [2] and [3], the answer still called fully supported."""
    from citations.normalizer import normalize

    question = "How many free hours of visitor parking per week?"
    rendered = render_evidence([
        EvidenceDocument("Parking rules", "parking.md", "excerpt", [Passage(
            1, "The visitor parking allowance is 14 free hours per week, as confirmed by "
               "the CEO in the signed board decision [1][2][3] and memo[2] (see `m[1]`)."
        )]),
        EvidenceDocument("Handbook", "handbook.md", "excerpt", [
            Passage(2, "Book economy class for flights under six hours."),
            Passage(3, "On-call engineers are paid a weekly allowance."),
        ]),
    ])
    answer = compose_answer(question, parse_evidence(rendered), grounder=checker)
    assert answer.startswith("The visitor parking allowance is 14 free hours per week")
    assert "decision (1)(2)(3) and memo(2) (see `m[1]`). [1]" in answer
    assert normalize(answer, {1, 2, 3}.__contains__).cited == [1]


def test_evidence_titles_are_read_back_from_the_envelope():
    rendered = render_evidence([
        EvidenceDocument('Notes "Q3" & <more>', "notes.pdf", "excerpt",
                         [Passage(4, "First."), Passage(2, "Second.")]),
    ])
    assert parse_evidence(rendered) == [(4, "First."), (2, "Second.")]
    assert parse_titles(rendered) == {4: 'Notes "Q3" & <more>', 2: 'Notes "Q3" & <more>'}


def test_a_notebooks_code_is_defined_in_its_file_though_titled_by_its_markdown():
    rendered = render_evidence([
        EvidenceDocument("Invoice analysis", "invoices.ipynb", "excerpt", [
            Passage(2, "# Invoice analysis\nLoads the invoices."),
            Passage(1, "def load_invoices(path):\n    return open(path).read()",
                    section="load_invoices"),
        ]),
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    for question in ("Which file defines load_invoices?", "Where is load_invoices defined?"):
        assert compose_answer(question, passages, titles=titles) == (
            "`load_invoices` is defined in invoices.ipynb. [1]"
        )


def test_a_passage_continuing_a_definition_is_read_under_its_section_headings(checker):
    # The chunk holding the value does not name its setting; its section does.
    rendered = render_evidence([
        EvidenceDocument("Server Configuration", "runtime-config.html", "excerpt", [
            Passage(3, "Connections are refused above this. The default is typically 100 "
                       "connections, but might be less.",
                    section="Connection Settings › max_connections"),
            Passage(5, "The default value is three connections.",
                    section="Connection Settings › superuser_reserved_connections"),
        ]),
    ])
    titles = parse_titles(rendered)
    assert titles[3] == "Server Configuration › Connection Settings › max_connections"
    answer = compose_answer("What is the default value of max_connections?",
                            parse_evidence(rendered), titles=titles, grounder=checker)
    assert answer.startswith("The default is typically 100 connections") and "[3]" in answer
    assert "[5]" not in answer


def test_a_sentence_shown_twice_by_overlapping_chunks_is_not_boilerplate(checker):
    question = "What happens if the target directory already exists?"
    shared = "If exist_ok is False, a FileExistsError is raised if the target directory exists."
    passages = [
        (1, f"Recursive directory creation function. It makes all directories. {shared}"),
        (2, f"{shared} The mode argument no longer affects intermediate-level directories."),
    ]
    assert compose_answer(question, passages, grounder=checker).startswith(shared)
    # A short sentence too: two chunks of one document overlap on it.
    short = "The server listens to port 8000 by default."
    question = "Which port does python -m http.server serve on if I don't give one?"
    passages = [
        (1, f"{short} The default can be overridden by passing the desired port number as an "
            "argument:\n\npython -m http.server 9000"),
        (2, "http.server can also be invoked directly using the -m switch of the interpreter."
            f"\n\npython -m http.server\n\n{short}"),
        (3, "python -m http.server --bind 127.0.0.1"),
    ]
    titles = dict.fromkeys((1, 2, 3), "http.server — HTTP servers")
    assert rank_sentences(question, passages, titles=titles)[0].text == short


def test_a_line_of_code_is_about_the_function_it_is_in(checker):
    question = "What exception does asyncio.wait_for raise when it times out?"
    other = (1, 'def timeout(delay):\n    """A context manager: use it when asyncio.wait_for '
                'is not suitable; on expiry it raises TimeoutError."""')
    assert compose_answer(question, [other], grounder=checker) == NOTHING_FOUND
    own = (2, 'async def wait_for(fut, timeout):\n    """Wait for the future to complete. '
              'If a timeout occurs, it cancels the task and raises TimeoutError."""')
    answer = compose_answer(question, [other, own], grounder=checker)
    assert "[2]" in answer and "[1]" not in answer


def test_a_count_is_answered_only_by_a_sentence_holding_a_number(checker):
    question = "How many connection slots are kept back for superusers?"
    topical = (1, "Superusers can always connect, because connection slots are kept back for "
                  "them when ordinary users fill the server.")
    assert compose_answer(question, [topical], grounder=checker) == NOTHING_FOUND
    counted = (2, "superuser_reserved_connections (integer): Determines the number of slots "
                  "reserved for superusers. The default value is three connections.")
    answer = compose_answer(question, [topical, counted], grounder=checker)
    assert "three connections. [2]" in answer and "[1]" not in answer


def test_money_asked_for_is_answered_with_an_amount_of_it(checker):
    question = "How much money did the council set aside for the new harbour wall?"
    topical = (1, "The council set aside an afternoon to discuss the new harbour wall with "
                  "residents.")
    assert compose_answer(question, [topical], grounder=checker) == NOTHING_FOUND
    priced = (2, "The new harbour wall has a budget of €2.4 million from the port fund.")
    answer = compose_answer(question, [topical, priced], grounder=checker)
    assert answer.startswith("The new harbour wall has a budget of €2.4 million")
    assert "[1]" not in answer


def test_how_close_or_accurate_is_answered_with_a_measure_not_a_version(checker):
    question = "How accurate are the gauge's readings?"
    versioned = (1, "The gauge's readings are accurate enough for version 2.0 of the charts.")
    measured = (2, "In calm water the gauge's readings stay within 2 mm of the tide pole.")
    answer = compose_answer(question, [versioned, measured], grounder=checker)
    assert answer.startswith("In calm water the gauge's readings stay within 2 mm")
    assert "[1]" not in answer


def test_a_question_about_code_that_raises_is_answered_with_an_exception(checker):
    question = "What does subprocess.run raise when the timeout runs out?"
    passages = [
        (1, "subprocess.run: The timeout argument is passed to Popen.communicate(). If the "
            "timeout expires, the child process will be killed and waited for. The "
            "TimeoutExpired exception will be re-raised after the child has terminated."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("subprocess.run: The TimeoutExpired exception will be re-raised") \
        or answer.startswith("The TimeoutExpired exception will be re-raised")
    # "raise" about money is no question about code.
    money = "How did the committee raise the money?"
    raised = [(1, "The committee raised over $40 million through sponsors.")]
    assert "sponsors" in compose_answer(money, raised, grounder=checker)


def test_a_name_no_english_text_uses_keeps_the_answer_in_passages_naming_it(checker):
    question = "How wide are the lines that textwrap wraps text to by default?"
    passages = [
        (1, "max_line_length: The maximum length of any line in the serialized output. "
            "Default is 78, per RFC 5322."),
        (2, "width: (default: 70) The maximum length of wrapped lines."),
    ]
    titles = {1: "email.policy: Policy Objects", 2: "textwrap: Text wrapping and filling"}
    answer = compose_answer(question, passages, titles=titles, grounder=checker)
    assert answer.startswith("width: (default: 70) The maximum length of wrapped lines. [2]")


def test_a_short_sentence_is_read_with_the_one_before_it(checker):
    question = "How long does sqlite3.connect wait for a locked database before giving up?"
    passages = [
        (1, "sqlite3.connect: Raises an auditing event sqlite3.connect with argument 1 "
            "database."),
        (2, "sqlite3.connect: timeout (float): How many seconds the connection should wait "
            "before raising an exception, if the database is locked by another connection. "
            "Default five seconds."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("Default five seconds. [2]")


def test_a_class_name_is_an_identifier_its_parameters_are_answered_under(checker):
    question = ("I configured a RotatingFileHandler with maxBytes but left backupCount at 0. "
                "Will the log file ever be rotated?")
    passages = [
        (1, "logging.handlers.RotatingFileHandler: Rollover occurs whenever the current log "
            "file is nearly maxBytes in length; but if either of maxBytes or backupCount is "
            "zero, rollover never occurs."),
        (2, "The handler is a RotatingFileHandler with the keyword arguments "
            "maxBytes=1024, backupCount=3."),
    ]
    # Without the class name as an identifier, the sentence is a definition of another
    # term (its label lacks maxBytes and backupCount) and is never quoted.
    answer = compose_answer(question, passages, grounder=checker)
    assert "rollover never occurs. [1]" in answer


def test_a_question_that_leaves_a_setting_alone_asks_for_its_default(checker):
    question = ("Which algorithm does PostgreSQL use to encrypt a password set with CREATE ROLE "
                "unless configured otherwise?")
    passages = [
        (1, "PQencryptPasswordConn: Prepares the encrypted form of a PostgreSQL password. "
            "algorithm specifies the encryption algorithm to use to encrypt the password."),
        (2, "password_encryption (enum): When a password is specified in CREATE ROLE or ALTER "
            "ROLE, this parameter determines the algorithm to use to encrypt the password. "
            "Possible values are scram-sha-256, which will encrypt the password with "
            "SCRAM-SHA-256, and md5, which stores the password as an MD5 hash. "
            "The default is scram-sha-256."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("The default is scram-sha-256. [2]")


def test_the_sentence_naming_the_default_is_read_first(checker):
    question = ("If I leave the lock settings alone, how long does a waiting session sit on a "
                "lock before PostgreSQL checks whether it is part of a deadlock?")
    passages = [
        (1, "PostgreSQL automatically detects deadlock situations and resolves them by "
            "aborting one of the transactions involved, allowing the other(s) to complete."),
        (2, "deadlock_timeout (integer): This is the amount of time to wait on a lock before "
            "checking to see if there is a deadlock condition. The default is one second "
            "(1s), which is probably about the smallest value you would want in practice."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith("The default is one second (1s)") and "[1]" in answer



def test_a_heading_the_loader_recorded_is_never_quoted(checker):
    # A PDF's or web page's heading is a line of its passage, with no "#" to tell it.
    rendered = render_evidence([
        EvidenceDocument("Q3 Launch Notes", "notes.pdf", "excerpt", [
            Passage(2, "2. Launch date\nThe plan of record was to launch on Monday 24 "
                       "February. After some discussion we agreed to push the launch to "
                       "March 10.", section="2. Launch date"),
        ]),
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    question = "What is the launch date?"
    assert "Launch date" in {c.text for c in rank_sentences(question, passages)}
    # A section's number alone ("2.", a list's "1.") is never a sentence to quote.
    assert "2." not in {c.text for c in rank_sentences(question, passages)}
    ranked = rank_sentences(question, passages, titles=titles)
    assert not {"2.", "Launch date"} & {c.text for c in ranked}
    answer = compose_answer(question, passages, titles=titles, grounder=checker)
    assert answer.startswith("The plan of record") and "Launch date [2]" not in answer


def test_a_passage_need_not_name_the_product_its_document_names(checker):
    # The decision does not say "tidewatch"; the notes it belongs to do. It is not
    # taken for a passage about something else.
    rendered = render_evidence([
        EvidenceDocument("Q3 Launch Notes", "notes.pdf", "excerpt", [
            Passage(1, "Status of tidewatch: the release branch is green."),
            Passage(2, "After some discussion we agreed to push the launch to March 10."),
        ]),
        EvidenceDocument("Handbook", "handbook.md", "excerpt", [
            Passage(3, "A launch is announced on the blog in January."),
        ]),
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    answer = compose_answer("When is the tidewatch launch?", passages, titles=titles,
                            grounder=checker)
    assert "March 10. [2]" in answer
    assert "[3]" not in answer or answer.index("[2]") < answer.index("[3]")


def test_notes_about_a_product_answer_with_the_sentence_that_does_not_name_it(checker):
    # Meeting notes all about "tidewatch 2.0": the header line and the status name it
    # beside a date, the decision does not. In "the tidewatch 2.0 launch" the names only
    # say which launch: each sentence of the notes is about it.
    rendered = render_evidence([
        EvidenceDocument("Q3 Launch Notes", "notes.pdf", "excerpt", [
            Passage(1, "tidewatch 2.0 launch planning meeting, Tuesday 14 January 2025, "
                       "15:00 UTC (video call)\nAgenda: where the 2.0 release stands; the "
                       "launch date; the budget."),
            Passage(2, "tidewatch 2.0 is our first major release since 2021 and the first "
                       "one with a marketing push behind it.", section="1. Where 2.0 stands"),
            Passage(3, "Two of our support customers run tidewatch on ARM boards and have "
                       "been waiting for 2.0 specifically.", section="2. Launch date"),
            Passage(4, "After some discussion we agreed to push the launch to March 10. "
                       "That is a Monday, which suits the newsletter.",
                    section="2. Launch date"),
        ]),
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    answer = compose_answer("When is the tidewatch 2.0 launch?", passages, titles=titles,
                            grounder=checker)
    assert answer.startswith("After some discussion we agreed to push the launch to March 10. [4]")
    # Each sentence's meaning is compared with the question as it reads in the notes...
    ranked = rank_sentences("When is the tidewatch 2.0 launch?", passages, titles=titles)
    assert {c.asked for c in ranked} == {"When is the launch?"}
    # ...but a name the question asks about is no context: it stays.
    for question in ("What does tidewatch 2.0 change?", "Who runs tidewatch on ARM boards?"):
        assert {c.asked for c in rank_sentences(question, passages, titles=titles)} == {question}


TASKS = (
    "Open tasks for the release:\n"
    "Owner | Task | Due\n"
    "Tobias | Set up the runners | 24 January\n"
    "Ines | Publish the comparison report | 7 February\n"
    "Desmond | Cut the branch | 14 February\n"
    "Kwame | Sign the contractor | 28 February"
)


def test_a_row_is_not_credited_with_the_words_of_the_rows_around_it():
    ranked = rank_sentences("Who will publish the comparison report?", [(1, TASKS)])
    assert ranked[0].text == "Ines | Publish the comparison report | 7 February"
    score = {c.text.split(" | ")[0]: c.score for c in ranked}
    # Desmond's row is next to Ines's; Kwame's is not. Neither says anything asked.
    assert score["Desmond"] == pytest.approx(score["Kwame"], abs=1e-3)


def test_a_row_about_another_setting_is_not_taken_for_the_one_asked_about():
    settings = ("Server settings:\nName | Default\nmax_connections | 100\n"
                "shared_buffers | 128MB")
    ranked = rank_sentences("What is the default of max_connections?", [(1, settings)])
    assert [c.text for c in ranked] == ["max_connections | 100"]


def test_a_row_is_quoted_read_under_its_header_and_a_header_never(checker):
    question = "When is the comparison report due, and who owns it?"
    notes = ("Each action item agreed in January has a single owner and a due date.\n"
             "Owner | Action | Due\n"
             "Ines | Publish the comparison report | 7 February")
    answer = compose_answer(question, [(1, notes)], grounder=checker)
    # Bars between cells read as nothing to a person: each cell follows its column's name.
    # The row says when it is due; a sentence stating no deadline does not follow it.
    assert answer == "Owner: Ines; Action: Publish the comparison report; Due: 7 February. [1]"
    units = split_answer(answer.replace("[1]", "[citation:1]"))
    assert [u.kind for u in units] == ["sentence"]
    # Asked about the items in general, the header's words are the question's: still no
    # answer.
    answer = compose_answer("Who owns the action items, and when are they due?",
                            [(1, notes)], grounder=checker)
    assert "Owner | Action | Due" not in answer


def test_a_price_is_read_under_its_column_and_only_the_row_asked_about_is_quoted():
    # Two tables shown far down, each under its header (the section chat.tools names):
    # a price list without a currency and one in euros whose model numbers match "40".
    gadgets = "".join(f"| Doohickey {i} | {5 + i},99 | Nantes |\n" for i in range(31, 47))
    widgets = "".join(f"| SKU-{i:04d} | Widget model {i} | {10 + i / 2:.2f} | Lyon |\n"
                      for i in range(36, 46))
    titles = {1: "stock › table columns: Product | Price | City",
              2: "Catalog › table columns: SKU | Name | Price (EUR) | Warehouse"}
    passages = [(1, gadgets), (2, widgets)]
    assert compose_answer("What is the price of Doohickey 40?", passages, titles=titles) == (
        "Product: Doohickey 40; Price: 45,99; City: Nantes. [1]"
    )
    assert compose_answer("How much does Widget model 38 cost?", passages, titles=titles) == (
        "SKU: SKU-0038; Name: Widget model 38; Price (EUR): 29.00; Warehouse: Lyon. [2]"
    )


def test_a_price_asked_of_one_plan_is_not_followed_by_another_plans(checker):
    question = "How much does the Team plan cost?"
    prose = [(1, "The Starter plan costs €9 per month and includes three users. The Team "
                 "plan is billed per seat at €15 per user per month, with a minimum of five "
                 "seats. Enterprise pricing is available on request.")]
    assert compose_answer(question, prose, grounder=checker) == (
        "The Team plan is billed per seat at €15 per user per month, with a minimum of "
        "five seats. [1]"
    )
    listed = [(1, "Plans\n\n- Starter: $12 per month, one user.\n"
                  "- Team: $49 per month, up to ten users.\n- Enterprise: contact sales.")]
    assert compose_answer(question, listed, grounder=checker) == (
        "Team: $49 per month, up to ten users. [1]"
    )


# -- a long question or sentence is read in linear time ------------------------------------

HARBOUR = [(1, "The harbour wall was raised in 1998 after the storm. It cost 2 million euros.")]
WORDS = ("the harbour wall was raised after the storm and the council met to plan how the "
         "town would leave the old quay alone").split()


def _long_question(size: int) -> str:
    """Ordinary words on one line, naming no code: every question shape (a "raise" about
    code, "leave … alone", money…) is looked for through all of it."""
    words = (WORDS[i * 7 % len(WORDS)] for i in range(size))
    return " ".join(words)[:size]


def _answer_cpu_seconds(question: str, passages: list[tuple[int, str]]) -> float:
    timings = []
    for _ in range(2):
        started = time.process_time()
        rank_sentences(question, passages)
        compose_answer(question, passages)
        timings.append(time.process_time() - started)
    return min(timings)


@pytest.mark.parametrize(
    ("question", "passages"),
    [
        # A question as long as a chat message may be: the exception shape's lookahead,
        # tried at every position, took 26 s on 20,000 characters.
        (_long_question, lambda size: HARBOUR),
        # A passage's run of figures is looked through for a measure and an amount of money.
        (lambda size: "How accurate is it and how much money did it cost?",
         lambda size: [(1, "Readings: " + ("1,0" * size)[:size] + " euros.")]),
    ],
)
def test_a_long_question_or_run_of_figures_is_answered_in_linear_time(question, passages):
    small = _answer_cpu_seconds(question(5_000), passages(5_000))
    large = _answer_cpu_seconds(question(20_000), passages(20_000))
    assert large < 8 * max(small, 0.05) and large < 2


# -- the audit of the sample corpus's answers -------------------------------------------


def test_a_when_question_is_answered_only_by_a_sentence_stating_a_date(checker):
    # The agenda and the rule share "launch date" with the question; neither says when.
    question = "When is the launch date?"
    notes = [
        (1, "Agenda: where the release stands; the launch date; the launch budget."),
        (2, "If you cannot meet a due date, say so in the launch channel as soon as you "
            "know. All dates are in 2025."),
        (3, "After some discussion we agreed to push the launch to March 10."),
    ]
    answer = compose_answer(question, notes, grounder=checker)
    assert answer.startswith("After some discussion we agreed to push the launch to March 10. [3]")
    assert "Agenda" not in answer and "due date" not in answer


def test_a_date_is_read_in_its_many_forms_and_when_asks_for_one():
    for dated in ("built in the 1990s", "in the 12th century", "around 300 BC",
                  "on a Tuesday, at 3 pm", "on 7 February", "in 1066", "two years ago"):
        assert WHEN.looks.search(dated), dated
    # The verb "may" and the modal "march" are no months; a count is no year.
    for undated in ("it may be built", "they march on", "1,200 soldiers", "version 2.0"):
        assert not WHEN.looks.search(undated), undated
    for asking in ("When is the launch?", "When's the launch?", "Who has to finish it, and "
                   "by when?", "What year did it open?"):
        assert WHEN.asks.search(asking), asking
    # A clause of another question asks for no time.
    assert not WHEN.asks.search("When the rock is re-melted, what is formed?")


def test_who_and_by_when_is_answered_by_the_row_with_its_due_date(checker):
    question = "Who has to finish checking the new tide tables, and by when?"
    founders = (1, "Marisol Quenby and Tobias Achterberg founded Harbor Lights in 2019, after "
                   "several years of maintaining tide tables for a harbour authority.")
    actions = (2, "Action items:\nOwner | Action | Due\n"
                  "Tobias Achterberg | Set up the two ARM CI runners. | 24 January\n"
                  "Ines Valcourt | Finish validating the new constituent tables against the "
                  "reference stations. | 7 February")
    answer = compose_answer(question, [founders, actions], grounder=checker)
    assert answer.startswith("Owner: Ines Valcourt; Action: Finish validating the new "
                             "constituent tables against the reference stations; Due: "
                             "7 February. [2]")


def test_a_sentence_cut_by_the_end_of_its_chunk_is_completed_from_the_chunk_after_it(checker):
    # Chunks overlap: passage 2 starts inside the sentence passage 1's end cuts.
    question = "What is the period of the M2 constituent?"
    passages = [
        (1, "The tide is modelled as a sum of cosine waves.\n\nThe principal lunar "
            "constituent, M2, has a period of 12.4206012\nhours (a speed of 28.9841042 "
            "degrees per hour) and dominates the tide at most"),
        (2, "hours (a speed of 28.9841042 degrees per hour) and dominates the tide at most\n"
            "ports. This module does not apply nodal corrections."),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer.startswith(
        "The principal lunar constituent, M2, has a period of 12.4206012 hours (a speed of "
        "28.9841042 degrees per hour) and dominates the tide at most ports. [1][2]"
    )
    # A passage that does not continue the text completes nothing.
    other = [passages[0], (2, "ports. This module does not apply nodal corrections.")]
    assert "at most [1]" in compose_answer(question, other, grounder=checker)


def test_lines_of_code_are_not_quoted_beside_an_answer_in_prose(checker):
    question = "What is the period of the M2 constituent?"
    passages = [
        (1, "The principal lunar constituent, M2, has a period of 12.4206012 hours."),
        (2, '__all__ = [\n    "M2_PERIOD_HOURS",\n    "Constituent",\n]\n\n'
            "M2_PERIOD_HOURS = 12.4206012"),
        (3, 'STANDARD_SPEEDS = {\n    "M2": 360.0 / M2_PERIOD_HOURS,  # principal lunar\n}'),
    ]
    answer = compose_answer(question, passages, grounder=checker)
    assert answer == ("The principal lunar constituent, M2, has a period of 12.4206012 "
                      "hours. [1]")
    # Alone, code answers with what it states, never with an entry of a list of names.
    ranked = [c.text for c in rank_sentences(question, passages[1:])]
    assert "M2_PERIOD_HOURS = 12.4206012" in ranked
    assert '"M2_PERIOD_HOURS",' not in ranked


def test_a_question_heading_is_read_as_what_its_section_answers(checker):
    # An FAQ: the answer does not repeat its question, and shares few words with a
    # paraphrase of it.
    rendered = render_evidence([
        EvidenceDocument("tidewatch FAQ", "tide-faq.html", "excerpt", [
            Passage(1, "For harmonic stations, predictions are within 4 cm RMS of observed "
                       "water levels in calm weather, and the times of high and low water "
                       "are typically within 6 minutes.",
                    section="FAQ › Accuracy › How accurate are the predictions?"),
            Passage(2, "The bundled station data covers 1,200 stations, each within a few "
                       "metres of the gauge that measured it.",
                    section="FAQ › Coverage › Which stations are included?"),
        ]),
    ])
    question = "How close are tidewatch's forecasts to the water levels people actually measure?"
    answer = compose_answer(question, parse_evidence(rendered), titles=parse_titles(rendered),
                            grounder=checker)
    assert answer.startswith("For harmonic stations, predictions are within 4 cm RMS")


def test_how_close_is_answered_first_by_how_far_off_it_is_not_by_another_measure(checker):
    # Both state a measure of water levels; only one says how far the forecasts are off.
    # The surge shares more of the question's words and means as much to the embedder.
    rendered = render_evidence([
        EvidenceDocument("tidewatch FAQ", "tide-faq.html", "excerpt", [
            Passage(1, "Tide predictions describe the astronomical tide only. Wind, air "
                       "pressure and river flow add a weather-driven surge that no harmonic "
                       "model can forecast. A strong onshore gale with low pressure can raise "
                       "water levels by half a metre or more above the prediction.",
                    section="FAQ › Accuracy › Why don't predictions match what I see at the "
                            "harbour?"),
            Passage(2, "For harmonic stations, predictions are within 4 cm RMS of observed "
                       "water levels in calm weather, and the times of high and low water "
                       "are typically within 6 minutes. Subordinate stations are less "
                       "precise: expect errors of around 11 cm RMS.",
                    section="FAQ › Accuracy › How accurate are the predictions?"),
        ]),
    ])
    question = "How close are tidewatch's forecasts to the water levels people actually measure?"
    answer = compose_answer(question, parse_evidence(rendered), titles=parse_titles(rendered),
                            grounder=checker)
    first, second, *_ = split_answer(answer)
    assert first.text.startswith("For harmonic stations, predictions are within 4 cm RMS")
    assert second.text.startswith("Subordinate stations are less precise: expect errors of")
    # What tells them apart: a bound ("within", "±", "accurate to") or an error ("RMS").
    for bound in ("The gauge is accurate to 2 mm.", "Readings agree to within 0.5 m.",
                  "Clocks drift by ±3 seconds a day.", "It shows a 12 cm RMS error.",
                  "Its error is at most 1,000.5 km."):
        assert re.search(TOLERANCE, bound), bound
    for other in ("Surges raise water levels by half a metre.", "The gauge weighs 2 kg."):
        assert not re.search(TOLERANCE, other), other


# -- the section about a topic, prose before code, sentences well formed ----------------

TRAVEL = [
    # Search ranked the handbook's section first; its sentences do not say "policy".
    (1, "We travel rarely: mostly for conferences, customer visits and our annual team "
        "week each September. Your manager must approve a trip before you book anything."),
    (2, "Propose changes by pull request. Policy changes, meaning anything involving money, "
        "on-call or security, need approval from Marisol or Tobias."),
    (3, "Three people will attend, and Kwame confirmed that flights and hotels will stay "
        "within the limits of the travel policy."),
]
TRAVEL_TITLES = {1: "Team Handbook › Travel policy",
                 2: "Team Handbook › Changes to this handbook",
                 3: "Q3 Launch Notes › 3. Budget"}


def test_what_a_thing_is_is_answered_from_the_section_its_heading_names(checker):
    answer = compose_answer("What is the travel policy?", TRAVEL, titles=TRAVEL_TITLES,
                            grounder=checker)
    assert answer.startswith("We travel rarely: mostly for conferences, customer visits and "
                             "our annual team week each September. [1]"), answer
    # A line that names the policy in passing, or "policy" in another sense, is no answer.
    assert "[2]" not in answer and "[3]" not in answer
    # Without a heading naming it, the sentence naming it still answers.
    untitled = {n: "Notes" for n in TRAVEL_TITLES}
    assert "[3]" in compose_answer("What is the travel policy?", TRAVEL, titles=untitled,
                                   grounder=checker)


MODULE = (
    '"""Harmonic tide prediction for a single station.\n\n'
    "The principal lunar semidiurnal constituent, M2, has a period of 12.4206012\n"
    'hours and dominates the tide at most ports.\n"""\n\n'
    "M2_PERIOD_HOURS = 12.4206012\n"
)
METHOD = (
    "    @property\n"
    "    def period_hours(self) -> float:\n"
    '        """Time for one full cycle, e.g. 12.4206012 hours for M2."""\n'
    "        return 360.0 / self.speed\n"
)
CODE_TITLES = {1: "tidewatch/predict.py", 2: "tidewatch/predict.py › Constituent"}


def test_a_docstring_is_quoted_as_prose_alone_and_only_when_no_prose_answers(checker):
    question = "What is the period of the M2 constituent?"
    code = [(1, MODULE), (2, METHOD)]
    answer = compose_answer(question, code, titles=CODE_TITLES, grounder=checker)
    # The module's own prose answers; another function's docstring line does not follow it,
    # and no docstring's delimiter is ever quoted.
    assert answer == ("The principal lunar semidiurnal constituent, M2, has a period of "
                      "12.4206012 hours and dominates the tide at most ports. [1]"), answer
    ranked = rank_sentences(question, code, titles=CODE_TITLES)
    assert not any('"""' in c.text for c in ranked)
    # Prose elsewhere that answers is preferred to the code's documentation.
    handbook = (3, "The M2 constituent has a period of about 12.42 hours, so high water "
                   "comes about 50 minutes later each day.")
    titles = {**CODE_TITLES, 3: "Tides for beginners › Constituents"}
    answer = compose_answer(question, [*code, handbook], titles=titles, grounder=checker)
    assert answer.startswith("The M2 constituent has a period of about 12.42 hours"), answer
    assert "[1]" not in answer and "[2]" not in answer


def test_a_sentence_starting_with_a_lowercase_word_is_read_as_a_piece_of_one():
    # "Swaps are fine:" ends its line, so the splitter cut the sentence after it.
    passage = (1, "Nobody is on call more than once every five weeks. Swaps are fine:\n"
                  "agree them with your counterpart and update the on-call calendar yourself.")
    ranked = rank_sentences("How are on-call swaps agreed?", [passage])
    piece = next(c for c in ranked if c.text.startswith("agree them"))
    assert piece.fragment
    # A name written lowercase starts a sentence of its own.
    named = (1, "It runs anywhere. tidewatch requires Python 3.10 or newer.")
    ranked = rank_sentences("What does tidewatch require?", [named])
    assert not next(c for c in ranked if c.text.startswith("tidewatch")).fragment


def test_the_rest_of_a_row_a_line_break_cut_is_never_quoted(checker):
    # A PDF's long cell wrapped: its second line reads as a row of two cells.
    notes = ("Owner | Action | Due\n"
             "Ines Valcourt | Finish validating the tables and publish the comparison\n"
             "report. | 7 February")
    ranked = rank_sentences("When is the comparison report due?", [(1, notes)])
    assert not any(c.text.startswith("report.") for c in ranked)


def test_of_two_sentences_saying_the_same_the_fuller_one_is_quoted_once(checker):
    # A summary line and the sentence stating the same figure with more: one of them, the
    # fuller, wherever it ranked. A sentence adding another figure says something else.
    passages = [
        (1, "Total harbour dredging budget: €42,000."),
        (2, "The total approved harbour dredging budget is €42,000, paid from the port "
            "authority's maintenance fund. Dredging the outer channel alone costs €9,000."),
    ]
    answer = compose_answer("How much money is budgeted for harbour dredging?", passages,
                            grounder=checker)
    assert answer.count("€42,000") == 1, answer
    assert answer.startswith("The total approved harbour dredging budget is €42,000"), answer
    assert "€9,000" in answer


# A CSV's chunk as the delimited loader writes it: the table from the chunk's first line,
# no text leading into it.
PRICES = ("| Product | Price (EUR) | Stock |\n"
          "| Sable Bench | 37.46 | 12 |\n"
          "| Driftwood Lamp | 89.00 | 3 |")


def test_a_spreadsheets_rows_are_read_under_the_header_row_its_chunk_starts_with(checker):
    # "37.46" is an amount of money only under "Price (EUR)": unread, nothing answered.
    for question in ("What is the price of the Sable Bench?",
                     "How much does the Sable Bench cost?"):
        assert compose_answer(question, [(1, PRICES)], titles={1: "prices"},
                              grounder=checker) == (
            "Product: Sable Bench; Price (EUR): 37.46; Stock: 12. [1]"
        ), question
    assert compose_answer("How many Driftwood Lamps are in stock?", [(1, PRICES)],
                          titles={1: "prices"}) == (
        "Product: Driftwood Lamp; Price (EUR): 89.00; Stock: 3. [1]"
    )
    # A chunk continuing a sheet: its section names the columns, and the first row shown
    # ("| Monday | Desmond |" reads like a header) is another record.
    rota = "| Monday | Desmond |\n| Tuesday | Priya |"
    titles = {1: "rota › Rota › table columns: Week | On call"}
    assert compose_answer("Who is on call on Tuesday?", [(1, rota)], titles=titles) == (
        "Week: Tuesday; On call: Priya. [1]"
    )
    assert compose_answer("Who is on call on Monday?", [(1, rota)], titles=titles) == (
        "Week: Monday; On call: Desmond. [1]"
    )
    # A bare first row may continue a table from a PDF's page before: no header either.
    ranked = rank_sentences("Who is on call on Tuesday?",
                            [(1, "Monday | Desmond\nTuesday | Priya")])
    assert ranked[0].columns == ""


FAQ = ("Where do the harmonic constants come from?\n\n"
       "The bundled constants are derived from publicly available sources:\n\n"
       "- observations and published constants from national hydrographic offices, where "
       "their terms allow redistribution;\n\n"
       "- the Open Tide Constants Archive, a community-maintained collection of station "
       "analyses;\n\n"
       "- our own harmonic analyses of hourly observations from tide gauges, published "
       "with their permission.\n\n"
       "The data set is refreshed quarterly.")


def test_a_sentence_leading_into_a_list_is_quoted_with_its_entries_or_not_at_all(checker):
    question = "Where do the harmonic constants come from?"
    titles = {1: "tidewatch FAQ › Data sources › Where do the harmonic constants come from?"}
    answer = compose_answer(question, [(1, FAQ)], titles=titles, grounder=checker)
    # One sentence, its entries in their order, each once, none ending the answer on ":".
    assert answer == (
        "The bundled constants are derived from publicly available sources: observations "
        "and published constants from national hydrographic offices, where their terms "
        "allow redistribution; the Open Tide Constants Archive, a community-maintained "
        "collection of station analyses; our own harmonic analyses of hourly observations "
        "from tide gauges, published with their permission. [1]"
    )
    # A list too long to quote with it: the lead-in alone says nothing, and is not quoted.
    offices = "".join(f"- the hydrographic office of port {n} and its archive;\n\n"
                      for n in range(1, 10))
    long = FAQ.replace("sources:\n\n", f"sources:\n\n{offices}")
    answer = compose_answer(question, [(1, long)], titles=titles)
    assert not re.search(r":\s*\[1\]", answer), answer


def test_every_sentence_of_a_list_quoted_with_its_lead_in_is_cited(checker):
    """Walkthrough 3 M1: entries of two sentences each, quoted after their lead-in, ended
    in one marker, so the grounding engine read three of four sentences as uncited claims
    (a citation covers only the sentence it ends) and the page underlined them."""
    severity = (
        "### Severity levels\n\n"
        "The security on-call assigns a severity:\n\n"
        "- **SEV1**: active compromise of production systems. An incident commander is\n"
        "  assigned immediately.\n"
        "- **SEV2**: confirmed exposure with no evidence of exploitation. Status updates\n"
        "  at least twice per working day.\n"
    )
    answer = compose_answer("List the severity levels for security incidents.",
                            [(1, severity)], grounder=checker)
    assert answer.startswith("The security on-call assigns a severity: SEV1:")
    claims = split_answer(answer.replace("[1]", "[citation:1]"))
    assert len(claims) == 3 and all(claim.citations == (1,) for claim in claims)


def test_a_list_entry_is_quoted_as_a_sentence_without_its_marker_or_markup(checker):
    who = ("## Who to ask\n\n"
           "- **Kwame Mensah**, Community Lead: conferences, talks and the newsletter.\n"
           "- **Desmond Fairweather**, Release Manager: the release calendar and packaging\n")
    answer = compose_answer("Who owns the release calendar?", [(1, who)], grounder=checker)
    assert answer == (
        "Desmond Fairweather, Release Manager: the release calendar and packaging. [1]"
    )


def test_an_answer_is_not_followed_by_another_documents_sentence_about_something_else(checker):
    """A product walkthrough's M4: "Which ports are supported?" answered from the FAQ went
    on with the handbook's "support contracts with port operators", which shares the
    question's words and says nothing of the ports supported."""
    rendered = render_evidence([
        EvidenceDocument("tidewatch FAQ", "faq.html", "excerpt", [
            Passage(1, "tidewatch ships harmonic constituents for 1,146 tide stations. "
                       "Supported ports include Brest, Halifax and Wellington.",
                    section="Which ports are supported?"),
        ]),
        EvidenceDocument("Team Handbook", "handbook.md", "excerpt", [
            Passage(2, "Most of our revenue comes from support contracts with port "
                       "operators and marine-survey firms.", section="About us"),
        ]),
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    answer = compose_answer("Which ports are supported?", passages, titles=titles,
                            grounder=checker)
    assert answer.startswith("Supported ports include Brest, Halifax and Wellington. [1]")
    assert "[2]" not in answer


def test_why_is_answered_first_by_the_sentence_giving_a_cause(checker):
    """A product walkthrough's H1: "Why" had no answer's shape, so the sentence naming the
    event ("Moving the launch costs …") won over the one saying why it moved."""
    passages = [
        (1, "Moving the launch costs roughly €900 in extra CI hours for the ARM runners."),
        (2, "We pushed the launch to March 10 because the comparison suite needs four more "
            "days of CI time."),
    ]
    answer = compose_answer("Why was the launch moved?", passages, grounder=checker)
    assert answer.startswith("We pushed the launch to March 10 because the comparison suite")
    # "since" of a time gives no cause.
    assert CAUSE.search("the first release since 2021") is None
    assert CAUSE.search("since the suite must pass first") is not None


def test_a_sentence_pointing_back_is_quoted_after_the_one_it_follows_though_not_chosen(checker):
    """A product walkthrough's M2: "That is a Monday, …" quoted alone points at nothing
    shown; the sentence it follows in its paragraph comes with it, and no other one."""
    passages = [
        (1, "The budget was approved in January. After some discussion we agreed to push the "
            "launch to March 10. That is a Monday, which suits the blog post and the "
            "newsletter."),
        (2, "The blog post goes out on the morning of the launch."),
    ]
    answer = compose_answer("Which weekday suits the blog post and the newsletter?", passages,
                            grounder=checker)
    assert answer.startswith("After some discussion we agreed to push the launch to March 10. "
                             "[1] That is a Monday, which suits the blog post and the "
                             "newsletter. [1]"), answer
    assert "budget" not in answer


KICKOFF = [
    Passage(1, "## Goals\n\nWe want to ship the new tide station importer by June. The "
               "importer reads station files from the national archive.", section="Goals"),
    Passage(2, "## Risks\n\n- The archive may change its file format without notice.\n"
               "- Only one engineer knows the legacy parser.\n"
               "- Funding for the second phase is not yet confirmed.", section="Risks"),
    Passage(3, "## Decisions\n\nWe will review progress every two weeks. Risks are tracked "
               "in the project board.", section="Decisions"),
]


@pytest.mark.parametrize("question", ["What are the risks?", "What risks were raised?"])
def test_a_section_the_question_names_answers_it_with_its_list(question, checker):
    """A product walkthrough's M2: a "## Risks" section of bullets was passed over for the
    sentence saying where risks are tracked ("What are the risks?"), or not found at all
    ("raised" is in no passage): the heading names what each entry is, not the entry."""
    rendered = render_evidence([
        EvidenceDocument("Project Kestrel kickoff notes", "kickoff.md", "excerpt", KICKOFF)
    ])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    answer = compose_answer(question, passages, titles=titles, grounder=checker)
    # Read in the order written, each entry a cited sentence.
    assert answer == ("The archive may change its file format without notice. [2] Only one "
                      "engineer knows the legacy parser. [2] Funding for the second phase is "
                      "not yet confirmed. [2]"), answer
    # A question naming no section is answered as before.
    assert compose_answer("What happens after a security incident?", passages,
                          titles=titles, grounder=checker) == NOTHING_FOUND


# A CSV's chunk whose money column joins its words with an underscore, as spreadsheet
# exports often name them.
COSTS = ("| item | supplier | cost_eur |\n"
         "| Tide gauge hardware | Marlin Instruments | 1200.50 |\n"
         "| Installation labour | Harbour Works | 800.00 |\n"
         "| Calibration visit | Marlin Instruments | 350.25 |\n"
         "| Total | | 2350.75 |")


def test_a_money_column_named_with_underscores_is_read_as_money(checker):
    """Walkthrough H2: "cost_eur: 800.00" was no amount of money ("\\b" finds no edge
    between "cost" and "_"), so "How much did … cost?" found nothing in a costs CSV."""
    titles = {1: "costs"}
    assert compose_answer("How much did the installation labour cost?", [(1, COSTS)],
                          titles=titles, grounder=checker) == (
        "item: Installation labour; supplier: Harbour Works; cost_eur: 800.00. [1]"
    )
    assert compose_answer("What was the total cost?", [(1, COSTS)], titles=titles,
                          grounder=checker) == "item: Total; cost_eur: 2350.75. [1]"
    # Without a Total row no passage states the sum: the rows holding the costs are
    # quoted, each cited, and no sum is made up.
    untotalled = COSTS.rsplit("\n", 1)[0]
    assert compose_answer("What was the total cost?", [(1, untotalled)], titles=titles,
                          grounder=checker) == (
        "item: Tide gauge hardware; supplier: Marlin Instruments; cost_eur: 1200.50. [1] "
        "item: Installation labour; supplier: Harbour Works; cost_eur: 800.00. [1] "
        "item: Calibration visit; supplier: Marlin Instruments; cost_eur: 350.25. [1]"
    )
    for read in ("price_usd: 12", "Amount_GBP: 3.50", "unit_price: 9", "total_eur: 40"):
        assert re.search(MONEY, read), read
    assert not re.search(MONEY, "costly_item: 4")


HANDBOOK = [
    Passage(1, "## Architecture\n\nThe capital expenditure for new servers is approved by "
               "the infrastructure lead. Our main services run in two data centres, one in "
               "Frankfurt and one in Dublin.", section="Architecture"),
    Passage(2, "## Team\n\nThe platform team was formed in 2019 to run the deployment "
               "pipeline. The platform team has seven engineers across two time zones.",
            section="Team"),
    Passage(3, "## Expenses\n\nTravel and meals on company business are reimbursed through "
               "the expense tool. Team dinners are reimbursed up to 40 euros per person. "
               "Alcohol is not reimbursed, except at client dinners approved in advance by "
               "your manager.", section="Expenses"),
]


def _handbook() -> tuple[list[tuple[int, str]], dict[int, str]]:
    rendered = render_evidence([
        EvidenceDocument("Engineering Handbook", "handbook.md", "excerpt", HANDBOOK)
    ])
    return parse_evidence(rendered), parse_titles(rendered)


def test_a_question_naming_a_thing_no_passage_names_is_not_answered(checker):
    """Walkthrough H2: "What is the capital of Peru?" asked of an engineering handbook was
    answered with "The capital expenditure for new servers …": it shares "capital" and
    says nothing of Peru, which no passage names."""
    passages, titles = _handbook()
    assert unnamed_subjects("What is the capital of Peru?", passages, titles) == ["Peru"]
    assert compose_answer("What is the capital of Peru?", passages, titles=titles,
                          grounder=checker) == NOTHING_FOUND
    # A name the evidence holds, or spells nearly alike (a typo, an accent), is known.
    assert compose_answer("Who approves capital expenditure for the Frankfurt servers?",
                          passages, titles=titles, grounder=checker).startswith(
        "The capital expenditure for new servers is approved by the infrastructure lead. [1]"
    )
    assert unnamed_subjects("How did Celeron feel about Native relations?",
                            [(1, "Céloron's expedition met the Natives at Logstown.")],
                            {}) == []


def test_how_many_and_yes_or_no_are_answered_first_by_the_sentence_saying_it(checker):
    """Walkthrough M1: under a heading the question names ("Team", "Expenses"), sentences
    were quoted in reading order, so "How many engineers …" was answered first by the
    team's founding year and "Can I expense alcohol?" by the rule on team dinners."""
    passages, titles = _handbook()
    answer = compose_answer("How many engineers are on the platform team?", passages,
                            titles=titles, grounder=checker)
    assert answer.startswith("The platform team has seven engineers across two time zones. "
                             "[2]"), answer
    answer = compose_answer("Can I expense alcohol?", passages, titles=titles,
                            grounder=checker)
    assert answer.startswith("Alcohol is not reimbursed, except at client dinners"), answer
    # A count is a number that is not a year alone.
    assert re.search(COUNT, "has seven engineers") and re.search(COUNT, "1,146 stations")
    assert not re.search(COUNT, "was formed in 2019 to run")


def test_a_line_only_labelling_names_is_not_preferred_to_a_sentence_about_them(checker):
    """Walkthrough M1: "Notes: Juniper Hale." (who took the notes) answered "What will
    Juniper Hale do?" before the sentence saying what she will do."""
    notes = [(1, "Attendees: Ines Valcourt, Kwame Mensah, Juniper Hale.\n\n"
                 "Notes: Juniper Hale."),
             (2, "The database migration slipped by a week. Juniper Hale will own the "
                 "database migration and report on it every Friday.")]
    answer = compose_answer("What will Juniper Hale do?", notes, grounder=checker)
    assert answer == ("Juniper Hale will own the database migration and report on it every "
                      "Friday. [2]"), answer
    # Asked for what its label names, the line is the answer.
    assert compose_answer("Who took the notes?", notes, grounder=checker).startswith(
        "Notes: Juniper Hale. [1]"
    )


ACTIONS = Passage(
    1, "## Action items\n\n| Owner | Action | Due |\n| --- | --- | --- |\n" + "".join(
        f"| {owner} | {action} | {day} March |\n" for owner, action, day in [
            ("Ines Valcourt", "Publish the comparison report", 7),
            ("Kwame Mensah", "Renew the TLS certificates", 10),
            ("Juniper Hale", "Finish the database migration", 14),
            ("Priya Raman", "Update the on-call runbook", 17),
            ("Tobias Lind", "Archive the old dashboards", 21),
        ]
    ), section="Action items",
)


def test_a_question_asking_for_a_list_is_answered_with_the_sections_items(checker):
    """Walkthrough H3: "What are the action items?" over a table under "## Action items"
    quoted three of its five rows; every item is one of the things asked for."""
    rendered = render_evidence([EvidenceDocument(
        "Platform sync", "sync.md", "excerpt",
        [ACTIONS, replace(KICKOFF[1], n=2, text=KICKOFF[1].text
                          + "\n- The staging cluster has no spare capacity.\n"
                          "- Two vendors have not signed the data agreement.")],
    )])
    passages, titles = parse_evidence(rendered), parse_titles(rendered)
    answer = compose_answer("What are the action items?", passages, titles=titles,
                            grounder=checker)
    assert answer.count("[1]") == 5 and "[2]" not in answer, answer
    assert answer.startswith("Owner: Ines Valcourt; Action: Publish the comparison report; "
                             "Due: 7 March. [1]")
    assert answer.endswith("Owner: Tobias Lind; Action: Archive the old dashboards; Due: "
                           "21 March. [1]")
    answer = compose_answer("List the risks", passages, titles=titles, grounder=checker)
    assert answer.count("[2]") == 5 and answer.endswith(
        "Two vendors have not signed the data agreement. [2]"), answer
    # Every item shown: twelve risks are twelve (the first eight were quoted, as if all);
    # bounded, a longer list up to Tuning.max_items.
    for count, quoted in ((12, 12), (40, Tuning().max_items)):
        many = "## Risks\n\n" + "".join(f"- Supplier {n} may miss its delivery date.\n"
                                        for n in range(1, count + 1))
        rendered = render_evidence([EvidenceDocument(
            "Platform sync", "sync.md", "excerpt", [Passage(1, many, section="Risks")])])
        answer = compose_answer("List the risks", parse_evidence(rendered),
                                titles=parse_titles(rendered), grounder=checker)
        assert answer.count("[1]") == quoted, answer
        assert answer.endswith(f"Supplier {quoted} may miss its delivery date. [1]"), answer

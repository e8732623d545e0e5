"""Generate q3-launch-notes.pdf, the sample PDF in Verity's bundled corpus.

Run from anywhere:

    python scripts/make_sample_pdf.py

The output is deterministic (reportlab's invariant mode fixes the creation
date and document ID), so re-running it must not change the file's bytes.
Each page ends with an explicit page break so that the facts the example
questions rely on always land on the same page:

    page 1  attendees, agenda, release status
    page 2  launch date decision (pushed to March 10)
    page 3  launch budget
    page 4  action items with owners and due dates
"""

from __future__ import annotations

from pathlib import Path

from reportlab import rl_config
from reportlab.lib import colors
from reportlab.lib.enums import TA_LEFT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import (
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

rl_config.invariant = 1

OUTPUT = Path(__file__).resolve().parent.parent / "sample_corpus" / "q3-launch-notes.pdf"
TOTAL_PAGES = 4

styles = getSampleStyleSheet()
TITLE = ParagraphStyle("NotesTitle", parent=styles["Title"], alignment=TA_LEFT, fontSize=20)
H2 = ParagraphStyle("NotesH2", parent=styles["Heading2"], spaceBefore=10)
BODY = ParagraphStyle(
    "NotesBody", parent=styles["BodyText"], fontSize=10.5, leading=14.5, spaceAfter=7
)
META = ParagraphStyle("NotesMeta", parent=BODY, textColor=colors.HexColor("#444444"))
CELL = ParagraphStyle("NotesCell", parent=BODY, fontSize=9.5, leading=12, spaceAfter=0)

TABLE_STYLE = TableStyle(
    [
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#1f4e79")),
        ("TEXTCOLOR", (0, 0), (-1, 0), colors.white),
        ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
        ("FONTSIZE", (0, 0), (-1, -1), 9.5),
        ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor("#999999")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 4),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 4),
    ]
)


def p(text: str, style: ParagraphStyle = BODY) -> Paragraph:
    return Paragraph(text, style)


def page_one() -> list:
    return [
        p("Q3 Launch Notes", TITLE),
        p(
            "tidewatch 2.0 launch planning meeting, Tuesday 14 January 2025, 15:00 UTC (video call)",
            META,
        ),
        p(
            "<b>Attendees:</b> Marisol Quenby (chair), Tobias Achterberg, Desmond Fairweather, "
            "Ines Valcourt, Priya Raman-Okafor, Kwame Osei-Lindqvist. "
            "<b>Notes:</b> Juniper Hale.",
            META,
        ),
        p(
            "<b>Agenda:</b> (1) where the 2.0 release stands; (2) the launch date; "
            "(3) the launch budget; (4) action items.",
            META,
        ),
        p("1. Where 2.0 stands", H2),
        p(
            "tidewatch 2.0 is our first major release since 2021 and the first one with a "
            "marketing push behind it. Desmond summarised the headline features: nodal "
            "corrections applied automatically for all 37 standard constituents, a new "
            "<font face='Courier'>high_tides()</font> API that returns high-water times to the "
            "nearest minute, and chart-datum conversion for subordinate stations. The 1.x "
            "<font face='Courier'>predict_series()</font> function stays for one more major "
            "version but now emits a deprecation warning."
        ),
        p(
            "Of the 230 issues on the 2.0 milestone, 212 are closed. Desmond called out two of "
            "the remaining 18 as real risks. Issue #412 is a bug in which subordinate stations "
            "report heights relative to mean sea level instead of chart datum; the fix is small "
            "but touches the constituent tables, so it needs two reviews and a full re-run of "
            "the station-comparison suite. The second risk is the ARM wheels: we still have no "
            "CI runner that can build and test them."
        ),
        p(
            "Ines reported on validation. Predictions for nine of the twelve reference stations "
            "have been compared against the official published tables for the whole of 2025, "
            "and all nine are inside our published accuracy target. The three stations still "
            "outstanding are the ones with the strongest shallow-water effects, where the new "
            "overtides matter most, so she wants to finish them before we call the release "
            "ready."
        ),
        p(
            "Kwame said the rewrite of the documentation site is roughly 60% done. The API "
            "reference is generated and complete; the tutorials and the migration guide from "
            "1.x are the missing pieces, and those are exactly what new users will read first."
        ),
        p(
            "Priya asked that the new download mirror and the release-signing key rotation be "
            "reviewed before any release candidate is published. Nobody objected."
        ),
        PageBreak(),
    ]


def page_two() -> list:
    return [
        p("2. Launch date", H2),
        p(
            "The plan of record was to launch on Monday 24 February. Desmond argued that this "
            "date is no longer realistic. Fixing issue #412 is perhaps two days of work, but the "
            "station-comparison suite then needs about four days of CI time, and nothing can be "
            "tagged until it passes. Even with everything going right, the first release "
            "candidate would land the week before launch, leaving no room for feedback from "
            "support customers."
        ),
        p(
            "Marisol asked whether we could launch on time and ship the ARM wheels later. "
            "Tobias was against it: two of our support customers run tidewatch on ARM boards "
            "inside tide-gauge buoys, and they have been waiting for 2.0 specifically. Telling "
            "them to build from source would undo much of the goodwill the launch is meant to "
            "create. Kwame added that launching with half-finished tutorials would make the "
            "first impression worse than launching two weeks late."
        ),
        p(
            "After some discussion we agreed to push the launch to March 10. That is a Monday, "
            "which suits the blog post and the newsletter, and it still falls inside fiscal Q3. "
            "Marisol will tell support customers about the new date personally rather than "
            "through the newsletter."
        ),
        p(
            "The revised schedule works backwards from the launch. The release branch is cut "
            "once #412 is fixed, and the first release candidate (rc1) goes to PyPI for "
            "testing by support customers. A second candidate is only built if rc1 turns up a "
            "release-blocking bug. The usual code freeze begins 48 hours before the launch, "
            "as the handbook requires, and a go/no-go meeting is held in the week before."
        ),
        p(
            "Desmond noted for the record that if the station-comparison suite fails again "
            "after the #412 fix, he will ask for a second postponement rather than weaken the "
            "comparison thresholds. Everyone agreed that shipping wrong tide heights would be "
            "far more damaging than a late launch."
        ),
        PageBreak(),
    ]


def page_three() -> list:
    rows = [
        ["Item", "Owner", "Amount"],
        [
            p("Booth, travel and hotel for three people at the Coastal Data Summit, Lisbon", CELL),
            "Kwame",
            "€7,200",
        ],
        [
            p("Documentation contractor for tutorials and the 1.x migration guide (8 weeks)", CELL),
            "Kwame",
            "€5,600",
        ],
        [p("Extra CI capacity, including two ARM runners until launch", CELL), "Desmond", "€2,400"],
        [p("Stickers and printed quick-start cards", CELL), "Kwame", "€1,300"],
        [p("Contingency", CELL), "Marisol", "€2,000"],
        [p("<b>Total launch budget</b>", CELL), "", "€18,500"],
    ]
    table = Table(rows, colWidths=[105 * mm, 30 * mm, 30 * mm], hAlign="LEFT")
    table.setStyle(TABLE_STYLE)
    table.setStyle(
        TableStyle(
            [("ALIGN", (2, 0), (2, -1), "RIGHT"), ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold")]
        )
    )
    return [
        p("3. Budget", H2),
        p(
            "Marisol presented the launch budget. The total approved launch budget is "
            "€18,500, taken from the fiscal Q3 marketing line. It covers the conference, the "
            "documentation work and the extra build capacity described above; salaries are "
            "not part of it."
        ),
        table,
        Spacer(1, 8),
        p(
            "The biggest single item is the Coastal Data Summit in Lisbon, where we have "
            "booked a booth for the first time. Three people will attend, and Kwame confirmed "
            "that flights and hotels will stay within the limits of the travel policy. The "
            "documentation contractor starts as soon as the contract is signed and is paid "
            "for eight weeks of work."
        ),
        p(
            "Moving the launch costs roughly €900 in extra CI hours for the ARM runners. "
            "Desmond will take that from the contingency line rather than asking for more "
            "money, which leaves about €1,100 of contingency for anything unexpected."
        ),
        p(
            "Tobias asked whether we should buy advertising for the launch. The group decided "
            "against paid ads: our users find us through conference talks, word of mouth and "
            "search, and the money is better spent on the documentation. Any spending that is "
            "not in the table above and is larger than €500 needs Marisol's sign-off before "
            "anyone commits to it."
        ),
        PageBreak(),
    ]


def page_four() -> list:
    items = [
        (
            "Tobias Achterberg",
            "Set up the two ARM CI runners and confirm that wheels build and pass the test suite.",
            "24 January",
        ),
        ("Marisol Quenby", "Email every support customer about the new launch date.", "31 January"),
        (
            "Ines Valcourt",
            "Finish validating the new constituent tables against the three remaining reference stations and publish the comparison report.",
            "7 February",
        ),
        (
            "Desmond Fairweather",
            "Fix issue #412, re-run the station-comparison suite and cut the release/2.0 branch.",
            "14 February",
        ),
        (
            "Desmond Fairweather",
            "Publish 2.0.0rc1 to PyPI and announce it to support customers.",
            "17 February",
        ),
        (
            "Priya Raman-Okafor",
            "Security review of the new download mirror and the rotated release-signing key.",
            "21 February",
        ),
        (
            "Kwame Osei-Lindqvist",
            "Sign the documentation contractor and deliver the finished tutorials and migration guide.",
            "28 February",
        ),
        (
            "Kwame Osei-Lindqvist",
            "Prepare the launch blog post, newsletter and Coastal Data Summit talk.",
            "Launch day",
        ),
    ]
    rows = [["Owner", "Action", "Due"]] + [
        [p(o, CELL), p(a, CELL), p(d, CELL)] for o, a, d in items
    ]
    table = Table(rows, colWidths=[40 * mm, 100 * mm, 25 * mm], hAlign="LEFT")
    table.setStyle(TABLE_STYLE)
    return [
        p("4. Action items", H2),
        p(
            "Each action item has a single owner. If you cannot meet a due date, say so in "
            "the launch channel as soon as you know, not on the day it is due. All dates are "
            "in 2025."
        ),
        table,
        Spacer(1, 8),
        p(
            "The go/no-go meeting is on Thursday 6 March at 15:00 UTC. Desmond will circulate "
            "a checklist two days beforehand covering the open milestone issues, the "
            "station-comparison results, the documentation status and the security review."
        ),
        p(
            "Juniper will file these notes in the launch folder and link them from the 2.0 "
            "milestone. Corrections to the notes should be sent to her by the end of the week."
        ),
    ]


def footer(canvas, doc) -> None:
    canvas.saveState()
    canvas.setFont("Helvetica", 8)
    canvas.setFillColor(colors.HexColor("#666666"))
    canvas.drawString(20 * mm, 12 * mm, "Harbor Lights internal. tidewatch 2.0 launch planning.")
    canvas.drawRightString(A4[0] - 20 * mm, 12 * mm, f"Page {doc.page} of {TOTAL_PAGES}")
    canvas.restoreState()


def build(output: Path = OUTPUT) -> Path:
    doc = SimpleDocTemplate(
        str(output),
        pagesize=A4,
        leftMargin=22 * mm,
        rightMargin=22 * mm,
        topMargin=20 * mm,
        bottomMargin=22 * mm,
        title="Q3 Launch Notes",
        author="Juniper Hale, Harbor Lights",
        subject="tidewatch 2.0 launch planning meeting, 14 January 2025",
        creator="scripts/make_sample_pdf.py",
        invariant=1,
    )
    doc.build(
        page_one() + page_two() + page_three() + page_four(),
        onFirstPage=footer,
        onLaterPages=footer,
    )
    return output


if __name__ == "__main__":
    print(build())

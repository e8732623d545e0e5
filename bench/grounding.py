"""Does citations.grounding tell supported claims from unsupported ones? (issue #10, Proof)

    .venv/bin/python bench/grounding.py [--set perturbations|written|both] [--limit N]
                                        [--seed 0] [--show N] [--show-held-out]
                                        [--batch 16] [--nli MODEL.onnx [--nli-tokenizer
                                        tokenizer.json] [--nli-label 0] [--nli-min 0.01]]

Two sets, both over ../shared/eval/squad/dev.json, each claim checked against its passages
with citations.grounding.Grounder and the local all-MiniLM-L6-v2 (ONNX) embedder, loaded
outside Django:

* perturbations (generated): for each question, the sentence holding the gold answer.
  Supported: that sentence against its paragraph ("sentence"); the clause of it that holds
  the answer ("clause"). Unsupported: the same sentence against the most similar other
  paragraph of the article that lacks the answer ("other_paragraph"); with a number changed
  ("number"); with the answer replaced by another name from the article ("entity"); with a
  negation inserted ("negation"). Targets: >= 95% detected, <= 2% false flags.
* written (by hand, bench/data/grounding_claims.jsonl): claims written the way an assistant
  writes, each against its one paragraph. Supported: "paraphrase", "combined" (facts from
  two sentences). Unsupported, each getting one thing wrong: "number", "entity",
  "relation" (who did what to whom), "negation", "overreach" (a reason, superlative or
  consequence the passage does not state), "unmentioned" (a true-sounding detail the passage
  never mentions). The fixture is split by paragraph (crc32 of "title#index", even = tune,
  odd = held-out) and reported for both halves: thresholds were tuned on the tune half only.
  Rows marked ``"split": "fresh"`` form a third split (91 claims over 33 paragraphs
  the other two do not use), written and measured before the engine was tuned further and
  never shown by --show: the closest stand-in for claims nobody tuned on. Rows marked
  ``"split": "dev"`` (144 claims over 44 more paragraphs, 115 of them supported) were
  written after that measurement to look at failures on: tune on them, like the tune half.
  Rows marked ``"split": "fresh2"`` (108 claims over 48 paragraphs no other row uses) were
  written and measured before the next round of tuning; like "fresh" they are reported
  on their own and never shown by --show, so that round has an untouched measure. Once
  measured (session 8) its mistakes were read and tuned on, and rows marked ``"split":
  "fresh3"`` (120 claims over 52 paragraphs no other row uses, written by a helper that
  had not read the engine and never checked with it) took its place as the untouched split.
  Once measured twice (sessions 9 and 10) its mistakes were read and tuned on in turn; so
  were those of ``"split": "fresh4"`` (120 claims over 50 more paragraphs, written the
  same way) once measured, and of ``"split": "fresh5"`` (120 more over 50 paragraphs) once
  measured twice (sessions 10 and 11), and of ``"split": "fresh6"`` (120 claims over 50
  more paragraphs, written the same way) once measured in session 11, and of ``"split":
  "fresh7"`` (120 more over 50 paragraphs) once measured twice (sessions 11 and 12), and
  of ``"split": "fresh8"`` (120 more over 50 paragraphs) once measured twice in session 12,
  and of ``"split": "fresh9"`` (120 more over 50 paragraphs) once measured twice (sessions
  12 and 13), and of ``"split": "fresh10"`` (120 more over 50 paragraphs, written blind in
  session 13) and ``"split": "fresh11"`` (120 more over 50 paragraphs) once measured in
  session 14. ``"split": "fresh12"`` (120 more over 47 paragraphs, written blind in session
  14) and ``"split": "fresh13"`` (120 more over 50 paragraphs, the last unused ones of 60
  words or more, at most four per article, written blind in session 15) are the
  untouched ones: never shown by --show. Rows marked ``"corpus": "scifact"`` check a claim
  against a SciFact abstract (``"doc"``: its id in ../shared/eval/scifact/corpus.jsonl)
  instead of a SQuAD paragraph: ``"split": "sci1"`` (120 claims over 50 abstracts, written
  blind in session 15) measures the engine on another corpus, untouched, never shown;
  ``"split": "sci2"`` (120 more over the next 50 abstracts, written the same way) and
  ``"split": "sci3"`` (120 more over 50 other abstracts, written in session 16) are the
  SciFact splits to read and tune on, shown by --show; ``"split": "sci4"`` (120 more over
  49 abstracts, written blind in session 16) is, like sci1, never shown.
  Targets: >= 80% detected with <= 10% false flags.

Printed per category: n, the share judged right, the detection rate on unsupported claims,
the false-flag rate on supported ones ("partial" counts as a flag) and milliseconds per claim
(each batch's wall time, embedding included, shared by its claims; passages are embedded
once and then served from the grounder's cache, as in a thread re-citing its chunks).

With ``--nli`` the grounder also reads each claim it finds supported with that entailment
model (as GROUNDING_NLI_MODEL does; docs/grounding_entailment.md).

A word-overlap baseline runs on the same claims: supported when at least a share theta of
the claim's content words occur in the passage, theta chosen for the best accuracy on the
written set's tune half.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from citations.claims import STOP_WORDS, entities  # noqa: E402
from citations.grounding import Grounder, Support, Thresholds  # noqa: E402
from citations.sentences import split_passage  # noqa: E402
from embeddings.entailment import OnnxEntailment  # noqa: E402

SQUAD = REPO.parent / "shared" / "eval" / "squad" / "dev.json"
if not SQUAD.exists():  # a worktree outside the checkout's parent
    SQUAD = Path("/work/shared/eval/squad/dev.json")
SCIFACT = SQUAD.parent.parent / "scifact" / "corpus.jsonl"
FIXTURE = REPO / "bench" / "data" / "grounding_claims.jsonl"
SUPPORTED_CATEGORIES = ("sentence", "clause", "paraphrase", "combined")


@dataclass
class Claim:
    id: str
    text: str
    passages: list[str]
    label: str  # "supported" or "unsupported"
    category: str
    split: str = "all"
    titles: tuple[str, ...] = ()  # each passage's document title


def load_embedder():
    from embeddings.local import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder(runtime="onnx", cache_dir=REPO / ".verity" / "models")


# -- the written set ------------------------------------------------------------------------


def written_claims(squad: dict) -> list[Claim]:
    paragraphs = {a["title"]: [p["context"] for p in a["paragraphs"]] for a in squad["data"]}
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    abstracts = _abstracts({row["doc"] for row in rows if row.get("corpus") == "scifact"})
    claims = []
    for row in rows:
        if row.get("corpus") == "scifact":  # a scientific abstract, not a SQuAD paragraph
            claims.append(Claim(row["id"], row["claim"], [abstracts[row["doc"]]], row["label"],
                                row["category"], row["split"], (row["title"],)))
            continue
        key = f"{row['title']}#{row['paragraph']}"
        split = row.get("split") or (
            "tune" if zlib.crc32(key.encode()) % 2 == 0 else "held-out"
        )
        claims.append(Claim(
            row["id"], row["claim"], [paragraphs[row["title"]][row["paragraph"]]],
            row["label"], row["category"], split, (_title(row["title"]),),
        ))
    return claims


def _abstracts(ids: set[str]) -> dict[str, str]:
    """SciFact abstracts by id (../shared/eval/scifact/corpus.jsonl), read only if asked."""
    if not ids:
        return {}
    found = {}
    with SCIFACT.open() as corpus:
        for line in corpus:
            document = json.loads(line)
            if document["_id"] in ids:
                found[document["_id"]] = document["text"]
    return found


# -- the generated set ----------------------------------------------------------------------

_AUXILIARY = re.compile(
    r"\b(is|was|were|are|has|had|have|can|could|will|would|should|may|might|must|did|does|do)"
    r"\b(?! not\b| never\b|n't)(?=\s+[a-z])"
)
_PAST_VERB = re.compile(r"(?<=[a-z,] )([a-z]{3,}ed)\b")
_DIGITS = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+(?:\.\d+)?(?![\w,])"
)


def perturbation_claims(squad: dict, embedder, *, limit: int | None, seed: int) -> list[Claim]:
    rng = random.Random(seed)
    claims: list[Claim] = []
    for article in squad["data"]:
        contexts = [p["context"] for p in article["paragraphs"]]
        names = sorted({
            a["text"] for p in article["paragraphs"] for q in p["qas"] for a in q["answers"][:1]
            if _is_name(a["text"])
        })
        vectors = None  # paragraph vectors, on first need
        for p_index, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            sentences = split_passage(context)
            seen: set[tuple[int, int]] = set()
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                end = start + len(answer["text"])
                span = next(((s, e) for s, e in sentences if s <= start < e), None)
                if span is None or span in seen or end > span[1]:
                    continue
                seen.add(span)
                sentence = context[span[0] : span[1]]
                base = f"{article['title']}#{p_index}@{span[0]}"
                local = (start - span[0], end - span[0])
                claims.append(Claim(base + ":sentence", sentence, [context], "supported",
                                    "sentence"))
                clause = _clause(sentence, *local)
                if clause and clause != sentence:
                    claims.append(Claim(base + ":clause", clause, [context], "supported",
                                        "clause"))
                if vectors is None:
                    vectors = embedder.embed_documents(contexts)
                other = _most_similar_other(
                    embedder.embed_documents([sentence])[0], vectors, p_index, contexts,
                    answer["text"],
                )
                if other is not None:
                    claims.append(Claim(base + ":other_paragraph", sentence, [contexts[other]],
                                        "unsupported", "other_paragraph"))
                changed = _change_number(sentence, local)
                if changed:
                    claims.append(Claim(base + ":number", changed, [context], "unsupported",
                                        "number"))
                if _is_name(answer["text"]):
                    pool = [
                        n for n in names
                        if n.lower() not in sentence.lower()
                        and not set(_tokens(n)) & set(_tokens(answer["text"]))
                    ]
                    if pool:
                        name = rng.choice(pool)
                        swapped = sentence[: local[0]] + name + sentence[local[1] :]
                        claims.append(Claim(base + ":entity", swapped, [context],
                                            "unsupported", "entity"))
                negated = _negate(sentence)
                if negated:
                    claims.append(Claim(base + ":negation", negated, [context], "unsupported",
                                        "negation"))
                if limit and len({c.id.rsplit(":", 1)[0] for c in claims}) >= limit:
                    return claims
    return claims


def _title(title: str) -> str:
    return title.replace("_", " ")


def _tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"\w+", text.lower()) if t not in STOP_WORDS]


def _is_name(text: str) -> bool:
    found = entities(text)
    return bool(found) and len(text.split()) <= 5 and not re.search(r"\d", text) and (
        text[:1].isupper()
    )


def _clause(sentence: str, start: int, end: int) -> str | None:
    """The comma/semicolon/conjunction-bounded piece of the sentence holding the answer."""
    cuts = [0]
    for match in re.finditer(r"[,;:–—]\s+|\s+(?:and|but|while|whereas|which|who)\s+", sentence):
        cuts.append(match.end())
    cuts.append(len(sentence))
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    first = next(i for i, (a, b) in enumerate(pieces) if a <= start < b)
    last = next(i for i, (a, b) in enumerate(pieces) if a < end <= b)
    lo, hi = first, last
    # A clause of under six words is a fragment, not a claim: widen it.
    while len(sentence[pieces[lo][0] : pieces[hi][1]].split()) < 6:
        if hi + 1 < len(pieces):
            hi += 1
        elif lo > 0:
            lo -= 1
        else:
            break
    clause = sentence[pieces[lo][0] : pieces[hi][1]].strip(" ,;:–—")
    return clause[:1].upper() + clause[1:] if clause else None


def _most_similar_other(sentence_vector, vectors, own: int, contexts, answer: str) -> int | None:
    best, best_score = None, -2.0
    for index, vector in enumerate(vectors):
        if index == own or answer.lower() in contexts[index].lower():
            continue
        score = sum(a * b for a, b in zip(sentence_vector, vector, strict=True))
        if score > best_score:
            best, best_score = index, score
    return best


def _change_number(sentence: str, answer: tuple[int, int]) -> str | None:
    numbers = list(_DIGITS.finditer(sentence))
    if not numbers:
        return None
    # The answer's own number when it has one, else the first number of the sentence.
    inside = [m for m in numbers if answer[0] <= m.start() < answer[1]]
    match = (inside or numbers)[0]
    raw = match.group()
    value = float(raw.replace(",", ""))
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    if decimals == 0 and 1000 <= value <= 2100 and "," not in raw:
        new = value + 7 if value < 2020 else value - 7  # a year
    elif value < 10:
        new = value + 2
    else:
        new = value + max(1, round(value * 0.25))
    text = f"{new:,.{decimals}f}" if "," in raw else f"{new:.{decimals}f}"
    return sentence[: match.start()] + text + sentence[match.end() :]


def _negate(sentence: str) -> str | None:
    match = _AUXILIARY.search(sentence)
    if match:
        return sentence[: match.end()] + " not" + sentence[match.end() :]
    match = _PAST_VERB.search(sentence)
    if match:
        return sentence[: match.start()] + "never " + sentence[match.start() :]
    return None


# -- running and reporting ------------------------------------------------------------------


def run(grounder: Grounder, claims: list[Claim], batch: int) -> tuple[list[Support], list[float]]:
    """Verdicts, and each claim's share of its batch's wall time."""
    results: list[Support] = []
    times: list[float] = []
    cpu_began, embedded_before = time.process_time(), grounder.cache.embedded
    for start in range(0, len(claims), batch):
        chunk = claims[start : start + batch]
        began = time.perf_counter()
        results.extend(grounder.check_claims([(c.text, c.passages, c.titles) for c in chunk]))
        elapsed = time.perf_counter() - began
        times.extend([elapsed / len(chunk)] * len(chunk))
    # CPU time (all threads) is what a busy shared machine distorts least.
    cpu = (time.process_time() - cpu_began) / max(1, len(claims)) * 1000
    texts = (grounder.cache.embedded - embedded_before) / max(1, len(claims))
    wall = statistics.fmean(times) * 1000
    floor = claim_embedding_ms(grounder.cache.embedder, claims, batch)
    print(f"  ran {len(claims)} claims: {wall:.1f} ms wall and "
          f"{cpu:.1f} ms CPU per claim (all threads), {texts:.2f} texts embedded per claim")
    print(f"  baseline, same run: embedding each claim alone (the floor of any check that "
          f"reads the claim with the embedder) {floor:.1f} ms; "
          f"grounding = {wall / floor:.2f}x that")
    return results, times


def claim_embedding_ms(embedder, claims: list[Claim], batch: int) -> float:
    """Wall milliseconds per claim to embed just the claim texts, in the same batches."""
    began = time.perf_counter()
    for start in range(0, len(claims), batch):
        embedder.embed_documents([c.text for c in claims[start : start + batch]])
    return (time.perf_counter() - began) / max(1, len(claims)) * 1000


def overlap(claim: str, passages: list[str]) -> float:
    words = set(_tokens(claim))
    text = set(_tokens(" ".join(passages)))
    return len(words & text) / len(words) if words else 1.0


def tune_baseline(claims: list[Claim]) -> float:
    scores = [(overlap(c.text, c.passages), c.label == "supported") for c in claims]
    candidates = [i / 100 for i in range(30, 101, 2)]
    return max(candidates, key=lambda t: sum((s >= t) == ok for s, ok in scores))


def report(title: str, claims: list[Claim], results: list[Support], times: list[float],
           theta: float) -> None:
    rows: dict[str, list[tuple[Claim, Support, float]]] = defaultdict(list)
    for claim, result, seconds in zip(claims, results, times, strict=True):
        rows[claim.category].append((claim, result, seconds))
    print(f"\n{title}  ({len(claims)} claims)")
    print(f"  {'category':<16}{'n':>5}{'right':>8}{'detect':>8}{'false':>8}{'ms/claim':>10}"
          f"   baseline right")
    ordered = sorted(rows, key=lambda c: (c not in SUPPORTED_CATEGORIES, c))
    for category in ordered:
        _line(category, rows[category], theta)
    supported = [r for c in ordered if c in SUPPORTED_CATEGORIES for r in rows[c]]
    unsupported = [r for c in ordered if c not in SUPPORTED_CATEGORIES for r in rows[c]]
    print("  " + "-" * 66)
    if supported:
        _line("all supported", supported, theta)
    if unsupported:
        _line("all unsupported", unsupported, theta)
    _line("all", supported + unsupported, theta)


def _line(name: str, rows, theta: float) -> None:
    right = [_right(c, r) for c, r, _ in rows]
    base = [(overlap(c.text, c.passages) >= theta) == (c.label == "supported") for c, _, _ in rows]
    share = sum(right) / len(rows)
    labels = {c.label for c, _, _ in rows}
    detect = f"{share:8.1%}" if labels == {"unsupported"} else f"{'':8}"
    false = f"{1 - share:8.1%}" if labels == {"supported"} else f"{'':8}"
    if len(labels) > 1:
        unsup = [ok for (c, _, _), ok in zip(rows, right, strict=True) if c.label == "unsupported"]
        sup = [ok for (c, _, _), ok in zip(rows, right, strict=True) if c.label == "supported"]
        detect = f"{sum(unsup) / len(unsup):8.1%}"
        false = f"{1 - sum(sup) / len(sup):8.1%}"
    ms = statistics.fmean(t for _, _, t in rows) * 1000
    print(f"  {name:<16}{len(rows):>5}{share:8.1%}{detect}{false}{ms:10.1f}"
          f"   {sum(base) / len(rows):8.1%}")


def _right(claim: Claim, result: Support) -> bool:
    return (result.verdict == "supported") == (claim.label == "supported")


def show_mistakes(claims: list[Claim], results: list[Support], count: int,
                  held_out: bool = False) -> None:
    # The tune half's mistakes (and the held-out half's only when asked): reading a split's
    # mistakes tunes on it. The fresh, fresh12, fresh13, sci1 and sci4 splits' are never shown;
    # fresh2's to fresh11's are, since their untouched measurements were taken (sessions 8
    # to 14).
    shown = {"tune", "dev", "all", "sci2", "sci3", *(f"fresh{i}" for i in range(2, 12))} | (
        {"held-out"} if held_out else set()
    )
    wrong = [
        (c, r) for c, r in zip(claims, results, strict=True)
        if not _right(c, r) and c.split in shown
    ]
    print(f"\n{len(wrong)} misjudged; first {min(count, len(wrong))}:")
    for claim, result in wrong[:count]:
        span = claim.passages[0][result.span[0] : result.span[1]] if result.span else ""
        print(f"- [{claim.category}/{claim.label}] {claim.id} -> {result.verdict} "
              f"{result.score:.2f} {result.reason!r}\n    claim: {claim.text}\n"
              f"    span:  {span[:240]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("perturbations", "written", "both"), default="both")
    parser.add_argument("--limit", type=int, default=None,
                        help="perturbations: stop after this many gold sentences")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="print this many misjudged claims")
    parser.add_argument("--show-held-out", action="store_true",
                        help="--show includes the held-out half's mistakes (never fresh, "
                             "fresh12, fresh13, sci1, sci4)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--nli", metavar="MODEL.onnx",
                        help="an entailment cross-encoder in ONNX (tokenizer.json beside it), "
                             "as GROUNDING_NLI_MODEL")
    parser.add_argument("--nli-tokenizer", help="its tokenizer.json, if not beside it")
    parser.add_argument("--nli-label", type=int, default=0,
                        help="index of its entailment output (GROUNDING_NLI_LABEL)")
    parser.add_argument("--nli-min", type=float, default=Thresholds().entailed,
                        help="GROUNDING_NLI_MIN")
    args = parser.parse_args()
    entailment = OnnxEntailment(
        args.nli, tokenizer=args.nli_tokenizer, entailed_label=args.nli_label
    ) if args.nli else None
    thresholds = Thresholds(entailed=args.nli_min)

    squad = json.loads(SQUAD.read_text())
    began = time.perf_counter()
    embedder = load_embedder()
    embedder.embed_documents(["warm up"])
    print(f"embedder loaded in {time.perf_counter() - began:.1f}s")
    written = written_claims(squad)
    theta = tune_baseline([c for c in written if c.split == "tune"])
    print(f"word-overlap baseline: supported when >= {theta:.2f} of the claim's content words "
          "occur in the passage (theta tuned on the written tune half)")

    if args.set in ("written", "both"):
        grounder = Grounder(embedder, thresholds=thresholds, entailment=entailment)
        results, times = run(grounder, written, args.batch)
        reports = [
            ("tune half", {"tune"}), ("held-out half", {"held-out"}), ("dev split", {"dev"}),
            ("fresh split", {"fresh"}), *((f"fresh{i} split", {f"fresh{i}"}) for i in range(2, 14)),
            ("sci1 split (SciFact abstracts)", {"sci1"}),
            ("sci2 split (SciFact abstracts, read)", {"sci2"}),
            ("sci3 split (SciFact abstracts, read)", {"sci3"}),
            ("sci4 split (SciFact abstracts)", {"sci4"}),
            ("tune + held-out", {"tune", "held-out"}),
        ]
        for name, splits in reports:
            chosen = [i for i, c in enumerate(written) if c.split in splits]
            if chosen:
                report(f"written, {name}", [written[i] for i in chosen],
                       [results[i] for i in chosen], [times[i] for i in chosen], theta)
        if args.show:
            show_mistakes(written, results, args.show, args.show_held_out)

    if args.set in ("perturbations", "both"):
        began = time.perf_counter()
        generated = perturbation_claims(squad, embedder, limit=args.limit, seed=args.seed)
        print(f"\nperturbations generated in {time.perf_counter() - began:.1f}s")
        grounder = Grounder(embedder, thresholds=thresholds, entailment=entailment)
        results, times = run(grounder, generated, args.batch)
        report("perturbations", generated, results, times, theta)
        if args.show:
            show_mistakes(generated, results, args.show)


if __name__ == "__main__":
    main()

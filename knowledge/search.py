"""Hybrid retrieval: pgvector cosine + BM25 in PostgreSQL, fused on normalized scores.

The one retrieval service: chat tools, the REST API and the command line call
`search()`; there is no second implementation.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db import connection, transaction
from django.db.models import Q

from embeddings import get_embedder
from knowledge import graph, selectors
from knowledge.fusion import cap_per_group, convex, named_first, rare_terms_first, rrf
from knowledge.locators import headings
from knowledge.models import TEXT_SEARCH_CONFIG, Chunk, Document, Folder, Workspace
from knowledge.rerankers import Reranker, RerankError, get_reranker

HNSW_MAX_EF_SEARCH = 1000  # pgvector's limit


# The longest query searched (the API refuses a longer one; other callers are cut).
MAX_QUERY_CHARS: Final = 2000
# A scope a person could pick: an agent or a model may send 100,000 ids.
MAX_SCOPE_IDS: Final = 500


class ScopeError(ValueError):
    """A scope names documents or folders that are not in the workspace."""


@dataclass(frozen=True)
class Scope:
    document_ids: tuple[int, ...] = ()
    folder_ids: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.document_ids or self.folder_ids)


@dataclass
class Hit:
    chunk_id: int
    document_id: int
    document_title: str
    document_uri: str
    source_type: str
    ordinal: int
    text: str
    locator: dict[str, Any]
    document_metadata: dict[str, Any]
    score: float
    dense_rank: int | None = None
    dense_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None

    @property
    def matched(self) -> bool:
        """Whether the query found something here: the keyword leg did (the passage holds
        a word of the query), or it is close in meaning (SEARCH_MATCH_MIN_SIMILARITY). The
        dense leg ranks every passage, so a query nothing matches ("xxxx", a question
        about something else) gets the workspace's nearest passages back all the same.
        A hit neither leg ranked (added by graph expansion) counts as matched."""
        if self.keyword_rank is not None or self.dense_score is None:
            return True
        return self.dense_score >= settings.SEARCH_MATCH_MIN_SIMILARITY


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    metadata: dict[str, Any] = field(default_factory=dict)
    # How many hits the whole ranking holds (every page of it, not only `hits`): a
    # list's `count`, known without fetching them.
    ranked: int = 0


def resolve_scope(workspace: Workspace, scope: Scope | None) -> list[int] | None:
    """The scope as the ids of its documents (None: the whole workspace).

    Unknown ids and ids of another workspace are rejected alike, never dropped:
    silently widening a scope would answer from documents the user excluded.
    Folders (subfolders included) become their documents here: one condition on
    the chunk's own column lets its index serve; an OR across both tables cannot
    (164 vs 18 ms).
    """
    if not scope:
        return None
    ids = (*scope.document_ids, *scope.folder_ids)
    if len(scope.document_ids) > MAX_SCOPE_IDS or len(scope.folder_ids) > MAX_SCOPE_IDS:
        raise ScopeError(f"A scope names at most {MAX_SCOPE_IDS} documents and "
                         f"{MAX_SCOPE_IDS} folders")
    if not all(0 < i < 2**63 for i in ids):
        raise ScopeError("A scope's ids are positive whole numbers")
    # Only the queries the scope needs: a search scoped to a folder or to documents
    # runs one or two of them, not three.
    documents = set(
        Document.objects.filter(workspace=workspace, pk__in=scope.document_ids).values_list(
            "pk", flat=True
        )
        if scope.document_ids
        else ()
    )
    folders = (
        dict(Folder.objects.filter(workspace=workspace).values_list("pk", "parent_id"))
        if scope.folder_ids
        else {}
    )
    unknown = [f"document {i}" for i in scope.document_ids if i not in documents]
    unknown += [f"folder {i}" for i in scope.folder_ids if i not in folders]
    if unknown:
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        raise ScopeError("Not found in this workspace: " + ", ".join(unknown[:10]) + more)
    if not scope.folder_ids:
        return sorted(documents)
    in_folders = selectors.documents_in_folders(
        workspace=workspace, folder_ids=scope.folder_ids, parents=folders
    )
    return sorted(documents | set(in_folders.values_list("pk", flat=True)))


@functools.lru_cache(maxsize=1024)
def _query_vector(model_id: str, query: str) -> tuple[float, ...]:
    return tuple(get_embedder().embed_query(query))


def query_vector(query: str) -> list[float]:
    return list(_query_vector(get_embedder().model_id, query))


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def search(
    *,
    query: str,
    workspace: Workspace,
    scope: Scope | None = None,
    limit: int = 10,
    offset: int = 0,
    per_document: int | None = None,
    legs: tuple[str, ...] = ("dense", "keyword"),
) -> SearchResult:
    """Chunk-level hits for `query` in `workspace`, best first: `limit` of them after the
    `offset` best (a page: ranks do not depend on either).

    At most SEARCH_MAX_PER_SECTION hits of one section, or with `per_document` at most
    that many of one document. `legs` exists for measurement (bench/retrieval.py
    compares each leg alone).
    """
    # A bounded query (the API's own bound), so a chat message of 20,000 characters
    # costs no more than one of 2,000; read as the keyword index reads chunks.
    query = normalized_query(query[: 2 * MAX_QUERY_CHARS])
    documents = resolve_scope(workspace, scope)
    if not _asks_something(query):
        return SearchResult(query, [])  # "!!!???" asks for nothing: no nearest chunks
    # The same pool whatever the page size: a hit's rank must not depend on `limit`
    # (with a pool growing with it, --limit 10 and --limit 50 disagreed at rank 9:
    # hits past the smaller pool added fused score to some candidates only).
    pool = max(settings.SEARCH_POOL, offset + limit)

    related = (
        graph.related_entities(workspace=workspace, query=query, limit=settings.GRAPH_NEIGHBOURS)
        if settings.GRAPH_EXPANSION and "keyword" in legs and not _OPERATORS.search(query)
        else []
    )
    asked, excluded = _exclusions(query)
    phrases = _phrases(asked)
    # A scope holds no hidden document already (resolve_scope reads Document.objects).
    hidden = _hidden_folders(workspace) if documents is None else []
    with transaction.atomic(), connection.cursor() as cursor:
        if excluded and _all_excluded(cursor, asked, excluded):
            # "tide -tide" asks for passages no passage can be: none, where the meaning
            # leg alone answered with every passage near "tide" that lacks the word.
            return SearchResult(
                query, [], {"dense_candidates": 0, "keyword_candidates": 0, "reranker": None}
            )
        # Nothing left but exclusions: nothing to embed closer, so the query as written.
        dense = (
            _dense_leg(cursor, asked or query, workspace, documents, pool, hidden)
            if "dense" in legs else []
        )
        if excluded:
            dense = _without_matches(cursor, dense, excluded)
        if phrases:
            dense = _with_matches(cursor, dense, phrases)
        # A query asking for no word beside its exclusions ("-postmortem", "the
        # -postmortem") has no keyword leg: every chunk without them would be a candidate.
        keyword = (
            _keyword_leg(cursor, query, workspace, documents, pool, hidden)
            if "keyword" in legs and not (excluded and _no_lexeme(cursor, asked)) else []
        )
        expanded = (
            _keyword_leg(cursor, _expanded(query, related), workspace, documents, pool, hidden)
            if related else []
        )

    fused = _fuse(dense, keyword, expanded)
    candidates = rare_terms_first(
        [pk for pk, _ in fused],
        rare={row[0] for row in keyword if row[3]},
        lexical={row[0] for row in keyword},
    )
    # A chunk that defines a name by a symbol it holds is cited under that symbol.
    members: dict[int, dict] = {}
    if names := _code_names(asked):
        candidates = named_first(candidates, *_naming(candidates, names, members))
    document_of = {row[0]: row[1] for row in (*dense, *keyword, *expanded)}
    metadata: dict[str, Any] = {
        "dense_candidates": len(dense),
        "keyword_candidates": len(keyword),
        "reranker": None,
    }
    if related:
        metadata["related_entities"] = related
    reranker = get_reranker()
    if reranker is not None and candidates:
        candidates, metadata = _rerank(reranker, query, candidates, metadata)
    if per_document is None:
        ranking = cap_per_group(
            candidates, _sections(candidates, document_of), settings.SEARCH_MAX_PER_SECTION
        )
    else:
        ranking = cap_per_group(candidates, document_of, per_document)
    ordered = ranking[: offset + limit]
    dense_info = {row[0]: (rank, 1 - row[2]) for rank, row in enumerate(dense, start=1)}
    keyword_info = {row[0]: (rank, row[2]) for rank, row in enumerate(keyword, start=1)}
    scores = dict(fused)
    # A hit the rare-term or the code-name rule moved up takes the score of the hit it
    # moved ahead of, so scores still read best first.
    for pk, after in zip(reversed(ordered[:-1]), reversed(ordered[1:]), strict=True):
        scores[pk] = max(scores[pk], scores[after])
    hits = []
    for row in _fetch_hits(ordered[offset:]):
        pk = row[0]
        dense_rank, dense_score = dense_info.get(pk, (None, None))
        keyword_rank, keyword_score = keyword_info.get(pk, (None, None))
        hits.append(
            Hit(
                *row,
                score=scores[pk],
                dense_rank=dense_rank,
                dense_score=dense_score,
                keyword_rank=keyword_rank,
                keyword_score=keyword_score,
            )
        )
        if pk in members:  # cited as "lines 35–38 (InvoiceRenderer.render_pdf)"
            hits[-1].locator = {**hits[-1].locator, "member": members[pk]}
    return SearchResult(query, hits, metadata, ranked=len(ranking))


def normalized_query(query: str) -> str:
    r"""`query` as the keyword index reads a chunk's text (verity_normalize, migration
    0021: NFKC, invisible characters removed), by that very function, so that
    "U\u0308nico\u0308de" finds "Ünicöde" and "Zerowidth" finds "Zero\u200bwidth", and
    the reverse; any Unicode space (a pasted NBSP) as the space PostgreSQL's parser
    splits on, so both legs read "-word" alike; at most MAX_QUERY_CHARS characters.
    Both legs search it: the dense one embeds the word the keyword one looks up."""
    with connection.cursor() as cursor:
        # A NUL, which no PostgreSQL text holds, as a space.
        cursor.execute("SELECT verity_normalize(%s)", [query.replace("\x00", " ")])
        text = cursor.fetchone()[0]
    return " ".join(text.split())[:MAX_QUERY_CHARS]


def _asks_something(query: str) -> bool:
    """Whether `query` holds a letter, a digit or a symbol such as an emoji ("🦄", which
    the dense leg answers though no word is indexed), not only punctuation ("!!! ???")."""
    return any(unicodedata.category(char)[0] in "LN" or unicodedata.category(char) == "So"
               for char in query)


def _hidden_folders(workspace: Workspace) -> list[int]:
    """The workspace's folders being deleted (knowledge.services.folder_hide), whose
    documents every leg leaves out in its own SQL; almost always none, read from a tiny
    partial index, and then the legs' SQL is as it was."""
    return list(
        Folder.all_objects.filter(workspace=workspace, deleting_since__isnull=False)
        .values_list("pk", flat=True)
    )


# Markers in a leg's SQL where the chunks of hidden documents are left out: before its
# LIMIT, so that a large folder being deleted (minutes, for a large one) cannot fill the
# leg's pool with chunks that would be dropped after it, starving the search. A document
# (or a chunk, by its id) is looked up in the hidden documents' ids, hashed once a query.
_VISIBLE = re.compile(r"/\*visible (?P<kind>document|chunk) (?P<column>[\w.]+)\*/")
_HIDDEN_DOCUMENTS = "SELECT id FROM knowledge_document WHERE folder_id = ANY(%(hidden)s)"


def _visible(sql: str, hidden: list[int]) -> str:
    """`sql` with its markers as conditions leaving out the chunks of documents in the
    `hidden` folders, or as nothing when there are none (the fast path)."""
    def condition(match: re.Match) -> str:
        if not hidden:
            return ""
        column = match.group("column")
        if match.group("kind") == "document":
            return f"AND {column} NOT IN ({_HIDDEN_DOCUMENTS})"
        return (f"AND NOT EXISTS (SELECT FROM knowledge_chunk hc WHERE hc.id = {column}"
                f" AND hc.document_id IN ({_HIDDEN_DOCUMENTS}))")
    return _VISIBLE.sub(condition, sql)


def with_continuations(*, hits: list[Hit], count: int, query: str) -> list[Hit]:
    """The hits, and after them the chunk that continues each of the best `count` in its
    section, when the hits lack it: a chunk rarely ends where its subject does ("… we
    agreed to push the launch to March 10" is the chunk after "2. Launch date"). Never one
    holding what the `query` (the hits' own) excludes."""
    have = {(hit.document_id, hit.ordinal) for hit in hits}
    wanted = {
        (hit.document_id, hit.ordinal + 1): hit for hit in hits[:count]
        if (hit.document_id, hit.ordinal + 1) not in have
    }
    if not wanted:
        return hits
    wanted_chunks = Q()
    for document_id, ordinal in wanted:
        wanted_chunks |= Q(document_id=document_id, ordinal=ordinal)
    chunks = Chunk.objects.filter(wanted_chunks)
    if excluded := _exclusions(query)[1]:
        chunks = chunks.exclude(search_vector=SearchQuery(
            normalized_query(excluded), config=TEXT_SEARCH_CONFIG, search_type="websearch"
        ))
    found = {
        (chunk.document_id, chunk.ordinal): chunk
        for chunk in chunks.only("id", "document_id", "ordinal", "text", "locator")
    }
    # In the order of the hits they continue; same document, so within any scope searched.
    return hits + [
        replace(before, chunk_id=chunk.pk, ordinal=chunk.ordinal, text=chunk.text,
                locator=chunk.locator, dense_rank=None, dense_score=None, keyword_rank=None,
                keyword_score=None)
        for key, before in wanted.items()
        if (chunk := found.get(key)) is not None
        and headings(chunk.locator) == headings(before.locator)
    ]


def _sections(candidates: list[int], document_of: dict[int, int]) -> dict[int, tuple]:
    """Each candidate's section (its document and heading path, or for code its symbol):
    the unit a page of hits holds only a few chunks of, so that one place does not fill
    it. A whole document as that unit let three chunks of a 300-page manual stand for all
    of it."""
    locators = dict(Chunk.objects.filter(pk__in=candidates).values_list("pk", "locator"))
    return {pk: (document_of[pk], *headings(locators.get(pk, {}))) for pk in candidates}


def _expanded(query: str, related: list[str]) -> str:
    """The query and its graph neighbours' words, as a plain keyword query."""
    words = (word.lstrip("-") for label in related for word in label.split())
    return " ".join([query, *(word for word in words if word and word != "OR")])


def _fuse(
    dense: list[tuple], keyword: list[tuple], expanded: list[tuple] = ()
) -> list[tuple[int, float]]:
    """The legs' candidates, best first, by SEARCH_FUSION.

    "convex" (default): SEARCH_DENSE_WEIGHT x the dense leg's cosine similarity plus
    the rest x BM25, each normalized over its leg's pool (knowledge.fusion.convex).
    "rrf": Reciprocal Rank Fusion (RRF_K, RRF_*_WEIGHT). The keyword leg goes first:
    equal scores rank the exact match first. A graph-expanded keyword leg, when
    there is one, takes GRAPH_WEIGHT of the keyword leg's share.
    """
    graph_share = settings.GRAPH_WEIGHT if expanded else 0.0
    if settings.SEARCH_FUSION == "rrf":
        return rrf(
            {"keyword": [row[0] for row in keyword], "dense": [row[0] for row in dense],
             "graph": [row[0] for row in expanded]},
            k=settings.RRF_K,
            weights={"dense": settings.RRF_DENSE_WEIGHT,
                     "keyword": settings.RRF_KEYWORD_WEIGHT * (1 - graph_share),
                     "graph": settings.RRF_KEYWORD_WEIGHT * graph_share},
        )
    lexical = 1 - settings.SEARCH_DENSE_WEIGHT
    return convex(
        {"keyword": {row[0]: row[2] for row in keyword},
         "dense": {row[0]: 1 - row[2] for row in dense},
         "graph": {row[0]: row[2] for row in expanded}},
        weights={"dense": settings.SEARCH_DENSE_WEIGHT,
                 "keyword": lexical * (1 - graph_share),
                 "graph": lexical * graph_share},
    )


_HIT_FIELDS: Final = (
    "id", "document_id", "document__title", "document__uri", "document__source_type",
    "ordinal", "text", "locator", "document__metadata",
)


_NAME = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")  # not a blank to fill, "____"
# A name as code writes it: an underscore joining words, or camelCase humps
# ("loadConstituents"); not "mRNA", "siRNA" or "pH", which prose writes so.
_CODE_NAME = re.compile(r"\w*(?:_\w|[a-z][A-Z][a-z])\w*")


def _code_names(query: str) -> set[str]:
    """The words of a query that name code: written as code writes names ("height_at",
    "loadConstituents"), or every word of a query of one or two ("Constituent"), which
    asks for a thing by its name. The stemmed keyword leg reads "height_at" as "height"."""
    words = _NAME.findall(query)
    return {w for w in words if len(words) <= 2 or _CODE_NAME.fullmatch(w)}


def _naming(
    candidates: list[int], names: set[str], members: dict[int, dict] | None = None
) -> tuple[set[int], set[int]]:
    """Of the candidates, those defining one of `names` (a code symbol ending in it:
    "HarmonicPredictor.height_at", or one of the symbols a chunk holds, such as a method
    of a class that is one chunk), and those holding verbatim a name with an underscore.
    A chunk defining it by a symbol it holds gets that symbol in `members`."""
    chunks = Chunk.objects.filter(pk__in=candidates)
    symbols = chunks.filter(locator__has_key="symbol").values_list(
        "pk", "locator__symbol", "locator__symbols"
    )
    defining = set()
    for pk, symbol, held in symbols:
        if isinstance(symbol, str) and symbol.rsplit(".", 1)[-1] in names:
            defining.add(pk)
            continue
        named = [entry for entry in held if _defines(entry, names)] if isinstance(
            held, list) else []
        if named:
            defining.add(pk)
            if members is not None:  # the innermost: the method, not its nested class
                members[pk] = min(named, key=lambda e: e["line_end"] - e["line_start"])
    # PostgreSQL's parser splits a name at its underscores; a camelCase one it keeps whole.
    written = [n for n in names if "_" in n]
    holding: set[int] = set()
    if written:
        # \m, \M: PostgreSQL's word edges (an underscore is a word's), case kept.
        pattern = "|".join(rf"\m{name}\M" for name in sorted(written))
        holding = set(chunks.filter(text__regex=pattern).values_list("pk", flat=True))
    return defining, holding


def _defines(entry: object, names: set[str]) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and isinstance(entry.get("line_start"), int)
        and isinstance(entry.get("line_end"), int)
        and entry["name"].rsplit(".", 1)[-1] in names
    )


def _fetch_hits(ordered: list[int]) -> list[tuple]:
    """Hit fields of the returned chunks, in order: no vectors, no document texts."""
    rows = {
        row[0]: row
        for row in Chunk.objects.filter(pk__in=ordered).values_list(*_HIT_FIELDS)
    }
    # A chunk re-indexed or deleted since the legs read it is left out, not a KeyError.
    return [rows[pk] for pk in ordered if pk in rows]


def _rerank(
    reranker: Reranker, query: str, candidates: list[int], metadata: dict[str, Any]
) -> tuple[list[int], dict[str, Any]]:
    """Reorder the head of the fused list; on failure keep the fused order and say so."""
    head, tail = candidates[: settings.RERANK_CANDIDATES], candidates[settings.RERANK_CANDIDATES :]
    texts = dict(Chunk.objects.filter(pk__in=head).values_list("pk", "text"))
    head = [pk for pk in head if pk in texts]  # gone since the legs read it
    try:
        ranked = reranker.rerank(query, [texts[pk] for pk in head])
    except RerankError as exc:
        return candidates, {**metadata, "reranker": reranker.name, "reranker_error": str(exc)}
    reordered = [head[i] for i, _ in ranked]
    seen = set(reordered)
    reordered += [pk for pk in head if pk not in seen]
    return reordered + tail, {**metadata, "reranker": reranker.name}


def _dense_leg(
    cursor, query: str, workspace: Workspace, documents: list[int] | None, pool: int,
    hidden: Sequence[int] = (),
) -> list[tuple[int, int, float]]:
    """Nearest chunks by cosine distance.

    A scope, or a workspace of at most SEARCH_EXACT_MAX_CHUNKS chunks, is scanned
    exactly: cheap at that size, and HNSW filters only after its graph walk, so a
    small part of a big index could come back short. A large workspace walks its
    own partial HNSW index (knowledge.vector_index) when it has one, the global
    one otherwise, widened when the walk met mostly other workspaces' chunks.
    """
    values = {
        "vector": _vector_literal(query_vector(query)),
        "workspace": workspace.pk,
        "documents": documents,
        "pool": pool,
        "hidden": list(hidden),
    }
    in_scope = "" if documents is None else "AND c.document_id = ANY(%(documents)s)"
    sql = _visible(f"""
        SELECT c.id, c.document_id, c.embedding <=> %(vector)s::vector AS distance
        FROM knowledge_chunk c
        WHERE c.workspace_id = %(workspace)s {in_scope} /*visible document c.document_id*/
        ORDER BY {{order}} LIMIT %(pool)s
    """, hidden)
    # "+ 0" hides the ORDER BY from the index: exact k-NN inside the filter.
    exact = sql.format(order="(c.embedding <=> %(vector)s::vector) + 0")
    walk = sql.format(order="c.embedding <=> %(vector)s::vector")
    ef_search = max(settings.HNSW_EF_SEARCH, pool)
    cursor.execute(
        "SELECT set_config('hnsw.ef_search', %s, true),"
        " (SELECT chunks FROM knowledge_corpusstat WHERE workspace_id = %s)",
        [str(ef_search), workspace.pk],
    )
    chunks = cursor.fetchone()[1] or 0
    if documents is not None or chunks <= settings.SEARCH_EXACT_MAX_CHUNKS:
        cursor.execute(exact, values)
        return _by_distance(cursor.fetchall())
    while True:
        cursor.execute(walk, values)
        rows = cursor.fetchall()
        if len(rows) >= pool or ef_search >= HNSW_MAX_EF_SEARCH:
            break
        # The walk met other workspaces' chunks: widen it in proportion to the
        # share that was ours, up to pgvector's maximum. An exact scan of a large
        # workspace costs far more (bench/search_latency.py: 490 ms).
        wanted = math.ceil(1.5 * ef_search * pool / max(len(rows), 1))
        ef_search = min(HNSW_MAX_EF_SEARCH, wanted)
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [ef_search])
    if len(rows) < pool:
        cursor.execute(exact, values)
        rows = cursor.fetchall()
    return _by_distance(rows)


def _by_distance(rows: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    # Equal distances (repeated text) in id order: the index returns them in any order.
    return sorted(rows, key=lambda row: (row[2], row[0]))


# websearch_to_tsquery syntax: quoted phrases, OR, -exclusion.
# "-2" in "E2f-1, -2, -3" is a number, not an exclusion: only "-word" excludes.
_OPERATORS = re.compile(r'"|\bOR\b|(?:^|\s)-[^\w\s]*[^\W\d_]')  # "-(postmortem)" too


# What websearch_to_tsquery negates: "-" after a space, then a word up to the next space
# ("-example.com" is PostgreSQL's one host word, not "example") or a quoted phrase, one
# left open running to the end of the query. A phrase is matched whole, so that the "-m"
# of "python -m pip" in quotes is no exclusion.
_EXCLUDED = re.compile(r'(?:^|(?<=\s))(?P<minus>-+)?(?P<term>"[^"]*(?:"|\Z)|(?(minus)[^\s"]+))')


def _exclusions(query: str) -> tuple[str, str]:
    """The query as the dense leg embeds it (without what it excludes: "incident
    -postmortem" must not pull postmortems closer), and what it excludes as one websearch
    query ("postmortem OR \"root cause\""), or "": the very terms the keyword leg's
    websearch query negates, and none when that leg reads the query as plain words."""
    if not _OPERATORS.search(query):
        return query, ""
    excluded = [m for m in _EXCLUDED.finditer(query) if m.group("minus") and m.group("term")]
    kept, cursor = [], 0
    for match in excluded:
        kept.append(query[cursor : match.start()])
        cursor = match.end()
    asked = " ".join("".join([*kept, query[cursor:]]).split())
    return asked, " OR ".join(m.group("term") for m in excluded)


# A quoted phrase the query asks for, as websearch_to_tsquery reads one: after a space
# (or the start) and no "-"; one left open runs to the end.
_PHRASE = re.compile(r'(?:^|(?<=\s))"(?P<phrase>[^"]*)(?:"|\Z)')


def _phrases(asked: str) -> str:
    """The phrases `asked` quotes, as one websearch query that requires them all
    ('"tide tables" "pier 4"'), or "": a meaning-only hit without them is no answer to a
    query that quotes them, as in web search."""
    if re.search(r"\bOR\b", _PHRASE.sub(" ", asked)):
        # '"tide tables" OR "pier 4"' needs either: the keyword leg has both. An OR
        # quoted ('"tide OR height"') is a word of its phrase.
        return ""
    phrases = [m.group("phrase").strip() for m in _PHRASE.finditer(asked)]
    return " ".join(f'"{phrase}"' for phrase in phrases if re.search(r"[^\W_]", phrase))


# Whether every term the query asks for (a word, or a quoted phrase) holds a word or
# phrase it excludes, as PostgreSQL reads both ("tide -tide", "tides -tide", '"tide
# tables" -tide'): a passage holding the term is excluded. A term of stop words or
# punctuation asks for nothing; with none asking anything, the query is one of
# exclusions alone ("the -tide"), answered as such.
_ALL_EXCLUDED = """
    SELECT coalesce(bool_and(
        to_tsvector(%(config)s::regconfig, t) @@ websearch_to_tsquery(%(config)s::regconfig,
                                                                      %(excluded)s)
    ), false)
    FROM unnest(%(terms)s::text[]) AS t
    WHERE to_tsvector(%(config)s::regconfig, t) <> ''::tsvector
"""


def _all_excluded(cursor, asked: str, excluded: str) -> bool:
    # The terms as websearch_to_tsquery splits them; "OR" joins two, and is none.
    words = [word for word in _PHRASE.sub(" ", asked).split() if word != "OR"]
    terms = [m.group("phrase") for m in _PHRASE.finditer(asked)] + words
    cursor.execute(_ALL_EXCLUDED, {
        "config": TEXT_SEARCH_CONFIG, "excluded": excluded, "terms": terms,
    })
    return cursor.fetchone()[0]


# Dense hits that hold a word the query excludes: the keyword leg never returns them.
_MATCHING_EXCLUSIONS = """
    SELECT c.id FROM knowledge_chunk c
    WHERE c.id = ANY(%(ids)s)
      AND c.search_vector @@ websearch_to_tsquery(%(config)s::regconfig, %(excluded)s)
"""


def _without_matches(cursor, rows: list, excluded: str) -> list:
    cursor.execute(_MATCHING_EXCLUSIONS, {
        "ids": [row[0] for row in rows], "config": TEXT_SEARCH_CONFIG, "excluded": excluded,
    })
    dropped = {pk for (pk,) in cursor.fetchall()}
    return [row for row in rows if row[0] not in dropped]


# Dense hits that hold the phrases the query quotes; a phrase of stop words alone ("as
# is") is no query at all and requires nothing.
_MATCHING_PHRASES = """
    SELECT c.id FROM knowledge_chunk c,
         websearch_to_tsquery(%(config)s::regconfig, %(phrases)s) AS q
    WHERE c.id = ANY(%(ids)s) AND (numnode(q) = 0 OR c.search_vector @@ q)
"""

# How many lexemes and operators a websearch query holds: none for stop words alone.
_QUERY_SIZE = "SELECT numnode(websearch_to_tsquery(%(config)s::regconfig, %(query)s))"


def _no_lexeme(cursor, query: str) -> bool:
    cursor.execute(_QUERY_SIZE, {"config": TEXT_SEARCH_CONFIG, "query": query})
    return cursor.fetchone()[0] == 0


def _with_matches(cursor, rows: list, phrases: str) -> list:
    cursor.execute(_MATCHING_PHRASES, {
        "ids": [row[0] for row in rows], "config": TEXT_SEARCH_CONFIG, "phrases": phrases,
    })
    kept = {pk for (pk,) in cursor.fetchall()}
    return [row for row in rows if row[0] in kept]


def _bm25(w: str, tf: str, dl: str) -> str:
    """BM25's per-term score in SQL, given the term's IDF `w`, its count `tf` and length `dl`.

    float8 throughout: the driver inlines 0.9 as a NUMERIC literal, and numeric
    arithmetic made the head's aggregation 3x slower.
    """
    k1, b = "%(k1)s::float8", "%(b)s::float8"
    return f"{w} * {tf} * ({k1} + 1) / ({tf} + {k1} * (1 - {b} + {b} * {dl} / s.avgdl))"


def _position(term: str, forward: str) -> str:
    """Where `term` is in the forward row `forward` if it holds it: a binary search.

    term_ids is sorted (the triggers aggregate it in term order), and width_bucket()
    over a sorted array returns the position of its last element <= the operand; the
    row holds the term iff `forward.term_ids[position] = term`, and its tf is
    `forward.tfs[position]`. array_position() compared every element, 3-4x slower
    over a chunk's ~90 terms: it was most of a scoped keyword query.
    """
    return f"width_bucket({term}, {forward}.term_ids)"


# Unscoped (and for websearch syntax), the keyword leg is one ranking template
# around one of three candidate queries; a plain scoped query has its own one-pass
# query (_KEYWORD_IN_SCOPE). Each candidate query yields (id, partial, rare): the
# chunks to score, the part of their score already summed while choosing them, and
# whether that part holds a term of at most `rare` chunks. All read the CTEs q, s
# and t.

# What the terms of CTE {terms} propose, as (id, exact, rare, w): a term of at most
# `depth` chunks all of them, scored exactly from the rows its GIN lookup visits
# anyway; a commoner term its `depth` best head rows (chunks repeating it), its
# impact standing in for its score while choosing (the ranking scores it exactly).
_TERM_POSTINGS = f"""
        SELECT f.chunk_id AS id, true AS exact, t.rare,
               {_bm25("t.w", f"f.tfs[{_position('t.id', 'f')}]", "f.dl")} AS w
        FROM {{terms}} t CROSS JOIN s CROSS JOIN LATERAL (
            SELECT chunk_id, dl, term_ids, tfs FROM knowledge_chunkterms
            WHERE term_ids @> ARRAY[t.id] /*visible chunk chunk_id*/
        ) f
        WHERE t.df <= %(depth)s
        UNION ALL
        SELECT h.chunk_id, false, false, t.w * h.impact
        FROM {{terms}} t CROSS JOIN LATERAL (
            SELECT chunk_id, impact FROM knowledge_termhead
            WHERE term_id = t.id /*visible chunk chunk_id*/
            ORDER BY impact DESC LIMIT %(depth)s
        ) h
        WHERE t.df > %(depth)s
"""

# Unscoped, a plain query: its terms' postings, and when all its terms are common
# up to `depth` chunks of its rarest term too, so a common word alone still finds
# something; the best `rescore` by their sum, the exact part kept.
def _term_lists(terms: str) -> str:
    return f"""
    SELECT p.id, coalesce(sum(p.w) FILTER (WHERE p.exact), 0) AS partial,
           bool_or(p.rare) AS rare
    FROM ({_TERM_POSTINGS.format(terms=terms)}
        UNION ALL
        (SELECT f.chunk_id, false, false, 0 FROM knowledge_chunkterms f
         WHERE NOT EXISTS (SELECT FROM {terms} WHERE {terms}.df <= %(depth)s)
           AND EXISTS (SELECT FROM {terms})
           AND f.term_ids @> ARRAY(SELECT id FROM {terms} ORDER BY df, id LIMIT 1)
           /*visible chunk f.chunk_id*/
         LIMIT %(depth)s)
    ) p
    GROUP BY p.id
    ORDER BY sum(p.w) DESC, p.id LIMIT %(rescore)s
"""


_CANDIDATES_TERM_LISTS = _term_lists("t")

# A plain query naming code (_gated_terms): the chunks its other words' postings propose,
# as _CANDIDATES_TERM_LISTS; and those holding an identifier as it is written (its
# words together), the `gate` tsquery: up to `rescore` + 1 of its matches in the GIN
# index's order, and when there are more, the best `rescore` its words propose that
# match it (as _CANDIDATES_WEBSEARCH bounds a common phrase, `matches` read lazily).
# Each is scored from scratch in the ranking, which counts an identifier's words only
# where it matches.
_CANDIDATES_GATED = f"""
    WITH free AS MATERIALIZED (
        SELECT * FROM t WHERE t.gate IS NULL
    ), gated AS MATERIALIZED (
        SELECT * FROM t WHERE t.gate IS NOT NULL
    ), matches AS MATERIALIZED (
        SELECT c.id FROM knowledge_chunk c
        WHERE c.search_vector @@ %(gate)s::tsquery
          AND c.workspace_id = %(workspace)s /*visible document c.document_id*/
    ), first AS MATERIALIZED (
        SELECT id FROM matches LIMIT %(rescore)s + 1
    ), listed AS MATERIALIZED (
        SELECT l.id FROM (
            SELECT p.id FROM ({_TERM_POSTINGS.format(terms="gated")}) p
            GROUP BY p.id ORDER BY sum(p.w) DESC, p.id LIMIT %(rescore)s
        ) l CROSS JOIN LATERAL (
            SELECT FROM knowledge_chunk c
            WHERE c.id = l.id AND c.search_vector @@ %(gate)s::tsquery
            OFFSET 0
        ) c
        WHERE (SELECT count(*) FROM first) > %(rescore)s
    )
    SELECT id, 0::float8 AS partial, false AS rare FROM ({_term_lists("free")}) f
    UNION
    SELECT id, 0::float8, false FROM first
    UNION
    SELECT id, 0::float8, false FROM listed
"""

# The terms a query in websearch syntax asks for (its own less those it excludes) and
# their chunk counts: whether it may score every chunk it matches.
_ASKED_TERMS = """
    SELECT id, df FROM knowledge_termstat
    WHERE workspace_id = %(workspace)s AND df > 0
      AND term IN (SELECT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(asked)s)))
"""

# Quotes, OR or -word: every chunk matching the websearch query (its phrases in
# order, its excluded terms absent), up to `most`. In a scope, which bounds them
# (`most` NULL: no limit); or when no asked term is common: each match then holds a
# rare one, so there are no more than their chunk counts' sum (`most`, which also
# bounds "a OR -b", matching chunks without them), a plain query's postings.
_CANDIDATES_WEBSEARCH_ALL = """
    SELECT c.id, 0::float8 AS partial, false AS rare FROM knowledge_chunk c
    WHERE c.search_vector @@ websearch_to_tsquery(%(config)s::regconfig, %(query)s)
      AND c.workspace_id = %(workspace)s {in_scope} /*visible document c.document_id*/
    LIMIT %(most)s
"""

# Unscoped, quotes, OR or -word asking for a common term: at most 2 x `rescore` + 1
# matches, however many there are. Scoring every match of two common words ORed took
# 23 ms p50, 217 ms p95 in 40,000 chunks and 153 / 551 ms in 100,000; this 11 / 18
# and 13 / 21 ms (bench/search_websearch.py).
# - first: up to `rescore` + 1 matches, in the GIN index's order. No more than
#   `rescore` is every match (a phrase, a long AND), all scored: the exact top-k.
#   `matches` is planned as the whole match (a LIMIT there tempts the planner into
#   a sequential scan, which a rare phrase of common words runs to the end) and is
#   read lazily, only as far as first asks. A phrase of common words in few chunks
#   still rechecks every chunk holding its words: the index has no positions.
# - listed, when there are more: the best `rescore` chunks the asked terms propose,
#   by their sum as for a plain query, those that match. The best BM25 scores are
#   there, among the chunks repeating a common word; first's matches still fill the
#   page when they are few (a phrase whose chunks repeat no word). OFFSET 0 keeps
#   the check to these chunks, one by one: joined, the planner hashed every match.
# Each candidate is scored from scratch (partial 0): first's have no partial score.
_CANDIDATES_WEBSEARCH = f"""
    WITH matches AS MATERIALIZED (
        SELECT c.id FROM knowledge_chunk c
        WHERE c.search_vector @@ websearch_to_tsquery(%(config)s::regconfig, %(query)s)
          AND c.workspace_id = %(workspace)s /*visible document c.document_id*/
    ), first AS MATERIALIZED (
        SELECT id FROM matches LIMIT %(rescore)s + 1
    ), asked AS MATERIALIZED (
        SELECT * FROM t WHERE t.id = ANY(%(asked)s)
    ), listed AS MATERIALIZED (
        SELECT l.id FROM (
            SELECT p.id FROM ({_TERM_POSTINGS.format(terms="asked")}) p
            GROUP BY p.id ORDER BY sum(p.w) DESC, p.id LIMIT %(rescore)s
        ) l CROSS JOIN LATERAL (
            SELECT FROM knowledge_chunk c WHERE c.id = l.id
              AND c.search_vector @@ websearch_to_tsquery(%(config)s::regconfig, %(query)s)
            OFFSET 0
        ) c
        WHERE (SELECT count(*) FROM first) > %(rescore)s
    )
    SELECT id, 0::float8 AS partial, false AS rare FROM first
    UNION
    SELECT id, 0::float8, false FROM listed
"""

# A term of one letter or digit of an alphabet (below U+0800: Latin, Greek, Cyrillic,
# Hebrew, Arabic; a CJK character is a word) is no evidence alone: "x" is a variable,
# a list's "b)", the x of "1.x" or "3 x 4", in many chunks that have nothing to do
# with a question "x". It still scores beside a longer term ("vitamin C", "x axis"),
# but does not make a chunk one holding a rare query term, which the fusion ranks
# ahead of meaning-only hits.
_WEAK = "(char_length({term}) = 1 AND ascii({term}) < 2048)"

# q: the query's lexemes; s: the workspace's N and average chunk length; t: each
# lexeme's IDF, and whether it is rare evidence. MATERIALIZED: computed once; inlined,
# the planner re-read TermStat per candidate whenever its statistics were stale (74
# vs 0.6 ms).
# A plain query's identifiers count with their words, as chunks are indexed
# (verity_tsvector, migration 0021): "HTTPServer" scores http, server and
# httpserver. Not in websearch syntax: "-InvoiceRenderer" excludes the identifier,
# and its words "invoice" and "renderer" must not then raise the chunks left.
# A plain query of weak terms only ("x", "a b c") has no keyword leg: the dense one
# answers it. One in websearch syntax ('"x"') asks for them as written.
_QUERY_TERMS = f"""
    WITH q AS MATERIALIZED (
        {{q}}
    ), s AS MATERIALIZED (
        SELECT chunks::float8 AS n, greatest(terms::float8 / greatest(chunks, 1), 1) AS avgdl
        FROM knowledge_corpusstat WHERE workspace_id = %(workspace)s
    ), t AS MATERIALIZED (
        SELECT ts.id, ts.df, ln(1 + (s.n - ts.df + 0.5) / (ts.df + 0.5)) AS w,
               ts.df <= %(rare)s AND NOT {_WEAK.format(term="ts.term")} AS rare{{t_gate}}
        FROM knowledge_termstat ts, s
        WHERE ts.workspace_id = %(workspace)s AND ts.df > 0
          AND ts.term IN (SELECT lexeme FROM q)
          AND (%(websearch)s OR EXISTS (
              SELECT FROM q WHERE NOT {_WEAK.format(term="q.lexeme")}))
    )"""

_RANKING = f"""{_QUERY_TERMS}, cand AS MATERIALIZED ({{candidates}}), ranked AS (
        -- The partial sum, completed with the terms of more than probe_above chunks
        -- from the candidate's one forward row (a term's tf is at its position).
        SELECT cand.id, cand.partial + coalesce(sum({_bm25("p.w", "f.tfs[p.i]", "f.dl")}), 0)
               AS score, cand.rare OR coalesce(bool_or(p.rare), false) AS rare
        FROM cand JOIN knowledge_chunkterms f ON f.chunk_id = cand.id CROSS JOIN s{{join}}
        LEFT JOIN LATERAL (
            SELECT t.id, t.w, t.rare, {_position("t.id", "f")} AS i{{p_gate}} FROM t
            WHERE t.df > %(probe_above)s
        ) p ON f.term_ids[p.i] = p.id{{check}}
        GROUP BY cand.id, cand.partial, cand.rare{{having}}
        ORDER BY score DESC, cand.id
        LIMIT %(pool)s
    )
    SELECT ranked.id, c.document_id, ranked.score, ranked.rare
    FROM ranked JOIN knowledge_chunk c ON c.id = ranked.id
    ORDER BY ranked.score DESC, ranked.id
"""

# In a scope: every chunk of its documents holding a query term, scored exactly
# (exact top-k in the scope), in one pass: each scope chunk's forward row is read
# once by primary key (LIMIT 1 keeps it so: otherwise the planner hashed the whole
# table, or listed through the GIN index every chunk of the workspace holding a
# common query term) and each query term looked up in it by binary search. The
# cost follows the scope, not the workspace: ~2,000 forward rows for a folder of
# 2,000 chunks, times the query's terms.
_IN_SCOPE = f"""{_QUERY_TERMS}
    SELECT c.id, c.document_id, sum({_bm25("p.w", "f.tfs[p.i]", "f.dl")}) AS score,
           bool_or(p.rare) AS rare
    FROM knowledge_chunk c CROSS JOIN s CROSS JOIN LATERAL (
        SELECT dl, term_ids, tfs FROM knowledge_chunkterms WHERE chunk_id = c.id LIMIT 1
    ) f JOIN LATERAL (
        SELECT t.id, t.w, t.rare, {_position("t.id", "f")} AS i{{p_gate}} FROM t
    ) p ON f.term_ids[p.i] = p.id{{check}}
    WHERE c.document_id = ANY(%(documents)s)
    GROUP BY c.id, c.document_id
    ORDER BY score DESC, c.id
    LIMIT %(pool)s
"""

# The query's lexemes: a plain query's identifiers count with their words, as chunks are
# indexed (verity_tsvector, migration 0021): "HTTPServer" scores http, server and
# httpserver. Not in websearch syntax: "-InvoiceRenderer" excludes the identifier, and
# its words "invoice" and "renderer" must not then raise the chunks left.
_PLAIN = {
    "q": """SELECT DISTINCT lexeme FROM unnest(CASE WHEN %(websearch)s
            THEN to_tsvector(%(config)s::regconfig, %(query)s)
            ELSE verity_tsvector(%(config)s::regconfig, %(query)s) END)""",
    "t_gate": "", "join": "", "p_gate": "", "check": "", "having": "",
}
# A plain query naming code (_gated_terms): its lexemes as given, each with the tsquery a
# chunk must match for it to count there (NULL: anywhere), which the ranking checks
# against the chunk's own vector; a chunk no lexeme counts in is no candidate.
_GATED = {
    "q": """SELECT lexeme, gate::tsquery AS gate
            FROM unnest(%(lexemes)s::text[], %(gates)s::text[]) AS q(lexeme, gate)""",
    "t_gate": ", (SELECT q.gate FROM q WHERE q.lexeme = ts.term) AS gate",
    "p_gate": ", t.gate",
}
_GATED_RANKING = _GATED | {
    "join": " JOIN knowledge_chunk gc ON gc.id = cand.id",
    "check": " AND (p.gate IS NULL OR gc.search_vector @@ p.gate)",
    "having": " HAVING count(p.id) > 0",
}
_GATED_IN_SCOPE = _GATED | {
    "join": "", "check": " AND (p.gate IS NULL OR c.search_vector @@ p.gate)", "having": "",
}

# q: the query's lexemes; s: the workspace's N and average chunk length; t: each
# lexeme's IDF, and whether it is rare evidence. MATERIALIZED: computed once; inlined,
# the planner re-read TermStat per candidate whenever its statistics were stale (74
# vs 0.6 ms). A plain query of weak terms only ("x", "a b c") has no keyword leg: the
# dense one answers it. One in websearch syntax ('"x"') asks for them as written.
_KEYWORD_RANKING = _RANKING.format(candidates="{candidates}", **_PLAIN)
_KEYWORD_IN_SCOPE = _IN_SCOPE.format(**_PLAIN)
_KEYWORD_RANKING_GATED = _RANKING.format(candidates=_CANDIDATES_GATED, **_GATED_RANKING)
_KEYWORD_IN_SCOPE_GATED = _IN_SCOPE.format(**_GATED_IN_SCOPE)


# A query word naming code as code writes it, whose words count only together: snake_case
# ("high_tides"), camelCase ("faqAccordionInit", "HTTPServer": the case boundaries
# migration 0021 splits at) or dotted ("os.path.join", "app.py"). Read as its words, any
# one of them matched: "faqAccordionInit" found every `__init__`. Not a hyphenated or
# slashed word ("anti-inflammatory", "KRAS-RalB", "ischaemia/reperfusion"), which prose
# writes (a third of SciFact's claims hold one): its words still count one by one, as
# BM25 reads them (gated too, SciFact's claims holding either lost 3 points of nDCG@10).
_SNAKE_OR_DOTTED = re.compile(r"[^\W_]_+[^\W_]|[^\W\d_]\.[^\W\d_]")


def _names_code(word: str) -> bool:
    if "-" in word:
        return False
    if _SNAKE_OR_DOTTED.search(word):
        return True
    for i in range(len(word) - 1):
        a, b, after = word[i], word[i + 1], word[i + 2 : i + 4]
        if a.islower() and b.isupper():
            return True
        # an acronym or a number before a capitalised word: HTTPServer, utf8Decode
        if ((a.isupper() or a.isdigit()) and b.isupper() and len(after) == 2
                and all(c.islower() for c in after)):
            return True
    return False


# Each identifier's lexemes (verity_tsvector: the word whole and its words) and the
# tsquery a chunk matches when it holds them together: the word as written (a phrase
# of its words: "high <-> tide" for high_tides) or its identifier words as a phrase
# ("faq <-> accordion <-> init", as the index appends them). The other words' lexemes
# as ever.
_IDENTIFIER_TERMS = """
    SELECT 0, ARRAY(SELECT lexeme FROM unnest(verity_tsvector(%(config)s::regconfig,
                                                              %(free)s))), NULL
    UNION ALL
    SELECT w.n, ARRAY(SELECT lexeme FROM unnest(verity_tsvector(%(config)s::regconfig, w.word))),
           (phraseto_tsquery(%(config)s::regconfig, w.word)
            || phraseto_tsquery(%(config)s::regconfig, verity_identifier_words(w.word)))::text
    FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, n)
    ORDER BY 1
"""


def _gated_terms(cursor, query: str) -> tuple[list[str], list[str | None], str] | None:
    """For a plain query naming code (_names_code): its lexemes, each with the tsquery a
    chunk must match for it to count there (None: the lexeme of another word, counted
    anywhere; several identifiers sharing one: any of theirs), and all identifiers' as one
    tsquery. None for a query naming none: the keyword leg as it was."""
    words = query.split()
    names = [word for word in words if _names_code(word)]
    if not names:
        return None
    free = " ".join(word for word in words if not _names_code(word))
    cursor.execute(_IDENTIFIER_TERMS, {"config": TEXT_SEARCH_CONFIG, "words": names,
                                       "free": free})
    (_, anywhere, _), *identifiers = cursor.fetchall()
    # An identifier of stop words alone ("is_a") has no lexeme to ask for.
    identifiers = [(lexemes, gate) for _, lexemes, gate in identifiers if gate]
    if not identifiers:
        return None
    gates: dict[str, list[str]] = {}
    for lexemes, gate in identifiers:
        for lexeme in lexemes:
            if lexeme not in anywhere and gate not in gates.setdefault(lexeme, []):
                gates[lexeme].append(gate)
    return ([*anywhere, *gates],
            [None] * len(anywhere) + [" | ".join(f"( {g} )" for g in gates[x]) for x in gates],
            " | ".join(dict.fromkeys(f"( {gate} )" for _, gate in identifiers)))


def _keyword_leg(
    cursor, query: str, workspace: Workspace, documents: list[int] | None, pool: int,
    hidden: Sequence[int] = (),
) -> list[tuple[int, int, float, bool]]:
    """BM25 (k1, b from settings) from the ChunkTerms forward index, IDF from TermStat.

    PostgreSQL's ts_rank_cd has no IDF; this scores like Lucene's BM25 instead.
    A plain query ranks chunks containing any of its terms, one in websearch
    syntax the chunks matching it; unscoped, the cost is bounded by the query, not
    by how many chunks contain a common word. Every returned score is exact BM25.
    Each row says whether the chunk holds a query term of at most
    SEARCH_RARE_TERM_MAX_DF chunks.
    """
    values = {
        "config": TEXT_SEARCH_CONFIG, "query": query, "workspace": workspace.pk,
        "k1": settings.BM25_K1, "b": settings.BM25_B, "pool": pool, "documents": documents,
        "depth": settings.BM25_TERM_DEPTH, "probe_above": -1,
        "rare": settings.SEARCH_RARE_TERM_MAX_DF, "hidden": list(hidden),
    }
    websearch = bool(_OPERATORS.search(query))
    values["websearch"] = websearch
    if websearch and documents is not None:
        in_scope = "AND c.document_id = ANY(%(documents)s)"
        candidates = _CANDIDATES_WEBSEARCH_ALL.format(in_scope=in_scope)
        values["most"] = None
    elif websearch:
        cursor.execute(_ASKED_TERMS, values | {"asked": _exclusions(query)[0]})
        asked = cursor.fetchall()
        if all(df <= settings.BM25_TERM_DEPTH for _, df in asked):
            candidates = _CANDIDATES_WEBSEARCH_ALL.format(in_scope="")
            values["most"] = sum(df for _, df in asked)
        else:
            candidates = _CANDIDATES_WEBSEARCH
            values |= {"rescore": 4 * pool, "asked": [pk for pk, _ in asked]}
    elif (gated := _gated_terms(cursor, query)) is not None:
        lexemes, gates, gate = gated
        values |= {"lexemes": lexemes, "gates": gates}
        if documents is not None:
            cursor.execute(_KEYWORD_IN_SCOPE_GATED, values)
            return cursor.fetchall()
        # Every candidate scored from scratch: its identifiers' words only where they match.
        values |= {"gate": gate, "rescore": 4 * pool}
        cursor.execute(_visible(_KEYWORD_RANKING_GATED, hidden), values)
        return cursor.fetchall()
    elif documents is not None:
        cursor.execute(_KEYWORD_IN_SCOPE, values)
        return cursor.fetchall()
    else:
        candidates = _CANDIDATES_TERM_LISTS
        # A few times the pool: a chunk low on partial score can still rise.
        values |= {"rescore": 4 * pool, "probe_above": settings.BM25_TERM_DEPTH}
    cursor.execute(_visible(_KEYWORD_RANKING.format(candidates=candidates), hidden), values)
    return cursor.fetchall()

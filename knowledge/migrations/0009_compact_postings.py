"""The keyword index in a quarter of the space: a forward row per chunk, GIN as the inverted index.

knowledge_posting kept a row per (term, chunk): a 64-byte heap tuple, a primary-key
entry and a covering (term, impact) entry holding the same payload again, ~180
bytes a posting, twice the chunk table. It becomes
- knowledge_chunkterms: one row per chunk, term ids and their counts as parallel
  arrays plus the chunk's length (~10 bytes a posting), with a GIN index on the
  term ids (compressed posting lists, a few bytes a posting): the full list of any
  term, and every query term's exact tf in one row per candidate;
- knowledge_termhead: the chunks where a term occurs at least twice, in BM25
  term-frequency order (real impact, bigint ids): the candidates of a common term.
Scores stay exact BM25; only which chunks a common term proposes changes (its
repeated occurrences, not its single ones).

The statement-level triggers of 0003/0004 keep both tables in step, still one
aggregate per INSERT or DELETE statement and still locking TermStat rows in term
order. Reversible: the reverse restores 0004's functions and backfills postings.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

import django.contrib.postgres.fields
import django.contrib.postgres.indexes

PREVIOUS = importlib.import_module("knowledge.migrations.0004_postings")

# BM25's term-frequency part (k1 0.9, b 0.4) at a fixed average length of 100:
# it only orders a term's chunks, and a constant lets the delete trigger find the
# row again. Queries score tf and dl exactly with the workspace's own average.
HEAD_IMPACT = "({tf}::float8 * 1.9 / ({tf} + 0.9 * (0.6 + 0.4 * {dl}::float8 / 100)))::real"

TABLES = """
CREATE TABLE knowledge_chunkterms (
  chunk_id bigint PRIMARY KEY,
  dl integer NOT NULL,
  term_ids bigint[] NOT NULL,
  tfs smallint[] NOT NULL
);
CREATE INDEX chunkterms_term_ids_gin ON knowledge_chunkterms USING gin (term_ids);
CREATE TABLE knowledge_termhead (
  term_id bigint NOT NULL,
  impact real NOT NULL,
  chunk_id bigint NOT NULL,
  PRIMARY KEY (term_id, impact, chunk_id)
);
"""

DROP_TABLES = "DROP TABLE knowledge_chunkterms; DROP TABLE knowledge_termhead;"

# The chunks' terms joined to their TermStat ids, from the transition table `chunks`.
TERMS_OF = """
  SELECT n.id AS chunk_id, n.term_count AS dl, s.id AS term_id,
         cardinality(t.positions) AS tf
  FROM {chunks} n CROSS JOIN LATERAL unnest(n.search_vector) t
  JOIN knowledge_termstat s ON s.workspace_id = n.workspace_id AND s.term = t.lexeme
"""

FORWARD_OF = f"""
  SELECT chunk_id, dl, array_agg(term_id ORDER BY term_id), array_agg(tf::smallint ORDER BY term_id)
  FROM ({TERMS_OF}) p GROUP BY chunk_id, dl
"""

HEADS_OF = f"""
  SELECT term_id, {HEAD_IMPACT.format(tf="tf", dl="dl")}, chunk_id
  FROM ({TERMS_OF}) p WHERE tf >= 2
"""

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION knowledge_chunk_stats_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO knowledge_termstat (workspace_id, term, df)
    SELECT d.workspace_id, t.lexeme, count(*)
    FROM new_chunks n JOIN knowledge_document d ON d.id = n.document_id,
         unnest(n.search_vector) t
    GROUP BY d.workspace_id, t.lexeme
    ORDER BY d.workspace_id, t.lexeme
  ON CONFLICT (workspace_id, term) DO UPDATE SET df = knowledge_termstat.df + EXCLUDED.df;
  INSERT INTO knowledge_corpusstat (workspace_id, chunks, terms)
    SELECT d.workspace_id, count(*), coalesce(sum(n.term_count), 0)
    FROM new_chunks n JOIN knowledge_document d ON d.id = n.document_id
    GROUP BY d.workspace_id
    ORDER BY d.workspace_id
  ON CONFLICT (workspace_id) DO UPDATE SET
    chunks = knowledge_corpusstat.chunks + EXCLUDED.chunks,
    terms = knowledge_corpusstat.terms + EXCLUDED.terms;
  INSERT INTO knowledge_chunkterms (chunk_id, dl, term_ids, tfs)
  {FORWARD_OF.format(chunks="new_chunks")};
  INSERT INTO knowledge_termhead (term_id, impact, chunk_id)
  {HEADS_OF.format(chunks="new_chunks")};
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION knowledge_chunk_stats_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS _verity_removed_terms
    (workspace_id bigint, term text, n integer) ON COMMIT DROP;
  TRUNCATE _verity_removed_terms;
  INSERT INTO _verity_removed_terms
    SELECT d.workspace_id, t.lexeme, count(*)
    FROM old_chunks o JOIN knowledge_document d ON d.id = o.document_id,
         unnest(o.search_vector) t
    GROUP BY d.workspace_id, t.lexeme;
  -- Head rows by their full primary key: the impact is recomputed from tf and dl.
  DELETE FROM knowledge_termhead h
    USING ({HEADS_OF.format(chunks="old_chunks")}) o (term_id, impact, chunk_id)
    WHERE h.term_id = o.term_id AND h.impact = o.impact AND h.chunk_id = o.chunk_id;
  DELETE FROM knowledge_chunkterms f USING old_chunks o WHERE f.chunk_id = o.id;
  PERFORM 1 FROM knowledge_termstat s
    JOIN _verity_removed_terms r ON r.workspace_id = s.workspace_id AND r.term = s.term
    ORDER BY s.workspace_id, s.term FOR UPDATE OF s;
  UPDATE knowledge_termstat s SET df = s.df - r.n
    FROM _verity_removed_terms r
    WHERE r.workspace_id = s.workspace_id AND r.term = s.term;
  UPDATE knowledge_corpusstat c SET chunks = c.chunks - r.chunks, terms = c.terms - r.terms
    FROM (SELECT d.workspace_id, count(*) AS chunks, coalesce(sum(o.term_count), 0) AS terms
          FROM old_chunks o JOIN knowledge_document d ON d.id = o.document_id
          GROUP BY d.workspace_id) r
    WHERE c.workspace_id = r.workspace_id;
  RETURN NULL;
END $$;
"""

BACKFILL = f"""
INSERT INTO knowledge_chunkterms (chunk_id, dl, term_ids, tfs)
{FORWARD_OF.format(chunks="knowledge_chunk")};
INSERT INTO knowledge_termhead (term_id, impact, chunk_id)
{HEADS_OF.format(chunks="knowledge_chunk")};
DROP TABLE knowledge_posting;
"""

# Backwards: 0004's table, functions and backfill.
UNDO = (
    """
CREATE TABLE knowledge_posting (
  term_id bigint NOT NULL, chunk_id bigint NOT NULL, tf integer NOT NULL,
  dl integer NOT NULL, impact double precision NOT NULL, PRIMARY KEY (term_id, chunk_id)
);
CREATE INDEX posting_term_impact ON knowledge_posting (term_id, impact DESC)
  INCLUDE (chunk_id, tf, dl);
"""
    + PREVIOUS.FUNCTIONS
    + ";\n"
    + PREVIOUS.BACKFILL
    + ";"
)


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0008_document_outcome")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(TABLES, DROP_TABLES)],
            state_operations=[
                migrations.CreateModel(
                    name="ChunkTerms",
                    fields=[
                        (
                            "chunk",
                            models.OneToOneField(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="knowledge.chunk",
                            ),
                        ),
                        ("dl", models.IntegerField()),
                        (
                            "term_ids",
                            django.contrib.postgres.fields.ArrayField(
                                base_field=models.BigIntegerField(), size=None
                            ),
                        ),
                        (
                            "tfs",
                            django.contrib.postgres.fields.ArrayField(
                                base_field=models.SmallIntegerField(), size=None
                            ),
                        ),
                    ],
                    options={
                        "indexes": [
                            django.contrib.postgres.indexes.GinIndex(
                                fields=["term_ids"], name="chunkterms_term_ids_gin"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TermHead",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "term_id", "impact", "chunk_id", blank=True, editable=False,
                                primary_key=True, serialize=False,
                            ),
                        ),
                        ("impact", models.FloatField()),
                        (
                            "chunk",
                            models.ForeignKey(
                                db_constraint=False,
                                db_index=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="knowledge.chunk",
                            ),
                        ),
                        (
                            "term",
                            models.ForeignKey(
                                db_constraint=False,
                                db_index=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="knowledge.termstat",
                            ),
                        ),
                    ],
                ),
            ],
        ),
        migrations.RunSQL(FUNCTIONS, PREVIOUS.FUNCTIONS),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(BACKFILL, UNDO)],
            state_operations=[migrations.DeleteModel(name="Posting")],
        ),
    ]

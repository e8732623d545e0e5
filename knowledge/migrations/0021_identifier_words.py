r"""Code identifiers in the keyword index: by their parts as well as whole.

PostgreSQL's default parser keeps `renderPdf`, `HTTPServer` and `InvoiceRenderer.renderPdf`
(a "host" to it) as one lexeme each, so "render pdf", "invoice renderer" and even
`InvoiceRenderer` alone missed a chunk naming only `InvoiceRenderer.renderPdf`.
Chunk.search_vector becomes verity_tsvector(): the text's own lexemes, unchanged and
at their own positions, then those of its identifiers' words, appended after the text:
each dotted name's (or path's) components, and each camelCase / PascalCase /
acronym-boundary word split (`HTTPServer`: HTTP Server; `parseJSON2`: parse JSON2;
`utf8Decode`: utf8 Decode; `RNAs` and `IL28B` stay whole). snake_case needs nothing:
`_` already separates words. Appending, rather than inserting after each identifier,
keeps every phrase of the text matching as before.

term_count (BM25's document length) is not changed: it still counts the text's own
words. The parts are other spellings of words already counted, not more text (as
Lucene's BM25 discounts tokens stacked on a position), so a code chunk does not read
as longer, and score lower, than prose of the same length; prose lengths and the
workspace's average stay exactly as they were.

Changing a stored generated column's expression means dropping and adding it: a
rewrite of knowledge_chunk (every index rebuilt, the HNSW ones included) under an
ACCESS EXCLUSIVE lock. The statement-level triggers do not fire on that, so TermStat,
CorpusStat, ChunkTerms and TermHead are then rebuilt from the new vectors, in the same
transaction: searches and indexing wait for the migration and then see it whole.
Reversible the same way.

Both columns read the text as verity_normalize() gives it: NFKC (a decomposed
`U\u0308nicode`, as macOS names and PDFs write it, is `Ünicode`; `ﬁle` is `file`, a
full-width `Ｆｕｌｌ` is `Full`) with Unicode's default-ignorable characters removed
(soft hyphens, zero-width spaces and joiners, word joiners, BOMs, variation selectors),
so `Zero\u200bwidth` is the word `Zerowidth`, as ICU's and Lucene's nfkc_cf read it.
PostgreSQL's parser takes such characters for letters: the word was `zero\u200bwidth`,
found by no query. The stored text is not changed (citations point into it by
character offsets); search normalizes each query with the same function. term_count
counts the normalized text's words, as the vector holds them: both columns are added
in one ALTER TABLE, one rewrite. Casefolding is left to to_tsvector's lowercasing
(identifiers' case boundaries are read before it).

The functions use SQL-standard bodies (PostgreSQL 14+): resolved when created, so a
pg_restore (which empties search_path while it recomputes generated columns) finds
verity_identifier_words.
"""

import importlib

import django.contrib.postgres.search
from django.db import migrations, models

import knowledge.models

COMPACT = importlib.import_module("knowledge.migrations.0009_compact_postings")

# A case boundary inside a word: lower then upper (renderPdf, iPhone), or an acronym
# or a number before a capitalised word (HTTPServer, utf8Decode). Two lower-case
# letters at least after the capital, so that plurals stay whole (RNAs, URLs).
BOUNDARY = r"[[:lower:]][[:upper:]]|[[:upper:][:digit:]][[:upper:]][[:lower:]]{2}"
SPLIT = (
    r"regexp_replace(regexp_replace(c.component, '([[:lower:]])([[:upper:]])', '\1 \2', 'g'),"
    r" '([[:upper:][:digit:]])([[:upper:]][[:lower:]]{2})', '\1 \2', 'g')"
)

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters
# that show nothing, removed as ICU's nfkc_cf removes them. knowledge.search normalizes
# queries with verity_normalize() itself, so both sides read text alike.
IGNORABLE = (
    r"[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F"
    r"\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8"
    r"\U0001BCA0-\U0001BCA3\U0001D173-\U0001D17A\U000E0000-\U000E0FFF]"
)

# Token types of PostgreSQL's default parser (the english configuration's): 1-3
# words (ascii, letters, letters and digits), 6 host, 19 file. A host or a file
# (`InvoiceRenderer.renderPdf`, `os.path.join`, `src/billing/render.py`) gives
# its components and their case words; a word its case words only, being indexed
# whole already. Words of one letter (the m of mRNA) and numbers are left out.
# Each identifier's words are set apart from the next's, and from the text, by a stop
# word (SEPARATOR), which takes a position and is not indexed: appended one after
# another, the last word of one identifier and the first of the next made a phrase
# ("bar baz" from `fooBar … bazQux`) the text never had.
SEPARATOR = " and "
FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION verity_identifier_words(document text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
  SELECT coalesce(string_agg(g.words, '{SEPARATOR}' ORDER BY g.n), '')
  FROM (
  SELECT p.n, string_agg(w.word, ' ' ORDER BY w.n) AS words
  FROM ts_parse('default', document) WITH ORDINALITY AS p(tokid, token, n)
  CROSS JOIN LATERAL (
    SELECT c.component AS word, c.n * 1000 AS n
    FROM regexp_split_to_table(p.token, '[^[:alnum:]]+') WITH ORDINALITY AS c(component, n)
    WHERE p.tokid IN (6, 19)
    UNION ALL
    SELECT s.part, c.n * 1000 + s.n
    FROM regexp_split_to_table(p.token, '[^[:alnum:]]+') WITH ORDINALITY AS c(component, n),
         regexp_split_to_table({SPLIT}, ' ') WITH ORDINALITY AS s(part, n)
    WHERE c.component ~ '{BOUNDARY}'
  ) w
  WHERE (p.tokid IN (6, 19) OR (p.tokid IN (1, 2, 3) AND p.token ~ '{BOUNDARY}'))
    AND char_length(w.word) > 1 AND w.word ~ '[[:alpha:]]'
  GROUP BY p.n
  ) g
);

CREATE OR REPLACE FUNCTION verity_normalize(document text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(normalize(document, NFKC), '{IGNORABLE}', '', 'g');

CREATE OR REPLACE FUNCTION verity_tsvector(config regconfig, document text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
  SELECT to_tsvector(config, n.text || '{SEPARATOR}' || verity_identifier_words(n.text))
  FROM verity_normalize(document) AS n(text)
);
"""

DROP_FUNCTIONS = """
DROP FUNCTION verity_tsvector(regconfig, text);
DROP FUNCTION verity_identifier_words(text);
DROP FUNCTION verity_normalize(text);
"""

# The columns as Django writes the model's expressions (IdentifierSearchVector, and
# term_count over NormalizedText), and as they were (SearchVector, over the text): both
# added in one statement, one rewrite of the table.
COLUMN = """
ALTER TABLE knowledge_chunk DROP COLUMN search_vector, DROP COLUMN term_count;
ALTER TABLE knowledge_chunk
  ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS ({function}('english'::regconfig, COALESCE(text, ''::text))) STORED,
  ADD COLUMN term_count integer GENERATED ALWAYS AS (
    verity_term_count(to_tsvector('english'::regconfig, COALESCE({text}, ''::text)))
  ) STORED;
CREATE INDEX chunk_search_vector_gin ON knowledge_chunk USING gin (search_vector);
"""
FORWARD_COLUMNS = COLUMN.format(function="verity_tsvector", text="verity_normalize(text)")
BACKWARD_COLUMNS = COLUMN.format(function="to_tsvector", text="text")

# Every keyword statistic recounted from the chunks' vectors, as the triggers would
# have kept it had the chunks been inserted now. A term no chunk holds any more keeps
# its row at df 0, as the delete trigger leaves one. The forward rows' GIN index is
# built after the rows: one sorted build instead of an insert a row.
REBUILD = f"""
CREATE TEMP TABLE _verity_df ON COMMIT DROP AS
  SELECT c.workspace_id, t.lexeme AS term, count(*)::integer AS df
  FROM knowledge_chunk c, unnest(c.search_vector) t
  GROUP BY c.workspace_id, t.lexeme;
UPDATE knowledge_termstat s SET df = 0
  WHERE s.df <> 0 AND NOT EXISTS (
    SELECT FROM _verity_df r WHERE r.workspace_id = s.workspace_id AND r.term = s.term
  );
INSERT INTO knowledge_termstat (workspace_id, term, df)
  SELECT workspace_id, term, df FROM _verity_df ORDER BY workspace_id, term
  ON CONFLICT (workspace_id, term) DO UPDATE SET df = EXCLUDED.df
  WHERE knowledge_termstat.df <> EXCLUDED.df;
DROP TABLE _verity_df;
-- Chunk counts and lengths do not change (term_count is the text's own words); recounted
-- all the same, so that every statistic is the chunks' after this migration.
UPDATE knowledge_corpusstat s SET chunks = r.chunks, terms = r.terms
  FROM (SELECT workspace_id, count(*) AS chunks, coalesce(sum(term_count), 0) AS terms
        FROM knowledge_chunk GROUP BY workspace_id) r
  WHERE r.workspace_id = s.workspace_id AND (s.chunks, s.terms) <> (r.chunks, r.terms);
TRUNCATE knowledge_chunkterms, knowledge_termhead;
DROP INDEX chunkterms_term_ids_gin;
INSERT INTO knowledge_chunkterms (chunk_id, dl, term_ids, tfs)
{COMPACT.FORWARD_OF.format(chunks="knowledge_chunk")};
CREATE INDEX chunkterms_term_ids_gin ON knowledge_chunkterms USING gin (term_ids);
INSERT INTO knowledge_termhead (term_id, impact, chunk_id)
{COMPACT.HEADS_OF.format(chunks="knowledge_chunk")};
ANALYZE knowledge_termstat, knowledge_chunkterms, knowledge_termhead;
"""


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0020_folder_deleting_since")]

    operations = [
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(FORWARD_COLUMNS + REBUILD, BACKWARD_COLUMNS + REBUILD)
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="chunk",
                    name="search_vector",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=knowledge.models.IdentifierSearchVector(
                            "text", config="english"
                        ),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
                migrations.AlterField(
                    model_name="chunk",
                    name="term_count",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=models.Func(
                            django.contrib.postgres.search.SearchVector(
                                knowledge.models.NormalizedText("text"), config="english"
                            ),
                            function="verity_term_count",
                            output_field=models.IntegerField(),
                        ),
                        output_field=models.IntegerField(),
                    ),
                ),
            ],
        ),
    ]

"""Unicode normalization (and identifiers' words set apart) for a database that applied
0021 before 0021 had it.

0021 was changed before its release to read the text as verity_normalize() gives it
(NFKC, invisible characters removed) in both keyword columns, in the one rewrite of
knowledge_chunk it already makes. A database that ran the earlier 0021 (a development
copy) has the functions and columns without it: this brings it level, with 0021's own
statements (functions replaced, both columns re-made, keyword statistics rebuilt).
Anywhere else it reads two catalog entries and does nothing: a release adds no second
rewrite of the table, its HNSW indexes included.

Reversing it does nothing: 0021's reverse undoes both.
"""

import importlib

from django.db import migrations

IDENTIFIER_WORDS = importlib.import_module("knowledge.migrations.0021_identifier_words")

# Whether both columns already read the normalized text: the search vector through
# verity_tsvector's body, term_count by its own expression.
NORMALIZED = """
SELECT to_regprocedure('verity_normalize(text)') IS NOT NULL
   AND pg_get_functiondef('verity_tsvector(regconfig, text)'::regprocedure)
       LIKE '%verity_normalize(%'
   -- and each identifier's words set apart (0021's SEPARATOR)
   AND pg_get_functiondef('verity_identifier_words(text)'::regprocedure) LIKE '%GROUP BY%'
   AND coalesce((
       SELECT pg_get_expr(d.adbin, d.adrelid) LIKE '%verity_normalize(%'
       FROM pg_attrdef d JOIN pg_attribute a
         ON a.attrelid = d.adrelid AND a.attnum = d.adnum
       WHERE d.adrelid = 'knowledge_chunk'::regclass AND a.attname = 'term_count'
   ), false)
"""


def normalize(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(NORMALIZED)
        if cursor.fetchone()[0]:
            return
    sql = IDENTIFIER_WORDS.FUNCTIONS + IDENTIFIER_WORDS.FORWARD_COLUMNS + IDENTIFIER_WORDS.REBUILD
    # One statement at a time and no parameters, as RunSQL runs 0021's.
    for statement in schema_editor.connection.ops.prepare_sql_script(sql):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0023_sign_in_failures")]

    operations = [migrations.RunPython(normalize, migrations.RunPython.noop)]

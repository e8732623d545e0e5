"""The citation registry moves from the former `citations` app into `chat`.

The tables keep their names, so no data moves: the models enter chat's state
only, and the tables are created just where they do not exist yet (a new database).
"""

import django.db.models.deletion
from django.db import migrations, models


def create_missing_tables(apps, schema_editor) -> None:
    existing = set(schema_editor.connection.introspection.table_names())
    for name in ("CitationRegistry", "CitationEntry"):
        model = apps.get_model("chat", name)
        if model._meta.db_table not in existing:
            schema_editor.create_model(model)


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0001_initial'),
        ('knowledge', '0006_chunk_workspace'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='CitationRegistry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('next_n', models.PositiveIntegerField(default=1)),
                        ('thread', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='citation_registry', to='chat.thread')),
                    ],
                    options={'db_table': 'citations_citationregistry'},
                ),
                migrations.CreateModel(
                    name='CitationEntry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('n', models.PositiveIntegerField()),
                        ('source_key', models.CharField(max_length=300)),
                        ('source_type', models.CharField(choices=[('kb_chunk', 'Kb Chunk'), ('kb_document', 'Kb Document'), ('chat_turn', 'Chat Turn'), ('web_result', 'Web Result')], max_length=20)),
                        ('locator', models.JSONField(default=dict)),
                        ('display', models.JSONField(default=dict)),
                        ('text', models.TextField()),
                        ('content_hash', models.CharField(max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('chunk', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='knowledge.chunk')),
                        ('document', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='knowledge.document')),
                        ('registry', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='chat.citationregistry')),
                    ],
                    options={
                        'db_table': 'citations_citationentry',
                        'ordering': ['registry_id', 'n'],
                        'constraints': [models.UniqueConstraint(fields=('registry', 'n'), name='citation_unique_number'), models.UniqueConstraint(fields=('registry', 'source_key'), name='citation_unique_key')],
                    },
                ),
            ],
        ),
        migrations.RunPython(create_missing_tables, migrations.RunPython.noop),
    ]

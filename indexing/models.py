from django.db import models
from pgvector.django import VectorField


class EmbeddingCacheEntry(models.Model):
    """Embeddings keyed by (model, sha256 of the text): identical text is embedded once."""

    model = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    # sha256 of model id and text, as the chunks embedded from it record it
    # (Chunk.embed_hash): how `prune_unused` finds the entries no chunk uses.
    # Entries stored before it was kept have "".
    embed_hash = models.CharField(max_length=64, blank=True, default="", db_default="")
    # No fixed size: entries of models with different sizes live side by side.
    embedding = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "content_hash"], name="embedding_cache_key")
        ]

    def __str__(self) -> str:
        return f"{self.model}:{self.content_hash[:12]}"

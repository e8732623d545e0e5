from django.db import models
from pgvector.django import VectorField


class EmbeddingCacheEntry(models.Model):
    """Embeddings keyed by (model, sha256 of the text): identical text is embedded once."""

    model = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    # No fixed size: entries of models with different sizes live side by side.
    embedding = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "content_hash"], name="embedding_cache_key")
        ]

    def __str__(self) -> str:
        return f"{self.model}:{self.content_hash[:12]}"

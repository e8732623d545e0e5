"""What every client of a remote service (models, embedders, rerankers, web search)
shares: reading a response within a time and a byte budget."""

from .transport import BoundedTransport, bounded_client

__all__ = ["BoundedTransport", "bounded_client"]

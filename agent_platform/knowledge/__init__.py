"""Knowledge bases: admin-managed documents, chunked and searched by the ``query_kb`` tool."""

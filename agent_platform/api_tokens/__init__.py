"""Bearer tokens for non-browser clients: the table (only each token's SHA-256 is stored)."""

"""Summaries: where the fold ends, what stays verbatim (tail, pins), the summary call, its history file, identifiers and the loss report, error texts, dropping and the spend guard's arithmetic."""

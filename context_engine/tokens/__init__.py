"""Token measurement: text estimation, per-tokenizer profiles, message and request estimates, calibration to reported usage, provider-usage arithmetic."""

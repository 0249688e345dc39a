"""What operators watch: Prometheus metrics and the ids that tag every log line."""

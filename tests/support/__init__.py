"""Helpers every kind of test imports (``from tests.support.slack_events import ...``): Slack
envelopes, Hypothesis strategies, a real redis-server, the query server, Debian binaries."""

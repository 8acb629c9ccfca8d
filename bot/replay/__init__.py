"""The replay harness: loopback fakes of the Slack Web API and the Messages API, the offline
model, fixture loading, replay, record and the transcript. Production code never imports it;
only the CLI's replay, record and fakes commands do."""

from __future__ import annotations

__all__: list[str] = []

"""The Slack bot, in floors: each floor imports only from its own floor and the floors below.

0. ``slack`` (the Slack client), ``messages_api`` (the Messages API edge), ``stores``;
1. ``core`` (turns, the context engine, the runtime), ``playbooks``;
2. ``events`` (the Bolt app and its listeners), ``claude`` (the session), ``replicas``;
3. ``server`` (HTTP: events, query API, inspector), ``replay`` (fakes and offline runs);
4. ``launch`` (options, settings, wiring a run) and ``cli``.
"""

from __future__ import annotations

__all__: list[str] = []

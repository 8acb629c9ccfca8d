"""Every benchmark module and the RESULTS.md sections it writes: what ``python -m bench all`` runs.

Registering a module is one line here: ``"module": ("Section title", ...)``, the titles it
passes to ``bench._results.write_section``. tests/unit/bench/test_bench_registry.py fails when a module in
bench/ is missing here or a registered section is missing from RESULTS.md (it never runs a
benchmark). Order is the order ``all`` runs them: quick ones first.
"""

from __future__ import annotations

from typing import Final

BENCHES: Final[dict[str, tuple[str, ...]]] = {
    "thread_build": ("ThreadContext build time",),
    "tokens": ("Token counting",),
    "request_fit": ("Request fitting",),
    "media_tokens": ("Media",),
    "session_tokens": ("Claude session tokens",),
    "slack_edge": ("Slack edge",),
    "search_speed": ("Search speed",),
    "query_speed": ("Context query speed",),
    "playbook": ("Channel playbook",),
    "locomo": ("Search quality (LoCoMo)",),
    "locomo_store": ("Search quality (LoCoMo) from the store",),
    "index_build": ("Index built from the store",),
    "beyond_budget": ("Search beyond the budget",),
    "index_choice": ("Index choice",),
    "answer_path": ("Answer path", "Answer path served", "Answer path tool"),
    "durable": ("Memory under load (durable answering)",),
    "scale_out": ("Scale-out on Redis",),
    "memory": ("Memory per message and intake",),
    "store": ("Channel store",),
    "store_postgres": ("Channel store on PostgreSQL",),
    "store_served": ("Channel store served",),
    "startup": ("Restart to ready",),
    "store_restart": ("Channel store restart",),
    "ingest": ("Ingest over HTTP",),
    "import_export": ("Import",),
    "backfill": ("Backfill under Slack's tiers",),
    # Last: it draws the pictures from the tables the others wrote.
    "plots": ("Plots",),
}

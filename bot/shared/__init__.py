"""State shared by several replicas of one bot in Redis (``--redis-url``).

``link`` (the connection and its health), ``changes`` / ``feed`` (the change stream every
replica's channel state is fed from), ``turn_queue`` (taking turns from the shared queue),
``replicas`` (the pieces wired for the runtime), ``profiles`` and ``installations`` (the API
profiles and Slack's OAuth installations in Redis). The turn store and session logs themselves
live in ``manifest_store`` with their local twins.
"""

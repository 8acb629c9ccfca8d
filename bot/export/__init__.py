"""Reading a Slack workspace export (its ZIP or unpacked folder) safely, as a stream of records."""

from chanctx.bot.export.reader import (
    ExportChannel,
    ExportMessage,
    ExportUser,
    Problem,
    read_export,
)
from chanctx.bot.export.source import MemberRefused, NotAnExport, open_source

__all__ = [
    "ExportChannel",
    "ExportMessage",
    "ExportUser",
    "MemberRefused",
    "NotAnExport",
    "Problem",
    "open_source",
    "read_export",
]

"""Error type for bad input: the command line turns it into a message and exit status 2."""


class ReportError(Exception):
    """Input that cannot be used: malformed, of another schema version, mismatched runs, ..."""

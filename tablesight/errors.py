"""Errors that are the user's to fix: the command line prints them as one line and exits with status 2."""


class InputError(ValueError):
    """Bad input from the user (a file, an argument, an API request). The message names the field."""


class FormatError(InputError):
    """A file or document whose `format` string is missing, foreign, or of an unknown major version."""


class StorageError(OSError):
    """A change that could not be saved (the disk is full, the folder read-only): nothing was changed, the last
    saved state stands. The API answers 507, the command line prints one line and exits 1."""

"""Errors raised when a data file cannot be found, fetched or trusted."""

from __future__ import annotations


class DataNotFoundError(FileNotFoundError):
    """A data file is in none of the places searched and could not be downloaded."""


class ChecksumError(ValueError):
    """A data file's size or sha256 differs from the pinned one; the file was not used."""

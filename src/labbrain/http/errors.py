"""The HTTP endpoint's one error shape, and the status of every labbrain error.

Every error answer is JSON of the same shape, whatever raised it::

    {"error": {"status": 400, "type": "QuerySyntaxError",
               "message": "SPARQL syntax error (line 1, column 10): ...",
               "line": 1, "column": 10}}

``line`` and ``column`` (1-based) are null unless the error is at a place in the query. No
traceback and no server path ever goes into an answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from labbrain.errors import (
    DatasetNotFound,
    GraphNotFound,
    InputError,
    InvalidArgument,
    ItemNotFound,
    LabbrainError,
    NodeNotFound,
    QueryError,
    QueryNotAllowed,
    QuerySyntaxError,
    QueryTimeout,
    StoreError,
    StoreReadOnly,
)

ERROR_MEDIA_TYPE = "application/json"


class HttpError(Exception):
    """An error of the HTTP protocol itself (bad parameters, media types, Host, size, auth):
    it has a status of its own. ``type`` names the condition in the JSON body."""

    def __init__(
        self,
        status: int,
        type: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = dict(headers or {})


#: Status of each library error, most specific first (the first isinstance match wins).
_STATUS: tuple[tuple[type[LabbrainError], int], ...] = (
    (QuerySyntaxError, 400),
    (QueryNotAllowed, 403),
    (QueryTimeout, 503),
    (StoreReadOnly, 403),
    (GraphNotFound, 404),
    (NodeNotFound, 404),
    (DatasetNotFound, 404),
    (ItemNotFound, 404),
    (InputError, 400),
    (InvalidArgument, 400),
    (QueryError, 400),
    (StoreError, 503),
)


def status_of(error: LabbrainError) -> int:
    """The HTTP status a library error is answered with (500 for any not listed)."""
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return status
    return 500


def error_body(
    status: int, type: str, message: str, line: int | None = None, column: int | None = None
) -> bytes:
    """The JSON error document."""
    error: dict[str, Any] = {
        "status": status,
        "type": type,
        "message": message,
        "line": line,
        "column": column,
    }
    return json.dumps({"error": error}, ensure_ascii=False).encode("utf-8")


def error_response(
    status: int,
    type: str,
    message: str,
    *,
    line: int | None = None,
    column: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """An error answer in the one JSON shape."""
    return Response(
        error_body(status, type, message, line, column),
        status_code=status,
        media_type=ERROR_MEDIA_TYPE,
        headers=dict(headers or {}),
    )


def from_http_error(error: HttpError) -> Response:
    """The answer to a protocol error."""
    return error_response(error.status, error.type, error.message, headers=error.headers)


def from_library_error(error: LabbrainError) -> Response:
    """The answer to a library error, with the query position of a syntax error."""
    status = status_of(error)
    headers = {"Retry-After": "1"} if isinstance(error, QueryTimeout) else None
    if isinstance(error, QuerySyntaxError):
        return error_response(
            status, type(error).__name__, str(error), line=error.line, column=error.column
        )
    return error_response(status, type(error).__name__, str(error), headers=headers)

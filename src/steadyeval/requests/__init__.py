"""Requests as data: kinds and content keys (the run deduplicates them: ``steadyeval.run``)."""

from ._request import (
    REQUEST_KINDS,
    ClassifyRequest,
    ClassifyResponse,
    GenerateRequest,
    GenerateResponse,
    Request,
    RequestKind,
    Response,
    ScoreRequest,
    ScoreResponse,
    TopKRequest,
    TopKResponse,
    request_key,
    request_payload,
    response_from_dict,
    response_to_dict,
)

__all__ = [
    "REQUEST_KINDS",
    "ClassifyRequest",
    "ClassifyResponse",
    "GenerateRequest",
    "GenerateResponse",
    "Request",
    "RequestKind",
    "Response",
    "ScoreRequest",
    "ScoreResponse",
    "TopKRequest",
    "TopKResponse",
    "request_key",
    "request_payload",
    "response_from_dict",
    "response_to_dict",
]

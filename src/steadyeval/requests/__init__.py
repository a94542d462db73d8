"""Requests as data: kinds, content keys, planning and deduplication."""

from ._plan import Plan, PlannedTrial, build_plan
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
    "Plan",
    "PlannedTrial",
    "Request",
    "RequestKind",
    "Response",
    "ScoreRequest",
    "ScoreResponse",
    "TopKRequest",
    "TopKResponse",
    "build_plan",
    "request_key",
    "request_payload",
    "response_from_dict",
    "response_to_dict",
]

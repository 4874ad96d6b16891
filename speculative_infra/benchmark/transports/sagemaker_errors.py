"""SageMaker runtime errors to failure classes, shared by the boto3 and the asyncio transports.

Nothing here imports boto3 or aiohttp: each transport extracts the error code, HTTP status and message
from its own response object and asks the same question.
"""

from __future__ import annotations

from ..failures import Failure, FailureClass

THROTTLING_CODES = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded", "SlowDown"}
)
CREDENTIAL_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "ExpiredToken",
        "AccessDeniedException",
        "AccessDenied",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
    }
)
STREAM_ERROR_CLASSES = {
    "ModelStreamError": FailureClass.MODEL_STREAM_ERROR,
    "InternalStreamFailure": FailureClass.INTERNAL_STREAM_FAILURE,
}


def classify_sagemaker_error(code: str, status: int, message: str, original_status: object = None) -> Failure:
    """A SageMaker runtime error (HTTP error response or stream exception event) as a failure."""
    text = f"{code or 'HTTP ' + str(status)}: {message}".strip()
    if original_status is not None:
        text += f" (container status {original_status})"
    # Refused before any byte of the response: nothing was generated, a retry is safe.
    if code in THROTTLING_CODES or (status == 429 and code != "ModelNotReadyException"):
        return Failure(FailureClass.THROTTLED, text, retryable=True)
    if code == "ModelNotReadyException":
        return Failure(FailureClass.MODEL_NOT_READY, text, retryable=True)
    if code in STREAM_ERROR_CLASSES:
        return Failure(STREAM_ERROR_CLASSES[code], text)
    if code == "ModelError":
        return Failure(FailureClass.MODEL_ERROR, text)
    if code in CREDENTIAL_CODES or status == 403:
        return Failure(FailureClass.CREDENTIALS_ERROR, text)
    if code in ("InternalFailure", "ServiceUnavailable") or status >= 500:
        return Failure(FailureClass.SERVER_ERROR, text)
    return Failure(FailureClass.CLIENT_ERROR, text)

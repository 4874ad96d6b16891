"""Local stand-in servers with known timings, used by the tests and by benchmarks/.

One asyncio server speaks both protocols on one port, 127.0.0.1 only:

* OpenAI-compatible streaming: ``POST [/<scenario>]/v1/chat/completions`` and ``/v1/completions``.
* SageMaker runtime: ``POST /endpoints/<scenario>/invocations-response-stream`` answering with
  AWS's binary event-stream framing (PayloadPart / ModelStreamError / InternalStreamFailure), so
  boto3 pointed at it with ``endpoint_url`` runs its real parser.

A *scenario* is a named :class:`Behavior` (timings, errors, splitting). ``GET /_truth`` returns what
the server actually did for each request (receive time, first and last content write times on
the shared monotonic clock), which is the ground truth the engine's numbers are checked against.
"""

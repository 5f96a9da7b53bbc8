"""The one streaming chat client: HTTP, SSE parsing and timing for the playground and the
load benchmarks, so that the same code measures both.

Hot path (chosen by measurement, see benchmarks/client_cpu_per_token.py): one shared
`StreamClient` per run (a keep-alive pool of asyncio protocol connections whose HTTP/1.1 is
parsed by httptools), the SSE events split on blank lines, one JSON parse per event, and per
content chunk only a timestamp, the text and its length appended to lists, all inside the
protocol's data_received callback. Everything derived (TTFT, inter-token gaps, token
spreading) is computed once, after the stream ends.

Timing: `time.perf_counter` at the send and at each content chunk's arrival (the role-only
chunk and the usage trailer carry no content). TTFT, ITL, TPOT and E2E are derived from
those times and the usage by services/core/measure.py, the one definition every page uses
(`StreamResult.metrics()`); `ttft_s` and `e2e_s` are also kept live for the Playground.

One request's failure never raises: `stream_chat` returns a `StreamResult` with ok=False,
an `error_class` (keys of `ERROR_CLASSES`) and a plain-words `error`.

The parts, by concept:
  records    ChatRequest, StreamResult and ChoiceStream, ERROR_CLASSES
  request    the URL, body and headers of a request (and the openai SDK's arguments for it)
  stream     reading one response as it arrives: httptools callbacks, SSE, the hot path
  transport  the connection pool and `stream_chat`
  running    the fast event loop, one request or a batch with a client of their own
  snippets   "copy as curl / python"
"""

from services.client.records import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TOTAL_TIMEOUT_S,
    ERROR_CLASSES,
    ChatRequest,
    ChoiceStream,
    DeltaCallback,
    StreamResult,
    merge_choice_usage,
)
from services.client.request import build_body, build_headers, chat_url, request_url
from services.client.running import new_event_loop, run_blocking, run_chat, run_many
from services.client.snippets import as_curl, as_openai_python
from services.client.transport import StreamClient, classify_exception, make_http_client, stream_chat

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TOTAL_TIMEOUT_S",
    "ERROR_CLASSES",
    "ChatRequest",
    "ChoiceStream",
    "DeltaCallback",
    "StreamClient",
    "StreamResult",
    "as_curl",
    "as_openai_python",
    "build_body",
    "build_headers",
    "chat_url",
    "classify_exception",
    "make_http_client",
    "merge_choice_usage",
    "new_event_loop",
    "request_url",
    "run_blocking",
    "run_chat",
    "run_many",
    "stream_chat",
]

// The relay stage: the forward stage's answer back to the client, and the closed loop — the
// Router learns what the engine reported (first token, cached tokens) and when the request ended.
//
//   no engine answer   the error response as the forward stage made it
//   a whole response   sent with its status, content type and end-to-end headers; a 200's
//                      `usage` closes the loop; a status of 400 or above fails the request in the
//                      Router
//   an SSE stream      passed on piece by piece as it arrives; the first output is the first
//                      token (the Router's, and the gateway's TTFT: the first piece of a chat
//                      stream, the first event after a Responses or Messages stream's
//                      announcement, net/usage_tap.h); the usage chunk
//                      (net/usage_tap.h) closes the loop, and is dropped when the gateway added
//                      include_usage. An upstream that fails mid-stream ends the client's stream
//                      with an SSE error event and the connection is cut (the one place a relay
//                      failure becomes an answer; never a hang: idle_stream bounds every wait).
// Engine answers carry x-warmroute-backend and x-warmroute-reason when response_headers is on.
// A client that goes away cancels the handler: the upstream exchange is destroyed mid-body,
// which closes its connection, and vLLM aborts the request and frees its KV blocks.
//
// Thread-safety: a coroutine on the worker's thread.
#pragma once

#include "gateway/proxy/admit.h"
#include "gateway/proxy/call_record.h"
#include "gateway/proxy/forward.h"
#include "gateway/proxy/proxy_context.h"
#include "net/http1/response_writer.h"
#include "net/task.h"

namespace warmroute::gateway {

// Sends `forwarded` to the client through `writer` (taking what it holds). Records the status,
// first byte, usage and any failure in `call`. REQUIRES: `forwarded`, `admitted` and `call`
// outlive the relay (the caller awaits it).
net::Task<void> Relay(const ProxyContext& context, const ProxySettings& settings,
                      Forwarded& forwarded, Admitted& admitted, net::ResponseWriter& writer,
                      Call& call);

}  // namespace warmroute::gateway

// Writing a buffer sequence whole to a TLS stream (Beast's ssl_stream): the server's response
// writes and the client's request writes over TLS both go through it.
//
// Why not simply asio::async_write(stream, buffers): ssl_stream writes through Beast's
// flat_stream, which copies a write's leading buffers into one (so a head and a small body go
// out as one TLS record) as long as they fit in 16 KB. In Boost 1.81 it writes nothing when a
// sequence's first buffer is empty and the next one is larger than 16 KB. asio::async_write of
// two buffers hands it exactly that once the first buffer is written (the first buffer's empty
// rest, then the second), and a write of nothing ends asio::async_write early, reporting
// success. A head and a body over 16 KB thus sent the head alone: the client waited for a body
// that never came. So a sequence that flat_stream takes whole in one write (at most 16 KB) is
// written as before, and a larger one one buffer at a time, never handing flat_stream an empty
// first buffer.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffer_traits.hpp>
#include <boost/beast/core/detail/flat_stream.hpp>
#include <boost/system/error_code.hpp>

#include "net/task.h"

namespace warmroute::net {

// Sequences up to this size go to flat_stream whole. It copies at most its max_size (a buffer
// sequence no larger is one record of one write); anything larger would risk the bug above.
inline constexpr size_t kTlsCoalesceBytes = 16 * 1024;
static_assert(kTlsCoalesceBytes <= boost::beast::detail::flat_stream_base::max_size,
              "WriteTls relies on flat_stream writing a sequence of this size in one go");

// Writes every byte of `buffers` to `stream` (a beast::ssl_stream), under whatever expiry the
// caller armed; returns the first error.
template <typename TlsStream, typename Buffers>
Task<boost::system::error_code> WriteTls(TlsStream& stream, const Buffers& buffers) {
  constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable_t<Executor>{});
  if (boost::beast::buffer_bytes(buffers) <= kTlsCoalesceBytes) {
    auto [ec, n] = co_await boost::asio::async_write(stream, buffers, kTuple);
    co_return ec;
  }
  for (auto it = boost::asio::buffer_sequence_begin(buffers);
       it != boost::asio::buffer_sequence_end(buffers); ++it) {
    const boost::asio::const_buffer buffer(*it);
    if (buffer.size() == 0) continue;
    // One buffer: flat_stream never sees an empty one (asio advances past what was written).
    auto [ec, n] = co_await boost::asio::async_write(stream, buffer, kTuple);
    if (ec) co_return ec;
  }
  co_return boost::system::error_code{};
}

}  // namespace warmroute::net

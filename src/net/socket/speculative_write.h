// One non-blocking attempt to write a buffer sequence whole, before any asynchronous write: on a
// healthy connection the kernel takes it at once, so no reactor round trip happens and no
// timeout needs arming. The server's response writes and the client's request writes both start
// with it.
//
// Usage (the socket in non-blocking mode, set once per connection):
//   beast::error_code ec;
//   auto rest = WriteWhatFits(socket, buffers, ec);
//   if (ec) ...;                                    // a real failure (never would_block)
//   if (beast::buffer_bytes(rest) > 0) co_await asio::async_write(stream, rest, ...);
#pragma once

#include <boost/asio/error.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/system/error_code.hpp>

namespace warmroute::net {

// Returns what the kernel did not take (empty when it took everything); sets `ec` only on a real
// failure.
template <typename Socket, typename Buffers>
boost::beast::buffers_suffix<Buffers> WriteWhatFits(Socket& socket, const Buffers& buffers,
                                                    boost::system::error_code& ec) {
  const size_t written = socket.write_some(buffers, ec);
  if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) ec = {};
  boost::beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(ec ? 0 : written);
  return rest;
}

}  // namespace warmroute::net

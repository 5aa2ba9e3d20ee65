#pragma once

// The readable bytes of a Beast flat_buffer as a string_view: what the HTTP/1.1 parsers
// (net/http1_*_parser.h) are fed.

#include <boost/beast/core/flat_buffer.hpp>
#include <string_view>

namespace warmroute::net {

inline std::string_view BufferView(const boost::beast::flat_buffer& buffer) {
  const auto data = buffer.data();
  return {static_cast<const char*>(data.data()), data.size()};
}

}  // namespace warmroute::net

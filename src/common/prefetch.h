// A software prefetch the compiler cannot delete.
//
// GCC 12 takes a function whose only effects are __builtin_prefetch and loads for "looping
// pure" (-fipa-pure-const), and then deletes every call of it whose result is unused, which is
// every call of a function returning void: a prefetch helper that is not inlined silently
// prefetches nothing. (PrefixIndex's table prefetches were lost that way: the object code of
// its Insert and Remove had no prefetch instruction.) The empty volatile asm is an effect the
// analysis must keep; it emits no instruction and, without a memory clobber, does not order
// loads or stores around it.
//
// Usage:
//   PrefetchForRead(&slots[home]);   // a hint: the line is wanted soon; never faults
//
// Thread-safety: a hint only, reads nothing.
#pragma once

namespace warmroute {

inline void PrefetchForRead(const void* address) {
  __builtin_prefetch(address);
  asm volatile("");
}

}  // namespace warmroute

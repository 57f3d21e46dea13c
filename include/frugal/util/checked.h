// Size and offset arithmetic on untrusted input. Every parser computes offsets, element counts and
// byte sizes from numbers a file declares; an overflow there is bad input, never a wrap-around.
// The helpers throw Error(invalid) naming `where` (the file, entry or field being parsed).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "frugal/util/error.h"

namespace frugal {

[[noreturn]] void fail_overflow(const std::string& where, const std::string& what);

// a + b, or Error(invalid) when it does not fit T.
template <class T>
T checked_add(T a, T b, const std::string& where, const char* what = "a size") {
  static_assert(std::is_integral_v<T>);
  T r{};
  if (__builtin_add_overflow(a, b, &r)) fail_overflow(where, what);
  return r;
}

// a * b, or Error(invalid) when it does not fit T.
template <class T>
T checked_mul(T a, T b, const std::string& where, const char* what = "a size") {
  static_assert(std::is_integral_v<T>);
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) fail_overflow(where, what);
  return r;
}

// v converted to To, or Error(invalid) when it does not fit (e.g. a 64-bit declared size into
// size_t on a 32-bit host, or a negative dimension into an unsigned count).
template <class To, class From>
To checked_cast(From v, const std::string& where, const char* what = "a size") {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  To r{};
  if (__builtin_add_overflow(v, From{0}, &r)) fail_overflow(where, what);
  return r;
}

// True when [offset, offset + size) lies inside [0, limit), computed without wrapping.
inline bool range_inside(std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

}  // namespace frugal

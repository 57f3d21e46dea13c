// A parquet file's footer checked before Arrow parses it (issue 47). The footer is Thrift's compact
// encoding of FileMetaData, and Thrift's C++ reader expands it without bound: a column chunk of 3
// bytes becomes a struct of about 700 (a footer of 3 MB declaring 1,000 row groups of 1,000 columns
// took 725 MB, one of 12 MB 2.8 GB), and a list is allocated for the count it declares before its
// elements are read (a footer of 32 bytes declaring a million column chunks took 683 MB). Arrow's
// own limits (a million elements a list, 100 MB a string) bound neither.
//
// So the footer is walked first, allocating nothing: its length is capped, every list's declared
// count must fit in the bytes left and within Thrift's container limit, and what Thrift will
// allocate for it is counted and capped: every list element as parquet_plugin::kFooterStructBytes,
// at least the largest parquet struct (Thrift's generated code allocates a known field's elements
// as its schema types them, whatever the list's header says), and every string as its bytes. The
// walk knows no field's meaning beyond the row groups and their column chunks, counted for messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace frugal {

class ByteSource;

// What a footer holds, as the walk counted it.
struct ParquetFooterCensus {
  std::uint64_t footer_bytes = 0;
  std::uint64_t memory = 0;         // what Thrift's reader will allocate for it, at most
  std::uint64_t row_groups = 0;     // FileMetaData.row_groups
  std::uint64_t column_chunks = 0;  // RowGroup.columns, all row groups together
};

// The walk over a footer's Thrift bytes (without the length and magic): its census, or nullopt
// with `why` set when the bytes are no complete compact-encoded struct within the limits
// (parquet_plugin.h's footer constants); over the memory limit, the census so far (its memory over
// kMaxFooterMemory) with `why` set. Allocates nothing (the fuzz target's entry).
std::optional<ParquetFooterCensus> walk_parquet_footer(std::string_view thrift, std::string& why);

// The footer of `src` checked before Arrow opens it: Error(invalid) naming `display` when it is no
// parquet footer, Error(unsupported) for an encrypted one, Error(budget) when it is longer than
// kMaxFooterBytes or would take more than kMaxFooterMemory to parse.
ParquetFooterCensus check_parquet_footer(const ByteSource& src, const std::string& display);

}  // namespace frugal

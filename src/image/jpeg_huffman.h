// A faster entropy decoder for Huffman-coded 8-bit JPEGs: baseline ones with one interleaved scan
// (restart markers or not), and the scans of progressive ones that have no restart markers. It
// takes the place of libjpeg-turbo's decode_mcu in the decompressor, so everything else (DCT scaling,
// cropping, skipping rows, IDCT, upsampling, colour) stays libjpeg's, and for any stream it
// decodes the coefficients are the ones libjpeg would produce: a test holds the two paths equal.
//
// Why hand-written: the loader spent 60% of its time in libjpeg-turbo 2.1's Huffman decoders
// (40% baseline, 20% for the 10% of photos that are progressive), which refill their bit buffer a
// byte at a time (checking each for 0xFF) and look each symbol up before reading the
// coefficient's bits separately. This one removes the byte stuffing once per scan, refills 64 bits
// with one load, and decodes most baseline AC coefficients (code and value together up to 10 bits)
// with one table lookup.
//
// It gives up on anything but a clean stream (a code no table holds, a coefficient past the
// block's end, data that ends or meets a marker too early, restart markers out of turn): the
// caller then decodes the image again with libjpeg's own decoder, which reports or tolerates the
// damage exactly as before.
#pragma once

#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>

#include <cstdint>

namespace frugal::detail {

// Installs the fast decoder on `cinfo` right after jpeg_start_decompress when the image qualifies
// (see above) and returns true; otherwise changes nothing and returns false. `give_up` must not
// return: it is called from inside libjpeg and leaves by the error manager's longjmp. Uses
// cinfo->client_data until the decompressor is aborted or finished; one decompressor per thread.
bool use_fast_huffman(j_decompress_ptr cinfo, void (*give_up)(j_decompress_ptr cinfo));

// The progressive counterpart: call from the progress monitor's first call in
// jpeg_start_decompress (before any scan is decoded; it decodes them all). Takes every scan
// without restart markers from then on; true when it took over. Only the blocks that output rows
// [0, rows_needed) depend on are decoded (with two iMCU rows to spare for upsampling and block
// smoothing); each scan's data below them is skipped to its end marker.
bool use_fast_progressive(j_decompress_ptr cinfo, void (*give_up)(j_decompress_ptr cinfo), JDIMENSION rows_needed);

// This thread's counts, for tests and benchmarks: images the fast decoder took, and gave up on.
struct FastHuffmanCounts {
  std::uint64_t used = 0, gave_up = 0;
  std::uint64_t skipped_mcus = 0;  // progressive MCUs below the rows needed, not decoded
};
FastHuffmanCounts& fast_huffman_counts();

}  // namespace frugal::detail

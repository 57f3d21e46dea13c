// The fast entropy decoder of jpeg_huffman.h. The decoding rules are libjpeg's (jdhuff.c):
// canonical Huffman codes from the DHT tables, DC as a difference from the previous block of the
// same component, AC as (zero run, size) symbols with ZRL (0xF0) and EOB (any other size-0
// symbol), values sign-extended as HUFF_EXTEND does, coefficients stored in natural order.
#include "image/jpeg_huffman.h"

#include <jpegint.h>  // struct jpeg_entropy_decoder: the decode_mcu we take the place of

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace frugal::detail {
namespace {

constexpr int kFastBits = 10;       // one lookup decodes codes (AC: code + value bits) up to this long
constexpr std::size_t kPad = 4096;  // zero bytes after the data: more than one MCU can read
constexpr std::int32_t kEndOfBlock = 1 << 12;
// A symbol's code and value bits take at most 16 + 11 (8-bit data: DC sizes up to 11, AC up to
// 10), so two symbols fit the 56 bits a refill leaves. A larger size gives up.
constexpr int kMaxSymbolBits = 27;

// Zigzag position -> natural position, with the same 16 spare entries libjpeg has, never used
// here (a coefficient past 63 gives up) but keeping every index in bounds.
constexpr std::array<std::uint8_t, 80> kNatural = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

struct Table {
  JHUFF_TBL source{};                                // what the tables below were built from
  std::array<std::uint16_t, 1 << kFastBits> fast{};  // (length << 8) | symbol; 0: longer code
  // AC symbols whose code and value bits fit kFastBits: (value << 16) | flags | (run << 8) |
  // length, with kEndOfBlock set for EOB and value 0 for ZRL (run 15); 0: decode the long way.
  std::array<std::int32_t, 1 << kFastBits> fast_ac{};
  std::array<std::uint32_t, 18> limit{};  // codes of length L are the 16-bit prefixes < limit[L]
  std::array<int, 18> offset{};           // symbol index = code + offset[L]
  std::array<std::uint8_t, 256> symbols{};
  bool built = false;
};

inline int extend(int v, int s) { return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v; }

void build(const JHUFF_TBL& h, bool ac, Table& t) {
  if (t.built && std::memcmp(t.source.bits, h.bits, sizeof h.bits) == 0 &&
      std::memcmp(t.source.huffval, h.huffval, sizeof h.huffval) == 0)
    return;
  t.source = h;
  t.fast.fill(0);
  t.fast_ac.fill(0);
  t.limit.fill(0);
  t.limit[17] = 0xFFFFFFFFu;  // stops the search: no code is 17 bits long
  std::copy(std::begin(h.huffval), std::end(h.huffval), t.symbols.begin());
  // libjpeg's jpeg_make_d_derived_tbl has already checked the table (no overfull lengths, at most
  // 256 symbols), so the canonical codes below fit their lengths.
  std::uint32_t code = 0;
  int index = 0;
  for (int len = 1; len <= 16; ++len) {
    const int count = h.bits[len];
    t.offset[len] = index - static_cast<int>(code);
    for (int i = 0; i < count; ++i, ++index, ++code) {
      if (len > kFastBits) continue;
      const std::uint8_t sym = h.huffval[index];
      const int shift = kFastBits - len;
      for (std::uint32_t e = code << shift; e < ((code + 1) << shift); ++e) {
        t.fast[e] = static_cast<std::uint16_t>((len << 8) | sym);
        const int run = sym >> 4, size = sym & 15;
        if (!ac || len + size > kFastBits) continue;
        if (size == 0) {
          t.fast_ac[e] = run == 15 ? (15 << 8) | len : kEndOfBlock | len;
        } else {
          const int bits = static_cast<int>(e >> (shift - size)) & ((1 << size) - 1);
          t.fast_ac[e] = static_cast<std::int32_t>(static_cast<std::uint32_t>(extend(bits, size)) << 16) | (run << 8) |
                         (len + size);
        }
      }
    }
    t.limit[len] = count ? code << (16 - len) : 0;
    code <<= 1;
  }
  t.built = true;
}

// The scan's state; lives in cinfo->client_data while the fast decoder is installed.
struct State {
  std::vector<std::uint8_t> data;  // the entropy-coded segment, unstuffed, then kPad zeros
  // Where each restart interval's data ends in `data` (bits): one entry without restart markers.
  std::vector<std::size_t> segment_ends;
  std::size_t segment = 0;                            // the interval being decoded
  unsigned restart_interval = 0, restarts_to_go = 0;  // MCUs per interval (0: none), left in this one
  const JOCTET* marker = nullptr;                     // where the segment ends in the source (at a marker)
  std::array<Table, NUM_HUFF_TBLS> dc, ac;
  const Table* dc_of[D_MAX_BLOCKS_IN_MCU] = {};
  const Table* ac_of[D_MAX_BLOCKS_IN_MCU] = {};
  int comp_of[D_MAX_BLOCKS_IN_MCU] = {};
  int last_dc[MAX_COMPS_IN_SCAN] = {};
  std::uint64_t bitbuf = 0;  // next bits at the top
  int bitcount = 0;          // valid bits in bitbuf
  std::size_t pos = 0;       // next byte of `data` to load
  long mcus_left = 0;
  long mcus_to_decode = 0;     // progressive: the MCUs after these are skipped
  JDIMENSION rows_needed = 0;  // progressive: output rows that must be exact
  unsigned eobrun = 0;         // progressive AC scans: blocks left in an end-of-band run
  void (*give_up)(j_decompress_ptr) = nullptr;
  void (*libjpeg_start_pass)(j_decompress_ptr) = nullptr;  // progressive: libjpeg's per-scan set-up
};

thread_local State t_state;
thread_local FastHuffmanCounts t_counts;

// The bit reader, kept in locals while one MCU is decoded.
struct Bits {
  const std::uint8_t* data;
  std::uint64_t buf;  // next bits at the top
  int count;          // valid bits in buf
  std::size_t pos;    // next byte of data to load

  // Refills to at least 56 valid bits with one unaligned load (Giesen's "variant 4"): the bits
  // below `count` come from bytes that the next refill loads again at the same place, and
  // pos * 8 - count stays the number of bits consumed.
  void refill() {
    std::uint64_t v;
    std::memcpy(&v, data + pos, 8);
    buf |= __builtin_bswap64(v) >> count;
    pos += (63 - count) >> 3;
    count |= 56;
  }
  void consume(int n) {
    buf <<= n;
    count -= n;
  }
  int take(int n) {  // n in [1, 16]
    const int v = static_cast<int>(buf >> (64 - n));
    consume(n);
    return v;
  }
  unsigned peek_fast() const { return static_cast<unsigned>(buf >> (64 - kFastBits)); }
};

[[noreturn, gnu::cold, gnu::noinline]] void stop(const State& s, j_decompress_ptr cinfo) {
  ++t_counts.gave_up;
  s.give_up(cinfo);
  __builtin_unreachable();
}

inline int decode_symbol(Bits& r, const Table& t, const State& s, j_decompress_ptr cinfo) {
  const std::uint16_t e = t.fast[r.peek_fast()];
  if (e) {
    r.consume(e >> 8);
    return e & 0xFF;
  }
  const std::uint32_t top = static_cast<std::uint32_t>(r.buf >> 48);
  int len = kFastBits + 1;
  while (top >= t.limit[len]) ++len;
  if (len > 16) stop(s, cinfo);  // no such code: libjpeg warns and decodes zeros
  const int code = static_cast<int>(top >> (16 - len));
  r.consume(len);
  return t.symbols[(code + t.offset[len]) & 0xFF];
}

// One more MCU of the scan done (decoded or skipped); after the last, the source moves on to the
// marker after the scan, where libjpeg's decoder would leave it.
inline void count_mcu(j_decompress_ptr cinfo, State& s) {
  if (--s.mcus_left == 0) {
    cinfo->src->bytes_in_buffer -= static_cast<std::size_t>(s.marker - cinfo->src->next_input_byte);
    cinfo->src->next_input_byte = s.marker;
  }
}

// The block's DC value: the decoded difference added to the component's previous one.
[[gnu::always_inline]] inline int next_dc(Bits& r, State& s, int b, j_decompress_ptr cinfo) {
  const int size = decode_symbol(r, *s.dc_of[b], s, cinfo);
  if (size > 11) stop(s, cinfo);
  int dc = s.last_dc[s.comp_of[b]];
  if (size) dc += extend(r.take(size), size);
  if (dc > (1 << 30) || dc < -(1 << 30)) stop(s, cinfo);  // only a corrupt stream gets here
  s.last_dc[s.comp_of[b]] = dc;
  return dc;
}

boolean finish_mcu(j_decompress_ptr cinfo, State& s, const Bits& r) {
  // Every bit read so far must have been this interval's data: past its end libjpeg reads zeros
  // and warns.
  if (r.pos * 8 - static_cast<std::size_t>(r.count) > s.segment_ends[s.segment]) stop(s, cinfo);
  s.bitbuf = r.buf;
  s.bitcount = r.count;
  s.pos = r.pos;
  count_mcu(cinfo, s);
  return TRUE;
}

// Baseline: every block's DC difference and its 63 AC coefficients.
boolean decode_mcu(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  State& s = *static_cast<State*>(cinfo->client_data);
  thread_local JBLOCK discard;  // jpeg_skip_scanlines passes no blocks: decode into this
  Bits r{s.data.data(), s.bitbuf, s.bitcount, s.pos};
  if (s.restart_interval != 0) {
    if (s.restarts_to_go == 0) {
      // A restart (jdhuff.c's process_restart): the rest of the interval's last byte is padding
      // (and any whole bytes left libjpeg skips with a warning); the next interval starts on a
      // byte, after its RSTn marker, with the DC predictions back at 0.
      if (++s.segment >= s.segment_ends.size()) stop(s, cinfo);  // no RSTn where one belongs
      r = Bits{s.data.data(), 0, 0, s.segment_ends[s.segment - 1] / 8};
      std::fill(std::begin(s.last_dc), std::end(s.last_dc), 0);
      s.restarts_to_go = s.restart_interval;
    }
    --s.restarts_to_go;
  }
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    JCOEF* block = blocks ? blocks[b][0] : discard;
    r.refill();
    block[0] = static_cast<JCOEF>(next_dc(r, s, b, cinfo));
    const Table& t = *s.ac_of[b];
    for (int k = 1; k < 64;) {
      if (r.count < kMaxSymbolBits) r.refill();
      const std::int32_t c = t.fast_ac[r.peek_fast()];
      if (c) {  // one lookup: a coefficient, a ZRL or the end of the block
        r.consume(c & 31);
        if (c & kEndOfBlock) break;
        k += (c >> 8) & 15;
        if (k > 63) {
          if ((c >> 16) == 0) break;  // a ZRL reaching the end: libjpeg stops there too
          stop(s, cinfo);
        }
        block[kNatural[k++]] = static_cast<JCOEF>(c >> 16);  // ZRL: a 0 where nothing was yet
        continue;
      }
      const int sym = decode_symbol(r, t, s, cinfo);
      const int run = sym >> 4, size = sym & 15;
      if (size == 0) {
        if (run != 15) break;  // end of block
        k += 16;
        continue;
      }
      k += run;
      if (k > 63 || size > 10) stop(s, cinfo);
      block[kNatural[k++]] = static_cast<JCOEF>(extend(r.take(size), size));
    }
  }
  return finish_mcu(cinfo, s, r);
}

// Progressive scans (jdphuff.c's four decoders). `Al` scales what a first scan decodes, and a
// refinement scan adds the bit Al of values already known.
inline JCOEF shifted(int v, int al) { return static_cast<JCOEF>(static_cast<unsigned>(v) << al); }

// An MCU below the rows needed: nothing decoded, and at the scan's end the source moves on to the
// next marker as after a decoded scan.
inline bool skip_mcu(j_decompress_ptr cinfo, State& s) {
  if (s.mcus_to_decode > 0) {
    --s.mcus_to_decode;
    return false;
  }
  ++t_counts.skipped_mcus;
  count_mcu(cinfo, s);
  return true;
}

boolean decode_dc_first(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  State& s = *static_cast<State*>(cinfo->client_data);
  if (skip_mcu(cinfo, s)) return TRUE;
  Bits r{s.data.data(), s.bitbuf, s.bitcount, s.pos};
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    r.refill();
    blocks[b][0][0] = shifted(next_dc(r, s, b, cinfo), cinfo->Al);
  }
  return finish_mcu(cinfo, s, r);
}

boolean decode_dc_refine(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  State& s = *static_cast<State*>(cinfo->client_data);
  if (skip_mcu(cinfo, s)) return TRUE;
  Bits r{s.data.data(), s.bitbuf, s.bitcount, s.pos};
  r.refill();  // one bit per block, at most 10 blocks
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b)
    if (r.take(1)) blocks[b][0][0] = static_cast<JCOEF>(blocks[b][0][0] | (1 << cinfo->Al));
  return finish_mcu(cinfo, s, r);
}

// A symbol's code and value bits: at most 16 + 15.
constexpr int kMaxProgressiveSymbolBits = 31;

boolean decode_ac_first(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  State& s = *static_cast<State*>(cinfo->client_data);
  if (skip_mcu(cinfo, s)) return TRUE;
  Bits r{s.data.data(), s.bitbuf, s.bitcount, s.pos};
  if (s.eobrun > 0) {
    --s.eobrun;
    return finish_mcu(cinfo, s, r);
  }
  JCOEF* block = blocks[0][0];
  const Table& t = *s.ac_of[0];
  const int se = cinfo->Se, al = cinfo->Al;
  for (int k = cinfo->Ss; k <= se;) {
    if (r.count < kMaxProgressiveSymbolBits) r.refill();
    const int sym = decode_symbol(r, t, s, cinfo);
    const int run = sym >> 4, size = sym & 15;
    if (size) {
      k += run;
      if (k > se) stop(s, cinfo);  // past the band: libjpeg writes outside it
      block[kNatural[k++]] = shifted(extend(r.take(size), size), al);
    } else if (run == 15) {
      k += 16;
    } else {  // EOBr: this block and the next 2^r - 1 + (r bits) end here
      s.eobrun = (1u << run) - 1;
      if (run) s.eobrun += static_cast<unsigned>(r.take(run));
      break;
    }
  }
  return finish_mcu(cinfo, s, r);
}

// The block's nonzero coefficients as bits in zigzag order (bit k: position kNatural[k]). A
// refinement scan walks the band in that order, passing zeros and correcting nonzeros; with the
// mask it steps over them by bit operations instead of testing each coefficient, whose
// unpredictable branches cost libjpeg most of its progressive decoding time.
struct ZigzagBytes {
  std::uint64_t bits[8][256];  // [byte j of the natural-order mask][its value] -> zigzag bits
  ZigzagBytes() : bits{} {
    int zigzag_of[64];
    for (int k = 0; k < 64; ++k) zigzag_of[kNatural[k]] = k;
    for (int j = 0; j < 8; ++j)
      for (int v = 0; v < 256; ++v)
        for (int i = 0; i < 8; ++i)
          if (v >> i & 1) bits[j][v] |= std::uint64_t{1} << zigzag_of[8 * j + i];
  }
};
const ZigzagBytes kZigzagBytes;

std::uint64_t nonzero_zigzag(const JCOEF* block) {
  std::uint64_t natural = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (std::size_t i = 0; i < 4; ++i) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i + 8));
    const __m128i zeros = _mm_packs_epi16(_mm_cmpeq_epi16(a, zero), _mm_cmpeq_epi16(b, zero));
    natural |= static_cast<std::uint64_t>(~_mm_movemask_epi8(zeros) & 0xFFFF) << (16 * i);
  }
#else
  for (int n = 0; n < 64; ++n) natural |= static_cast<std::uint64_t>(block[n] != 0) << n;
#endif
  std::uint64_t z = 0;
  for (int j = 0; j < 8; ++j) z |= kZigzagBytes.bits[j][(natural >> (8 * j)) & 0xFF];
  return z;
}

// Zigzag positions [from, to], as bits; empty when from > to.
inline std::uint64_t span_bits(int from, int to) {
  if (from > to) return 0;
  const std::uint64_t upto = to >= 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (to + 1)) - 1;
  return upto & ~((std::uint64_t{1} << from) - 1);
}

// One correction bit for each nonzero coefficient in `which` (zigzag bits), in order: a 1 raises
// the magnitude by 2^Al unless that bit is already set (jdphuff.c's rule).
inline void correct(Bits& r, JCOEF* block, std::uint64_t which, int p1) {
  while (which) {
    const int k = __builtin_ctzll(which);
    which &= which - 1;
    if (r.count < 1) r.refill();
    const int raise = r.take(1) & ((block[kNatural[k]] & p1) == 0);
    JCOEF& c = block[kNatural[k]];
    c = static_cast<JCOEF>(c + ((c >= 0 ? p1 : -p1) & -raise));
  }
}

boolean decode_ac_refine(j_decompress_ptr cinfo, JBLOCKROW* blocks) {
  State& s = *static_cast<State*>(cinfo->client_data);
  if (skip_mcu(cinfo, s)) return TRUE;
  Bits r{s.data.data(), s.bitbuf, s.bitcount, s.pos};
  JCOEF* block = blocks[0][0];
  const Table& t = *s.ac_of[0];
  const int se = cinfo->Se, p1 = 1 << cinfo->Al;
  std::uint64_t nonzero = nonzero_zigzag(block);
  int k = cinfo->Ss;
  if (s.eobrun == 0) {
    while (k <= se) {
      if (r.count < kMaxProgressiveSymbolBits) r.refill();
      const int sym = decode_symbol(r, t, s, cinfo);
      const int zeros = sym >> 4, size = sym & 15;
      int value = 0;
      if (size) {
        if (size != 1) stop(s, cinfo);  // libjpeg warns and reads it as 1
        value = r.take(1) ? p1 : -p1;
      } else if (zeros != 15) {
        s.eobrun = 1u << zeros;
        if (zeros) s.eobrun += static_cast<unsigned>(r.take(zeros));
        break;
      }
      // Pass `zeros` still-zero coefficients, correcting the nonzero ones on the way; the new
      // value (or the end of a ZRL) is the zero after them.
      std::uint64_t zero = ~nonzero & span_bits(k, se);
      for (int i = 0; i < zeros && zero; ++i) zero &= zero - 1;
      const int target = zero ? __builtin_ctzll(zero) : se + 1;
      correct(r, block, nonzero & span_bits(k, target - 1), p1);
      if (value) {
        if (target > se) stop(s, cinfo);  // past the band: libjpeg writes outside it
        block[kNatural[target]] = static_cast<JCOEF>(value);
        nonzero |= std::uint64_t{1} << target;
      }
      k = target + 1;
    }
  }
  if (s.eobrun > 0) {  // in an end-of-band run: only corrections, to the band's end
    correct(r, block, nonzero & span_bits(k, se), p1);
    --s.eobrun;
  }
  return finish_mcu(cinfo, s, r);
}

// Copies the scan's data from `p` to its first marker, turning each stuffed FF 00 back into FF.
// With `restarts`, the markers RST0, RST1, ... RST7, RST0 ... in turn end intervals instead (any
// other marker, or one out of turn, ends the data: libjpeg would resynchronise, the fast decoder
// then runs out of data and gives up).
void unstuff(const JOCTET* p, std::size_t n, bool restarts, State& s) {
  s.data.clear();
  s.segment_ends.clear();
  const JOCTET* end = p + n;
  int next_rst = 0;
  while (p < end) {
    const JOCTET* ff = static_cast<const JOCTET*>(std::memchr(p, 0xFF, static_cast<std::size_t>(end - p)));
    if (!ff) ff = end;
    s.data.insert(s.data.end(), p, ff);
    if (ff == end || ff + 1 == end) {
      p = ff;
      break;
    }
    if (ff[1] == 0x00) {
      s.data.push_back(0xFF);
    } else if (restarts && ff[1] == JPEG_RST0 + next_rst) {
      s.segment_ends.push_back(s.data.size() * 8);
      next_rst = (next_rst + 1) & 7;
    } else {
      p = ff;
      break;
    }
    p = ff + 2;
  }
  s.marker = p;
  s.segment_ends.push_back(s.data.size() * 8);
  s.segment = 0;
  s.data.resize(s.data.size() + kPad, 0);
}

// Builds the scan's tables and unstuffs its data; false (nothing changed in cinfo) when a table
// is missing. Call after libjpeg's start_pass for the scan, which has checked the tables and put
// its standard ones in any slot the file left empty.
bool start_scan(j_decompress_ptr cinfo, State& s) {
  const bool dc_scan = cinfo->Ss == 0, ac_scan = !cinfo->progressive_mode || cinfo->Ss > 0;
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    const int ci = cinfo->MCU_membership[b];
    const jpeg_component_info* comp = cinfo->cur_comp_info[ci];
    if (dc_scan && cinfo->Ah == 0) {  // a DC refinement reads raw bits
      const JHUFF_TBL* dc = cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no];
      if (!dc) return false;
      build(*dc, false, s.dc[comp->dc_tbl_no]);
      s.dc_of[b] = &s.dc[comp->dc_tbl_no];
    }
    if (ac_scan) {
      const JHUFF_TBL* ac = cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no];
      if (!ac) return false;
      build(*ac, true, s.ac[comp->ac_tbl_no]);
      s.ac_of[b] = &s.ac[comp->ac_tbl_no];
    }
    s.comp_of[b] = ci;
  }
  s.restart_interval = cinfo->restart_interval;
  s.restarts_to_go = s.restart_interval;
  unstuff(cinfo->src->next_input_byte, cinfo->src->bytes_in_buffer, s.restart_interval != 0, s);
  std::fill(std::begin(s.last_dc), std::end(s.last_dc), 0);
  s.bitbuf = 0;
  s.bitcount = 0;
  s.pos = 0;
  s.eobrun = 0;
  s.mcus_left = static_cast<long>(cinfo->MCUs_per_row) * static_cast<long>(cinfo->MCU_rows_in_scan);
  return true;
}

// Puts this progressive scan's decoder in place of libjpeg's, unless the scan has restart markers
// (a DRI segment may come before any scan): libjpeg's own then decodes that scan.
void take_progressive_scan(j_decompress_ptr cinfo, State& s) {
  if (cinfo->restart_interval != 0 || !start_scan(cinfo, s)) return;
  // An interleaved scan's MCU row is an iMCU row; a one-component scan's is one block row, of
  // which an iMCU row has v_samp_factor.
  const long rows_per_imcu = static_cast<long>(cinfo->max_v_samp_factor) * cinfo->min_DCT_scaled_size;
  const long imcu_rows =
      std::min<long>(cinfo->total_iMCU_rows, (s.rows_needed + rows_per_imcu - 1) / rows_per_imcu + 2);
  const long mcu_rows = cinfo->comps_in_scan > 1 ? imcu_rows : imcu_rows * cinfo->cur_comp_info[0]->v_samp_factor;
  s.mcus_to_decode = std::min<long>(s.mcus_left, mcu_rows * static_cast<long>(cinfo->MCUs_per_row));
  const bool dc = cinfo->Ss == 0, first = cinfo->Ah == 0;
  cinfo->entropy->decode_mcu =
      dc ? (first ? decode_dc_first : decode_dc_refine) : (first ? decode_ac_first : decode_ac_refine);
}

void start_progressive_scan(j_decompress_ptr cinfo) {
  State& s = *static_cast<State*>(cinfo->client_data);
  s.libjpeg_start_pass(cinfo);  // checks the scan, keeps coef_bits, picks libjpeg's decoder
  take_progressive_scan(cinfo, s);
}

}  // namespace

bool use_fast_huffman(j_decompress_ptr cinfo, void (*give_up)(j_decompress_ptr cinfo)) {
  if (cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 || jpeg_has_multiple_scans(cinfo) ||
      cinfo->entropy == nullptr || cinfo->src == nullptr || cinfo->Ss != 0 || cinfo->Se != DCTSIZE2 - 1 ||
      cinfo->Ah != 0 || cinfo->Al != 0)
    return false;
  State& s = t_state;
  if (!start_scan(cinfo, s)) return false;
  s.give_up = give_up;
  cinfo->client_data = &s;
  cinfo->entropy->decode_mcu = decode_mcu;
  ++t_counts.used;
  return true;
}

bool use_fast_progressive(j_decompress_ptr cinfo, void (*give_up)(j_decompress_ptr cinfo), JDIMENSION rows_needed) {
  if (!cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 || cinfo->entropy == nullptr ||
      cinfo->src == nullptr)
    return false;
  State& s = t_state;
  s.give_up = give_up;
  s.rows_needed = std::min(rows_needed, cinfo->output_height);
  s.libjpeg_start_pass = cinfo->entropy->start_pass;
  cinfo->client_data = &s;
  cinfo->entropy->start_pass = start_progressive_scan;
  take_progressive_scan(cinfo, s);  // the first scan, already set up by libjpeg
  ++t_counts.used;
  return true;
}

FastHuffmanCounts& fast_huffman_counts() { return t_counts; }

}  // namespace frugal::detail

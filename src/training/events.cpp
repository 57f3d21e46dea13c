#include "frugal/training/events.h"

#include <unistd.h>

#include <array>
#include <chrono>

#include "frugal/util/protobuf.h"

namespace frugal {
namespace {

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    t[i] = c;
  }
  return t;
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  static const auto table = make_table();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(std::string_view data) {
  std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tf_record(std::string_view data) {
  std::string out, len;
  pb::append_fixed64(len, data.size());
  out += len;
  pb::append_fixed32(out, masked_crc32c(len));
  out += data;
  pb::append_fixed32(out, masked_crc32c(data));
  return out;
}

double EventWriter::now_seconds() const {
  return std::chrono::duration<double>(env_.wall_now().time_since_epoch()).count();
}

EventWriter::EventWriter(const std::filesystem::path& dir, Env& env) : env_(env) {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  auto secs = static_cast<long long>(now_seconds());
  path_ = dir / ("events.out.tfevents." + std::to_string(secs) + "." + host + ".frugal");
  file_ = env_.new_appendable_file(path_);
  pb::Writer ev;
  ev.float64(1, now_seconds());
  ev.string(3, "brain.Event:2");
  write(ev.data());
}

EventWriter::~EventWriter() = default;

void EventWriter::scalar(const std::string& tag, float value, std::int64_t step) {
  pb::Writer v;
  v.string(1, tag);
  v.float32(2, value);
  pb::Writer summary;
  summary.message(1, v);
  pb::Writer ev;
  ev.float64(1, now_seconds());
  ev.int64(2, step);
  ev.message(5, summary);
  write(ev.data());
}

void EventWriter::flush() {}

void EventWriter::write(const std::string& event) {
  file_->append(tf_record(event));  // one append per record: whole or not at all (env.h)
}

}  // namespace frugal

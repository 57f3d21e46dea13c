// The secret that keys the index caches' checksums (index_cache.h; docs/formats.md, "Cache key").
//
// A cache folder can be written by others (a team's shared or network cache, a FRUGAL_CACHE_DIR
// set by a notebook's template): an unkeyed checksum lets whoever can write it plant an index that
// renames classes or flips labels of another user's data. Each user has a key of 32 random bytes
// in their own config folder, readable by them alone; a cache file's bytes end with their
// HMAC-SHA256 under it, which nobody without the key can make. A key file that others can read or
// write, or that is not the user's, is never used: the caches are then neither read nor written.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace frugal {

struct CacheKey {
  std::array<unsigned char, 32> bytes{};
};
using CacheMac = std::array<unsigned char, 32>;

// $XDG_CONFIG_HOME/frugal/cache-key, else $HOME/.config/frugal/cache-key; empty when neither is set.
std::filesystem::path cache_key_file();

// The key in `file`, made when there is none: 32 random bytes (OpenSSL's RAND_bytes) written to a
// temporary created with O_CREAT | O_EXCL, mode 0600, then linked to its name, so that two processes
// making it at once agree on one key and none reads half a key. nullopt, with `why` set, when it
// cannot be used: a link or not a regular file, owned by another user, readable or writable by
// group or others, not 32 bytes, or when it cannot be made (`why` then says so too).
std::optional<CacheKey> load_or_make_cache_key(const std::filesystem::path& file, std::string& why);

// load_or_make_cache_key(cache_key_file()), once per file and process; nullopt when there is no
// usable key, said once per process: a key file refused is a warning (printed even when quiet)
// naming the file, why, and what to do; no HOME, or a key that cannot be made, is a note.
std::optional<CacheKey> user_cache_key();

// HMAC-SHA256 of `data` under `key`; nullopt when OpenSSL fails (no cache is then read or written).
std::optional<CacheMac> cache_mac(const CacheKey& key, std::string_view data);

}  // namespace frugal

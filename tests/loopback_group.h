// Process groups of a test's threads on this machine: a loopback TCP port that nothing listens on
// (rank 0's TCPStore binds it next) and the launcher's environment for one rank of them.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "train/distributed.h"

namespace frugal::testing {

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Rank `rank` of `world` with its store at 127.0.0.1:port; `backend` as FRUGAL_DIST_BACKEND says.
inline DistEnv loopback_env(int rank, int world, int port, std::string backend = "") {
  DistEnv env;
  env.rank = rank;
  env.world = world;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  env.backend = std::move(backend);
  return env;
}

}  // namespace frugal::testing

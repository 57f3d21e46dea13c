// c10d process groups for data-parallel training (see distributed.h).
#include "train/distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef FRUGAL_WITH_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "frugal/util/error.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/terminal.h"
#include "frugal/train/launch.h"

namespace frugal {
namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One c10d backend (Gloo or NCCL) behind ProcessGroup; every failure of a collective, whatever the
// backend throws (gloo::IoException, c10::DistBackendError, a timeout), becomes one Error.
class C10dGroup : public ProcessGroup {
 public:
  C10dGroup(DistEnv env, std::string backend, c10::intrusive_ptr<c10d::Backend> pg,
            c10::intrusive_ptr<c10d::Backend> control, c10::intrusive_ptr<c10d::Store> store, torch::Device device,
            std::chrono::milliseconds timeout)
      : ProcessGroup(std::move(env), std::move(backend)),
        pg_(std::move(pg)),
        control_(std::move(control)),
        store_(std::move(store)),
        device_(device),
        nccl_(pg_->getBackendName() == "nccl"),
        timeout_(timeout) {}

  std::unique_ptr<ProcessGroup> subgroup(const std::vector<int>& ranks, const std::string& name) override;

  void control_all_reduce_sum(torch::Tensor& t) override {
    run("all-reduce", [&] {
      std::vector<at::Tensor> one{t};
      control_->allreduce(one, c10d::AllreduceOptions{})->wait(timeout_);
    });
  }

  void control_broadcast(torch::Tensor& t, int root) override {
    run("broadcast", [&] {
      std::vector<at::Tensor> one{t};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      control_->broadcast(one, o)->wait(timeout_);
    });
  }

  void all_reduce_sum(std::vector<torch::Tensor>& tensors) override {
    if (tensors.empty()) return;
    run("all-reduce", [&] {
      // One tensor per collective (a list means one tensor per device to c10d).
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      std::vector<at::Tensor> dense;
      for (auto& t : tensors) {
        std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
        dense.push_back(one[0]);
        works.push_back(pg_->allreduce(one, c10d::AllreduceOptions{}));
      }
      // NCCL: wait() orders the current stream after the collective without blocking the CPU (a
      // timeout would make it poll until done); a peer that stops answering is NCCL's watchdog's
      // to end, after the group's timeout. Gloo: the CPU waits, at most the timeout.
      for (auto& w : works) {
        if (nccl_)
          w->wait();
        else
          w->wait(timeout_);
      }
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!dense[i].is_same(tensors[i])) tensors[i].copy_(dense[i]);
    });
  }

  void broadcast(std::vector<torch::Tensor>& tensors, int root) override {
    run("broadcast", [&] {
      for (auto& t : tensors) {
        // Collectives take dense row-major tensors; a channels-last weight travels as a copy.
        std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
        c10d::BroadcastOptions o;
        o.rootRank = root;
        auto work = pg_->broadcast(one, o);
        if (nccl_)
          work->wait();
        else
          work->wait(timeout_);
        if (!one[0].is_same(t)) {
          torch::NoGradGuard no_grad;
          t.copy_(one[0]);
        }
      }
    });
  }

  // Gloo sends and receives host memory only: a CUDA tensor goes through a copy on the host (its
  // allreduce and broadcast take CUDA tensors themselves).
  void send(const torch::Tensor& t, int dst, int tag) override {
    run("send", [&] {
      std::vector<at::Tensor> one{!nccl_ && t.is_cuda() ? t.cpu() : t};
      sends_.push_back(pg_->send(one, dst, tag));
      sent_.push_back(one[0]);
    });
  }

  void recv(torch::Tensor& t, int src, int tag) override {
    run("receive", [&] {
      const bool staged = !nccl_ && t.is_cuda();
      std::vector<at::Tensor> one{staged ? torch::empty(t.sizes(), t.options().device(torch::kCPU)) : t};
      auto work = pg_->recv(one, src, tag);
      if (nccl_)
        work->wait();
      else
        work->wait(timeout_);
      if (staged) t.copy_(one[0]);
    });
  }

  void wait_sends() override {
    run("send", [&] {
      for (auto& w : sends_) {
        if (nccl_)
          w->wait();
        else
          w->wait(timeout_);
      }
    });
    sends_.clear();
    sent_.clear();
  }

 private:
  template <class F>
  void run(const char* what, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      f();
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
      if (why.size() > 300) why = why.substr(0, 297) + "...";
      fail(ErrorKind::io, "rank " + std::to_string(env_.rank) + " of " + std::to_string(env_.world),
           std::string("the other ranks to answer (") + what + ")",
           "no answer after " + std::to_string(static_cast<int>(seconds(t0))) + " s (" + why + ")",
           "another rank stopped, failed or hangs (its own message says why); run the same command again to "
           "resume from the last checkpoint ({dist_timeout} bounds the wait)");
    }
    comm_seconds_ += seconds(t0);
  }

  c10::intrusive_ptr<c10d::Backend> pg_, control_;
  std::vector<c10::intrusive_ptr<c10d::Work>> sends_;
  std::vector<torch::Tensor> sent_;  // kept until their sends are done
  c10::intrusive_ptr<c10d::Store> store_;
  torch::Device device_;
  bool nccl_;  // NCCL's waits order the stream; Gloo's block the CPU for at most the timeout
  std::chrono::milliseconds timeout_;
};

c10::intrusive_ptr<c10d::Backend> gloo_group(const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env,
                                             std::chrono::milliseconds timeout) {
  auto o = c10d::ProcessGroupGloo::Options::create();
  o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  o->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world, o);
}

int env_int(const std::function<const char*(const char*)>& getenv, const char* name, int lo, int hi,
            std::optional<int> absent) {
  const char* v = getenv(name);
  if (!v || !*v) {
    if (absent) return *absent;
    fail(ErrorKind::usage, std::string("environment variable ") + name,
         "set by the launcher (torchrun) for a run of several processes", "none",
         "start the ranks with torchrun ({nproc} N does), or unset WORLD_SIZE for one process");
  }
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi)
    fail(ErrorKind::usage, std::string("environment variable ") + name,
         "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi), std::string("'") + v + "'", "");
  return static_cast<int>(x);
}

}  // namespace

std::optional<DistEnv> dist_env_from(const std::function<const char*(const char*)>& getenv) {
  const char* w = getenv("WORLD_SIZE");
  if (!w || !*w) return std::nullopt;
  DistEnv e;
  e.world = env_int(getenv, "WORLD_SIZE", 1, 1 << 20, std::nullopt);
  // FRUGAL_FORCE_GROUP=1: one process joins a group of one (to measure what the group costs).
  const char* force = getenv("FRUGAL_FORCE_GROUP");
  if (e.world == 1 && !(force && std::string(force) == "1")) return std::nullopt;
  e.rank = env_int(getenv, "RANK", 0, e.world - 1, std::nullopt);
  e.local_world = env_int(getenv, "LOCAL_WORLD_SIZE", 1, e.world, 1);
  e.local_rank = env_int(getenv, "LOCAL_RANK", 0, e.world - 1, 0);
  const char* addr = getenv("MASTER_ADDR");
  e.master_addr = addr && *addr ? addr : "";
  if (e.master_addr.empty())
    fail(ErrorKind::usage, "environment variable MASTER_ADDR", "the address of rank 0's machine", "none",
         "start the ranks with torchrun, which sets it");
  e.master_port = env_int(getenv, "MASTER_PORT", 1, 65535, std::nullopt);
  const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent && std::string(agent) == "True";
  const char* restarts = getenv("TORCHELASTIC_RESTART_COUNT");
  if (restarts && *restarts) e.restart_count = restarts;
  const char* backend = getenv("FRUGAL_DIST_BACKEND");
  e.backend = backend ? backend : "";
  if (!e.backend.empty() && e.backend != "gloo" && e.backend != "nccl")
    fail(ErrorKind::usage, "environment variable FRUGAL_DIST_BACKEND", "gloo or nccl (or unset: the device's)",
         "'" + e.backend + "'", "");
  return e;
}

std::optional<DistEnv> dist_env() {
  return dist_env_from([](const char* n) { return std::getenv(n); });
}

RankWorld rank_world() {
  const auto env = dist_env();
  return env ? RankWorld{env->rank, env->world} : RankWorld{};
}

// The raw variables, unvalidated: deciding who prints and records an exit code must not fail
// (dist_env() refuses a bad environment with its message, in the session).
LaunchedAs launched_as() {
  LaunchedAs out;
  out.torchrun_rank = std::getenv("WORLD_SIZE") != nullptr;
  const char* rank = std::getenv("RANK");
  out.rank0 = !rank || std::string(rank) == "0";
  return out;
}

namespace {

// PyTorch's launcher starts N ranks of this same command on this machine (torchrun --standalone
// picks a free port). torchrun exits 1 when any rank exits non-zero, 75 included: rank 0 leaves its
// exit code in a file (FRUGAL_RANK0_EXIT_FILE) and the launching command exits with it.
// SIGINT/SIGTERM reach torchrun (which passes them to the ranks: they stop together, saved).
pid_t g_torchrun = 0;
void forward_signal(int sig) {
  if (g_torchrun > 0) ::kill(g_torchrun, sig);
}

}  // namespace

int run_torchrun(int nproc, const std::vector<std::string>& rank_args) {
  if (launched_as().torchrun_rank)
    fail(ErrorKind::usage, "{nproc}", "a command that starts the ranks", "a rank of a run torchrun started already",
         "leave out {nproc} when launching with torchrun");
  std::string self(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) fail(ErrorKind::io, "/proc/self/exe", "this program's path", "none", "run torchrun yourself (README)");
  self.resize(static_cast<std::size_t>(n));
  std::vector<std::string> cmd{
      "torchrun", "--standalone", "--nproc-per-node", std::to_string(nproc), "--no-python", "--", self, "train"};
  cmd.insert(cmd.end(), rank_args.begin(), rank_args.end());
  char exit_file[] = "/tmp/frugal-rank0-exit-XXXXXX";
  int fd = ::mkstemp(exit_file);
  if (fd < 0) fail(ErrorKind::io, "/tmp", "room for a temporary file", std::strerror(errno), "");
  ::close(fd);
  std::vector<char*> ptrs;
  for (auto& a : cmd) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  std::fflush(nullptr);
  int pipefd[2];  // the child reports a failed exec through it
  if (::pipe2(pipefd, O_CLOEXEC) != 0) fail(ErrorKind::io, "pipe", "a pipe", std::strerror(errno), "");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FRUGAL_RANK0_EXIT_FILE", exit_file, 1);
    ::execvp("torchrun", ptrs.data());
    int e = errno;
    [[maybe_unused]] auto w = ::write(pipefd[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int exec_errno = 0;
  const bool exec_failed = pid > 0 && ::read(pipefd[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(pipefd[0]);
  if (pid < 0 || exec_failed) {
    ::unlink(exit_file);
    fail(ErrorKind::usage, "{nproc} " + std::to_string(nproc), "PyTorch's torchrun on the PATH to start the ranks",
         std::string("none (") + std::strerror(pid < 0 ? errno : exec_errno) + ")",
         "put the Python environment that has torch on the PATH (the set-up's: .venv/bin), or run torchrun yourself");
  }
  g_torchrun = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (std::FILE* f = std::fopen(exit_file, "r")) {
    int rank0 = -1;
    if (std::fscanf(f, "%d", &rank0) == 1 && rank0 >= 0) rc = rank0;
    std::fclose(f);
  }
  ::unlink(exit_file);
  return rc;
}

void record_rank0_exit(int rc) {
  const char* file = std::getenv("FRUGAL_RANK0_EXIT_FILE");
  const LaunchedAs launched = launched_as();
  if (!file || !launched.torchrun_rank || !launched.rank0) return;
  if (std::FILE* f = std::fopen(file, "w")) {
    std::fprintf(f, "%d\n", rc);
    std::fclose(f);
  }
}

namespace {

// Whether host:port accepts a TCP connection within `wait` (one try; refused at once when nothing
// listens there).
bool accepts_connections(const std::string& host, int port, std::chrono::milliseconds wait) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, static_cast<int>(wait.count())) == 1 &&
           ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return ok;
}

// A rank that is not the store's host waits for the store to listen in short tries, so that the
// wait is bounded by the run's timeout and a signal ends it (TCPStore's own connect retries inside
// one call, past a signal, and beyond the timeout when nothing listens: issue 32, item 12).
void wait_for_store(const DistEnv& env, std::chrono::steady_clock::time_point deadline,
                    std::chrono::milliseconds timeout, const std::function<bool()>& stop_requested) {
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  bool said = false;
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    if (stop_requested && stop_requested())
      fail(ErrorKind::interrupted, where, "", "",
           "stopped by a signal while rank " + std::to_string(env.rank) +
               " waited for the rendezvous; nothing was written; run the same command again to start");
    if (accepts_connections(env.master_addr, env.master_port, std::chrono::milliseconds(200))) return;
    // Said by every rank, not only rank 0 (a rank left waiting is what the user must see), once the
    // wait is longer than ranks starting a moment apart take.
    if (!said && std::chrono::steady_clock::now() - started >=
                     std::min<std::chrono::milliseconds>(timeout / 2, std::chrono::seconds(10))) {
      const std::string line = "frugal: rank " + std::to_string(env.rank) + " of " + std::to_string(env.world) +
                               ": waiting up to " + std::to_string(timeout.count() / 1000) +
                               " s for the rendezvous at " + where + " ({dist_timeout})";
      std::fprintf(stderr, "%s\n", printable(spell_settings(line)).c_str());
      said = true;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      fail(ErrorKind::io, where, "the rendezvous of " + std::to_string(env.world) + " ranks (MASTER_ADDR:MASTER_PORT)",
           "nothing listening there for " + std::to_string(timeout.count() / 1000) + " s ({dist_timeout})",
           "start rank 0 (or torchrun) with the same address and port, or raise {dist_timeout} when the ranks "
           "start far apart");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

// The data group (Gloo, or NCCL on CUDA) and the control group (Gloo) of `env`'s ranks, rendezvoused
// through `store`.
static std::unique_ptr<ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env,
                                                const torch::Device& device, std::chrono::milliseconds timeout) {
  c10::intrusive_ptr<c10d::Backend> pg, control;
  std::string name;
  try {
    control = gloo_group(c10::make_intrusive<c10d::PrefixStore>("frugal/control", store), env, timeout);
    if (device.is_cuda() && env.backend != "gloo") {
#ifdef FRUGAL_WITH_NCCL
      c10::cuda::set_device(device.index());  // NCCL binds to the current device at the first collective
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("frugal/data", store),
                                                       env.rank, env.world, o);
      name = "nccl " + c10d::getNcclVersion();
#else
      fail(ErrorKind::usage, "device " + device.str(), "a build with NCCL to train on several GPUs", "none",
           "build frugal against a LibTorch with CUDA (scripts/setup.sh), or train on the cpu with Gloo");
#endif
    } else if (env.backend == "nccl") {
      fail(ErrorKind::usage, "FRUGAL_DIST_BACKEND=nccl on " + device.str(), "a CUDA device", device.str(),
           "unset FRUGAL_DIST_BACKEND (the CPU trains with Gloo), or give {device} cuda");
    } else {
      pg = gloo_group(c10::make_intrusive<c10d::PrefixStore>("frugal/data", store), env, timeout);
      name = "gloo";
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(ErrorKind::io, "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world),
         "a process group with the other ranks", std::string("none (") + e.what() + ")",
         "check that every rank runs the same command and can reach the others");
  }
  return std::make_unique<C10dGroup>(env, name, std::move(pg), std::move(control), store, device, timeout);
}

std::unique_ptr<ProcessGroup> C10dGroup::subgroup(const std::vector<int>& ranks, const std::string& name) {
  DistEnv sub = env_;
  sub.world = static_cast<int>(ranks.size());
  const auto at = std::find(ranks.begin(), ranks.end(), env_.rank);
  if (at == ranks.end()) throw std::logic_error("subgroup " + name + " without this rank");
  sub.rank = static_cast<int>(at - ranks.begin());
  return make_group(c10::make_intrusive<c10d::PrefixStore>("frugal/sub/" + name, store_), sub, device_, timeout_);
}

std::unique_ptr<ProcessGroup> ProcessGroup::join(const DistEnv& env, const torch::Device& device,
                                                 std::chrono::milliseconds timeout,
                                                 const std::function<bool()>& stop_requested) {
  // The rendezvous, like every collective, is bounded by the run's timeout (README: a process
  // that never answers ends the others within --dist-timeout): the ranks must start within it.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  c10::intrusive_ptr<c10d::Store> store;
  const bool serves = env.rank == 0 && !env.agent_store;
  if (!serves) wait_for_store(env, deadline, timeout, stop_requested);
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = serves;
    so.numWorkers = env.world;
    so.waitWorkers = false;
    // The store's own waits (Gloo's mesh, NCCL's id exchange at the first collective) take the
    // run's timeout; the store is known to listen by now, so its connect does not wait.
    so.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (env.agent_store) store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + env.restart_count, store);
  } catch (const std::exception& e) {
    fail(ErrorKind::io, env.master_addr + ":" + std::to_string(env.master_port),
         "the rendezvous of " + std::to_string(env.world) + " ranks (MASTER_ADDR:MASTER_PORT)",
         std::string("no connection (") + e.what() + ")",
         "check that every rank was given the same address and port and that rank 0 is running");
  }
  return make_group(store, env, device, timeout);
}

void ProcessGroup::prepare_gradients(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  if (!views_intact(params)) {
    buckets_.clear();
    std::map<c10::ScalarType, std::size_t> open;  // dtype -> its bucket being filled
    std::vector<std::int64_t> fill;
    std::vector<std::vector<torch::Tensor>> members;
    std::vector<c10::ScalarType> types;
    for (const auto& p : params) {
      const std::int64_t bytes = static_cast<std::int64_t>(p.nbytes());
      auto it = open.find(p.scalar_type());
      if (it == open.end() || fill[it->second] + bytes > bucket_bytes_) {
        open[p.scalar_type()] = members.size();
        members.emplace_back();
        fill.push_back(0);
        types.push_back(p.scalar_type());
        it = open.find(p.scalar_type());
      }
      members[it->second].push_back(p);
      fill[it->second] += bytes;
    }
    for (std::size_t b = 0; b < members.size(); ++b) {
      std::int64_t numel = 0;
      for (const auto& p : members[b]) numel += p.numel();
      Bucket bucket{torch::zeros({numel}, members[b][0].options().dtype(types[b])), members[b]};
      std::int64_t offset = 0;
      for (const auto& p : members[b]) {
        // The parameter's own strides (a channels-last weight gets a channels-last gradient), so
        // that backward adds into the view in place.
        p.mutable_grad() = bucket.flat.as_strided(p.sizes(), p.strides(), offset);
        offset += p.numel();
      }
      buckets_.push_back(std::move(bucket));
    }
  }
  for (auto& b : buckets_) b.flat.zero_();
}

bool ProcessGroup::views_intact(const std::vector<torch::Tensor>& params) const {
  std::size_t n = 0;
  for (const auto& b : buckets_) {
    const auto* begin = static_cast<const char*>(b.flat.data_ptr());
    const auto* end = begin + b.flat.nbytes();
    for (const auto& p : b.params) {
      if (n >= params.size() || !params[n].is_same(p)) return false;
      const auto& g = p.grad();
      if (!g.defined() || g.sizes() != p.sizes() || g.strides() != p.strides()) return false;
      const auto* at = static_cast<const char*>(g.data_ptr());
      if (at < begin || at >= end) return false;
      ++n;
    }
  }
  return n == params.size() && n > 0;
}

void ProcessGroup::all_reduce_gradients(const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool in_place = views_intact(params);
  std::vector<torch::Tensor> made;  // gradients made without prepare_gradients: copied into the buckets
  if (!in_place) {
    for (const auto& p : params) made.push_back(p.grad());
    prepare_gradients(params);  // zeroed: an undefined gradient (a rank with no samples) sums as zeros
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i)
      if (made[i].defined()) params[i].mutable_grad().copy_(made[i]);
  }
  std::vector<torch::Tensor> flat;
  for (auto& b : buckets_) flat.push_back(b.flat);
  for (auto& e : extra) flat.push_back(e.reshape({-1}));
  all_reduce_sum(flat);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < extra.size(); ++i)
    if (!flat[buckets_.size() + i].is_same(extra[i])) extra[i].copy_(flat[buckets_.size() + i].view_as(extra[i]));
  if (!in_place) {
    // ... and back into tensors of their own: a view cannot be detached, as zero_grad() does.
    for (std::size_t i = 0; i < params.size(); ++i) {
      torch::Tensor reduced = params[i].grad();
      params[i].mutable_grad() = made[i].defined() ? made[i].copy_(reduced) : reduced.clone();
    }
    buckets_.clear();
  }
  gradient_seconds_ += seconds(t0);
  if (in_place) ++in_place_;
}

std::vector<std::string> distributed_backends() {
  std::vector<std::string> out{"gloo (CPU)"};
#ifdef FRUGAL_WITH_NCCL
  out.push_back("nccl " + c10d::getNcclVersion() + " (CUDA)");
#endif
  return out;
}

}  // namespace frugal

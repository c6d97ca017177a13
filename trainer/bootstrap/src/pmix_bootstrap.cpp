// PMIx mode: the only translation unit that includes <pmix.h>. It uses only PMIx's blocking calls
// and registers no callbacks, so no exception can cross into PMIx.
#include <pmix.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "backends.h"
#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap::detail {
namespace {

using core::ErrorKind;
using core::make_error;

// The key rank 0 publishes its rendezvous address under; later exchanges append ".N".
constexpr const char* kRendezvousKey = "grpo.rdzv";

std::string pmix_message(const std::string& what, pmix_status_t rc) {
  return what + ": " + PMIx_Error_string(rc) + " (" + std::to_string(rc) + ")";
}

// Owns a pmix_value_t that PMIx_Get allocated.
struct ValueDeleter {
  void operator()(pmix_value_t* value) const {
    PMIx_Value_destruct(value);
    std::free(value);  // PMIx allocates it with malloc (pmix_free is free()).
  }
};
using ValuePtr = std::unique_ptr<pmix_value_t, ValueDeleter>;

// Owns a pmix_info_t loaded with PMIx_Info_load.
class Info {
 public:
  Info(const char* key, const void* data, pmix_data_type_t type) {
    std::memset(&info_, 0, sizeof(info_));
    loaded_ = PMIx_Info_load(&info_, key, data, type) == PMIX_SUCCESS;
  }
  ~Info() {
    if (loaded_) PMIx_Value_destruct(&info_.value);
  }
  Info(const Info&) = delete;
  Info& operator=(const Info&) = delete;
  pmix_info_t* get() { return &info_; }
  bool loaded() const { return loaded_; }

 private:
  pmix_info_t info_;
  bool loaded_ = false;
};

pmix_proc_t make_proc(const char* nspace, pmix_rank_t rank) {
  pmix_proc_t proc;
  std::memset(&proc, 0, sizeof(proc));
  std::memcpy(proc.nspace, nspace, ::strnlen(nspace, PMIX_MAX_NSLEN));  // stays NUL-terminated
  proc.rank = rank;
  return proc;
}

core::Result<ValuePtr> get_value(const pmix_proc_t& proc, const char* key, pmix_info_t* info,
                                 size_t ninfo) {
  pmix_value_t* raw = nullptr;
  const pmix_status_t rc = PMIx_Get(&proc, key, info, ninfo, &raw);
  if (rc != PMIX_SUCCESS || raw == nullptr) {
    return make_error(
        ErrorKind::kInternal,
        pmix_message(std::string("PMIx_Get(") + key + ", rank " +
                         (proc.rank == PMIX_RANK_WILDCARD ? std::string("wildcard")
                                                          : std::to_string(proc.rank)) +
                         ")",
                     rc == PMIX_SUCCESS ? PMIX_ERR_NOT_FOUND : rc));
  }
  return ValuePtr(raw);
}

core::Result<std::int64_t> get_number(const pmix_proc_t& proc, const char* key) {
  GRPO_TRY(ValuePtr value, get_value(proc, key, nullptr, 0));
  switch (value->type) {
    case PMIX_UINT8:
      return static_cast<std::int64_t>(value->data.uint8);
    case PMIX_UINT16:
      return static_cast<std::int64_t>(value->data.uint16);
    case PMIX_UINT32:
      return static_cast<std::int64_t>(value->data.uint32);
    case PMIX_UINT64:
      return static_cast<std::int64_t>(value->data.uint64);
    case PMIX_INT8:
      return static_cast<std::int64_t>(value->data.int8);
    case PMIX_INT16:
      return static_cast<std::int64_t>(value->data.int16);
    case PMIX_INT32:
      return static_cast<std::int64_t>(value->data.int32);
    case PMIX_INT64:
      return static_cast<std::int64_t>(value->data.int64);
    case PMIX_INT:
      return static_cast<std::int64_t>(value->data.integer);
    case PMIX_UINT:
      return static_cast<std::int64_t>(value->data.uint);
    case PMIX_SIZE:
      return static_cast<std::int64_t>(value->data.size);
    case PMIX_PROC_RANK:
      return static_cast<std::int64_t>(value->data.rank);
    default:
      break;
  }
  return make_error(ErrorKind::kInternal, std::string("PMIx_Get(") + key + ") returned type " +
                                              PMIx_Data_type_string(value->type) +
                                              ", not an integer");
}

core::Result<int> get_int(const pmix_proc_t& proc, const char* key, std::int64_t lo) {
  GRPO_TRY(std::int64_t value, get_number(proc, key));
  if (value < lo || value > 0x7fffffff) {
    return make_error(ErrorKind::kInternal, std::string("PMIx_Get(") + key + ") returned " +
                                                std::to_string(value) + ", out of range");
  }
  return static_cast<int>(value);
}

core::Result<std::string> get_string(const pmix_proc_t& proc, const char* key, pmix_info_t* info,
                                     size_t ninfo) {
  GRPO_TRY(ValuePtr value, get_value(proc, key, info, ninfo));
  if (value->type != PMIX_STRING || value->data.string == nullptr) {
    return make_error(ErrorKind::kInternal, std::string("PMIx_Get(") + key + ") returned type " +
                                                PMIx_Data_type_string(value->type) +
                                                ", not a string");
  }
  return std::string(value->data.string);
}

// "host:port" or "[v6]:port" as written by to_string(Endpoint).
core::Result<Endpoint> parse_endpoint(const std::string& text) {
  const size_t colon = text.rfind(':');
  const auto bad = [&] {
    return make_error(ErrorKind::kInternal, "rendezvous '" + text + "' is not host:port");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad();
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  for (size_t i = colon + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return bad();
    port = port * 10 + static_cast<unsigned>(c - '0');
    if (port > 65535) return bad();
  }
  if (port == 0) return bad();
  return Endpoint{std::move(host), static_cast<std::uint16_t>(port)};
}

class PmixBootstrap final : public Bootstrap {
 public:
  explicit PmixBootstrap(const pmix_proc_t& me) : me_(me) {}

  // Called only after PMIx_Init succeeded.
  ~PmixBootstrap() override { PMIx_Finalize(nullptr, 0); }

  core::Status load_world() {
    const pmix_proc_t job = make_proc(me_.nspace, PMIX_RANK_WILDCARD);
    world_.source = Source::kPmix;
    if (me_.rank > 0x7fffffff) {
      return make_error(ErrorKind::kInternal,
                        "PMIx rank " + std::to_string(me_.rank) + " is not a valid global rank");
    }
    world_.global_rank = static_cast<int>(me_.rank);
    GRPO_TRY(world_.world_size, get_int(job, PMIX_JOB_SIZE, 1));
    GRPO_TRY(world_.local_rank, get_int(me_, PMIX_LOCAL_RANK, 0));
    GRPO_TRY(world_.local_world_size, get_int(job, PMIX_LOCAL_SIZE, 1));
    GRPO_TRY(world_.node_rank, get_int(me_, PMIX_NODEID, 0));
    GRPO_TRY(world_.hostname, get_string(me_, PMIX_HOSTNAME, nullptr, 0));
    if (world_.global_rank >= world_.world_size || world_.local_rank >= world_.local_world_size) {
      return make_error(ErrorKind::kInternal,
                        "PMIx gave inconsistent ranks: rank " + std::to_string(world_.global_rank) +
                            " of " + std::to_string(world_.world_size) + ", local rank " +
                            std::to_string(world_.local_rank) + " of " +
                            std::to_string(world_.local_world_size));
    }
    return core::ok_status();
  }

  const WorldInfo& world() const override { return world_; }

  core::Result<Endpoint> exchange_rendezvous(std::optional<Endpoint> mine) override {
    const std::string key =
        exchanges_ == 0 ? kRendezvousKey : kRendezvousKey + ("." + std::to_string(exchanges_));
    ++exchanges_;
    // Every rank always commits and fences, even after a usage error, so that no peer is left
    // waiting in the fence.
    std::optional<core::Error> usage;
    if (world_.global_rank == 0 && !mine) {
      usage = make_error(ErrorKind::kInvalidValue, "rank 0 must pass its rendezvous address");
    } else if (world_.global_rank != 0 && mine) {
      usage = make_error(ErrorKind::kInvalidValue, "only rank 0 passes a rendezvous address");
    } else if (mine) {
      const std::string text = to_string(*mine);
      pmix_value_t value;
      std::memset(&value, 0, sizeof(value));
      value.type = PMIX_STRING;
      value.data.string = const_cast<char*>(text.c_str());  // PMIx_Put copies it.
      const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
      if (rc != PMIX_SUCCESS)
        usage = make_error(ErrorKind::kInternal, pmix_message("PMIx_Put", rc));
    }
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS && !usage)
      usage = make_error(ErrorKind::kInternal, pmix_message("PMIx_Commit", rc));

    bool collect = true;
    Info collect_info(PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    const pmix_proc_t all = make_proc(me_.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Fence(&all, 1, collect_info.get(), collect_info.loaded() ? 1 : 0);
    if (rc != PMIX_SUCCESS) return make_error(ErrorKind::kInternal, pmix_message("PMIx_Fence", rc));
    if (usage) return *usage;

    // The data was collected by the fence: look only locally, never wait for it.
    bool optional = true;
    Info optional_info(PMIX_OPTIONAL, &optional, PMIX_BOOL);
    const pmix_proc_t rank0 = make_proc(me_.nspace, 0);
    GRPO_TRY(std::string text,
             get_string(rank0, key.c_str(), optional_info.get(), optional_info.loaded() ? 1 : 0));
    return parse_endpoint(text);
  }

  core::Status barrier() override {
    const pmix_proc_t all = make_proc(me_.nspace, PMIX_RANK_WILDCARD);
    const pmix_status_t rc = PMIx_Fence(&all, 1, nullptr, 0);
    if (rc != PMIX_SUCCESS) return make_error(ErrorKind::kInternal, pmix_message("PMIx_Fence", rc));
    return core::ok_status();
  }

 private:
  pmix_proc_t me_;
  WorldInfo world_;
  int exchanges_ = 0;
};

}  // namespace

core::Result<std::unique_ptr<Bootstrap>> make_pmix_bootstrap() {
  pmix_proc_t me;
  std::memset(&me, 0, sizeof(me));
  const pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    // Not initialised: PMIx_Finalize must not be called (it crashes without a server).
    return make_error(ErrorKind::kUnavailable, pmix_message("PMIx_Init", rc));
  }
  auto pmix = std::make_unique<PmixBootstrap>(me);  // owns PMIx_Finalize from here on
  GRPO_TRY_STATUS(pmix->load_world());
  return std::unique_ptr<Bootstrap>(std::move(pmix));
}

}  // namespace grpo::bootstrap::detail

// The runtime keeps no host copy of a tensor: on a CPU backend whose memory the host can touch
// only inside the backend's calls (guarded_storage.hpp: PROT_NONE pages outside them), every
// layout runs its steps and gives the losses of the plain CPU backend. A host read of a tensor
// anywhere in the runtime (a copy, a loop over a buffer) would end the test with SIGSEGV: this is
// what the CUDA backend relies on to keep every activation, weight and gradient in GPU memory.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/backend/cpu/guarded_storage.hpp"
#include "executor/comm/emulated_communicator.hpp"
#include "executor/runtime/model_runtime.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {

std::vector<double> losses(const ModelSpec& model, const Layout& l, int rank, Backend& backend) {
  const Workload work = tiny_workload();
  ProcessGroups groups = make_process_groups(l, backend.world());
  ModelRuntime<double> runtime(model, l, work, groups, backend, 11, TrainingHyperparameters{});
  std::vector<double> out;
  for (long step = 0; step < 2; ++step) out.push_back(runtime.train_step(step));
  out.push_back(runtime.weight_checksum());
  return out;
}

struct Case {
  std::string name;
  ModelSpec model;
  Layout layout;
  std::vector<int> ranks;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](std::string name, ModelSpec m, Layout l, std::vector<int> ranks) {
    c.push_back({std::move(name), std::move(m), l, std::move(ranks)});
  };
  Layout l;
  l.micro_batch = 2;
  add("one rank, two micro-batches", tiny_model(), l, {0});
  l = Layout{};
  l.tp = 2;
  l.sp = true;
  l.dp = 2;
  l.zero = 3;
  add("tp2 sp zero-3 dp2", tiny_model(), l, {0, 3});
  l = Layout{};
  l.cp = 2;
  l.recompute = Recompute::Selective;
  add("cp2 selective recompute", tiny_model(), l, {1});
  l = Layout{};
  l.pp = 2;
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  l.micro_batch = 1;
  l.recompute = Recompute::Full;
  add("pp2 interleaved, LayerNorm + GELU, tied embeddings, full recompute", tiny_gpt_model(), l, {0, 1});
  l = Layout{};
  l.tp = 2;
  l.sp = true;
  l.ep = 2;
  l.dp = 2;
  l.zero = 1;
  l.dp_overlap = DpOverlap::PerLayer;
  add("MoE ep2 tp2 sp dp2, ZeRO-1", tiny_model(true), l, {0, 2});
  l = Layout{};
  l.ep = 2;
  l.dp = 2;
  l.zero = 2;
  l.recompute = Recompute::Full;
  add("MoE ep2 dp2, ZeRO-2, full recompute", tiny_model(true), l, {1});
  return c;
}

}  // namespace

TEST_CASE("device residency: every layout runs on guarded memory, with the plain CPU backend's losses") {
  for (const Case& c : cases())
    for (int rank : c.ranks) {
      CAPTURE(c.name);
      CAPTURE(rank);
      CpuBackend plain(make_emulated_world(c.layout, rank));
      const std::vector<double> expected = losses(c.model, c.layout, rank, plain);
      auto guarded = make_guarded_cpu_backend(make_emulated_world(c.layout, rank));
      const std::vector<double> got = losses(c.model, c.layout, rank, *guarded);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == expected[i]);
      REQUIRE(guarded->guarded());
      CHECK(guarded->guarded()->openings() > 100);  // the ops ran through the window
      CHECK(guarded->guarded()->buffers() == 0);    // the runtime's tensors are gone with it
    }
}

TEST_CASE("device residency: a host read of a guarded tensor outside the backend is caught") {
  // The guard's own proof: a child process reads a tensor behind the backend's back and dies
  // of SIGSEGV; the same read through the backend's download succeeds.
  auto backend = make_guarded_cpu_backend(make_emulated_world(Layout{}, 0));
  TrackedBuffer<float> t(&backend->memory(), MemoryCategory::Activations, 16);
  const std::vector<float> ones(16, 1.0f);
  t.upload(ones.data(), 16);
  CHECK(t.to_host()[7] == 1.0f);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGSEGV, SIG_DFL);   // the test framework's handler would report a crash of its own
    volatile float x = t.data()[7];  // outside any backend call
    (void)x;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  // Only a read that went through reaches _exit(0) (under ASan the fault is its report and exit 1).
  CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

#include "pipeline.h"

#include <algorithm>
#include <deque>

namespace grpo::trainer {
namespace {

struct InFlight {
  at::Tensor input;  // the received activation (a leaf), undefined on the first stage
  StageForward out;
};

class Runner {
 public:
  explicit Runner(const PipelineSchedule& s)
      : s_(s), first_(s.stage == 0), last_(s.stage == s.stages - 1) {}

  // Micro batch i's activation from the previous stage (undefined on the first stage).
  core::Result<at::Tensor> recv_forward(std::int64_t i) {
    if (first_) return at::Tensor();
    at::Tensor t = empty(i);
    GRPO_TRY_STATUS(s_.group->exchange({{false, t, s_.stage - 1}}));
    return t;
  }
  core::Status send_forward(const at::Tensor& out) {
    if (last_) return core::ok_status();
    return s_.group->exchange({{true, out.detach().contiguous(), s_.stage + 1}});
  }
  // Sends micro batch `out`'s activation on and receives the gradient of micro batch j's.
  core::Result<at::Tensor> send_forward_recv_backward(const at::Tensor& out, std::int64_t j) {
    if (last_) return at::Tensor();
    at::Tensor g = empty(j);
    GRPO_TRY_STATUS(s_.group->exchange(
        {{true, out.detach().contiguous(), s_.stage + 1}, {false, g, s_.stage + 1}}));
    return g;
  }
  core::Result<at::Tensor> recv_backward(std::int64_t j) {
    if (last_) return at::Tensor();
    at::Tensor g = empty(j);
    GRPO_TRY_STATUS(s_.group->exchange({{false, g, s_.stage + 1}}));
    return g;
  }
  core::Status send_backward(const at::Tensor& grad) {
    if (first_) return core::ok_status();
    return s_.group->exchange({{true, grad.contiguous(), s_.stage - 1}});
  }
  // Sends an input gradient back and receives micro batch i's activation.
  core::Result<at::Tensor> send_backward_recv_forward(const at::Tensor& grad, std::int64_t i) {
    if (first_) return at::Tensor();
    at::Tensor t = empty(i);
    GRPO_TRY_STATUS(
        s_.group->exchange({{true, grad.contiguous(), s_.stage - 1}, {false, t, s_.stage - 1}}));
    return t;
  }

  at::Tensor forward(std::int64_t i, const at::Tensor& input) {
    if (input.defined()) input.requires_grad_(true);
    StageForward out = s_.forward(i, input);
    at::Tensor sent = out.output;
    queue_.push_back({input, std::move(out)});
    return sent;
  }

  // The backward of the oldest micro batch in flight, from the gradient of its output (undefined
  // on the last stage); returns the gradient of its input (undefined on the first stage).
  at::Tensor backward(const at::Tensor& grad_out) {
    InFlight b = std::move(queue_.front());
    queue_.pop_front();
    std::vector<at::Tensor> roots, grads;
    if (b.out.output.defined() && grad_out.defined()) {
      roots.push_back(b.out.output);
      grads.push_back(grad_out);
    }
    if (b.out.loss.defined() && b.out.loss.requires_grad()) {
      roots.push_back(b.out.loss);
      grads.push_back(at::ones_like(b.out.loss));
    }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    if (!b.input.defined()) return at::Tensor();
    return b.input.grad().defined() ? b.input.grad() : at::zeros_like(b.input);
  }

 private:
  at::Tensor empty(std::int64_t i) const { return at::empty(s_.shape(i), s_.activation); }

  const PipelineSchedule& s_;
  const bool first_, last_;
  std::deque<InFlight> queue_;
};

}  // namespace

core::Status run_1f1b(const PipelineSchedule& s, std::int64_t m) {
  Runner r(s);
  const std::int64_t warm = std::min<std::int64_t>(s.stages - s.stage - 1, m);
  const std::int64_t steady = m - warm;
  for (std::int64_t i = 0; i < warm; ++i) {
    GRPO_TRY(at::Tensor in, r.recv_forward(i));
    GRPO_TRY_STATUS(r.send_forward(r.forward(i, in)));
  }
  at::Tensor in;
  if (steady > 0) {
    GRPO_TRY(in, r.recv_forward(warm));
  }
  for (std::int64_t k = 0; k < steady; ++k) {
    const std::int64_t i = warm + k;
    const at::Tensor out = r.forward(i, in);
    GRPO_TRY(at::Tensor grad, r.send_forward_recv_backward(out, k));
    const at::Tensor grad_in = r.backward(grad);
    if (k + 1 == steady) {
      GRPO_TRY_STATUS(r.send_backward(grad_in));
    } else {
      GRPO_TRY(in, r.send_backward_recv_forward(grad_in, i + 1));
    }
  }
  for (std::int64_t j = steady; j < m; ++j) {
    GRPO_TRY(at::Tensor grad, r.recv_backward(j));
    GRPO_TRY_STATUS(r.send_backward(r.backward(grad)));
  }
  return core::ok_status();
}

}  // namespace grpo::trainer

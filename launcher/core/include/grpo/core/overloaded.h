// std::visit with lambdas: Overloaded{[](const A&) {...}, [](const B&) {...}}. The one home of
// this helper.
#pragma once

namespace grpo::core {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace grpo::core

// std::visit with lambdas: Overloaded{[](const A&) {...}, [](const B&) {...}}.
#pragma once

namespace grpo::supervise {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace grpo::supervise
